use super::*;

fn err(text: &str) -> ScriptError {
    Script::from_yaml(text)
        .expect_err(text)
        .0
        .into_iter()
        .next()
        .expect("an error")
}

#[test]
fn reads_every_feature() {
    let s = Script::from_yaml(
        "horizon: 2h\nseed: 7\nmaxSyncs: 50\ndefaults: {runTime: 5m, startDelay: 2s, stopTime: 10s}\n\
         attempts:\n- {index: 3, attempt: 1-2, exitCode: 137, reason: OOMKilled}\n\
         - {attempt: 1, exitCode: 1, runTime: 30s}\n- {percent: 10, exitCodes: [1, 137]}\n\
         events:\n- {at: 5m, drain: {index: 2}}\n- {at: 6m, deletePod: {pod: [4]}}\n\
         - {at: 20m, suspend: true}\n- {at: 25m, resume: true}\n- {at: 26m, parallelism: 2}\n",
    )
    .expect("valid");
    assert_eq!(s.horizon(), Span::secs(7200));
    assert_eq!(s.seed, 7);
    assert_eq!(s.attempts[0].attempt, Some(Numbers(BTreeSet::from([1, 2]))));
    assert_eq!(s.attempts[2].exit_codes, Some(vec![1, 137]));
    let actions: Vec<_> = s
        .events
        .iter()
        .enumerate()
        .map(|(i, e)| e.action(i))
        .collect();
    assert_eq!(actions[2], Ok(EventAction::Suspend(true)));
    assert_eq!(actions[3], Ok(EventAction::Suspend(false)));
    assert_eq!(actions[4], Ok(EventAction::Parallelism(2)));
    assert!(matches!(&actions[0], Ok(EventAction::Drain(t)) if t.matches(Some(2), 9)));
}

#[test]
fn errors_name_the_field() {
    for (text, path) in [
        (
            "attempts:\n- {exitCode: 1}\n- {exitCode: one}\n",
            "attempts[1].exitCode",
        ),
        ("attempts:\n- {exitcode: 1}\n", "attempts[0].exitcode"),
        (
            "attempts:\n- {percent: 120, exitCode: 1}\n",
            "attempts[0].percent",
        ),
        (
            "attempts:\n- {exitCode: 1, exitCodes: [2]}\n",
            "attempts[0].exitCodes",
        ),
        (
            "attempts:\n- {attempt: 0, exitCode: 1}\n",
            "attempts[0].attempt",
        ),
        (
            "attempts:\n- {index: \"3-1\", exitCode: 1}\n",
            "attempts[0].index",
        ),
        ("events:\n- {at: 5m}\n", "events[0]"),
        (
            "events:\n- {at: 5m, suspend: true, parallelism: 1}\n",
            "events[0]",
        ),
        ("events:\n- {at: soon, suspend: true}\n", "events[0].at"),
        ("events:\n- {at: 5m, drain: {}}\n", "events[0].drain"),
        (
            "events:\n- {at: 5m, suspend: true}\n- {at: 1m, resume: true}\n",
            "events[1].at",
        ),
        ("horizon: 3d\n", "horizon"),
        ("defaults: {runtime: 5m}\n", "defaults.runtime"),
        ("bogus: 1\n", "bogus"),
    ] {
        assert_eq!(err(text).path, path, "{text}");
    }
}

#[test]
fn empty_script_is_all_defaults() {
    let s = Script::from_yaml("").expect("empty is fine");
    assert!(s.attempts.is_empty() && s.events.is_empty());
    assert_eq!(s.horizon(), DEFAULT_HORIZON);
}

/// Issue 25, defect 12: only the first error was reported, and serde's own path was
/// repeated after the field's (`events[0].at: events[0].at: …`).
#[test]
fn only_the_first_script_error_was_reported_with_its_path_twice() {
    let errors = Script::from_yaml(
        "attempts:\n- {percent: 150, exitCode: 1}\n- {exitCode: 300}\n- {exitCodes: [1, 256]}\n\
         defaults: {exitCode: -1}\nmaxSyncs: 0\n",
    )
    .expect_err("five errors");
    let paths: Vec<&str> = errors.0.iter().map(|e| e.path.as_str()).collect();
    assert_eq!(
        paths,
        [
            "attempts[0].percent",
            "attempts[1].exitCode",
            "attempts[2].exitCodes",
            "defaults.exitCode",
            "maxSyncs"
        ],
        "{errors}"
    );
    let e = err("events:\n- {at: 5 minutes, suspend: true}\n");
    assert_eq!(e.path, "events[0].at");
    assert!(!e.message.contains("events[0]"), "{e}");
    assert_eq!(e.to_string().matches("events[0].at").count(), 1, "{e}");
}
