use super::*;
use crate::fixtures::{JOB_NAME, JOB_UID, realistic_pod};
use crate::lean::{JobIdentity, lean_pod as to_lean};

/// Lean pods that reach every field: a realistic one, and one with every
/// optional field set, several owners, sidecars, a terminated init container,
/// unread labels and conditions, and an enumeration value no client sends.
fn samples() -> Vec<pb::LeanPod> {
    let identity = JobIdentity {
        name: JOB_NAME,
        uid: JOB_UID,
    };
    let realistic = to_lean(&realistic_pod(3), identity).expect("has a lean form");
    let ts = |seconds| Some(Timestamp { seconds, nanos: 5 });
    let everything = pb::LeanPod {
        name: "p".into(),
        uid: "u".into(),
        labels: [("batch.kubernetes.io/controller-uid", JOB_UID), ("x", "y")]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        completion_index: Some("7".into()),
        index_failure_count: Some("2".into()),
        index_ignored_failure_count: Some("x".into()),
        controlled_by_job: false,
        owner_references: vec![
            pb::OwnerReference {
                uid: JOB_UID.into(),
                ..Default::default()
            },
            pb::OwnerReference {
                api_version: "batch/v1".into(),
                kind: "Job".into(),
                name: JOB_NAME.into(),
                uid: JOB_UID.into(),
                controller: Some(true),
                block_owner_deletion: Some(true),
            },
        ],
        tracking_finalizer: true,
        creation_timestamp: ts(100),
        deletion_timestamp: ts(200),
        deletion_grace_period_seconds: Some(-1),
        scheduled: true,
        sidecar_init_containers: vec!["side".into()],
        phase: 9,
        reason: "Evicted".into(),
        message: "The node was low on memory.".into(),
        node_name: "n7".into(),
        rule_match_counts: Some("oom=1".into()),
        failed_nodes: Some("n1,n2".into()),
        start_time: ts(40),
        conditions: vec![
            pb::LeanPodCondition {
                r#type: "Ready".into(),
                status: 1,
                last_transition_time: ts(50),
                ..Default::default()
            },
            pb::LeanPodCondition {
                r#type: "PodScheduled".into(),
                status: 2,
                reason: "Unschedulable".into(),
                ..Default::default()
            },
            pb::LeanPodCondition {
                r#type: "Unread".into(),
                status: 0,
                last_transition_time: None,
                ..Default::default()
            },
        ],
        container_statuses: vec![pb::LeanContainerStatus {
            name: "main".into(),
            restart_count: -3,
            terminated: Some(pb::LeanTerminated {
                exit_code: -137,
                finished_at: ts(150),
                reason: "OOMKilled".into(),
                message: "m".into(),
            }),
            waiting_reason: "CrashLoopBackOff".into(),
        }],
        init_container_statuses: vec![pb::LeanContainerStatus {
            name: "side".into(),
            restart_count: 1,
            terminated: Some(pb::LeanTerminated::default()),
            ..Default::default()
        }],
    };
    vec![realistic, everything]
}

/// The pod and violations these bytes convert to, or the decoding error.
fn convert(bytes: &[u8]) -> Result<(Pod, Vec<String>), WireError> {
    crate::convert::decode_for_tests(bytes, true, lean_pod)
}

/// The same for a Job with an extended failure policy (the pod decoder tests' document).
fn convert_with_document(bytes: &[u8]) -> Result<(Pod, Vec<String>), WireError> {
    crate::convert::decode_for_tests_with(bytes, true, lean_pod, crate::pod_decode::tests::DOCUMENT)
}

fn identity() -> JobIdentity<'static> {
    JobIdentity {
        name: JOB_NAME,
        uid: JOB_UID,
    }
}

/// Both encodings of a pod give the same domain pod, details and all, with
/// a document and without.
#[test]
fn both_encodings_read_the_failure_details_alike() {
    let full = crate::pod_decode::tests::failed_sample();
    let lean = to_lean(&full, identity()).expect("has a lean form");
    let full_bytes = full.encode_to_vec();
    let lean_bytes = lean.encode_to_vec();
    for document in ["", crate::pod_decode::tests::DOCUMENT] {
        let from_full = crate::convert::decode_for_tests_with(
            &full_bytes,
            false,
            crate::pod_decode::pod,
            document,
        )
        .expect("decodes");
        let from_lean =
            crate::convert::decode_for_tests_with(&lean_bytes, true, lean_pod, document)
                .expect("decodes");
        assert_eq!(from_full.0, from_lean.0, "document {document:?}");
        assert_eq!(from_full.0.failure_details.is_some(), !document.is_empty());
    }
}

