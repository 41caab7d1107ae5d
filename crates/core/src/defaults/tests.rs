use super::*;

#[test]
fn set_defaults_job() {
    assert_eq!(parallelism_and_completions(None, None), (1, Some(1)));
    assert_eq!(parallelism_and_completions(Some(3), None), (3, None));
    assert_eq!(parallelism_and_completions(None, Some(5)), (1, Some(5)));
    assert_eq!(backoff_limit(None, None), 6);
    assert_eq!(backoff_limit(None, Some(1)), i32::MAX);
    assert_eq!(backoff_limit(Some(0), Some(1)), 0);
    assert_eq!(completion_mode(None), CompletionMode::NonIndexed);
    assert_eq!(
        completion_mode(Some("Sparse".into())),
        CompletionMode::Unknown("Sparse".into())
    );
    assert_eq!(
        pod_replacement_policy(None, true),
        PodReplacementPolicy::Failed
    );
    assert_eq!(
        pod_replacement_policy(None, false),
        PodReplacementPolicy::TerminatingOrFailed
    );
    assert_eq!(pattern_status(String::new()), ConditionStatus::True);
    assert_eq!(pattern_status("False".into()), ConditionStatus::False);
}

#[test]
fn annotations_read_as_upstream_reads_them() {
    let cases: &[(Option<&str>, Option<i32>, i32)] = &[
        (None, None, 0),
        (Some("3"), Some(3), 3),
        (Some("+3"), Some(3), 3),
        (Some("-1"), None, 0),
        (Some(" 3"), None, 0),
        (Some("2147483648"), None, 0),
        (Some("9223372036854775808"), None, 0),
        (Some("x"), None, 0),
    ];
    for (annotation, index, count) in cases {
        assert_eq!(completion_index(*annotation), *index, "{annotation:?}");
        assert_eq!(failure_count(*annotation), *count, "{annotation:?}");
    }
}
