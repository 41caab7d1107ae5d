use super::*;
use crate::fixtures::{PodExt, pod, t};
use crate::model::{ExtendedAction, PodCondition, PodFailureDetails, PodPhase};

fn settings(seconds: i64) -> ReadyTimeout {
    ReadyTimeout {
        seconds,
        action: ExtendedAction::Count,
    }
}

/// A pod that started at t(10), its Ready condition `ready` (status, transition).
fn started(ready: Option<(ConditionStatus, Option<i64>)>) -> Pod {
    let mut p = pod("p");
    p.failure_details = Some(Box::new(PodFailureDetails {
        start_time: Some(t(10)),
        ..PodFailureDetails::default()
    }));
    if let Some((status, at)) = ready {
        p.conditions.push(PodCondition {
            condition_type: "Ready".into(),
            status,
            last_transition_time: at.map(t),
        });
    }
    p
}

#[test]
fn a_pod_can_time_out_only_while_it_was_not_ready_at_its_deadline() {
    use ConditionStatus::{False, True, Unknown};
    let mut no_start = started(None);
    no_start.failure_details = Some(Box::default());
    // (name, pod, want deadline) with a 100 s timeout from t(10).
    let cases: Vec<(&str, Pod, Option<i64>)> = vec![
        ("no Ready condition", started(None), Some(110)),
        (
            "Ready=False since before",
            started(Some((False, Some(12)))),
            Some(110),
        ),
        (
            "Ready=False at the deadline",
            started(Some((False, Some(110)))),
            Some(110),
        ),
        (
            "Ready=Unknown",
            started(Some((Unknown, Some(50)))),
            Some(110),
        ),
        (
            "Ready=False without a time",
            started(Some((False, None))),
            Some(110),
        ),
        ("Ready now", started(Some((True, Some(20)))), None),
        (
            "Ready=False after the deadline",
            started(Some((False, Some(111)))),
            None,
        ),
        ("no start time", no_start, None),
        ("failed", started(None).phase(PodPhase::Failed), None),
        (
            "being deleted",
            started(None).deleted(t(50), Some(30)),
            None,
        ),
    ];
    for (name, p, want) in cases {
        assert_eq!(deadline(&settings(100), &p), want.map(t), "{name}");
    }
}

#[test]
fn the_reason_is_the_ready_conditions_else_not_ready() {
    let mut p = started(Some((ConditionStatus::False, Some(12))));
    let f = failure(&settings(300), &p);
    assert_eq!(f.condition_type, READY_TIMEOUT_CONDITION);
    assert_eq!(f.reason, NOT_READY);
    assert!(
        f.message.contains("Ready=False 5m after it started"),
        "{}",
        f.message
    );
    if let Some(d) = p.failure_details.as_deref_mut() {
        d.ready_reason = "ContainersNotReady".into();
    }
    assert_eq!(failure(&settings(300), &p).reason, "ContainersNotReady");
    if let Some(d) = p.failure_details.as_deref_mut() {
        d.ready_reason = "x".repeat(1000);
    }
    let cut = failure(&settings(300), &p).reason;
    assert!(cut.len() <= 128 && cut.starts_with("xxxx"), "{cut}");
}
