//! Small requests must not buy large answers: a response holds what its request carries plus
//! a bounded amount, and an error's trailer stays well under the 16 KiB a gRPC client or proxy
//! accepts in a header, however many fields are wrong.
//!
//! The allocations of each test are counted by a global allocator; a lock keeps the tests of
//! this binary from running at once, so each measures only its own work. The last tests make
//! the same calls over gRPC to an in-process server on 127.0.0.1.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]
// A counting global allocator has to implement the unsafe GlobalAlloc trait.
#![allow(unsafe_code)]

#[path = "it/common/mod.rs"]
mod common;
#[path = "it/vector_files/mod.rs"]
mod vector_files;

mod counting_alloc;

use std::sync::Mutex;

use job_decider_api::convert_jobset::decide_jobset_request;
use job_decider_api::pb;
use job_decider_core::jobset::MAX_JOB_CHANGES_PER_PLAN;
use prost::Message;

#[global_allocator]
static ALLOCATOR: counting_alloc::Counting = counting_alloc::Counting;

/// Held by each test, so one measures at a time.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// The Job of a small vector, as a DecideJobRequest with no pods.
fn job_request() -> pb::DecideJobRequest {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/vectors/adopt-only-matching.yaml");
    let doc = vector_files::load(&path).unwrap_or_else(|e| panic!("{e}"));
    let mut req: pb::DecideJobRequest =
        serde_json::from_value(doc.request).unwrap_or_else(|e| panic!("{e}"));
    req.pods.clear();
    req
}

#[test]
fn a_million_replica_jobset_answers_a_bounded_plan_with_a_requeue() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let request: pb::DecideJobSetRequest = serde_json::from_value(serde_json::json!({
        "now": "2024-01-01T00:00:00Z",
        "explain": true,
        "jobSet": {"metadata": {"name": "js", "uid": "u"},
                   "spec": {"replicatedJobs": [{"name": "rj", "replicas": 1_000_000}]}}
    }))
    .unwrap_or_default();
    let wire = request.encode_to_vec();
    let (response, peak) = counting_alloc::measured(|| {
        let req = pb::DecideJobSetRequest::decode(wire.as_slice()).unwrap_or_default();
        decide_jobset_request(req).map(|r| r.encode_to_vec())
    });
    let bytes = response.unwrap_or_else(|v| panic!("rejected: {v:?}"));
    let response = pb::DecideJobSetResponse::decode(bytes.as_slice()).unwrap_or_default();

    assert_eq!(response.jobs_to_create.len(), MAX_JOB_CHANGES_PER_PLAN);
    assert_eq!(
        response.requeue_after,
        Some(pbjson_types::Duration::default()),
        "the plan says more follow: decide again at once"
    );
    let last = response.jobs_to_create.last().map(|j| j.name.as_str());
    assert_eq!(last, Some("js-rj-499"));
    let summary = response.explanation.map(|e| e.summary).unwrap_or_default();
    assert!(summary.contains("decide again"), "{summary}");
    // 500 creations of ~540 bytes each (six labels, the same six annotations); the request
    // was a few dozen bytes.
    assert!(
        bytes.len() <= 512 * 1024,
        "{} request bytes gave {} response bytes",
        wire.len(),
        bytes.len()
    );
    assert!(peak <= 4 << 20, "the decision held {peak} bytes at once");
    eprintln!(
        "10^6-replica JobSet: request {} B, response {} B, peak {} B",
        wire.len(),
        bytes.len(),
        peak
    );
}

