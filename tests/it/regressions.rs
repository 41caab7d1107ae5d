//! Minimal snapshots found by the property tests (tests/properties.rs).
//!
//! Two kinds live here: core bugs, `#[ignore = "core bug: ..."]` until fixed,
//! asserting what upstream does; and upstream behaviours a property has to
//! allow for, asserted as upstream behaves so that the allowance stays tied
//! to a concrete case. None of the first kind is open at the moment.

use crate::generators::{base_job, running_pod, snapshot, t};
use job_decider_core::fixtures::{deletions, pod_failures};
use job_decider_core::model::*;
use job_decider_core::plan::{Action, Plan};
use job_decider_core::sync::decide;

const NOW: i64 = 100_000;

/// The status writes of a plan, in order.
fn status_writes(plan: &Plan) -> Vec<&JobStatus> {
    plan.actions
        .iter()
        .filter_map(|a| match a {
            Action::UpdateStatus(st) => Some(&**st),
            _ => None,
        })
        .collect()
}

/// The Job with a document whose only setting is a 60s pending timeout on
/// ImagePullBackOff, counted.
fn with_pending_timeout(mut job: Job) -> Job {
    use job_decider_core::model::{ExtendedAction, ExtendedFailurePolicy, PendingTimeout};
    job.extended_failure_policy = Some(std::sync::Arc::new(ExtendedFailurePolicy {
        pending_timeout: Some(PendingTimeout {
            seconds: 60,
            reasons: vec!["ImagePullBackOff".into()],
            action: ExtendedAction::Count,
        }),
        ..ExtendedFailurePolicy::default()
    }));
    job
}

/// A pod created 600s ago, Pending in ImagePullBackOff, scheduled at `scheduled_at`.
fn pulling_image(scheduled_at: Option<job_decider_core::time::Time>) -> Pod {
    use job_decider_core::model::PodFailureDetails;
    let mut pod = running_pod("p0", "uid-0", t(NOW - 600));
    pod.phase = PodPhase::Pending;
    pod.failure_details = Some(Box::new(PodFailureDetails {
        waiting_reasons: vec![("main".into(), "ImagePullBackOff".into())],
        scheduled_at,
        ..PodFailureDetails::default()
    }));
    pod
}

/// Upstream behaviour (not a bug), allowed for by `stopping_early_changes_no_count`.
///
/// A succeeding Job (SuccessCriteriaMet) deletes its active pods keeping their
/// finalizers, then, in the same sync, removes those finalizers without
/// counting the pods (only a failing Job counts its running pods as failed).
/// If the caller stops after the deletion, the next sync sees the pod
/// terminating, and with podReplacementPolicy TerminatingOrFailed a
/// terminating pod is a failed pod (`isPodFailed`), so it is counted as a
/// failure. upstream's syncJob has the same order (deleteActivePods before
/// trackJobStatusAndRemoveFinalizers), so a crash there has the same effect.
#[test]
fn cut_finishing_plan_counts_deleted_pods_as_failed() {
    let mut job = base_job();
    job.spec.parallelism = 2;
    job.spec.completions = Some(1);
    job.status.conditions.push(JobCondition {
        condition_type: JobConditionType::SuccessCriteriaMet,
        status: ConditionStatus::True,
        last_probe_time: Some(t(NOW - 10)),
        last_transition_time: Some(t(NOW - 10)),
        reason: "CompletionsReached".into(),
        message: "Reached expected number of succeeded pods".into(),
    });
    job.status.succeeded = 1;
    let running = running_pod("p0", "uid-0", t(NOW - 100));
    let s = snapshot(job, vec![running], t(NOW));

    // Uninterrupted: delete, then take the finalizer without counting the pod.
    let plan = decide(&s);
    assert!(matches!(&plan.actions[0], Action::DeletePods(d) if !d[0].remove_finalizer_first));
    assert!(
        plan.actions
            .iter()
            .any(|a| matches!(a, Action::RemoveFinalizers(r) if r[0].uid == "uid-0"))
    );
    assert!(status_writes(&plan).iter().all(|st| st.failed == 0));

    // Cut after the deletion: the pod is terminating and counts as failed.
    let mut cut = s.clone();
    cut.pods[0].deletion = Some(Deletion {
        timestamp: t(NOW),
        grace_period_seconds: Some(30),
    });
    let plan = decide(&cut);
    let writes = status_writes(&plan);
    assert_eq!(
        writes[0].uncounted_terminated_pods.as_ref().unwrap().failed,
        vec!["uid-0".to_string()]
    );
    assert_eq!(writes.last().unwrap().failed, 1);
}

