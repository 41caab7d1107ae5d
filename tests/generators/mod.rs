//! Shared builders for the integration tests and benchmarks: a valid, defaulted
//! Job named "job" in "default" and pods owned by it. (The crate's own
//! `core::fixtures` is `cfg(test)` and cannot be used from `tests/`.)

#![allow(dead_code)]

use std::collections::BTreeMap;

use job_decider::core::model::*;
use job_decider::core::time::Time;

/// The Job's UID; the generated selector and template labels name it.
pub const JOB_UID: &str = "job-uid";
/// The Job's name.
pub const JOB_NAME: &str = "job";

/// `secs` seconds after the epoch.
pub fn t(secs: i64) -> Time {
    Time::from_unix_nanos(secs * 1_000_000_000)
}

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

/// A NonIndexed Job with parallelism 1, completions 1, backoffLimit 6,
/// restartPolicy Never and one container "main": what the API server stores
/// for the smallest Job manifest.
pub fn base_job() -> Job {
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
    }
}

/// The controller reference every pod of the Job carries.
pub fn job_owner() -> OwnerRef {
    OwnerRef {
        api_version: "batch/v1".into(),
        kind: "Job".into(),
        name: JOB_NAME.into(),
        uid: JOB_UID.into(),
    }
}

/// A Running, scheduled pod owned by the Job, with the tracking finalizer, created at `created`.
pub fn running_pod(name: &str, uid: &str, created: Time) -> Pod {
    Pod {
        name: name.into(),
        uid: uid.into(),
        labels: template_labels(),
        completion_index: None,
        index_failure_count: 0,
        index_ignored_failure_count: 0,
        controller: Some(job_owner()),
        has_tracking_finalizer: true,
        creation_timestamp: Some(created),
        deletion: None,
        scheduled: true,
        sidecar_init_containers: vec![],
        phase: PodPhase::Running,
        conditions: vec![],
        container_statuses: vec![],
        init_container_statuses: vec![],
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
    }
}
