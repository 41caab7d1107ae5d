//! Tests of the JobSet conversion: bad input named by field, bounds, interrupts, and the way back to the wire.

use super::*;
use job_decider_core::fixtures::AfterAsks;

fn request(json: serde_json::Value) -> pb::DecideJobSetRequest {
    serde_json::from_value(json).unwrap_or_default()
}

fn fields(errs: &[Violation]) -> Vec<&str> {
    errs.iter().map(|v| v.field.as_str()).collect()
}

#[test]
fn missing_jobset_and_now_are_named() {
    let errs = snapshot_from_pb(pb::DecideJobSetRequest::default())
        .err()
        .unwrap_or_default();
    assert_eq!(fields(&errs), ["jobSet", "now"]);
}

#[test]
fn missing_uid_and_bad_labels_are_named() {
    let req = request(serde_json::json!({
        "now": "2024-01-01T00:00:00Z",
        "jobSet": {
            "metadata": {"name": "js"},
            "spec": {"replicatedJobs": [{"name": "rj", "replicas": 2}]}
        },
        "jobs": [
            {"metadata": {"name": "js-rj-0", "uid": "u0", "labels": {
                "jobset.sigs.k8s.io/replicatedjob-name": "rj",
                "jobset.sigs.k8s.io/job-index": "zero",
                "jobset.sigs.k8s.io/restart-attempt": "0"}}},
            {"metadata": {"name": "js-rj-1", "labels": {
                "jobset.sigs.k8s.io/replicatedjob-name": "other",
                "jobset.sigs.k8s.io/job-index": "1"}}},
            {"metadata": {"name": "js-rj-2", "uid": "u2", "labels": {
                "jobset.sigs.k8s.io/replicatedjob-name": "rj",
                "jobset.sigs.k8s.io/job-index": "2",
                "jobset.sigs.k8s.io/restart-attempt": "0"}}}
        ]
    }));
    let errs = snapshot_from_pb(req).err().unwrap_or_default();
    assert_eq!(
        fields(&errs),
        [
            "jobSet.metadata.uid",
            "jobs[0].metadata.labels[jobset.sigs.k8s.io/job-index]",
            "jobs[1].metadata.uid",
            "jobs[1].metadata.labels[jobset.sigs.k8s.io/restart-attempt]",
            "jobs[1].metadata.labels[jobset.sigs.k8s.io/replicatedjob-name]",
            "jobs[2].metadata.labels[jobset.sigs.k8s.io/job-index]",
        ]
    );
    assert_eq!(
        errs[1].to_string(),
        "jobs[0].metadata.labels[jobset.sigs.k8s.io/job-index]: Invalid value: \"zero\": \
             must be an integer"
    );
}

#[test]
fn unknown_action_and_strategy_are_not_supported() {
    let req = pb::ValidateJobSetRequest {
        job_set: serde_json::from_value(serde_json::json!({
            "spec": {"failurePolicy": {"restartStrategy": "Sometimes",
                "rules": [{"action": "FailJob"}, {"name": "x"}]}}
        }))
        .ok(),
    };
    let errs = validate_jobset_request(req).err().unwrap_or_default();
    assert_eq!(
        fields(&errs),
        [
            "spec.failurePolicy.restartStrategy",
            "spec.failurePolicy.rules[0].action",
            "spec.failurePolicy.rules[1].action",
        ]
    );
    assert_eq!(
        errs[0].detail,
        "supported values: \"Recreate\", \"BlockingRecreate\", \"InPlaceRestart\""
    );
    assert_eq!(errs[1].kind, ViolationKind::NotSupported);
    // The actions listed are the core's spellings, in one order; RecreateJob is read, not listed.
    assert_eq!(
        errs[1].detail,
        "supported values: \"FailJobSet\", \"RestartJobSet\", \"RestartJobSetAndIgnoreMaxRestarts\", \
         \"RestartJob\", \"RestartJobAndIgnoreMaxRestarts\""
    );
    for &action in FailurePolicyAction::ALL {
        assert_eq!(FailurePolicyAction::parse(action.as_str()), Some(action));
    }
}

