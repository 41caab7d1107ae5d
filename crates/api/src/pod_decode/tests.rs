use super::*;
use crate::fixtures::{JOB_UID, realistic_pod};
use prost::Message;

/// Pods that reach every field: a realistic running one, and one with
/// several owners, annotations, sidecars, waiting and terminated states,
/// unread conditions with reasons, and values decisions reject.
fn samples() -> Vec<pb::Pod> {
    let ts = |seconds| Some(Timestamp { seconds, nanos: 5 });
    let mut odd = realistic_pod(4);
    let meta = odd.metadata.as_mut().expect("metadata");
    meta.annotations
        .insert(INDEX_FAILURE_COUNT_KEY.into(), "3".into());
    meta.annotations
        .insert(INDEX_IGNORED_FAILURE_COUNT_KEY.into(), "-1".into());
    meta.deletion_timestamp = ts(10);
    meta.deletion_grace_period_seconds = Some(30);
    meta.owner_references.insert(
        0,
        pb::OwnerReference {
            uid: JOB_UID.into(),
            kind: "ConfigMap".into(),
            ..Default::default()
        },
    );
    let spec = odd.spec.as_mut().expect("spec");
    spec.init_containers = vec![
        pb::InitContainerSummary {
            name: "side".into(),
            restart_policy: "Always".into(),
        },
        pb::InitContainerSummary {
            name: "setup".into(),
            restart_policy: String::new(),
        },
    ];
    let status = odd.status.as_mut().expect("status");
    status.phase = "Evicted".into();
    status.conditions[0].reason = "Because".into();
    status.conditions[0].message = "so".into();
    status.conditions[0].last_probe_time = ts(3);
    status.conditions[2].status = "Maybe".into();
    status.container_statuses[0].restart_count = -1;
    status.container_statuses[0].state = Some(pb::ContainerState {
        waiting: Some(pb::ContainerStateWaiting {
            reason: "CrashLoopBackOff".into(),
            message: "back-off".into(),
        }),
        running: None,
        terminated: Some(pb::ContainerStateTerminated {
            exit_code: 137,
            signal: 9,
            reason: "OOMKilled".into(),
            message: "m".into(),
            started_at: ts(1),
            finished_at: ts(2),
        }),
    });
    status.init_container_statuses = vec![pb::ContainerStatus {
        name: "side".into(),
        ..Default::default()
    }];
    vec![realistic_pod(3), odd]
}

fn convert(bytes: &[u8]) -> Result<(Pod, Vec<String>), WireError> {
    crate::convert::decode_for_tests(bytes, false, pod)
}

/// A document whose rules name DisruptionTarget, with a pending timeout.
pub(crate) const DOCUMENT: &str = "apiVersion: job-decider.dev/v1alpha1\nkind: FailurePolicy\n\
    rules:\n- {action: Count, onPodConditions: [{type: DisruptionTarget}]}\n\
    pendingTimeout: {seconds: 60}\n";

fn convert_with_document(bytes: &[u8]) -> Result<(Pod, Vec<String>), WireError> {
    crate::convert::decode_for_tests_with(bytes, false, pod, DOCUMENT)
}

/// A failed pod with everything the extended policy reads.
pub(crate) fn failed_sample() -> pb::Pod {
    let ts = |seconds| Some(Timestamp { seconds, nanos: 5 });
    let mut p = realistic_pod(5);
    let meta = p.metadata.as_mut().expect("metadata");
    meta.annotations
        .insert(RULE_MATCH_COUNTS_ANNOTATION.into(), "oom=2,bad".into());
    meta.annotations
        .insert(FAILED_NODES_ANNOTATION.into(), "n1,n2".into());
    let status = p.status.as_mut().expect("status");
    status.phase = "Failed".into();
    status.reason = "UnexpectedAdmissionError".into();
    status.message = "x".repeat(5000);
    status.start_time = ts(3);
    for c in &mut status.conditions {
        if c.r#type == "Ready" {
            c.reason = "ContainersNotReady".into();
        }
    }
    status.conditions.push(pb::PodCondition {
        r#type: "DisruptionTarget".into(),
        status: "True".into(),
        reason: "EvictionByEvictionAPI".into(),
        ..Default::default()
    });
    status.conditions.push(pb::PodCondition {
        r#type: "Unread".into(),
        status: "True".into(),
        ..Default::default()
    });
    status.container_statuses[0].state = Some(pb::ContainerState {
        terminated: Some(pb::ContainerStateTerminated {
            exit_code: 137,
            reason: "OOMKilled".into(),
            message: "killed".into(),
            finished_at: ts(7),
            ..Default::default()
        }),
        ..Default::default()
    });
    status.container_statuses[1].state = Some(pb::ContainerState {
        waiting: Some(pb::ContainerStateWaiting {
            reason: "ImagePullBackOff".into(),
            message: "pull".into(),
        }),
        ..Default::default()
    });
    status.init_container_statuses = vec![pb::ContainerStatus {
        name: "setup".into(),
        state: Some(pb::ContainerState {
            terminated: Some(pb::ContainerStateTerminated {
                exit_code: 1,
                reason: "Error".into(),
                ..Default::default()
            }),
            ..Default::default()
        }),
        ..Default::default()
    }];
    p
}

