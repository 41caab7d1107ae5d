//! Table tests of per-rule retry limits: ordinals from ranks and carried
//! counts, exhaustion at maxRetries + 1 per scope, and the counts annotation.

use super::*;
use crate::extended::parse_rule_match_counts;
use crate::extended::rules::test_docs::*;
use crate::extended::rules::{DocumentRule, match_document};
use crate::fixtures::{PodExt, indexed_job, job, pod, t};
use crate::model::ExtendedAction::{self, Count, FailIndex, FailJob, Ignore};
use crate::model::{PodFailurePolicyAction, PodPhase};

const OOM: (i32, i32) = (137, 137);

/// Rule 0 "oom": Count on 137, at most `max` retries, then `then`; rule 1
/// "other": Count on 1, at most 5; rule 2, unnamed and unlimited: Ignore on 2.
fn limited_job(mut job: Job, max: i32, then: ExtendedAction) -> Job {
    job.extended_failure_policy = Some(document(vec![
        rule(Count)
            .named("oom")
            .exit_in(&[OOM])
            .max_retries(max, then),
        rule(Count)
            .named("other")
            .exit_in(&[(1, 1)])
            .max_retries(5, FailJob),
        rule(Ignore).exit_in(&[(2, 2)]),
    ]));
    job
}

fn failed(name: &str, code: i32, at: i64) -> Pod {
    pod(name).phase(PodPhase::Failed).exit("main", code, t(at))
}

/// Each pod's (name, document ordinal, effective action) after the sync-wide pass.
fn judged(job: &Job, pods: &[Pod]) -> Vec<(String, u32, Option<PodFailurePolicyAction>)> {
    let mut sync_pods: Vec<SyncPod> = pods.iter().map(|p| SyncPod::new(job, p)).collect();
    apply_retry_limits(job, &mut sync_pods);
    sync_pods
        .iter()
        .map(|p| {
            (
                p.name.clone(),
                p.failed_document_match().map_or(0, |m| m.ordinal),
                p.policy_action(job).cloned(),
            )
        })
        .collect()
}

fn row(
    name: &str,
    ordinal: u32,
    action: PodFailurePolicyAction,
) -> (String, u32, Option<PodFailurePolicyAction>) {
    (name.into(), ordinal, Some(action))
}

#[test]
fn judge_reads_the_carried_count() {
    let job = limited_job(job(), 2, FailJob);
    let policy = job.extended_failure_policy.as_deref().expect("a document");
    let rule = DocumentRule::Rule(0);
    let cases = [
        // (carried, rank, ordinal, exhausted)
        (None, 0, 1, false),
        (Some(1), 0, 2, false),
        (Some(2), 0, 3, true),
        (Some(0), 3, 3, true),
        (Some(5), 1, 6, true),
        (Some(-4), 0, 1, false),
        (
            Some(i32::MAX),
            0,
            u32::try_from(i32::MAX).unwrap_or(0) + 1,
            true,
        ),
    ];
    for (carried, rank, ordinal, exhausted) in cases {
        let mut p = failed("p", 137, 1);
        if let Some(c) = carried {
            p = p.carried(&[("oom", c)]);
        }
        let m = judge(policy, rule, &p, rank);
        assert_eq!(
            (m.ordinal, m.exhausted),
            (ordinal, exhausted),
            "carried {carried:?} rank {rank}"
        );
        assert_eq!(m.action, if exhausted { FailJob } else { Count });
    }
    // A rule without a limit has no ordinal.
    let m = judge(policy, DocumentRule::Rule(2), &failed("p", 2, 1), 7);
    assert_eq!((m.ordinal, m.exhausted, m.action), (0, false, Ignore));
    // Another rule's carried count is not this rule's.
    let p = failed("p", 137, 1).carried(&[("other", 9), ("oomx", 9)]);
    assert_eq!(match_document(policy, &p).map(|m| m.ordinal), Some(1));
}

