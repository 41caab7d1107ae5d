//! A Job and a PodList exactly as `kubectl get -o json` prints them parse into a
//! DecideJobRequest with no hand mapping: unknown fields are ignored, `null`s
//! and empty objects are accepted.

use job_decider::documents;
use job_decider_api::{self as api, pb};

const JOB: &str = r#"{
    "apiVersion": "batch/v1",
    "kind": "Job",
    "metadata": {
        "annotations": {
            "kubectl.kubernetes.io/last-applied-configuration": "{\"apiVersion\":\"batch/v1\",\"kind\":\"Job\"}\n"
        },
        "creationTimestamp": "2025-06-02T09:58:00Z",
        "generation": 1,
        "labels": {
            "batch.kubernetes.io/controller-uid": "5e1c0c1f-61a4-4f0b-9d0a-4a2f7a1b2c3d",
            "batch.kubernetes.io/job-name": "pi",
            "controller-uid": "5e1c0c1f-61a4-4f0b-9d0a-4a2f7a1b2c3d",
            "job-name": "pi"
        },
        "name": "pi",
        "namespace": "default",
        "resourceVersion": "1200",
        "uid": "5e1c0c1f-61a4-4f0b-9d0a-4a2f7a1b2c3d"
    },
    "spec": {
        "backoffLimit": 4,
        "completionMode": "NonIndexed",
        "completions": 1,
        "manualSelector": false,
        "parallelism": 1,
        "podReplacementPolicy": "TerminatingOrFailed",
        "selector": {
            "matchLabels": {
                "batch.kubernetes.io/controller-uid": "5e1c0c1f-61a4-4f0b-9d0a-4a2f7a1b2c3d"
            }
        },
        "suspend": false,
        "template": {
            "metadata": {
                "creationTimestamp": null,
                "labels": {
                    "batch.kubernetes.io/controller-uid": "5e1c0c1f-61a4-4f0b-9d0a-4a2f7a1b2c3d",
                    "batch.kubernetes.io/job-name": "pi",
                    "controller-uid": "5e1c0c1f-61a4-4f0b-9d0a-4a2f7a1b2c3d",
                    "job-name": "pi"
                }
            },
            "spec": {
                "containers": [
                    {
                        "command": ["perl", "-Mbignum=bpi", "-wle", "print bpi(2000)"],
                        "image": "perl:5.34.0",
                        "imagePullPolicy": "IfNotPresent",
                        "name": "pi",
                        "resources": {},
                        "terminationMessagePath": "/dev/termination-log",
                        "terminationMessagePolicy": "File"
                    }
                ],
                "dnsPolicy": "ClusterFirst",
                "restartPolicy": "Never",
                "schedulerName": "default-scheduler",
                "securityContext": {},
                "terminationGracePeriodSeconds": 30
            }
        }
    },
    "status": {}
}"#;