#[test]
fn validate_reports_webhook_violations() {
    let req = pb::ValidateJobSetRequest {
        job_set: serde_json::from_value(serde_json::json!({
            "spec": {"replicatedJobs": [{"name": "workers"}],
                "failurePolicy": {"rules": [
                    {"name": "r-leader", "action": "RecreateJob",
                     "onJobFailureMessagePatterns": ["[z-a]"]},
                    {"action": "FailJobSet", "targetReplicatedJobs": ["leader"]}]}}
        }))
        .ok(),
    };
    let resp = validate_jobset_request(req).unwrap_or_default();
    let got: Vec<_> = resp.violations.iter().map(|v| v.field.as_str()).collect();
    assert_eq!(
        got,
        [
            "spec.failurePolicy.rules[0].name",
            "spec.failurePolicy.rules[0].onJobFailureMessagePatterns[0]",
            "spec.failurePolicy.rules[1].targetReplicatedJobs[0]",
        ]
    );
}

#[test]
fn jobs_owned_by_another_controller_are_skipped() {
    let req = request(serde_json::json!({
        "now": "2024-01-01T00:00:00Z",
        "jobSet": {"metadata": {"name": "js", "uid": "mine"},
                   "spec": {"replicatedJobs": [{"name": "rj"}]}},
        "jobs": [{"metadata": {"name": "stray", "ownerReferences": [
            {"uid": "theirs", "controller": true}]}}]
    }));
    let snap = snapshot_from_pb(req).unwrap_or_default();
    assert!(snap.jobs.is_empty());
    assert_eq!(snap.job_set.uid, "mine");
}

#[test]
fn mismatched_status_array_is_undecidable() {
    let req = request(serde_json::json!({
        "now": "2024-01-01T00:00:00Z",
        "jobSet": {"metadata": {"name": "js", "uid": "u"},
                   "spec": {"replicatedJobs": [{"name": "rj", "replicas": 3}]},
                   "status": {"replicatedJobsStatus": [{"name": "rj", "jobRestarts": [0, 1]}]}}
    }));
    let errs = snapshot_from_pb(req).err().unwrap_or_default();
    assert_eq!(
        fields(&errs),
        ["jobSet.status.replicatedJobsStatus[0].jobRestarts"]
    );
}

#[test]
fn rule_names_are_defaulted_before_deciding() {
    let req = request(serde_json::json!({
        "now": "2024-01-01T00:00:00Z",
        "jobSet": {"metadata": {"name": "js", "uid": "u"},
                   "spec": {"replicatedJobs": [{"name": "rj"}],
                            "failurePolicy": {"rules": [{"name": "a", "action": "FailJobSet"},
                                                         {"action": "RestartJobSet"}]}}}
    }));
    let snap = snapshot_from_pb(req).unwrap_or_default();
    let names: Vec<_> = snap
        .job_set
        .spec
        .failure_policy
        .map(|p| p.rules.into_iter().map(|r| r.name).collect())
        .unwrap_or_default();
    assert_eq!(names, ["a", "failurePolicyRule1"]);
}

#[test]
fn names_too_long_for_labels_or_objects_are_rejected() {
    let long = "a".repeat(64);
    let job_name = "j".repeat(254);
    let req = request(serde_json::json!({
        "now": "2024-01-01T00:00:00Z",
        "jobSet": {"metadata": {"name": long, "uid": "u"},
                   "spec": {"replicatedJobs": [{"name": long}],
                            "failurePolicy": {"rules": [
                                {"name": "r".repeat(129), "action": "FailJobSet"}]}}},
        "jobs": [{"metadata": {"name": job_name, "uid": "j"}}]
    }));
    let errs = snapshot_from_pb(req).err().unwrap_or_default();
    let too_long: Vec<&str> = errs
        .iter()
        .filter(|v| v.kind == ViolationKind::TooLong)
        .map(|v| v.field.as_str())
        .collect();
    assert_eq!(
        too_long,
        [
            "jobSet.metadata.name",
            "jobSet.spec.replicatedJobs[0].name",
            "jobSet.spec.failurePolicy.rules[0].name",
            "jobs[0].metadata.name",
        ]
    );
    assert!(
            errs[0]
                .to_string()
                .ends_with("may not be more than 63 bytes (it is the jobset-name label value of every child Job); it has 64"),
            "{}",
            errs[0]
        );
}