/// Upstream behaviour (not a bug), allowed for by `stopping_early_changes_no_count`.
///
/// With restartPolicy OnFailure a Job fails once the restarts of its running
/// and pending pods reach backoffLimit (`pastBackoffLimitOnFailure`). The plan
/// deletes those pods before its status write records FailureTarget, as
/// upstream's syncJob does (deleteActivePods, then
/// trackJobStatusAndRemoveFinalizers). If the caller stops after the deletion
/// and the pods are gone by the next sync, nothing says the Job was failing:
/// here, with completions 0 reached, it completes instead. Writing the interim
/// condition before deleting would make the decision durable, but would
/// depart from upstream's order.
#[test]
fn cut_before_failure_target_forgets_restarts_of_deleted_pods() {
    let mut job = base_job();
    job.spec.parallelism = 0;
    job.spec.completions = Some(0);
    job.spec.backoff_limit = 0;
    job.spec.template.restart_policy = RestartPolicy::OnFailure;
    let mut restarted = running_pod("p0", "uid-0", t(NOW - 100));
    restarted.has_tracking_finalizer = false;
    restarted.container_statuses = vec![ContainerStatus {
        name: "main".into(),
        terminated: None,
        restart_count: 1,
    }];
    let s = snapshot(job, vec![restarted], t(NOW));

    let plan = decide(&s);
    assert!(matches!(&plan.actions[0], Action::DeletePods(_)));
    let first = status_writes(&plan)[0];
    assert!(
        first
            .conditions
            .iter()
            .any(|c| c.condition_type == JobConditionType::FailureTarget
                && c.reason == "BackoffLimitExceeded")
    );

    // Cut after the deletion; the pod, without a finalizer, is gone.
    let mut cut = s.clone();
    cut.pods.clear();
    let plan = decide(&cut);
    let last = *status_writes(&plan).last().unwrap();
    assert!(last.has_true_condition(&JobConditionType::Complete));
    assert!(!last.has_true_condition(&JobConditionType::FailureTarget));
}

/// Core bug found by `stopping_early_changes_no_count` with a pending timeout
/// (fixed): a sync that scales a Job down deleted a stuck Pending pod and, in
/// the same plan, failed it for its pending timeout. With completions reached
/// once it is gone (here completions 0, parallelism 0), the deletion takes
/// the finalizer first and the Job completes: the pod was marked failed with
/// our condition and never counted. A pod the plan deletes is not also failed.
#[test]
fn stuck_pod_deleted_by_the_same_plan_is_not_failed_for_its_pending_timeout() {
    use job_decider_core::extended::PENDING_TIMEOUT_CONDITION;

    for (completions, parallelism) in [(0, 0), (1, 0), (3, 1)] {
        let mut job = with_pending_timeout(base_job());
        job.spec.parallelism = parallelism;
        job.spec.completions = Some(completions);
        let mut others = vec![pulling_image(None)];
        // A second stuck pod that stays when one is kept (parallelism 1).
        let mut second = others[0].clone();
        second.name = "p1".into();
        second.uid = "uid-1".into();
        second.creation_timestamp = Some(t(NOW - 500));
        others.push(second);
        let s = snapshot(job, others, t(NOW));

        let plan = decide(&s);
        let deleted: Vec<&str> = deletions(&plan)
            .into_iter()
            .map(|d| d.pod.uid.as_str())
            .collect();
        let failed: Vec<&str> = pod_failures(&plan)
            .into_iter()
            .inspect(|f| assert_eq!(f.condition_type, PENDING_TIMEOUT_CONDITION))
            .map(|f| f.pod.uid.as_str())
            .collect();
        assert!(
            !deleted.is_empty(),
            "completions {completions}, parallelism {parallelism}: nothing deleted"
        );
        assert!(
            failed.iter().all(|uid| !deleted.contains(uid)),
            "completions {completions}, parallelism {parallelism}: failed {failed:?} and deleted {deleted:?}"
        );
        // The pod that stays is still failed for its timeout.
        if parallelism > 0 {
            assert_eq!(failed.len(), 1, "{:?}", plan.actions);
        }
    }
}