#[test]
fn every_field_reads_as_prost_reads_it() {
    for sample in samples() {
        let bytes = sample.encode_to_vec();
        let (pod, violations) = convert(&bytes).expect("decodes");
        assert_eq!(pod.name, sample.name);
        assert_eq!(pod.uid, sample.uid);
        assert_eq!(pod.has_tracking_finalizer, sample.tracking_finalizer);
        assert_eq!(pod.scheduled, sample.scheduled);
        assert_eq!(
            pod.container_statuses.len(),
            sample.container_statuses.len()
        );
        assert!(pod.owners_name_job);
        assert!(pod.controller.is_some());
        if sample.phase == 9 {
            // The made-up phase, the unset status of a read condition… each named.
            assert_eq!(
                violations,
                [
                    "leanPods[0].phase",
                    "leanPods[0].containerStatuses[0].restartCount"
                ]
            );
            assert_eq!(pod.labels.len(), 1, "only the selector's key is kept");
            assert_eq!(pod.conditions.len(), 1, "only Ready is read");
            assert_eq!(pod.completion_index, Some(7));
            assert_eq!(pod.index_failure_count, 2);
            assert_eq!(pod.index_ignored_failure_count, 0);
            assert_eq!(pod.sidecar_init_containers, ["side"]);
            let deletion = pod.deletion.expect("being deleted");
            assert_eq!(deletion.grace_period_seconds, Some(-1));
            assert_eq!(
                pod.container_statuses[0].terminated.map(|t| t.exit_code),
                Some(-137)
            );
            assert!(pod.init_container_statuses[0].terminated.is_some());
        } else {
            assert_eq!(violations, Vec::<String>::new());
        }
    }
}

/// Every declared field of every message a lean pod holds, in every wire
/// type: accepted exactly when prost accepts it.
#[test]
fn every_field_in_every_wire_type_is_judged_as_prost_judges_it() {
    let paths: &[(&[u32], &[u32])] = &[
        (&[], &(1..=23).collect::<Vec<_>>()),
        (&[3], &[1, 2]),
        (&[8], &[1, 2, 3, 4, 5, 6]),
        (&[10], &[1, 2]),
        (&[11], &[1, 2]),
        (&[16], &[1, 2, 3, 4]),
        (&[16, 3], &[1, 2]),
        (&[17], &[1, 2, 3, 4]),
        (&[17, 3], &[1, 2, 3, 4]),
        (&[17, 3, 2], &[1, 2]),
        (&[18, 3, 2], &[1, 2]),
    ];
    let cases = crate::wire::craft::every_wire_type(paths);
    for bytes in &cases {
        let theirs = pb::LeanPod::decode(bytes.as_slice());
        assert_eq!(
            convert(bytes).is_ok(),
            theirs.is_ok(),
            "{bytes:?}: prost says {theirs:?}"
        );
        assert_eq!(
            convert_with_document(bytes).is_ok(),
            theirs.is_ok(),
            "{bytes:?}: prost says {theirs:?}"
        );
    }
    assert!(cases.len() > 200);
}

/// Every truncation and every single-byte change of the samples: the hand
/// decoder accepts exactly what prost accepts, and reads what prost reads
/// (the same pod as prost's decoding encoded again).
#[test]
fn accepts_and_reads_exactly_what_prost_does_under_every_one_byte_change() {
    let mut checked = 0;
    for sample in samples() {
        let bytes = sample.encode_to_vec();
        let variants = crate::wire::craft::one_byte_changes(&bytes);
        for variant in variants {
            crate::wire::craft::assert_reads_as_prost::<pb::LeanPod, _, _>(&variant, convert);
            crate::wire::craft::assert_reads_as_prost::<pb::LeanPod, _, _>(
                &variant,
                convert_with_document,
            );
            checked += 1;
        }
    }
    assert!(checked > 1_000, "{checked} variants");
}

/// `NotLean` quoted the value with Rust's `{:?}` (`"\u{1}"`), where every other
/// message quotes as Go's `%q` (`"\x01"`) through `core::go_text`.
#[test]
fn a_value_the_lean_encoding_cannot_hold_was_quoted_as_rust_not_go() {
    let mut pod = pb::Pod::default();
    pod.status.get_or_insert_default().phase = "Done\u{1}\u{7f}".into();
    let Err(phase) = to_lean(&pod, identity()) else {
        panic!("not a phase");
    };
    assert_eq!(
        phase.to_string(),
        "status.phase \"Done\\x01\\x7f\" is not a Kubernetes pod phase"
    );
    let status = pod.status.get_or_insert_default();
    status.phase = "Running".into();
    status.conditions.push(pb::PodCondition {
        r#type: "Ready".into(),
        status: "Yes\u{1}".into(),
        ..Default::default()
    });
    let Err(condition) = to_lean(&pod, identity()) else {
        panic!("not a condition status");
    };
    assert_eq!(
        condition.to_string(),
        "status.conditions[0].status \"Yes\\x01\" is not True, False or Unknown"
    );
}
