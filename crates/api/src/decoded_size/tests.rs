//! Tests of the decoded-size pre-scan: the schema read from the contract and the charges it makes against what prost allocates.

use super::*;
use crate::fixtures::{realistic_job, realistic_request};
use crate::pb;
use std::mem::size_of;

fn schema() -> &'static Schema {
    contract().unwrap_or_else(|e| panic!("{e}"))
}

fn request(name: &str) -> RequestType<'static> {
    schema()
        .request_for_path(&format!("/jobdecider.v1.JobDecider/{name}"))
        .unwrap_or_else(|| panic!("no RPC {name}"))
}

fn estimate(rpc: &str, message: &[u8]) -> Estimate {
    request(rpc).estimate(&[message], usize::MAX)
}

/// The inline bound is honest: at least `size_of` of every generated struct a request reaches.
#[test]
fn inline_bound_is_at_least_the_size_of_every_generated_struct() {
    macro_rules! at_least {
            ($($name:literal => $ty:ty),* $(,)?) => {$(
                let bound = schema().message($name).map(MessageType::inline);
                assert!(
                    bound.is_some_and(|b| b >= size_of::<$ty>()),
                    "{}: bound {bound:?}, size_of {}", $name, size_of::<$ty>()
                );
            )*};
        }
    at_least! {
        "google.protobuf.Timestamp" => pbjson_types::Timestamp,
        "jobdecider.v1.DecideJobRequest" => pb::DecideJobRequest,
        "jobdecider.v1.DecideJobRequest" => crate::LazyDecideJobRequest,
        "jobdecider.v1.ValidateJobRequest" => pb::ValidateJobRequest,
        "jobdecider.v1.DecideJobSetRequest" => pb::DecideJobSetRequest,
        "jobdecider.v1.ValidateJobSetRequest" => pb::ValidateJobSetRequest,
        "jobdecider.v1.Job" => pb::Job,
        "jobdecider.v1.JobSpec" => pb::JobSpec,
        "jobdecider.v1.JobStatus" => pb::JobStatus,
        "jobdecider.v1.JobCondition" => pb::JobCondition,
        "jobdecider.v1.UncountedTerminatedPods" => pb::UncountedTerminatedPods,
        "jobdecider.v1.ObjectMeta" => pb::ObjectMeta,
        "jobdecider.v1.OwnerReference" => pb::OwnerReference,
        "jobdecider.v1.LabelSelector" => pb::LabelSelector,
        "jobdecider.v1.LabelSelectorRequirement" => pb::LabelSelectorRequirement,
        "jobdecider.v1.PodFailurePolicy" => pb::PodFailurePolicy,
        "jobdecider.v1.PodFailurePolicyRule" => pb::PodFailurePolicyRule,
        "jobdecider.v1.PodFailurePolicyOnExitCodesRequirement" => pb::PodFailurePolicyOnExitCodesRequirement,
        "jobdecider.v1.PodFailurePolicyOnPodConditionsPattern" => pb::PodFailurePolicyOnPodConditionsPattern,
        "jobdecider.v1.SuccessPolicy" => pb::SuccessPolicy,
        "jobdecider.v1.SuccessPolicyRule" => pb::SuccessPolicyRule,
        "jobdecider.v1.PodTemplateSpec" => pb::PodTemplateSpec,
        "jobdecider.v1.PodSpec" => pb::PodSpec,
        "jobdecider.v1.Container" => pb::Container,
        "jobdecider.v1.EnvVar" => pb::EnvVar,
        "jobdecider.v1.EnvVarSource" => pb::EnvVarSource,
        "jobdecider.v1.ObjectFieldSelector" => pb::ObjectFieldSelector,
        "jobdecider.v1.Pod" => pb::Pod,
        "jobdecider.v1.PodStatus" => pb::PodStatus,
        "jobdecider.v1.ContainerStatus" => pb::ContainerStatus,
        "jobdecider.v1.ContainerState" => pb::ContainerState,
        "jobdecider.v1.ContainerStateTerminated" => pb::ContainerStateTerminated,
        "jobdecider.v1.LeanPod" => pb::LeanPod,
        "jobdecider.v1.LeanContainerStatus" => pb::LeanContainerStatus,
        "jobdecider.v1.Expectations" => pb::Expectations,
        "jobdecider.v1.ControllerState" => pb::ControllerState,
        "jobdecider.v1.BackoffRecord" => pb::BackoffRecord,
        "jobdecider.v1.JobSet" => pb::JobSet,
        "jobdecider.v1.JobSetSpec" => pb::JobSetSpec,
        "jobdecider.v1.ReplicatedJob" => pb::ReplicatedJob,
        "jobdecider.v1.JobSetFailurePolicy" => pb::JobSetFailurePolicy,
        "jobdecider.v1.JobSetFailurePolicyRule" => pb::JobSetFailurePolicyRule,
        "jobdecider.v1.JobSetStatus" => pb::JobSetStatus,
        "jobdecider.v1.Condition" => pb::Condition,
        "jobdecider.v1.ReplicatedJobStatus" => pb::ReplicatedJobStatus,
        "jobdecider.v1.Action" => pb::Action,
        "jobdecider.v1.DecideJobResponse" => pb::DecideJobResponse,
        "jobdecider.v1.PodCreation" => pb::PodCreation,
    }
}