#[test]
fn a_capped_plan_asks_to_decide_again_at_once() {
    let req = |replicas: i32| {
        request(serde_json::json!({
            "now": "2024-01-01T00:00:00Z",
            "explain": true,
            "jobSet": {"metadata": {"name": "js", "uid": "u"},
                       "spec": {"replicatedJobs": [{"name": "rj", "replicas": replicas}]}}
        }))
    };
    let resp = decide_jobset_request(req(501)).unwrap_or_default();
    assert_eq!(resp.jobs_to_create.len(), 500);
    assert_eq!(resp.requeue_after, Some(pbjson_types::Duration::default()));
    let resp = decide_jobset_request(req(500)).unwrap_or_default();
    assert_eq!(resp.jobs_to_create.len(), 500);
    assert_eq!(resp.requeue_after, None);
}
/// A JobSet of `jobs` child Jobs and one rule of two patterns.
fn jobs_request(jobs: usize) -> pb::DecideJobSetRequest {
    let mut req = request(serde_json::json!({
        "now": "2024-01-01T00:00:00Z",
        "jobSet": {"metadata": {"name": "js", "uid": "u"},
                   "spec": {"replicatedJobs": [{"name": "rj", "replicas": jobs}],
                            "failurePolicy": {"rules": [{"name": "r", "action": "FailJobSet",
                                "onJobFailureMessagePatterns": ["a+", "b+"]}]}}}
    }));
    req.jobs = (0..jobs)
        .map(|i| {
            request(serde_json::json!({"jobs": [{"metadata": {
                    "name": format!("js-rj-{i}"), "uid": format!("u{i}"), "labels": {
                        "jobset.sigs.k8s.io/replicatedjob-name": "rj",
                        "jobset.sigs.k8s.io/job-index": i.to_string(),
                        "jobset.sigs.k8s.io/restart-attempt": "0"}}}]}))
            .jobs
            .remove(0)
        })
        .collect();
    req
}

/// Issue 22, item 1: a JobSet's conversion asks before each pattern and child Job.
#[test]
fn a_jobset_conversion_asks_before_each_pattern_and_job_and_stops_when_told() {
    let never = AfterAsks::new(usize::MAX);
    let converted = snapshot_until(jobs_request(100), &never);
    assert_eq!(converted.map(|s| s.jobs.len()).ok(), Some(100));
    assert_eq!(never.asked(), 2 + 100, "two patterns, then 100 Jobs");
    // Stopped after the patterns and half the Jobs: no snapshot, nothing more converted.
    let half = AfterAsks::new(2 + 50);
    assert!(matches!(
        snapshot_until(jobs_request(100), &half),
        Err(Unconverted::Cancelled)
    ));
    assert_eq!(half.asked(), 2 + 51);
    // Stopped between the two patterns: cancelled, not a snapshot missing a pattern.
    let first_pattern = AfterAsks::new(1);
    assert!(matches!(
        snapshot_until(jobs_request(1), &first_pattern),
        Err(Unconverted::Cancelled)
    ));
    // The server's whole path answers as DecideJob does for a call nobody waits for.
    let flag = std::sync::atomic::AtomicBool::new(true);
    let err = crate::decide_jobset_until(jobs_request(1), &flag).err();
    assert!(matches!(err, Some(crate::ApiError::Cancelled)), "{err:?}");
}

/// Values were quoted with Rust's `{:?}` (`"\u{1}"`), not Go's `%q` (`"\x01"`) as every
/// other message of the service and upstream's field errors are.
#[test]
fn values_were_quoted_with_rust_debug_not_go_quote() {
    let req = request(serde_json::json!({
        "now": "2025-01-01T00:00:00Z",
        "jobSet": {"metadata": {"name": "js", "namespace": "default", "uid": "u"},
            "spec": {"replicatedJobs": [{"name": "w\u{1}", "replicas": 1}, {"name": "w\u{1}", "replicas": 1}]}},
        "jobs": [{"metadata": {"name": "c", "uid": "c1", "labels": {
            "jobset.sigs.k8s.io/job-index": "z\u{7f}é",
            "jobset.sigs.k8s.io/restart-attempt": "0",
            "jobset.sigs.k8s.io/replicatedjob-name": "w"}}}]
    }));
    let errs = snapshot_from_pb(req).err().unwrap_or_default();
    let values: Vec<&str> = errs.iter().filter_map(|v| v.value.as_deref()).collect();
    assert!(values.contains(&"\"w\\x01\""), "{values:?}");
    assert!(values.contains(&"\"z\\x7fé\""), "{values:?}");
}