#[test]
fn a_hundred_thousand_empty_pods_give_a_trailer_under_16_kib() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let mut req = job_request();
    req.pods = vec![pb::Pod::default(); 100_000];
    let err = match job_decider_api::decide(req) {
        Ok(_) => panic!("pods without name or uid cannot be decided"),
        Err(err) => err,
    };
    let message = err.to_string();
    let status = tonic::Status::from(err);
    let mut headers = http::HeaderMap::new();
    assert!(status.add_header(&mut headers).is_ok());
    let trailer: usize = headers
        .iter()
        .map(|(k, v)| k.as_str().len() + v.len())
        .sum();
    let details = headers
        .get("grpc-status-details-bin")
        .map_or(0, http::HeaderValue::len);
    assert!(trailer < 16 * 1024, "trailer of {trailer} bytes");
    assert!(details < 12 * 1024, "details of {details} bytes");

    let got = tonic_types::StatusExt::get_error_details(&status);
    let listed = got.bad_request().map_or(0, |b| b.field_violations.len());
    let metadata = got
        .error_info()
        .map(|i| i.metadata.clone())
        .unwrap_or_default();
    let total: usize = metadata
        .get("violations")
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    let omitted: usize = metadata
        .get("violationsOmitted")
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    assert!(total >= 100_000, "every pod is wrong: {total}");
    assert!((1..=100).contains(&listed), "{listed} listed");
    assert_eq!(listed + omitted, total);
    assert!(
        message.ends_with(&format!("leave out {omitted})")),
        "{message}"
    );
    assert_eq!(status.message(), message);
    eprintln!(
        "10^5 empty pods: {total} violations, {listed} listed, trailer {trailer} B (details {details} B)"
    );
}

#[test]
fn decide_job_creates_at_most_500_pods_however_large_the_parallelism() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let mut req = job_request();
    if let Some(spec) = req.job.as_mut().and_then(|j| j.spec.as_mut()) {
        spec.parallelism = Some(100_000);
        spec.completions = Some(100_000);
    }
    if let Some(status) = req.job.as_mut().and_then(|j| j.status.as_mut()) {
        status.active = 0;
    }
    let wire = req.encode_to_vec();
    let (response, peak) = counting_alloc::measured(|| {
        job_decider_api::decide(req).map(|d| d.response().encode_to_vec())
    });
    let bytes = response.unwrap_or_else(|e| panic!("{e}"));
    let response = pb::DecideJobResponse::decode(bytes.as_slice()).unwrap_or_default();
    let created: usize = response
        .actions
        .iter()
        .filter_map(|a| match &a.kind {
            Some(pb::action::Kind::CreatePods(c)) => Some(c.pods.len()),
            _ => None,
        })
        .sum();
    assert_eq!(created, 500);
    assert!(
        bytes.len() <= wire.len() + 512 * 1024,
        "{} request bytes gave {} response bytes",
        wire.len(),
        bytes.len()
    );
    assert!(peak <= 4 << 20, "the decision held {peak} bytes at once");
}

#[test]
fn a_manual_selector_job_with_a_megabyte_uid_is_rejected_not_copied_into_every_pod() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let mut req = job_request();
    let uid = "u".repeat(1 << 20);
    if let Some(job) = req.job.as_mut() {
        if let Some(meta) = job.metadata.as_mut() {
            meta.uid = uid;
        }
        if let Some(spec) = job.spec.as_mut() {
            assert_eq!(spec.manual_selector, Some(true), "no uid labels to match");
            spec.parallelism = Some(500);
            spec.completions = Some(500);
        }
        if let Some(status) = job.status.as_mut() {
            status.active = 0;
        }
    }
    let wire = req.encode_to_vec().len();
    let (result, peak) =
        counting_alloc::measured(|| job_decider_api::decide(req).map(|d| d.response()));
    match result {
        // Each of 500 creations would carry the uid in its owner reference: 500 MiB.
        Ok(response) => panic!(
            "{wire} request bytes gave {} response bytes",
            response.encoded_len()
        ),
        Err(err) => {
            let message = err.to_string();
            assert!(message.contains("metadata.uid"), "{message}");
            assert!(message.len() <= 1024);
        }
    }
    assert!(peak <= 16 << 20, "the decision held {peak} bytes at once");
}