#[test]
fn non_indexed_the_match_after_max_retries_takes_when_retries_exhausted() {
    use PodFailurePolicyAction as A;
    let job = limited_job(job(), 2, FailJob);
    // Snapshot order is not finish order: ranks follow (finish time, name).
    let pods = vec![
        failed("c", 137, 30),
        failed("a", 137, 10),
        failed("x", 1, 5),
        failed("b", 137, 20),
        failed("y", 2, 1),
        pod("running"),
    ];
    assert_eq!(
        judged(&job, &pods),
        vec![
            row("c", 3, A::FailJob),
            row("a", 1, A::Count),
            row("x", 1, A::Count),
            row("b", 2, A::Count),
            row("y", 0, A::Ignore),
            ("running".into(), 0, None),
        ]
    );
    // Two matches are within maxRetries 2.
    let two = vec![failed("a", 137, 10), failed("b", 137, 20)];
    assert!(
        judged(&job, &two)
            .iter()
            .all(|(_, _, a)| *a == Some(A::Count))
    );
}

#[test]
fn equal_finish_times_rank_by_name() {
    use PodFailurePolicyAction as A;
    let job = limited_job(job(), 1, FailJob);
    let pods = vec![failed("b", 137, 10), failed("a", 137, 10)];
    assert_eq!(
        judged(&job, &pods),
        vec![row("b", 2, A::FailJob), row("a", 1, A::Count)]
    );
}

#[test]
fn indexed_each_index_is_its_own_scope() {
    use PodFailurePolicyAction as A;
    let mut job = limited_job(indexed_job(3, 3), 2, FailIndex);
    job.spec.backoff_limit_per_index = Some(10);
    let pods = vec![
        failed("i0-a", 137, 1).index(0),
        failed("i0-b", 137, 2).index(0),
        failed("i0-c", 137, 3).index(0),
        failed("i1-a", 137, 4).index(1),
        failed("i1-b", 137, 5).index(1),
        // Rank 1 in index 2 by position, but it carries two earlier matches.
        failed("i2-a", 137, 6).index(2).carried(&[("oom", 2)]),
    ];
    assert_eq!(
        judged(&job, &pods),
        vec![
            row("i0-a", 1, A::Count),
            row("i0-b", 2, A::Count),
            row("i0-c", 3, A::FailIndex),
            row("i1-a", 1, A::Count),
            row("i1-b", 2, A::Count),
            row("i2-a", 3, A::FailIndex),
        ]
    );
}

#[test]
fn ordinal_is_the_larger_of_carried_and_rank() {
    use PodFailurePolicyAction as A;
    let job = limited_job(job(), 3, FailJob);
    // Earlier pods were deleted: the visible ones carry what was counted before them.
    let pods = vec![
        failed("late", 137, 20).carried(&[("oom", 1)]),
        failed("early", 137, 10).carried(&[("oom", 0)]),
        failed("last", 137, 30).carried(&[("oom", 3)]),
    ];
    assert_eq!(
        judged(&job, &pods),
        vec![
            row("late", 2, A::Count),
            row("early", 1, A::Count),
            row("last", 4, A::FailJob),
        ]
    );
}

/// The counts annotation of the scope made of `pods`.
fn counts(job: &Job, pods: &[Pod]) -> String {
    let mut sync_pods: Vec<SyncPod> = pods.iter().map(|p| SyncPod::new(job, p)).collect();
    apply_retry_limits(job, &mut sync_pods);
    let policy = job.extended_failure_policy.as_deref().expect("a document");
    format_rule_match_counts(&scope_counts(policy, &sync_pods))
}

