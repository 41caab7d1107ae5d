use super::*;
use job_decider_core::model::{ControllerState, Expectations};
use job_decider_core::model::{
    JobCondition, JobStatus, PodFailurePolicy, PodFailurePolicyAction, PodFailurePolicyRule,
    UncountedTerminatedPods,
};
use job_decider_core::time::Time;

fn snapshot() -> Snapshot {
    let mut job = job_decider_core::fixtures::job();
    job.spec.pod_failure_policy = Some(PodFailurePolicy {
        rules: vec![PodFailurePolicyRule {
            action: PodFailurePolicyAction::Count,
            on_exit_codes: None,
            on_pod_conditions: vec![],
        }],
    });
    Snapshot {
        job,
        pods: vec![],
        now: Time::from_unix_nanos(0),
        state: ControllerState::default(),
        controller_name: String::new(),
        expectations: Expectations::default(),
        nodes: Vec::new(),
    }
}

#[test]
fn finished_jobs_come_from_added_terminal_conditions() {
    let snapshot = snapshot();
    let failed = JobCondition {
        condition_type: JobConditionType::Failed,
        status: ConditionStatus::True,
        last_probe_time: None,
        last_transition_time: None,
        reason: "BackoffLimitExceeded".into(),
        message: String::new(),
    };
    let status = JobStatus {
        conditions: vec![failed],
        uncounted_terminated_pods: Some(UncountedTerminatedPods::default()),
        ..Default::default()
    };
    let plan = Plan {
        actions: vec![Action::UpdateStatus(Box::new(status.clone()))],
        ..Default::default()
    };
    assert_eq!(
        finished_jobs(&snapshot, &plan),
        [("Failed", "BackoffLimitExceeded")]
    );
    // Already Failed before the plan: nothing newly finished.
    let mut done = snapshot.clone();
    done.job.status = status;
    assert!(finished_jobs(&done, &plan).is_empty());
    assert!(finished_jobs(&snapshot, &Plan::default()).is_empty());
}

/// A reason is a label from a fixed set, whatever the request's condition
/// said (issue 22, item 6).
#[test]
fn finish_reason_from_the_request_is_a_label_from_a_fixed_set() {
    for (_, reason) in FINISH_REASONS {
        assert_eq!(finish_reason_label(reason), reason);
    }
    assert_eq!(
        finish_reason_label("PodFailurePolicy_oom-killed"),
        NAMED_RULE_REASON_LABEL
    );
    assert_eq!(finish_reason_label("x".repeat(10_000).as_str()), "other");
    assert_eq!(finish_reason_label(""), "other");
    assert_eq!(finish_reason_label("backofflimitexceeded"), "other");
}

/// The cached handles are indexed by code number: the table must list
/// each code at its own number, or calls would be counted under another code.
#[test]
fn codes_are_listed_at_their_numbers() {
    for (i, code) in CODES.iter().enumerate() {
        assert_eq!(*code as i32, i32::try_from(i).unwrap_or(-1), "{code:?}");
    }
    assert_eq!(
        tonic::Code::from_i32(17),
        tonic::Code::Unknown,
        "a code past the table"
    );
}

#[test]
fn methods_index_their_rpc_and_other_last() {
    for (i, rpc) in RPCS.iter().enumerate() {
        assert_eq!(method_index(rpc.method), i);
        assert_eq!(method_name(i), rpc.method);
    }
    assert_eq!(method_index("Nope"), RPCS.len());
    assert_eq!(method_name(RPCS.len()), "other");
}

#[test]
fn action_kinds_match_their_index() {
    let kinds = [
        Action::AdoptPods(vec![]),
        Action::ReleasePods(vec![]),
        Action::CreatePods(vec![]),
        Action::DeletePods(vec![]),
        Action::RemoveFinalizers(vec![]),
        Action::UpdateStatus(Box::default()),
    ]
    .map(|a| action_kind(&a));
    assert_eq!(
        kinds,
        [
            "adoptPods",
            "releasePods",
            "createPods",
            "deletePods",
            "removeFinalizers",
            "updateStatus"
        ]
    );
}

#[test]
fn pod_ranges_are_decades() {
    for (pods, range) in [
        (0, "0"),
        (1, "1-10"),
        (10, "1-10"),
        (11, "11-100"),
        (1_000, "101-1000"),
        (1_001, "1001-10000"),
        (100_000, "10001-100000"),
        (100_001, "100001+"),
        (usize::MAX, "100001+"),
    ] {
        assert_eq!(POD_RANGES[pod_range(pods)], range, "{pods}");
    }
}

#[test]
fn code_names_are_canonical() {
    assert_eq!(
        code_name(tonic::Code::ResourceExhausted),
        "RESOURCE_EXHAUSTED"
    );
    assert_eq!(code_name(tonic::Code::Ok), "OK");
}
