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

/// A protobuf varint.
fn varint(mut n: u64, out: &mut Vec<u8>) {
    while n >= 0x80 {
        out.push((n as u8) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

/// Field `tag` of wire type 2 holding `body`.
fn length_delimited(tag: u32, body: &[u8], out: &mut Vec<u8>) {
    varint(u64::from(tag << 3 | 2), out);
    varint(body.len() as u64, out);
    out.extend_from_slice(body);
}

/// An encoded Job whose pod template holds `n` copies of the encoded `container`
/// (`spec` 4 → `template` 11 → `spec` 2 → `containers` 2), written by hand: as
/// `pb::Container`s the list itself would take gigabytes in the test.
fn job_with_containers(n: usize, container: &[u8]) -> Vec<u8> {
    let mut pod_spec = Vec::with_capacity(n * (container.len() + 2));
    for _ in 0..n {
        length_delimited(2, container, &mut pod_spec);
    }
    let mut template = Vec::new();
    length_delimited(2, &pod_spec, &mut template);
    drop(pod_spec);
    let mut spec = Vec::new();
    length_delimited(11, &template, &mut spec);
    drop(template);
    let mut job = Vec::new();
    length_delimited(4, &spec, &mut job);
    job
}

/// The deploy's flags (deploy/base/decider-deployment.yaml): a 256 MiB budget,
/// 128 MiB messages, 8 slots.
fn deploy_config() -> job_decider::server::ServerConfig {
    job_decider::server::ServerConfig {
        max_request_bytes_in_flight: 256 << 20,
        max_message_size: 128 << 20,
        max_concurrent_requests: 8,
        ..job_decider::server::ServerConfig::default()
    }
}

/// Sends `message` to `rpc` and returns the status it was refused with and the
/// most bytes the process held at once meanwhile, beyond what it held before.
async fn refused_with_peak(
    server: &common::TestServer,
    rpc: &str,
    message: &[u8],
) -> (tonic::Status, usize) {
    let body = common::framed(message);
    let channel = server.channel().await;
    let before = counting_alloc::live();
    counting_alloc::reset_peak();
    let outcome =
        common::raw_call(channel, &format!("/jobdecider.v1.JobDecider/{rpc}"), body).await;
    let peak = counting_alloc::peak().saturating_sub(before);
    match outcome {
        Ok(_) => panic!("{rpc} of {} bytes was answered", message.len()),
        Err(status) => (status, peak),
    }
}

/// Asserts that `status` refuses the request for what it would decode to, naming `field`.
fn assert_refused_naming(status: &tonic::Status, field: &str) {
    assert_eq!(status.code(), tonic::Code::ResourceExhausted, "{status:?}");
    assert!(status.message().contains(field), "{status:?}");
    assert!(status.message().contains("entries"), "{status:?}");
}

/// Issue 22, hostile sequence e2: a 44 MiB DecideJob whose Job template holds 22
/// million empty containers (2 wire bytes each, a 48-byte `Container` decoded)
/// took the server past 2 GiB: prost decoded it before any budget saw its size.
/// The body layer's wire pre-scan refuses it before it is decoded.
#[test]
fn decide_job_with_22_million_empty_containers_is_refused_before_decoding() {
    with_runtime(async {
        let server = common::TestServer::start(deploy_config()).await;
        let n = 22_000_000;
        let mut request = Vec::new();
        length_delimited(1, &job_with_containers(n, &[]), &mut request);
        let (status, peak) = refused_with_peak(&server, "DecideJob", &request).await;
        assert_refused_naming(&status, "job.spec.template.spec.containers");
        // The body in the client and in the server; decoded it would be 22M x 48 bytes.
        let decoded = n * std::mem::size_of::<pb::Container>();
        assert!(
            peak <= 3 * request.len() + (16 << 20),
            "a {}-byte request held {peak} bytes at once (decoded: {decoded})",
            request.len()
        );
        eprintln!(
            "e2: {} request bytes, peak {peak} B: {status:?}",
            request.len()
        );
    });
}

/// Issue 22, hostile sequence e1: ValidateJob of 3,000,000 named containers (14.3
/// MiB) peaked at 730 MiB. Decoded, the containers alone are past the budget.
#[test]
fn validate_job_with_3_million_named_containers_is_refused_before_decoding() {
    with_runtime(async {
        let server = common::TestServer::start(deploy_config()).await;
        let n = 3_000_000;
        let mut named = Vec::new();
        length_delimited(1, b"c", &mut named);
        let mut request = Vec::new();
        length_delimited(1, &job_with_containers(n, &named), &mut request);
        let (status, peak) = refused_with_peak(&server, "ValidateJob", &request).await;
        assert_refused_naming(&status, "job.spec.template.spec.containers");
        assert!(
            peak <= 3 * request.len() + (16 << 20),
            "a {}-byte request held {peak} bytes at once",
            request.len()
        );
    });
}

/// The same through DecideJobSet's child Jobs: 8 Jobs of 2 million empty
/// containers each (32 MB on the wire, 768 MB as `Container`s).
#[test]
fn decide_job_set_whose_child_jobs_hold_millions_of_empty_containers_is_refused() {
    with_runtime(async {
        let server = common::TestServer::start(deploy_config()).await;
        let job = job_with_containers(2_000_000, &[]);
        let mut request = Vec::new();
        for _ in 0..8 {
            length_delimited(2, &job, &mut request);
        }
        drop(job);
        let (status, peak) = refused_with_peak(&server, "DecideJobSet", &request).await;
        assert_refused_naming(&status, "jobs.spec.template.spec.containers");
        assert!(
            peak <= 3 * request.len() + (16 << 20),
            "a {}-byte request held {peak} bytes at once",
            request.len()
        );
    });
}

/// What decoding `wire` as `M` takes: the heap it held at its peak, and the struct itself.
fn decoded_size<M: Message + Default>(wire: &[u8]) -> usize {
    let wire = bytes::Bytes::copy_from_slice(wire);
    let (decoded, heap) = counting_alloc::measured(|| M::decode(wire.clone()));
    assert!(decoded.is_ok(), "the request decodes");
    drop(decoded);
    heap + std::mem::size_of::<M>()
}

/// The decoded-size pre-scan is a bound, and not a loose one, on real requests: every
/// vector's DecideJob (pods kept encoded, as the server decodes them) and ValidateJob of
/// its Job, the fixtures' realistic Job, and a DecideJobSet of realistic child Jobs.
#[test]
fn decoded_size_estimate_bounds_realistic_requests_within_8x() {
    use job_decider_api::decoded_size::contract;
    use job_decider_api::{LazyDecideJobRequest, fixtures};
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let schema = contract().unwrap_or_else(|e| panic!("{e}"));
    let rpc = |name: &str| {
        schema
            .request_for_path(&format!("/jobdecider.v1.JobDecider/{name}"))
            .unwrap_or_else(|| panic!("{name}"))
    };
    let mut cases: Vec<(String, &str, Vec<u8>, usize)> = Vec::new();
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/vectors");
    let mut requests: Vec<(String, pb::DecideJobRequest)> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{e}"))
        .filter_map(|entry| {
            let path = entry.ok()?.path();
            (path.extension()? == "yaml").then_some(path)
        })
        .filter_map(|path| {
            let doc = vector_files::load(&path).ok()?;
            Some((doc.name, serde_json::from_value(doc.request).ok()?))
        })
        .collect();
    requests.push((
        "fixtures::realistic_request(100)".into(),
        fixtures::realistic_request(100),
    ));
    assert!(requests.len() > 100, "{} vectors", requests.len());
    for (name, request) in requests {
        let wire = request.encode_to_vec();
        let decoded = decoded_size::<LazyDecideJobRequest>(&wire);
        cases.push((format!("{name} (DecideJob)"), "DecideJob", wire, decoded));
        let validate = pb::ValidateJobRequest {
            job: request.job,
            failure_policy: request.failure_policy,
        }
        .encode_to_vec();
        let decoded = decoded_size::<pb::ValidateJobRequest>(&validate);
        cases.push((
            format!("{name} (ValidateJob)"),
            "ValidateJob",
            validate,
            decoded,
        ));
    }
    let jobset = pb::DecideJobSetRequest {
        jobs: (0..3).map(|_| fixtures::realistic_job(10)).collect(),
        ..Default::default()
    }
    .encode_to_vec();
    let decoded = decoded_size::<pb::DecideJobSetRequest>(&jobset);
    cases.push((
        "3 realistic Jobs (DecideJobSet)".into(),
        "DecideJobSet",
        jobset,
        decoded,
    ));

    let mut loosest = (0.0f64, String::new());
    for (name, method, wire, decoded) in &cases {
        let estimate = rpc(method).estimate(&[wire.as_slice()], usize::MAX).bytes;
        assert!(
            estimate >= *decoded,
            "{name}: estimate {estimate} < decoded {decoded}"
        );
        #[allow(clippy::cast_precision_loss)]
        let ratio = estimate as f64 / *decoded as f64;
        if ratio > loosest.0 {
            loosest = (ratio, name.clone());
        }
        assert!(
            estimate <= 8 * decoded,
            "{name}: estimate {estimate} > 8 x decoded {decoded}"
        );
    }
    eprintln!(
        "{} requests, loosest estimate {:.2}x ({})",
        cases.len(),
        loosest.0,
        loosest.1
    );
}

/// A request whose decoded size fits the budget, but not beside another call's
/// body, is shed at once with REQUEST_BYTES_BUDGET (as a body would be), and
/// served once the other call has let go.
#[test]
fn decoded_size_that_does_not_fit_now_is_shed_with_request_bytes_budget() {
    with_runtime(async {
        let server = common::TestServer::start(job_decider::server::ServerConfig {
            max_request_bytes_in_flight: 8 << 20,
            max_message_size: 4 << 20,
            ..job_decider::server::ServerConfig::default()
        })
        .await;
        // Just under the 4 MiB message limit, so the held body is one the server reads.
        let big = common::framed(&common::request_of_size((4 << 20) - (64 << 10)).encode_to_vec());
        let holder =
            common::HeldCall::holding_budget(&server, server.channel().await, big.clone()).await;
        // 60,000 empty containers: 120 KB on the wire, about 4.7 MB decoded.
        let mut request = Vec::new();
        length_delimited(1, &job_with_containers(60_000, &[]), &mut request);
        let path = "/jobdecider.v1.JobDecider/ValidateJob";
        let shed = common::raw_call(server.channel().await, path, common::framed(&request))
            .await
            .expect_err("no room beside the held body");
        assert_eq!(shed.code(), tonic::Code::ResourceExhausted, "{shed:?}");
        let details = tonic_types::StatusExt::get_error_details(&shed);
        let reason = details.error_info().map(|i| i.reason.clone());
        assert_eq!(reason.as_deref(), Some("REQUEST_BYTES_BUDGET"), "{shed:?}");
        let _ = holder.finish().await;
        server
            .wait_for_metric_line("job_decider_request_bytes_in_flight 0")
            .await;
        common::raw_call(server.channel().await, path, common::framed(&request))
            .await
            .unwrap_or_else(|s| panic!("alone, it fits: {s:?}"));
    });
}