#[test]
fn failure_details_are_read_only_for_a_job_with_a_document() {
    let bytes = failed_sample().encode_to_vec();
    let (plain, violations) = convert(&bytes).expect("decodes");
    assert!(violations.is_empty(), "{violations:?}");
    assert_eq!(plain.failure_details, None);
    assert_eq!(plain.conditions.len(), 1, "only Ready");

    let (pod, violations) = convert_with_document(&bytes).expect("decodes");
    assert!(violations.is_empty(), "{violations:?}");
    let kept: Vec<&str> = pod.conditions.iter().map(|c| &*c.condition_type).collect();
    assert_eq!(kept, ["Ready", "DisruptionTarget"]);
    let d = pod.failure_details.expect("details");
    assert_eq!(d.reason, "UnexpectedAdmissionError");
    assert!(d.message.len() <= 4096 && d.message.starts_with("xxx"));
    assert_eq!(d.node_name, "gke-pool-1-node-0005");
    assert_eq!(
        d.waiting_reasons,
        [("log-shipper".into(), "ImagePullBackOff".into())]
    );
    let terms: Vec<(&str, bool, &str, &str)> = d
        .terminations
        .iter()
        .map(|t| (&*t.container, t.init_container, &*t.reason, &*t.message))
        .collect();
    assert_eq!(
        terms,
        [
            ("trainer", false, "OOMKilled", "killed"),
            ("setup", true, "Error", "")
        ]
    );
    // The realistic pod's PodScheduled is True, 590 s before now.
    assert_eq!(
        d.scheduled_at,
        Some(job_decider_core::time::Time::from_unix_nanos(
            (crate::fixtures::NOW_SECONDS - 590) * 1_000_000_000
        ))
    );
    assert!(!d.unschedulable);
    assert_eq!(d.rule_match_counts, [("oom".to_string(), 2)]);
    assert_eq!(d.failed_nodes, ["n1", "n2"]);
    // attemptDeadline and readyTimeout read the start time and Ready's reason.
    assert_eq!(
        d.start_time,
        Some(job_decider_core::time::Time::from_unix_nanos(3_000_000_005))
    );
    assert_eq!(d.ready_reason, "ContainersNotReady");
}

#[test]
fn an_unschedulable_pod_is_marked() {
    let mut p = realistic_pod(1);
    let status = p.status.as_mut().expect("status");
    status.phase = "Pending".into();
    for c in &mut status.conditions {
        if c.r#type == "PodScheduled" {
            c.status = "False".into();
            c.reason = "Unschedulable".into();
        }
    }
    let (pod, _) = convert_with_document(&p.encode_to_vec()).expect("decodes");
    let d = pod.failure_details.expect("details");
    assert!(d.unschedulable && d.scheduled_at.is_none());
}