const PODS: &str = r#"{
    "apiVersion": "v1",
    "items": [
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "creationTimestamp": "2025-06-02T09:58:00Z",
                "finalizers": ["batch.kubernetes.io/job-tracking"],
                "generateName": "pi-",
                "labels": {
                    "batch.kubernetes.io/controller-uid": "5e1c0c1f-61a4-4f0b-9d0a-4a2f7a1b2c3d",
                    "batch.kubernetes.io/job-name": "pi",
                    "controller-uid": "5e1c0c1f-61a4-4f0b-9d0a-4a2f7a1b2c3d",
                    "job-name": "pi"
                },
                "name": "pi-x8hq2",
                "namespace": "default",
                "ownerReferences": [
                    {
                        "apiVersion": "batch/v1",
                        "blockOwnerDeletion": true,
                        "controller": true,
                        "kind": "Job",
                        "name": "pi",
                        "uid": "5e1c0c1f-61a4-4f0b-9d0a-4a2f7a1b2c3d"
                    }
                ],
                "resourceVersion": "1210",
                "uid": "0d9e2b4c-1a2b-4c3d-8e4f-5a6b7c8d9e0f"
            },
            "spec": {
                "containers": [{"image": "perl:5.34.0", "name": "pi", "resources": {}}],
                "nodeName": "kind-worker",
                "overhead": null,
                "restartPolicy": "Never",
                "tolerations": [
                    {"effect": "NoExecute", "key": "node.kubernetes.io/not-ready", "operator": "Exists", "tolerationSeconds": 300}
                ]
            },
            "status": {
                "conditions": [
                    {"lastProbeTime": null, "lastTransitionTime": "2025-06-02T09:58:03Z", "status": "True", "type": "Ready"},
                    {"lastProbeTime": null, "lastTransitionTime": "2025-06-02T09:58:00Z", "status": "True", "type": "PodScheduled"}
                ],
                "containerStatuses": [
                    {
                        "containerID": "containerd://4b1f",
                        "image": "docker.io/library/perl:5.34.0",
                        "imageID": "docker.io/library/perl@sha256:2584",
                        "lastState": {},
                        "name": "pi",
                        "ready": true,
                        "restartCount": 0,
                        "started": true,
                        "state": {"running": {"startedAt": "2025-06-02T09:58:02Z"}}
                    }
                ],
                "hostIP": "172.18.0.2",
                "phase": "Running",
                "qosClass": "BestEffort",
                "startTime": "2025-06-02T09:58:00Z"
            }
        },
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "creationTimestamp": "2025-06-02T09:58:00Z",
                "name": "unscheduled",
                "namespace": "default",
                "uid": "2c3d4e5f-6a7b-4c8d-9e0f-1a2b3c4d5e6f"
            },
            "spec": {"containers": [{"image": "perl:5.34.0", "name": "pi"}]},
            "status": {}
        }
    ],
    "kind": "List",
    "metadata": {"resourceVersion": ""}
}"#;

#[test]
fn kubectl_json_deserializes_directly_into_the_wire_messages() {
    // The proto3 JSON mapping alone: no helper, no hand mapping.
    let job: pb::Job = serde_json::from_str(JOB).expect("Job as kubectl prints it");
    let spec = job.spec.as_ref().expect("spec");
    assert_eq!(spec.backoff_limit, Some(4));
    assert_eq!(spec.completion_mode.as_deref(), Some("NonIndexed"));
    let template = spec.template.as_ref().expect("template");
    assert!(
        template
            .metadata
            .as_ref()
            .expect("metadata")
            .creation_timestamp
            .is_none()
    );
    assert_eq!(
        template.spec.as_ref().map(|s| s.restart_policy.as_str()),
        Some("Never")
    );
    assert_eq!(job.status, Some(pb::JobStatus::default()));
}

#[test]
fn kubectl_job_and_pod_list_make_a_decidable_request() {
    let job = documents::parse_job(JOB, "job").expect("job");
    let pods = documents::parse_pods(PODS, "pods").expect("pods");
    assert_eq!(pods.len(), 2);
    let running = &pods[0];
    assert_eq!(
        running.spec.as_ref().map(|s| s.node_name.as_str()),
        Some("kind-worker")
    );
    let status = running.status.as_ref().expect("status");
    assert_eq!(status.phase, "Running");
    assert_eq!(status.conditions[0].r#type, "Ready");
    assert_eq!(status.container_statuses[0].name, "pi");

    let request = pb::DecideJobRequest {
        job: Some(job),
        pods,
        now: Some(documents::parse_time("2025-06-02T10:00:00Z", "now").expect("now")),
        ..Default::default()
    };
    let decision = api::decide(request).expect("a kubectl snapshot is decidable");
    let snapshot = &decision.snapshot;
    assert_eq!(snapshot.job.name, "pi");
    assert_eq!(snapshot.job.spec.backoff_limit, 4);
    assert_eq!(snapshot.pods.len(), 2);
    assert!(snapshot.pods[0].is_ready() && snapshot.pods[0].has_tracking_finalizer);
    // The second pod has no owner (an orphan) and no status yet (pending, unscheduled).
    assert!(snapshot.pods[1].controller.is_none() && !snapshot.pods[1].scheduled);
}