/// Core bug found by `document_plans_converge` with a terminating timeout
/// (fixed): a sync that counts the Job's last success decides
/// SuccessCriteriaMet and, in the same plan, failed a pod stuck terminating
/// for its terminating timeout. The finishing Job then takes that pod's
/// finalizer without counting it (a succeeding Job counts no terminating
/// pod): the pod ended Failed with our condition and was never counted. A
/// Job that finishes in this plan fails no pod for a timeout, as one that was
/// finishing before it.
#[test]
fn terminating_timeout_fails_no_pod_of_a_job_that_succeeds_in_the_same_sync() {
    use job_decider_core::extended::TERMINATING_TIMEOUT_CONDITION;
    use job_decider_core::model::{
        ExtendedAction, ExtendedFailurePolicy, PodFailureDetails, TerminatingNodes,
        TerminatingTimeout,
    };
    use std::sync::Arc;

    let mut job = base_job();
    job.spec.parallelism = 1;
    job.spec.completions = Some(1);
    // The setting the timeout is for: a terminating pod is not yet a failure.
    job.spec.pod_replacement_policy = PodReplacementPolicy::Failed;
    job.extended_failure_policy = Some(Arc::new(ExtendedFailurePolicy {
        terminating_timeout: Some(TerminatingTimeout {
            seconds: 60,
            on_nodes: TerminatingNodes::Any,
            action: ExtendedAction::Count,
            force_delete: true,
        }),
        ..ExtendedFailurePolicy::default()
    }));
    let mut succeeded = running_pod("p0", "uid-0", t(NOW - 900));
    succeeded.phase = PodPhase::Succeeded;
    let mut stuck = running_pod("p1", "uid-1", t(NOW - 900));
    stuck.deletion = Some(Deletion {
        timestamp: t(NOW - 600),
        grace_period_seconds: Some(30),
    });
    stuck.failure_details = Some(Box::new(PodFailureDetails {
        node_name: "node-a".into(),
        ..PodFailureDetails::default()
    }));
    let s = snapshot(job, vec![succeeded, stuck.clone()], t(NOW));

    let plan = decide(&s);
    let last = status_writes(&plan)
        .last()
        .copied()
        .cloned()
        .expect("a status write");
    assert!(
        last.conditions
            .iter()
            .any(|c| c.condition_type == JobConditionType::SuccessCriteriaMet),
        "the Job succeeds in this plan: {:?}",
        plan.actions
    );
    let failed: Vec<_> = pod_failures(&plan)
        .into_iter()
        .filter(|f| f.condition_type == TERMINATING_TIMEOUT_CONDITION)
        .collect();
    assert!(failed.is_empty(), "failed {failed:?}: {:?}", plan.actions);
    // And the finishing Job takes its finalizer uncounted, as upstream does.
    assert_eq!(last.failed, 0, "{:?}", plan.actions);

    // Without the success the same pod is failed: the test reaches the timeout.
    let mut running = s.clone();
    running.pods[0].phase = PodPhase::Running;
    let plan = decide(&running);
    assert!(
        plan.actions
            .iter()
            .any(|a| matches!(a, Action::FailPods(f) if f.iter().any(|f| f.pod.uid == stuck.uid))),
        "{:?}",
        plan.actions
    );
}

/// Core bug found by `document_plans_converge` (fixed): a pod whose pending
/// timeout came due in under a second asked for a requeue of that fraction
/// (452ms), below the one-second floor every other requeue keeps. A timeout's
/// requeue is at least a second, as the backoff's is.
#[test]
fn timeout_requeue_is_never_under_a_second() {
    use std::time::Duration;

    let mut job = with_pending_timeout(base_job());
    job.spec.parallelism = 1;
    job.spec.completions = Some(1);
    // Scheduled 59.548s ago: the timeout comes due in 452ms.
    let stuck = pulling_image(Some(t(NOW - 60).saturating_add(Duration::from_millis(452))));
    let plan = decide(&snapshot(job, vec![stuck], t(NOW)));
    assert_eq!(
        plan.requeue_after,
        Some(Duration::from_secs(1)),
        "{:?}",
        plan.actions
    );
}