/// Runs `f` on a multi-threaded runtime of its own (the server decodes large bodies with
/// `block_in_place`), while holding the lock, so no measured test allocates meanwhile.
fn with_runtime(f: impl std::future::Future<Output = ()>) {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap_or_else(|e| panic!("runtime: {e}"));
    runtime.block_on(f);
}

#[test]
fn over_grpc_a_million_replica_jobset_answers_500_jobs_and_a_requeue() {
    with_runtime(async {
        let server = common::TestServer::start(job_decider::server::ServerConfig::default()).await;
        let request: pb::DecideJobSetRequest = serde_json::from_value(serde_json::json!({
            "now": "2024-01-01T00:00:00Z",
            "jobSet": {"metadata": {"name": "js", "uid": "u"},
                       "spec": {"replicatedJobs": [{"name": "rj", "replicas": 1_000_000}]}}
        }))
        .unwrap_or_default();
        let response = server
            .client()
            .await
            .decide_job_set(request)
            .await
            .unwrap_or_else(|s| panic!("{s}"))
            .into_inner();
        assert_eq!(response.jobs_to_create.len(), MAX_JOB_CHANGES_PER_PLAN);
        assert_eq!(
            response.requeue_after,
            Some(pbjson_types::Duration::default())
        );
        assert!(response.encoded_len() <= 512 * 1024);
    });
}

#[test]
fn over_grpc_100k_pods_owned_elsewhere_answer_invalid_argument_with_bounded_details() {
    // The realistic mistake: every pod is controlled by another Job. Each is a violation; the
    // trailer listing them all was 26 MB, past grpc-go's 16 MiB header limit.
    with_runtime(async {
        let server = common::TestServer::start(job_decider::server::ServerConfig::default()).await;
        let mut req = job_request();
        let pod: pb::Pod = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "p", "uid": "x", "namespace": "default",
                         "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job",
                             "name": "other", "uid": "someone-else", "controller": true}]},
            "status": {"phase": "Running"}
        }))
        .unwrap_or_else(|e| panic!("{e}"));
        req.pods = (0..100_000)
            .map(|i| {
                let mut p = pod.clone();
                if let Some(m) = p.metadata.as_mut() {
                    m.name = format!("pod-{i}");
                    m.uid = format!("uid-{i}");
                }
                p
            })
            .collect();
        let status = match server.client().await.decide_job(req).await {
            Ok(_) => panic!("pods of another controller are rejected"),
            Err(status) => status,
        };
        assert_eq!(status.code(), tonic::Code::InvalidArgument, "{status}");
        let details = tonic_types::StatusExt::get_error_details(&status);
        let listed = details
            .bad_request()
            .map_or(0, |b| b.field_violations.len());
        assert!((1..=100).contains(&listed), "{listed} listed");
        let metadata = details
            .error_info()
            .map(|i| i.metadata.clone())
            .unwrap_or_default();
        assert_eq!(
            metadata.get("violations").map(String::as_str),
            Some("100000")
        );
        let omitted = 100_000 - listed;
        assert_eq!(
            metadata.get("violationsOmitted"),
            Some(&omitted.to_string())
        );
        assert!(status.message().len() <= 1024);
        assert!(
            status.details().len() < 12 * 1024,
            "{} bytes",
            status.details().len()
        );
    });
}

/// Every response is at most this many times its request...
const RESPONSE_PER_REQUEST_BYTE: usize = 4;
/// ...plus this much (500 pod creations or Job changes, a capped list of violations).
const RESPONSE_ALLOWANCE_BYTES: usize = 512 * 1024;

fn assert_bounded(rpc: &str, request: usize, response: usize) {
    assert!(
        response <= RESPONSE_PER_REQUEST_BYTE * request + RESPONSE_ALLOWANCE_BYTES,
        "{rpc}: a {request}-byte request answered {response} bytes"
    );
}

