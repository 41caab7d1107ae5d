use super::*;
use job_decider_core::model::{ConditionStatus, PodFailurePolicyAction, PodFailurePolicyRule};

#[test]
fn rules_are_described() {
    let rule = PodFailurePolicyRule {
        action: PodFailurePolicyAction::Ignore,
        on_exit_codes: None,
        on_pod_conditions: vec![OnPodConditionsPattern {
            condition_type: "DisruptionTarget".into(),
            status: ConditionStatus::True,
        }],
    };
    assert_eq!(
        describe_rule(&rule),
        "Ignore on pod conditions DisruptionTarget=True"
    );
}

#[test]
fn backoff_says_until_when_and_after_which_failure() {
    let now = pbjson_types::Timestamp {
        seconds: 1_748_858_400, // 2025-06-02T10:00:00Z
        nanos: 0,
    };
    let b = pb::BackoffWait {
        until: Some(pbjson_types::Timestamp {
            seconds: now.seconds + 27,
            nanos: 0,
        }),
        delay: Some(pbjson_types::Duration {
            seconds: 20,
            nanos: 0,
        }),
        failures: 2,
        last_failure_time: None,
        index: None,
    };
    let mut out = String::new();
    write_backoff(&mut out, &b, &now);
    assert_eq!(
        out,
        "Backoff: new pods wait until 10:00:27, in 27s (20s after the 2nd failure)\n"
    );
}

#[test]
fn failed_pods_and_avoided_nodes_are_shown() {
    let pod = |name: &str| pb::PodReference {
        name: name.into(),
        uid: format!("{name}-uid"),
    };
    let avoid = |nodes: &[&str]| {
        Some(pb::AvoidNodes {
            nodes: nodes.iter().map(|n| n.to_string()).collect(),
            mode: "Required".into(),
        })
    };
    let response = pb::DecideJobResponse {
        actions: vec![
            pb::Action {
                kind: Some(pb::action::Kind::FailPods(pb::FailPods {
                    pods: vec![pb::PodFailure {
                        pod: Some(pod("p-0")),
                        condition_type: "job-decider.dev/PendingTimeout".into(),
                        reason: "ImagePullBackOff".into(),
                        message: "pending 5m0s, limit 5m0s".into(),
                        force_delete: false,
                    }],
                })),
            },
            pb::Action {
                kind: Some(pb::action::Kind::CreatePods(pb::CreatePods {
                    pods: vec![
                        pb::PodCreation {
                            completion_index: Some(0),
                            avoid_nodes: avoid(&["n1", "n2"]),
                            ..Default::default()
                        },
                        pb::PodCreation {
                            completion_index: Some(1),
                            avoid_nodes: avoid(&["n1", "n2"]),
                            ..Default::default()
                        },
                        pb::PodCreation {
                            completion_index: Some(2),
                            ..Default::default()
                        },
                    ],
                })),
            },
        ],
        ..Default::default()
    };
    let mut out = String::new();
    write_actions(&mut out, &response, &pb::JobExplanation::default());
    assert!(
        out.contains(
            "1. mark failed (condition job-decider.dev/PendingTimeout) p-0 (ImagePullBackOff: pending 5m0s, limit 5m0s)"
        ),
        "{out}"
    );
    assert!(
        out.contains("2. create 3 pod(s) for indexes 0, 1, 2; avoiding nodes n1, n2 (Required)\n"),
        "{out}"
    );
}

#[test]
fn a_coming_failed_condition_says_what_it_waits_for() {
    let c = pb::ComingCondition {
        interim: "FailureTarget".into(),
        terminal: "Failed".into(),
        reason: "BackoffLimitExceeded".into(),
        message: "Job has reached the specified backoff limit".into(),
        terminal_now: false,
        waits_for: "the 2 terminating pod(s) are gone".into(),
        at: None,
    };
    let mut out = String::new();
    write_coming(&mut out, &c, &pbjson_types::Timestamp::default());
    assert!(
        out.starts_with(
            "Next condition: FailureTarget (BackoffLimitExceeded) now, then Failed (BackoffLimitExceeded) once the 2 terminating pod(s) are gone"
        ),
        "{out}"
    );
}

#[test]
fn a_capped_jobset_plan_says_what_it_left_out_and_when_to_come_back() {
    use job_decider_api::pb;
    let response = pb::DecideJobSetResponse {
        explanation: Some(pb::JobSetExplanation {
            active_jobs: vec!["js-a-0".into(), "js-a-1".into()],
            active_jobs_omitted: 7,
            evaluations_omitted: 3,
            summary: "creating Jobs".into(),
            ..Default::default()
        }),
        requeue_after: Some(pbjson_types::Duration::default()),
        ..Default::default()
    };
    let text = explain_jobset(&response);
    assert!(
        text.contains("active: js-a-0, js-a-1, and 7 more"),
        "{text}"
    );
    assert!(text.contains("3 more evaluations not listed"), "{text}");
    assert!(text.contains("Decide again after 0s"), "{text}");
    let whole = explain_jobset(&pb::DecideJobSetResponse::default());
    assert!(!whole.contains("Decide again"), "{whole}");
}
