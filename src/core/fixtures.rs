//! Builders for tests: a valid defaulted Job and pods in every state, so each
//! test states only what it is about.

use std::collections::BTreeMap;

use crate::core::model::*;
use crate::core::time::Time;

/// `secs` seconds after the epoch.
pub fn t(secs: i64) -> Time {
    Time::from_unix_nanos(secs * 1_000_000_000)
}

/// A NonIndexed Job "default/job" (uid "job-uid") with parallelism 1,
/// completions 1, backoffLimit 6, restartPolicy Never and one container "main".
pub fn job() -> Job {
    let mut selector = LabelSelector::default();
    selector.match_labels.insert(
        "batch.kubernetes.io/controller-uid".into(),
        "job-uid".into(),
    );
    let mut labels = BTreeMap::new();
    for (k, v) in [
        ("batch.kubernetes.io/controller-uid", "job-uid"),
        ("batch.kubernetes.io/job-name", "job"),
        ("controller-uid", "job-uid"),
        ("job-name", "job"),
    ] {
        labels.insert(k.to_string(), v.to_string());
    }
    Job {
        namespace: "default".into(),
        name: "job".into(),
        uid: "job-uid".into(),
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
                labels,
                finalizers: vec![],
                completion_index_env_everywhere: false,
                restart_policy: RestartPolicy::Never,
                containers: vec!["main".into()],
                init_containers: vec![],
            },
        },
        status: JobStatus::default(),
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
    Pod {
        name: name.into(),
        uid: format!("{name}-uid"),
        labels: job().spec.template.labels,
        completion_index: None,
        index_failure_count: 0,
        index_ignored_failure_count: 0,
        controller: Some(OwnerRef {
            api_version: "batch/v1".into(),
            kind: "Job".into(),
            name: "job".into(),
            uid: "job-uid".into(),
        }),
        has_tracking_finalizer: true,
        creation_timestamp: Some(t(0)),
        deletion: None,
        scheduled: true,
        sidecar_init_containers: vec![],
        phase: PodPhase::Running,
        conditions: vec![],
        container_statuses: vec![],
        init_container_statuses: vec![],
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
        self.container_statuses.push(ContainerStatus {
            name: container.into(),
            terminated: Some(Terminated {
                exit_code: code,
                finished_at: Some(at),
            }),
            restart_count: 0,
        });
        self
    }
    fn init_exit(mut self, container: &str, code: i32, at: Time) -> Self {
        self.init_container_statuses.push(ContainerStatus {
            name: container.into(),
            terminated: Some(Terminated {
                exit_code: code,
                finished_at: Some(at),
            }),
            restart_count: 0,
        });
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
