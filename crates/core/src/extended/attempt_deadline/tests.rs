use super::*;
use crate::fixtures::{PodExt, pod, t};
use crate::model::{ExtendedAction, PodFailureDetails, PodPhase};

fn settings(seconds: i64) -> AttemptDeadline {
    AttemptDeadline {
        seconds,
        action: ExtendedAction::Count,
    }
}

/// A Running pod that started at `start` (`None`: no start time).
fn started(start: Option<i64>) -> Pod {
    let mut p = pod("p");
    p.failure_details = Some(Box::new(PodFailureDetails {
        start_time: start.map(t),
        ..PodFailureDetails::default()
    }));
    p
}

#[test]
fn the_deadline_is_the_start_plus_the_limit_for_active_started_pods() {
    let mut no_details = started(Some(10));
    no_details.failure_details = None;
    // (name, pod, want deadline)
    let cases: Vec<(&str, Pod, Option<i64>)> = vec![
        ("running", started(Some(10)), Some(110)),
        (
            "pending",
            started(Some(10)).phase(PodPhase::Pending),
            Some(110),
        ),
        ("no start time", started(None), None),
        ("no details (no document)", no_details, None),
        ("failed", started(Some(10)).phase(PodPhase::Failed), None),
        (
            "succeeded",
            started(Some(10)).phase(PodPhase::Succeeded),
            None,
        ),
        (
            "being deleted",
            started(Some(10)).deleted(t(50), Some(30)),
            None,
        ),
    ];
    for (name, p, want) in cases {
        assert_eq!(deadline(&settings(100), &p), want.map(t), "{name}");
    }
}

#[test]
fn the_failure_names_the_condition_reason_run_time_and_limit() {
    let f = failure(&settings(3600), &started(Some(0)), t(3700));
    assert_eq!(f.condition_type, ATTEMPT_DEADLINE_CONDITION);
    assert_eq!(f.reason, DEADLINE_EXCEEDED);
    assert_eq!(f.pod.name, "p");
    assert!(f.message.contains("attemptDeadline of 1h"), "{}", f.message);
    assert!(f.message.contains("ran for 1h1m since"), "{}", f.message);
}