#[test]
fn every_rpc_of_the_contract_has_its_request_type() {
    for rpc in ["DecideJob", "ValidateJob", "DecideJobSet", "ValidateJobSet"] {
        let _ = request(rpc);
    }
    assert!(
        schema()
            .request_for_path("/grpc.health.v1.Health/Check")
            .is_none()
    );
}

fn job_with_empty_containers(n: usize) -> pb::Job {
    let mut job = realistic_job(1);
    if let Some(spec) = job
        .spec
        .as_mut()
        .and_then(|s| s.template.as_mut())
        .and_then(|t| t.spec.as_mut())
    {
        spec.containers = vec![pb::Container::default(); n];
    }
    job
}

/// Issue 22, e2: empty containers, 2 wire bytes each, are charged as
/// the structs they decode to, and the field is named with its count.
#[test]
fn empty_containers_are_charged_as_decoded_structs_and_named() {
    let n = 100_000;
    let wire = pb::ValidateJobRequest {
        job: Some(job_with_empty_containers(n)),
        ..Default::default()
    }
    .encode_to_vec();
    let got = estimate("ValidateJob", &wire);
    // The list's buffer (a power of two) and, while it grew, its previous half.
    let buffer = n.next_power_of_two() * size_of::<pb::Container>();
    assert!(got.bytes >= buffer + buffer / 2, "{got:?}");
    let largest = got.largest.unwrap_or_else(|| panic!("no field charged"));
    assert_eq!(largest.path, "job.spec.template.spec.containers");
    assert!(largest.count >= n as u64, "{largest:?}");
    // With a limit, the scan stops once past it.
    let limited = request("ValidateJob").estimate(&[&wire], 1 << 20);
    assert!(limited.exceeded);
    assert!(limited.bytes < got.bytes);
    assert_eq!(
        limited.largest.map(|l| l.path).as_deref(),
        Some("job.spec.template.spec.containers")
    );
    assert!(!got.exceeded);
}