#[test]
fn every_field_reads_as_convert_always_read_it() {
    let samples = samples();
    let (pod, violations) = convert(&samples[0].encode_to_vec()).expect("decodes");
    assert_eq!(violations, Vec::<String>::new());
    assert_eq!(pod.name, "train-3-x7k2p");
    assert_eq!(pod.completion_index, Some(3));
    assert_eq!(pod.labels.len(), 1, "only the selector's key is kept");
    assert_eq!(pod.conditions.len(), 1, "only Ready is read");
    assert!(pod.has_tracking_finalizer && pod.scheduled && pod.owners_name_job);
    assert_eq!(pod.phase, PodPhase::Running);

    let (pod, violations) = convert(&samples[1].encode_to_vec()).expect("decodes");
    assert_eq!(
        violations,
        [
            "pods[0].status.phase",
            "pods[0].status.conditions[2].status",
            "pods[0].status.containerStatuses[0].restartCount",
        ]
    );
    assert_eq!(pod.index_failure_count, 3);
    assert_eq!(pod.index_ignored_failure_count, 0);
    assert_eq!(pod.sidecar_init_containers, ["side"]);
    assert_eq!(pod.deletion.and_then(|d| d.grace_period_seconds), Some(30));
    assert_eq!(
        pod.container_statuses[0].terminated.map(|t| t.exit_code),
        Some(137)
    );
    let controller = pod.controller.expect("the Job controls it");
    assert_eq!(controller.kind, "Job", "the first controller reference");
}

/// Every declared field of every message a pod holds, in every wire type:
/// accepted exactly when prost accepts it.
#[test]
fn every_field_in_every_wire_type_is_judged_as_prost_judges_it() {
    let paths: &[(&[u32], &[u32])] = &[
        (&[], &[1, 2, 3, 4, 5]),
        (&[3], &(1..=13).collect::<Vec<_>>()),
        (&[3, 7], &[1, 2]),
        (&[3, 8], &[1, 2]),
        (&[3, 10], &[1, 2]),
        (&[3, 11], &[1, 2]),
        (&[3, 12], &[1, 2, 3, 4, 5, 6]),
        (&[4], &[1, 2]),
        (&[4, 2], &[1, 2]),
        (&[5], &[1, 2, 3, 4, 5, 6]),
        (&[5, 2], &[1, 2, 3, 4, 5, 6]),
        (&[5, 2, 3], &[1, 2]),
        (&[5, 2, 4], &[1, 2]),
        (&[5, 3], &[1, 2, 3, 4]),
        (&[5, 4, 2], &[1, 2, 3]),
        (&[5, 3, 2, 1], &[1, 2]),
        (&[5, 3, 2, 2], &[1]),
        (&[5, 3, 2, 2, 1], &[1, 2]),
        (&[5, 3, 2, 3], &[1, 2, 3, 4, 5, 6]),
        (&[5, 3, 2, 3, 5], &[1, 2]),
        (&[5, 3, 2, 3, 6], &[1, 2]),
    ];
    let cases = crate::wire::craft::every_wire_type(paths);
    for bytes in &cases {
        let theirs = pb::Pod::decode(bytes.as_slice());
        assert_eq!(
            convert(bytes).is_ok(),
            theirs.is_ok(),
            "{bytes:?}: prost says {theirs:?}"
        );
        // A Job with a document reads more of each pod: judged the same.
        assert_eq!(
            convert_with_document(bytes).is_ok(),
            theirs.is_ok(),
            "{bytes:?}: prost says {theirs:?}"
        );
    }
    assert!(cases.len() > 300, "{} cases", cases.len());
}

/// Every truncation and every single-byte change of the samples: accepted
/// exactly when prost accepts, and read as prost reads (the same pod as
/// prost's decoding encoded again).
#[test]
fn accepts_and_reads_exactly_what_prost_does_under_every_one_byte_change() {
    let mut checked = 0;
    for sample in samples() {
        let bytes = sample.encode_to_vec();
        let variants = crate::wire::craft::one_byte_changes(&bytes);
        for variant in variants {
            crate::wire::craft::assert_reads_as_prost::<pb::Pod, _, _>(&variant, convert);
            checked += 1;
        }
    }
    assert!(checked > 10_000, "{checked} variants");
    // The fields only a Job with a document reads, under every change too
    // (the long message shortened: every byte of it would add nothing).
    let mut sample = failed_sample();
    if let Some(status) = sample.status.as_mut() {
        status.message = "msg".into();
    }
    let bytes = sample.encode_to_vec();
    for variant in crate::wire::craft::one_byte_changes(&bytes) {
        crate::wire::craft::assert_reads_as_prost::<pb::Pod, _, _>(&variant, convert_with_document);
    }
}