#[test]
fn counts_are_the_best_lower_bound_the_snapshot_gives() {
    let job = limited_job(job(), 9, FailJob);
    let cases: Vec<(&str, Vec<Pod>, &str)> = vec![
        ("no pods", vec![], ""),
        (
            "no failures of a limited rule",
            vec![failed("a", 2, 1), pod("r")],
            "",
        ),
        (
            "visible failures counted",
            vec![failed("a", 137, 1), failed("b", 137, 2), failed("c", 1, 3)],
            "oom=2,other=1",
        ),
        (
            "a failed pod's carried count plus itself beats the visible count (earlier pods deleted)",
            vec![failed("a", 137, 1).carried(&[("oom", 4), ("other", 1)])],
            "oom=5,other=1",
        ),
        (
            "a running pod's carried count stands (its predecessors were deleted)",
            vec![pod("r").carried(&[("oom", 3)]), failed("a", 137, 1)],
            "oom=3",
        ),
        (
            "the visible count beats stale carried counts",
            vec![
                failed("a", 137, 1),
                failed("b", 137, 2),
                failed("c", 137, 3).carried(&[("oom", 1)]),
            ],
            "oom=3",
        ),
        (
            "counts of rules no longer limited or named are dropped",
            vec![pod("r").carried(&[("gone", 7), ("oom", 1)])],
            "oom=1",
        ),
    ];
    for (name, pods, want) in cases {
        assert_eq!(counts(&job, &pods), want, "{name}");
    }
}

#[test]
fn the_annotation_is_sorted_pairs_and_reads_back() {
    let value = format_rule_match_counts(&[("a", 1), ("b_2", 12)]);
    assert_eq!(value, "a=1,b_2=12");
    assert_eq!(
        parse_rule_match_counts(&value),
        vec![("a".to_string(), 1), ("b_2".to_string(), 12)]
    );
    assert_eq!(
        parse_rule_match_counts("a=1,,=3,b,c=-1,d=x, e = 4 ,f=99999999999"),
        vec![("a".to_string(), 1), ("e".to_string(), 4)]
    );
    assert!(parse_rule_match_counts("").is_empty());
}

/// The core read the annotation without the wire's bounds: a repeated name
/// came back twice, unsorted, and any number of pairs were kept. There is one
/// reader now, the wire's: each name once at its largest count, sorted, at
/// most 64 pairs looked at, names longer than a rule's (111 bytes, KEP-4443) dropped.
#[test]
fn rule_match_counts_read_a_repeated_name_once_sorted_and_capped() {
    assert_eq!(
        parse_rule_match_counts("b=2,a=1,b=5,a=0"),
        vec![("a".to_string(), 1), ("b".to_string(), 5)]
    );
    // KEP-4443: PodFailurePolicy_ (17) and the name make at most 128 characters.
    let longest = 111;
    let long = format!("{}=1,ok=2", "n".repeat(longest + 1));
    assert_eq!(parse_rule_match_counts(&long), vec![("ok".to_string(), 2)]);
    let kept = format!("{}=1", "n".repeat(longest));
    assert_eq!(parse_rule_match_counts(&kept).len(), 1);
    let many: Vec<String> = (0..100).map(|i| format!("r{i:03}=1")).collect();
    let read = parse_rule_match_counts(&many.join(","));
    assert_eq!(read.len(), 64);
    assert_eq!(read.last().map(|(n, _)| n.as_str()), Some("r063"));
}

#[test]
fn a_document_without_limits_changes_nothing() {
    let mut job = job();
    job.extended_failure_policy = Some(document(vec![rule(Count).exit_in(&[OOM])]));
    let pods = [
        failed("a", 137, 1).carried(&[("oom", 99)]),
        failed("b", 137, 2),
    ];
    let mut sync_pods: Vec<SyncPod> = pods.iter().map(|p| SyncPod::new(&job, p)).collect();
    let before: Vec<_> = sync_pods
        .iter()
        .map(|p| p.failed_document_match())
        .collect();
    apply_retry_limits(&job, &mut sync_pods);
    let after: Vec<_> = sync_pods
        .iter()
        .map(|p| p.failed_document_match())
        .collect();
    assert_eq!(before, after);
    let mut creations = vec![crate::plan::PodCreation {
        generate_name: "job-".into(),
        labels: Default::default(),
        annotations: Default::default(),
        finalizers: vec![],
        hostname: String::new(),
        env: vec![],
        completion_index: None,
        owner: crate::fixtures::job_owner(),
        avoid_nodes: None,
    }];
    annotate_creations(&job, &sync_pods, &mut creations);
    assert!(creations[0].annotations.is_empty());
}
