//! Builders for tests: a valid defaulted Job and pods in every state, so each
//! test states only what it is about. Compiled for the crate's unit tests and,
//! with the `test-util` feature, for `tests/` and `benches/` (which enable it
//! through the crate's dev-dependency on itself); never part of a release build.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::model::*;
use crate::plan::{Action, Plan, PodCreation, PodDeletion, PodFailure};
use crate::time::Time;

/// `secs` seconds after the epoch.
pub fn t(secs: i64) -> Time {
    Time::from_unix_nanos(secs * 1_000_000_000)
}

/// The Job's UID; the generated selector and template labels name it.
pub const JOB_UID: &str = "job-uid";
/// The Job's name.
pub const JOB_NAME: &str = "job";

/// The labels the API server puts on the template of a Job with a generated selector.
pub fn template_labels() -> BTreeMap<String, String> {
    [
        ("batch.kubernetes.io/controller-uid", JOB_UID),
        ("batch.kubernetes.io/job-name", JOB_NAME),
        ("controller-uid", JOB_UID),
        ("job-name", JOB_NAME),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect()
}

/// A NonIndexed Job "default/job" (uid "job-uid") with parallelism 1,
/// completions 1, backoffLimit 6, restartPolicy Never and one container
/// "main": what the API server stores for the smallest Job manifest.
pub fn job() -> Job {
    let mut selector = LabelSelector::default();
    selector
        .match_labels
        .insert("batch.kubernetes.io/controller-uid".into(), JOB_UID.into());
    Job {
        namespace: "default".into(),
        name: JOB_NAME.into(),
        uid: JOB_UID.into(),
        being_deleted: false,
        spec: JobSpec {
            parallelism: 1,
            completions: Some(1),
            active_deadline_seconds: None,
            pod_failure_policy: None,
            success_policy: None,
            backoff_limit: 6,
            backoff_limit_per_index: None,
            max_failed_indexes: None,
            selector,
            manual_selector: false,
            completion_mode: CompletionMode::NonIndexed,
            suspend: false,
            pod_replacement_policy: PodReplacementPolicy::TerminatingOrFailed,
            managed_by: None,
            ttl_seconds_after_finished: None,
            template: PodTemplate {
                labels: template_labels(),
                finalizers: vec![],
                completion_index_env_everywhere: false,
                restart_policy: RestartPolicy::Never,
                containers: vec!["main".into()],
                init_containers: vec![],
            },
        },
        status: JobStatus::default(),
        extended_failure_policy: None,
    }
}

/// The controller reference every pod of [`job`] carries.
pub fn job_owner() -> OwnerRef {
    OwnerRef {
        api_version: "batch/v1".into(),
        kind: "Job".into(),
        name: JOB_NAME.into(),
        uid: JOB_UID.into(),
    }
}

/// The same Job in Indexed mode with the given completions and parallelism.
pub fn indexed_job(completions: i32, parallelism: i32) -> Job {
    let mut j = job();
    j.spec.completion_mode = CompletionMode::Indexed;
    j.spec.completions = Some(completions);
    j.spec.parallelism = parallelism;
    j
}

/// A Running pod `name` (uid `<name>-uid`) owned by [`job`], with the tracking
/// finalizer, scheduled, created at t(0).
pub fn pod(name: &str) -> Pod {
    running_pod(name, &format!("{name}-uid"), t(0))
}

/// A Running, scheduled pod owned by [`job`], with the tracking finalizer, created at `created`.
pub fn running_pod(name: &str, uid: &str, created: Time) -> Pod {
    Pod {
        name: name.into(),
        uid: uid.into(),
        labels: template_labels().into(),
        completion_index: None,
        index_failure_count: 0,
        index_ignored_failure_count: 0,
        controller: Some(Arc::new(job_owner())),
        owners_name_job: true,
        has_tracking_finalizer: true,
        creation_timestamp: Some(created),
        deletion: None,
        scheduled: true,
        sidecar_init_containers: vec![],
        phase: PodPhase::Running,
        conditions: vec![],
        container_statuses: vec![],
        init_container_statuses: vec![],
        failure_details: None,
    }
}

/// A terminated status of container `name` with this exit code.
pub fn terminated(name: &str, exit_code: i32, finished_at: Time) -> ContainerStatus {
    ContainerStatus {
        name: name.into(),
        terminated: Some(Terminated {
            exit_code,
            finished_at: Some(finished_at),
        }),
        restart_count: 0,
    }
}

/// A snapshot of `job` and `pods` at `now`, with no carried-over state or pending expectations.
pub fn snapshot(job: Job, pods: Vec<Pod>, now: Time) -> Snapshot {
    Snapshot {
        job,
        pods,
        now,
        state: ControllerState::default(),
        controller_name: String::new(),
        expectations: Expectations::default(),
        nodes: Vec::new(),
    }
}

/// Chainable tweaks of a fixture pod.
pub trait PodExt: Sized {
    /// Set the phase.
    fn phase(self, phase: PodPhase) -> Self;
    /// Set the completion index.
    fn index(self, i: i32) -> Self;
    /// Add a terminated regular container with this exit code, finished at `at`.
    fn exit(self, container: &str, code: i32, at: Time) -> Self;
    /// Add a terminated init container with this exit code, finished at `at`.
    fn init_exit(self, container: &str, code: i32, at: Time) -> Self;
    /// Add a condition with status True, transitioned at `at`.
    fn condition(self, condition_type: &str, at: Time) -> Self;
    /// Mark as being deleted at `at` with the grace period.
    fn deleted(self, at: Time, grace: Option<i64>) -> Self;
    /// Drop the tracking finalizer.
    fn without_finalizer(self) -> Self;
    /// Set the index failure-count annotations.
    fn failure_counts(self, failed: i32, ignored: i32) -> Self;
}

impl PodExt for Pod {
    fn phase(mut self, phase: PodPhase) -> Self {
        self.phase = phase;
        self
    }
    fn index(mut self, i: i32) -> Self {
        self.completion_index = Some(i);
        self
    }
    fn exit(mut self, container: &str, code: i32, at: Time) -> Self {
        self.container_statuses
            .push(terminated(container, code, at));
        self
    }
    fn init_exit(mut self, container: &str, code: i32, at: Time) -> Self {
        self.init_container_statuses
            .push(terminated(container, code, at));
        self
    }
    fn condition(mut self, condition_type: &str, at: Time) -> Self {
        self.conditions.push(PodCondition {
            condition_type: condition_type.into(),
            status: ConditionStatus::True,
            last_transition_time: Some(at),
        });
        self
    }
    fn deleted(mut self, at: Time, grace: Option<i64>) -> Self {
        self.deletion = Some(Deletion {
            timestamp: at,
            grace_period_seconds: grace,
        });
        self
    }
    fn without_finalizer(mut self) -> Self {
        self.has_tracking_finalizer = false;
        self
    }
    fn failure_counts(mut self, failed: i32, ignored: i32) -> Self {
        self.index_failure_count = failed;
        self.index_ignored_failure_count = ignored;
        self
    }
}

/// A pod failure policy rule: `action` when any container exits with one of `values`.
pub fn exit_rule(action: PodFailurePolicyAction, values: Vec<i32>) -> PodFailurePolicyRule {
    PodFailurePolicyRule {
        action,
        on_exit_codes: Some(OnExitCodes {
            container_name: None,
            operator: ExitCodeOperator::In,
            values,
        }),
        on_pod_conditions: vec![],
    }
}

/// The pods a plan creates, in order.
pub fn creations(plan: &Plan) -> Vec<&PodCreation> {
    plan.actions
        .iter()
        .filter_map(|a| match a {
            Action::CreatePods(c) => Some(c),
            _ => None,
        })
        .flatten()
        .collect()
}

/// The pods a plan deletes, in order.
pub fn deletions(plan: &Plan) -> Vec<&PodDeletion> {
    plan.actions
        .iter()
        .filter_map(|a| match a {
            Action::DeletePods(d) => Some(d),
            _ => None,
        })
        .flatten()
        .collect()
}

/// The pods a plan fails for a timeout, in order.
pub fn pod_failures(plan: &Plan) -> Vec<&PodFailure> {
    plan.actions
        .iter()
        .filter_map(|a| match a {
            Action::FailPods(f) => Some(f),
            _ => None,
        })
        .flatten()
        .collect()
}

/// Every status a plan writes, in order.
pub fn statuses(plan: &Plan) -> Vec<&JobStatus> {
    plan.actions
        .iter()
        .filter_map(|a| match a {
            Action::UpdateStatus(s) => Some(s.as_ref()),
            _ => None,
        })
        .collect()
}

/// The last status a plan writes; a test that reads it expects one.
#[allow(clippy::expect_used)] // a test builder: no status is the test's failure
pub fn last_status(plan: &Plan) -> &JobStatus {
    statuses(plan)
        .last()
        .copied()
        .expect("the plan writes a status")
}

/// An interrupt that says "stop" from its `after`-th question on, counting the
/// questions: tests of the `_until` decisions and conversions check where they ask.
pub struct AfterAsks {
    asked: std::cell::Cell<usize>,
    after: usize,
}

impl AfterAsks {
    /// Answers "go on" to the first `after` questions, "stop" to every later one.
    pub fn new(after: usize) -> AfterAsks {
        AfterAsks {
            asked: std::cell::Cell::new(0),
            after,
        }
    }

    /// How many questions it was asked.
    pub fn asked(&self) -> usize {
        self.asked.get()
    }
}

impl crate::cancel::Interrupt for AfterAsks {
    fn interrupted(&self) -> bool {
        self.asked.set(self.asked.get() + 1);
        self.asked.get() > self.after
    }
}
