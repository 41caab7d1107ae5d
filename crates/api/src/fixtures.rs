//! Wire-side builders for tests and benchmarks: a realistic request as a client
//! would send it, with pods shaped as the API server returns them (labels,
//! annotations, an owner reference, a finalizer, five conditions, two
//! containers). Compiled for unit tests and the `test-util` feature only.

use pbjson_types::Timestamp;

use crate::pb;
use job_decider_core::model::{COMPLETION_INDEX_KEY, JOB_TRACKING_FINALIZER};

/// The Job's name in [`realistic_request`].
pub const JOB_NAME: &str = "train";
/// The Job's UID in [`realistic_request`]; every pod's controller reference names it.
pub const JOB_UID: &str = "0b5c8a5e-8e6b-4f53-9d6c-2f2f1f6e7a11";
/// The namespace of the Job and its pods.
pub const NAMESPACE: &str = "ml-training";
/// The request's `now`, in seconds since the epoch.
pub const NOW_SECONDS: i64 = 1_700_000_600;

fn ts(seconds: i64) -> Timestamp {
    Timestamp { seconds, nanos: 0 }
}

/// The labels the API server puts on a Job's pods (generated selector), plus the index label.
fn pod_labels(index: Option<usize>) -> Vec<(String, String)> {
    let mut labels = vec![
        (
            "batch.kubernetes.io/controller-uid".to_string(),
            JOB_UID.to_string(),
        ),
        (
            "batch.kubernetes.io/job-name".to_string(),
            JOB_NAME.to_string(),
        ),
        ("controller-uid".to_string(), JOB_UID.to_string()),
        ("job-name".to_string(), JOB_NAME.to_string()),
    ];
    if let Some(i) = index {
        labels.push((COMPLETION_INDEX_KEY.to_string(), i.to_string()));
    }
    labels
}

/// Pod `i` of the Indexed Job of [`realistic_request`], Running on a node, as the API server stores it.
pub fn realistic_pod(i: usize) -> pb::Pod {
    let metadata = pb::ObjectMeta {
        name: format!("{JOB_NAME}-{i}-x7k2p"),
        generate_name: format!("{JOB_NAME}-{i}-"),
        namespace: NAMESPACE.to_string(),
        uid: format!("6f1c2b7e-3d4a-4c3b-9a1e-{i:012}"),
        resource_version: format!("{}", 123_456_789 + i),
        creation_timestamp: Some(ts(NOW_SECONDS - 600)),
        labels: pod_labels(Some(i)).into_iter().collect(),
        annotations: [(COMPLETION_INDEX_KEY.to_string(), i.to_string())]
            .into_iter()
            .collect(),
        owner_references: vec![pb::OwnerReference {
            api_version: "batch/v1".into(),
            kind: "Job".into(),
            name: JOB_NAME.into(),
            uid: JOB_UID.into(),
            controller: Some(true),
            block_owner_deletion: Some(true),
        }],
        finalizers: vec![JOB_TRACKING_FINALIZER.into()],
        ..Default::default()
    };
    let condition = |t: &str| pb::PodCondition {
        r#type: t.into(),
        status: "True".into(),
        last_transition_time: Some(ts(NOW_SECONDS - 590)),
        ..Default::default()
    };
    let running = |name: &str| pb::ContainerStatus {
        name: name.into(),
        state: Some(pb::ContainerState {
            running: Some(pb::ContainerStateRunning {
                started_at: Some(ts(NOW_SECONDS - 595)),
            }),
            ..Default::default()
        }),
        restart_count: 0,
        ready: true,
    };
    pb::Pod {
        api_version: "v1".into(),
        kind: "Pod".into(),
        metadata: Some(metadata),
        spec: Some(pb::PodSpecSummary {
            node_name: format!("gke-pool-1-node-{:04}", i % 1000),
            init_containers: vec![],
        }),
        status: Some(pb::PodStatus {
            phase: "Running".into(),
            conditions: [
                "PodReadyToStartContainers",
                "Initialized",
                "Ready",
                "ContainersReady",
                "PodScheduled",
            ]
            .into_iter()
            .map(condition)
            .collect(),
            container_statuses: vec![running("trainer"), running("log-shipper")],
            init_container_statuses: vec![],
            ..Default::default()
        }),
    }
}

/// An Indexed Job of `pods` completions and parallelism, started 10 minutes ago,
/// whose status does not count its pods yet (so its plan writes the status).
pub fn realistic_job(pods: usize) -> pb::Job {
    let n = i32::try_from(pods).unwrap_or(i32::MAX).max(1);
    let container = |name: &str| pb::Container {
        name: name.into(),
        env: vec![],
    };
    pb::Job {
        api_version: "batch/v1".into(),
        kind: "Job".into(),
        metadata: Some(pb::ObjectMeta {
            name: JOB_NAME.into(),
            namespace: NAMESPACE.into(),
            uid: JOB_UID.into(),
            resource_version: "123456000".into(),
            generation: 1,
            creation_timestamp: Some(ts(NOW_SECONDS - 600)),
            labels: pod_labels(None).into_iter().collect(),
            ..Default::default()
        }),
        spec: Some(pb::JobSpec {
            parallelism: Some(n),
            completions: Some(n),
            backoff_limit: Some(6),
            completion_mode: Some("Indexed".into()),
            selector: Some(pb::LabelSelector {
                match_labels: [(
                    "batch.kubernetes.io/controller-uid".to_string(),
                    JOB_UID.to_string(),
                )]
                .into_iter()
                .collect(),
                match_expressions: vec![],
            }),
            template: Some(pb::PodTemplateSpec {
                metadata: Some(pb::ObjectMeta {
                    labels: pod_labels(None).into_iter().collect(),
                    ..Default::default()
                }),
                spec: Some(pb::PodSpec {
                    restart_policy: "Never".into(),
                    containers: vec![container("trainer"), container("log-shipper")],
                    init_containers: vec![],
                }),
            }),
            ..Default::default()
        }),
        status: Some(pb::JobStatus {
            start_time: Some(ts(NOW_SECONDS - 600)),
            // The pods started since the last sync: the plan writes their count.
            terminating: Some(0),
            uncounted_terminated_pods: Some(pb::UncountedTerminatedPods::default()),
            ..Default::default()
        }),
    }
}

/// A DecideJob request for a running Indexed Job and its `pods` Running pods.
pub fn realistic_request(pods: usize) -> pb::DecideJobRequest {
    pb::DecideJobRequest {
        job: Some(realistic_job(pods)),
        pods: (0..pods).map(realistic_pod).collect(),
        now: Some(ts(NOW_SECONDS)),
        ..Default::default()
    }
}