/// A ValidateJob of `n` containers that all have one name: n - 1 duplicates.
fn containers_with_one_name(n: usize) -> pb::ValidateJobRequest {
    let job = job_request().job.unwrap_or_default();
    let mut job = serde_json::to_value(job).unwrap_or_else(|e| panic!("{e}"));
    job["spec"]["template"]["spec"]["containers"] =
        serde_json::Value::Array(vec![serde_json::json!({"name": "c", "image": "i"}); n]);
    pb::ValidateJobRequest {
        job: Some(serde_json::from_value(job).unwrap_or_else(|e| panic!("{e}"))),
        ..Default::default()
    }
}

/// Issue 22, item 4: each RPC's response is bounded by its request, including
/// ValidateJob's list of violations (3 million containers with one name once
/// answered 395.6 MiB; here 100,000).
#[test]
fn every_rpc_response_is_bounded_by_its_request_even_100k_duplicate_containers() {
    with_runtime(async {
        let server = common::TestServer::start(job_decider::server::ServerConfig::default()).await;
        let mut client = server.client().await;

        let validate = containers_with_one_name(100_000);
        let response = client
            .validate_job(validate.clone())
            .await
            .unwrap_or_else(|s| panic!("{s}"))
            .into_inner();
        assert_eq!(response.violations.len(), 101, "100 listed, then the count");
        let last = response.violations.last().cloned().unwrap_or_default();
        assert_eq!(last.reason, "FieldValueTooMany", "{last:?}");
        assert!(last.description.contains("99899 more"), "{last:?}");
        assert_bounded(
            "ValidateJob",
            validate.encoded_len(),
            response.encoded_len(),
        );

        let mut decide = common::request_of_size(1 << 20);
        let response = client
            .decide_job(decide.clone())
            .await
            .unwrap_or_else(|s| panic!("{s}"))
            .into_inner();
        assert_bounded("DecideJob", decide.encoded_len(), response.encoded_len());
        // A small request that creates as many pods as a plan may.
        decide = job_request();
        if let Some(spec) = decide.job.as_mut().and_then(|j| j.spec.as_mut()) {
            spec.parallelism = Some(1_000_000);
            spec.completions = Some(1_000_000);
        }
        let response = client
            .decide_job(decide.clone())
            .await
            .unwrap_or_else(|s| panic!("{s}"))
            .into_inner();
        assert_bounded("DecideJob", decide.encoded_len(), response.encoded_len());

        let jobset: pb::DecideJobSetRequest = serde_json::from_value(serde_json::json!({
            "now": "2024-01-01T00:00:00Z",
            "jobSet": {"metadata": {"name": "js", "uid": "u"},
                       "spec": {"replicatedJobs": [{"name": "rj", "replicas": 1_000_000}]}}
        }))
        .unwrap_or_else(|e| panic!("{e}"));
        let response = client
            .decide_job_set(jobset.clone())
            .await
            .unwrap_or_else(|s| panic!("{s}"))
            .into_inner();
        assert_bounded("DecideJobSet", jobset.encoded_len(), response.encoded_len());

        // Every target names no replicated Job: one violation each (the service takes at
        // most 32 rules, so the many violations come from one rule's targets).
        let rules = vec![serde_json::json!({
            "action": "FailJobSet",
            "targetReplicatedJobs": vec!["nope"; 20_000],
        })];
        let validate_set = pb::ValidateJobSetRequest {
            job_set: serde_json::from_value(serde_json::json!({
                "spec": {"replicatedJobs": [{"name": "workers"}],
                         "failurePolicy": {"rules": rules}}
            }))
            .ok(),
        };
        let response = client
            .validate_job_set(validate_set.clone())
            .await
            .unwrap_or_else(|s| panic!("{s}"))
            .into_inner();
        assert!(
            response.violations.len() <= 101,
            "{}",
            response.violations.len()
        );
        assert_bounded(
            "ValidateJobSet",
            validate_set.encoded_len(),
            response.encoded_len(),
        );
    });
}