/// DecideJob's pods are skipped by their length: each costs its handle, whatever its size.
#[test]
fn decide_job_pods_cost_only_their_handle() {
    let bare = realistic_request(0);
    let with_pods = realistic_request(1_000);
    let bare_estimate = estimate("DecideJob", &bare.encode_to_vec()).bytes;
    let wire = with_pods.encode_to_vec();
    let got = estimate("DecideJob", &wire);
    // The list of 1,000 handles takes a buffer of 1,024, and 512 while it grew.
    let handles = 1_024 * SHARED_BYTES_INLINE;
    assert!(got.bytes >= bare_estimate + handles, "{got:?}");
    assert!(
        got.bytes <= bare_estimate + handles * 3 / 2,
        "{got:?} {bare_estimate}"
    );
    assert!(wire.len() > 100 * 1_000, "pods of realistic size");
    // Decoded whole (ValidateJob's type has no pods field): a different count.
    assert_eq!(got.largest.map(|l| l.path).as_deref(), Some("pods"));
}

/// Every prefix of a realistic request (a truncated body), and bytes that are no
/// message at all, are scanned without a panic; prost reports them as before.
#[test]
fn truncated_or_garbage_input_does_not_panic() {
    let wire = pb::DecideJobSetRequest {
        jobs: vec![realistic_job(3)],
        ..Default::default()
    }
    .encode_to_vec();
    for cut in 0..wire.len() {
        let _ = estimate("DecideJobSet", &wire[..cut]);
        let _ = estimate("DecideJob", &wire[..cut]);
    }
    let mut state = 0x2545_f491_4f6c_dd1du64;
    for _ in 0..2_000 {
        let garbage: Vec<u8> = (0..64)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                state.to_le_bytes()[0]
            })
            .collect();
        for rpc in ["DecideJob", "ValidateJob", "DecideJobSet", "ValidateJobSet"] {
            let _ = estimate(rpc, &garbage);
        }
    }
}

/// Groups nested 100,000 deep (an unknown field) stop the scan at prost's limit;
/// prost refuses the message too.
#[test]
fn deep_nesting_stops_at_prosts_recursion_limit() {
    let depth = 100_000;
    // Field 15, wire type 3 (start group): 0x7b.
    let wire = vec![0x7bu8; depth];
    let got = estimate("ValidateJob", &wire);
    assert!(!got.exceeded);
    assert!(pb::ValidateJobRequest::decode(wire.as_slice()).is_err());
}

/// A body split anywhere into pieces gives the estimate of the whole.
#[test]
fn a_grpc_body_in_pieces_gives_the_estimate_of_the_whole() {
    let message = pb::ValidateJobRequest {
        job: Some(job_with_empty_containers(20)),
        ..Default::default()
    }
    .encode_to_vec();
    let len = u32::try_from(message.len()).unwrap_or(u32::MAX);
    let mut body = vec![0u8];
    body.extend_from_slice(&len.to_be_bytes());
    body.extend_from_slice(&message);
    let rpc = request("ValidateJob");
    let whole = rpc.estimate(&[&message], usize::MAX);
    for a in 0..body.len() {
        for b in a..body.len() {
            let pieces = [&body[..a], &body[a..b], &body[b..]];
            assert_eq!(
                estimate_grpc_body(&rpc, &pieces, usize::MAX),
                Some(whole.clone())
            );
        }
    }
    body[0] = 1;
    assert_eq!(
        estimate_grpc_body(&rpc, &[&body], usize::MAX),
        None,
        "compressed"
    );
}

/// Map entries are charged their node: labels cost at least what a B-tree of them takes.
#[test]
fn map_entries_are_charged_their_node() {
    let mut job = pb::Job::default();
    let meta = job.metadata.get_or_insert_with(Default::default);
    for i in 0..100 {
        meta.labels.insert(format!("key-{i}"), format!("value-{i}"));
    }
    let wire = pb::ValidateJobRequest {
        job: Some(job),
        ..Default::default()
    }
    .encode_to_vec();
    let got = estimate("ValidateJob", &wire);
    let entry = 2 * size_of::<String>();
    assert!(got.bytes >= map_node_bytes(entry) + 100 * MAP_ENTRY_FACTOR * entry);
    assert_eq!(
        got.largest.map(|l| l.path).as_deref(),
        Some("job.metadata.labels")
    );
}
