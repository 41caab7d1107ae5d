//! The gRPC server, in process on an ephemeral port, through the generated client.

use std::collections::HashSet;
use std::path::Path;

use crate::common::{TestServer, example_request, small_request};
use job_decider::server::ServerConfig;
use job_decider_api::pb;
use tokio_stream::StreamExt;
use tonic::Code;
use tonic_types::StatusExt;

async fn server() -> TestServer {
    TestServer::start(ServerConfig::default()).await
}

/// (code, field paths, ErrorInfo reason) of a failed call.
fn failure(status: &tonic::Status) -> (Code, Vec<String>, String) {
    let details = status.get_error_details();
    let fields = details
        .bad_request()
        .map(|b| b.field_violations.iter().map(|v| v.field.clone()).collect())
        .unwrap_or_default();
    let reason = details
        .error_info()
        .map(|i| i.reason.clone())
        .unwrap_or_default();
    (status.code(), fields, reason)
}

#[tokio::test]
async fn health_serves_overall_and_the_service() {
    let server = server().await;
    crate::common::assert_health_serving(server.channel().await).await;
}

#[tokio::test]
async fn reflection_lists_the_services_in_v1_and_v1alpha() {
    use tonic_reflection::pb::{v1, v1alpha};
    let server = server().await;

    let mut client =
        v1::server_reflection_client::ServerReflectionClient::new(server.channel().await);
    let request = v1::ServerReflectionRequest {
        host: String::new(),
        message_request: Some(v1::server_reflection_request::MessageRequest::ListServices(
            String::new(),
        )),
    };
    let mut stream = client
        .server_reflection_info(tokio_stream::iter([request]))
        .await
        .expect("reflection")
        .into_inner();
    let response = stream.next().await.expect("a response").expect("ok");
    let Some(v1::server_reflection_response::MessageResponse::ListServicesResponse(list)) =
        response.message_response
    else {
        panic!("unexpected reflection answer: {response:?}");
    };
    let names: HashSet<String> = list.service.into_iter().map(|s| s.name).collect();
    assert!(names.contains("jobdecider.v1.JobDecider"), "{names:?}");
    assert!(names.contains("grpc.health.v1.Health"), "{names:?}");

    let mut alpha =
        v1alpha::server_reflection_client::ServerReflectionClient::new(server.channel().await);
    let request = v1alpha::ServerReflectionRequest {
        host: String::new(),
        message_request: Some(
            v1alpha::server_reflection_request::MessageRequest::FileContainingSymbol(
                "jobdecider.v1.JobDecider".into(),
            ),
        ),
    };
    let mut stream = alpha
        .server_reflection_info(tokio_stream::iter([request]))
        .await
        .expect("reflection v1alpha")
        .into_inner();
    let response = stream.next().await.expect("a response").expect("ok");
    assert!(
        matches!(
            response.message_response,
            Some(v1alpha::server_reflection_response::MessageResponse::FileDescriptorResponse(ref f))
                if !f.file_descriptor_proto.is_empty()
        ),
        "{response:?}"
    );
}

/// The files reflection gives for one request, in v1 or v1alpha (the same messages
/// under two packages, so one closure per version).
macro_rules! reflection_files {
    ($version:ident, $channel:expr, $request:expr) => {{
        use tonic_reflection::pb::$version::{
            ServerReflectionRequest, server_reflection_client::ServerReflectionClient,
            server_reflection_request::MessageRequest, server_reflection_response::MessageResponse,
        };
        let request: MessageRequest = match $request.clone() {
            Lookup::Symbol(s) => MessageRequest::FileContainingSymbol(s),
            Lookup::File(f) => MessageRequest::FileByFilename(f),
        };
        let mut client = ServerReflectionClient::new($channel);
        let mut stream = client
            .server_reflection_info(tokio_stream::iter([ServerReflectionRequest {
                host: String::new(),
                message_request: Some(request),
            }]))
            .await
            .expect("reflection")
            .into_inner();
        let response = stream.next().await.expect("a response").expect("ok");
        match response.message_response {
            Some(MessageResponse::FileDescriptorResponse(files)) => files
                .file_descriptor_proto
                .iter()
                .map(|bytes| {
                    <prost_types::FileDescriptorProto as prost::Message>::decode(bytes.as_slice())
                        .expect("a file")
                })
                .collect::<Vec<_>>(),
            other => panic!("{:?}: no file: {other:?}", $request),
        }
    }};
}

/// What a reflection client asks for.
#[derive(Clone, Debug)]
enum Lookup {
    Symbol(String),
    File(String),
}

/// Every file reachable from `symbol` through imports, fetched one by one as grpcurl
/// does: the file containing it, then each import by name until none is missing.
async fn reflection_closure(
    server: &TestServer,
    alpha: bool,
    symbol: &str,
) -> Vec<prost_types::FileDescriptorProto> {
    let mut files: Vec<prost_types::FileDescriptorProto> = Vec::new();
    let mut wanted = vec![Lookup::Symbol(symbol.to_string())];
    while let Some(lookup) = wanted.pop() {
        let got = if alpha {
            reflection_files!(v1alpha, server.channel().await, &lookup)
        } else {
            reflection_files!(v1, server.channel().await, &lookup)
        };
        for file in got {
            if files.iter().any(|f| f.name == file.name) {
                continue;
            }
            for import in &file.dependency {
                if !files.iter().any(|f| f.name() == import) {
                    wanted.push(Lookup::File(import.clone()));
                }
            }
            files.push(file);
        }
    }
    files
}

/// grpcurl decodes an error's details only when reflection serves their types:
/// `google.rpc.BadRequest` and `ErrorInfo` (google/rpc/error_details.proto),
/// `google.rpc.Status`, and every file they import; and the contract's own imports.
#[tokio::test]
async fn reflection_serves_the_error_details_and_every_import() {
    let server = server().await;
    for alpha in [false, true] {
        let files = reflection_closure(&server, alpha, "google.rpc.BadRequest").await;
        let names: Vec<&str> = files.iter().map(|f| f.name()).collect();
        assert_eq!(names[0], "google/rpc/error_details.proto", "alpha {alpha}");
        assert!(
            names.contains(&"google/protobuf/duration.proto"),
            "{names:?}"
        );
        let messages: Vec<&str> = files[0].message_type.iter().map(|m| m.name()).collect();
        for message in ["BadRequest", "ErrorInfo"] {
            assert!(messages.contains(&message), "{messages:?}");
        }
        let bad_request = &files[0].message_type[messages
            .iter()
            .position(|m| *m == "BadRequest")
            .expect("BadRequest")];
        assert!(
            bad_request
                .nested_type
                .iter()
                .any(|m| m.name() == "FieldViolation"),
            "{bad_request:?}"
        );

        let status = reflection_closure(&server, alpha, "google.rpc.Status").await;
        assert_eq!(status[0].name(), "google/rpc/status.proto", "alpha {alpha}");

        let contract = reflection_closure(&server, alpha, "jobdecider.v1.JobDecider").await;
        let names: Vec<&str> = contract.iter().map(|f| f.name()).collect();
        assert!(
            names.iter().any(|n| n.starts_with("jobdecider/v1/")),
            "{names:?}"
        );
        // The contract's imports (timestamps, durations) resolve as well: the closure
        // fetched each one or panicked.
        assert!(
            names.contains(&"google/protobuf/timestamp.proto"),
            "{names:?}"
        );
    }
}

/// Statuses a plan writes never lower the counters of the status it read.
fn assert_plan_is_sane(request: &pb::DecideJobRequest, response: &pb::DecideJobResponse) {
    let before = request
        .job
        .as_ref()
        .and_then(|j| j.status.clone())
        .unwrap_or_default();
    let uids: HashSet<&str> = request
        .pods
        .iter()
        .filter_map(|p| p.metadata.as_ref().map(|m| m.uid.as_str()))
        .collect();
    for action in &response.actions {
        match action.kind.as_ref().expect("every action has a kind") {
            pb::action::Kind::UpdateStatus(update) => {
                let after = update.status.as_ref().expect("a complete status");
                assert!(after.succeeded >= before.succeeded && after.failed >= before.failed);
            }
            pb::action::Kind::DeletePods(delete) => {
                for pod in &delete.pods {
                    assert!(
                        uids.contains(pod.uid.as_str()),
                        "deletes unknown pod {pod:?}"
                    );
                }
            }
            pb::action::Kind::RemoveFinalizers(remove) => {
                for pod in &remove.pods {
                    assert!(uids.contains(pod.uid.as_str()), "unknown pod {pod:?}");
                }
            }
            _ => {}
        }
    }
}

#[tokio::test]
async fn decision_round_trip_on_a_kubectl_json_example() {
    let server = server().await;
    let mut client = server.client().await;
    let request = example_request("kep-3329-failjob-exit-code-42");
    assert_eq!(request.pods.len(), 3);

    let first = client
        .decide_job(request.clone())
        .await
        .expect("decided")
        .into_inner();
    assert_plan_is_sane(&request, &first);
    let state = first.state.expect("the response always carries state");

    // The same snapshot gives the same plan.
    let again = client
        .decide_job(request.clone())
        .await
        .expect("decided")
        .into_inner();
    assert_eq!(again, first);

    // The state handed back is accepted on the next call.
    let mut next = request;
    next.state = Some(state);
    let second = client.decide_job(next.clone()).await.expect("decided");
    assert_plan_is_sane(&next, second.get_ref());
    assert!(second.into_inner().state.is_some());
}

#[tokio::test]
async fn every_example_is_decided() {
    let server = server().await;
    let mut client = server.client().await;
    for dir in [
        "kep-3329-failjob-exit-code-42",
        "kep-3329-ignore-disruption",
        "kep-3850-backoff-limit-per-index",
        "indexed-job-mid-run",
    ] {
        let request = example_request(dir);
        let response = client
            .decide_job(request.clone())
            .await
            .unwrap_or_else(|s| panic!("{dir}: {s:?}"))
            .into_inner();
        assert_plan_is_sane(&request, &response);
    }
}

#[tokio::test]
async fn bad_input_names_the_field() {
    let server = server().await;
    let mut client = server.client().await;
    let base = example_request("kep-3329-failjob-exit-code-42");
    let mut cases: Vec<(&str, pb::DecideJobRequest, &str)> = Vec::new();

    let mut no_job = base.clone();
    no_job.job = None;
    cases.push(("no job", no_job, "job"));

    let mut no_now = base.clone();
    no_now.now = None;
    cases.push(("no now", no_now, "now"));

    let mut no_job_uid = base.clone();
    if let Some(m) = no_job_uid.job.as_mut().and_then(|j| j.metadata.as_mut()) {
        m.uid.clear();
    }
    cases.push(("no job uid", no_job_uid, "job.metadata.uid"));

    let mut no_pod_uid = base.clone();
    if let Some(m) = no_pod_uid.pods[2].metadata.as_mut() {
        m.uid.clear();
    }
    cases.push(("no pod uid", no_pod_uid, "pods[2].metadata.uid"));

    let mut foreign = base.clone();
    if let Some(m) = foreign.pods[1].metadata.as_mut() {
        m.owner_references[0].uid = "someone-else".into();
    }
    cases.push((
        "foreign controller",
        foreign,
        "pods[1].metadata.ownerReferences[0].uid",
    ));

    let mut negative = base.clone();
    if let Some(s) = negative.job.as_mut().and_then(|j| j.status.as_mut()) {
        s.failed = -1;
    }
    cases.push(("negative count", negative, "job.status.failed"));

    let mut phase = base.clone();
    if let Some(s) = phase.pods[0].status.as_mut() {
        s.phase = "Exploded".into();
    }
    cases.push(("unknown phase", phase, "pods[0].status.phase"));

    let mut time = base.clone();
    time.now = Some(pbjson_types::Timestamp {
        seconds: 1,
        nanos: 2_000_000_000,
    });
    cases.push(("bad timestamp", time, "now"));

    for (what, request, field) in cases {
        let status = client.decide_job(request).await.expect_err(what);
        let (code, fields, reason) = failure(&status);
        assert_eq!(code, Code::InvalidArgument, "{what}: {status:?}");
        assert_eq!(fields, [field], "{what}");
        assert_eq!(reason, "INVALID_SNAPSHOT", "{what}");
    }
}

/// DecideJob named an invalid Job's field by its path in the Job (`spec.backoffLimit`), while
/// every other error names the path in the request (`job.metadata.uid`): a client matching
/// violations to request fields could not find it. ValidateJob keeps the Job's own paths.
#[tokio::test]
async fn an_invalid_job_in_decide_job_was_named_by_its_path_in_the_job_not_in_the_request() {
    let server = server().await;
    let mut client = server.client().await;
    let mut request = small_request();
    if let Some(spec) = request.job.as_mut().and_then(|j| j.spec.as_mut()) {
        spec.backoff_limit = Some(-1);
    }
    let status = client
        .decide_job(request.clone())
        .await
        .expect_err("negative backoffLimit");
    let (code, fields, reason) = failure(&status);
    assert_eq!(code, Code::InvalidArgument, "{status:?}");
    assert_eq!(reason, "INVALID_JOB");
    assert_eq!(fields, ["job.spec.backoffLimit"]);
    assert!(
        status
            .message()
            .contains("job.spec.backoffLimit: Invalid value: -1"),
        "{}",
        status.message()
    );

    let response = client
        .validate_job(pb::ValidateJobRequest {
            job: request.job,
            failure_policy: String::new(),
        })
        .await
        .expect("validated")
        .into_inner();
    let fields: Vec<&str> = response
        .violations
        .iter()
        .map(|v| v.field.as_str())
        .collect();
    assert_eq!(fields, ["spec.backoffLimit"]);
}

#[tokio::test]
async fn validate_job_and_jobset_requests() {
    let server = server().await;
    let mut client = server.client().await;
    let job = example_request("kep-3850-backoff-limit-per-index").job;
    let response = client
        .validate_job(pb::ValidateJobRequest {
            job,
            failure_policy: String::new(),
        })
        .await
        .expect("validated")
        .into_inner();
    // The bundled example is a Job the API server accepted.
    assert!(response.violations.is_empty(), "{response:?}");

    let status = client
        .validate_job(pb::ValidateJobRequest {
            job: None,
            failure_policy: String::new(),
        })
        .await
        .expect_err("no job");
    assert_eq!(failure(&status).0, Code::InvalidArgument);
    assert_eq!(failure(&status).1, ["job"]);

    let status = client
        .decide_job_set(pb::DecideJobSetRequest::default())
        .await
        .expect_err("no jobset");
    assert_eq!(failure(&status).0, Code::InvalidArgument);
    assert!(
        failure(&status).1.contains(&"jobSet".to_string()),
        "{status:?}"
    );
    let status = client
        .validate_job_set(pb::ValidateJobSetRequest::default())
        .await
        .expect_err("no jobset");
    assert_eq!(failure(&status).0, Code::InvalidArgument);

    // A JobSet vector decided over gRPC gives the vector's expected response.
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/vectors/jobset/kep-story1-failjobset-on-pod-failure-policy.yaml");
    let doc: serde_json::Value =
        serde_yaml::from_str(&std::fs::read_to_string(&path).expect("vector")).expect("yaml");
    let request: pb::DecideJobSetRequest =
        serde_json::from_value(doc["request"].clone()).expect("request");
    let expected: pb::DecideJobSetResponse =
        serde_json::from_value(doc["expected"].clone()).expect("expected");
    let response = client
        .decide_job_set(request)
        .await
        .expect("decided")
        .into_inner();
    assert_eq!(response, expected);
}

#[tokio::test]
async fn too_large_is_resource_exhausted() {
    let server = TestServer::start(ServerConfig {
        max_message_size: 64 * 1024,
        ..ServerConfig::default()
    })
    .await;
    let mut client = server.client().await;
    let mut request = example_request("indexed-job-mid-run");
    let pod = request.pods[2].clone();
    request.pods = (0..400)
        .map(|i| {
            let mut pod = pod.clone();
            if let Some(m) = pod.metadata.as_mut() {
                m.uid = format!("uid-{i}");
            }
            pod
        })
        .collect();
    let status = client.decide_job(request).await.expect_err("too large");
    let (code, _, reason) = failure(&status);
    assert_eq!(code, Code::ResourceExhausted, "{status:?}");
    assert_eq!(reason, "MESSAGE_TOO_LARGE");
    // A request under the limit still works on the same server.
    client
        .decide_job(small_request())
        .await
        .expect("small fits");
}

#[tokio::test]
async fn metrics_scrape_holds_the_named_metrics() {
    let server = server().await;
    let mut client = server.client().await;
    client
        .decide_job(example_request("kep-3329-ignore-disruption"))
        .await
        .expect("decided");
    let mut bad = small_request();
    bad.now = None;
    client.decide_job(bad).await.expect_err("no now");

    let text = server.scrape().await;
    for needle in [
        "job_decider_grpc_requests_total{method=\"DecideJob\",code=\"OK\"}",
        "job_decider_grpc_requests_total{method=\"DecideJob\",code=\"INVALID_ARGUMENT\"}",
        "job_decider_decision_duration_seconds_bucket{pods=\"",
        "job_decider_pods_per_request_bucket{le=\"10\"}",
        "job_decider_pod_failure_policy_actions_total{action=\"FailJob\"}",
        "job_decider_pod_failure_policy_actions_total{action=\"Ignore\"}",
        "job_decider_jobs_finished_total{condition=\"Failed\",reason=\"BackoffLimitExceeded\"}",
        "job_decider_requests_in_flight",
        "job_decider_request_bytes_in_flight",
        "job_decider_actions_total{kind=\"createPods\"}",
    ] {
        assert!(text.contains(needle), "missing {needle} in:\n{text}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_large_snapshot_is_decoded_off_the_reactor_and_decided() {
    let server = TestServer::start(ServerConfig::default()).await;
    let mut client = server.client().await;
    let mut request = example_request("indexed-job-mid-run");
    // Several thousand pods: past the codec's 1 MiB threshold for decoding in block_in_place.
    request.pods = crate::common::copies_of(&request.pods[2], 6000);
    assert!(
        prost::Message::encoded_len(&request) > job_decider_api::codec::OFF_REACTOR_DECODE_BYTES
    );
    let response = client
        .decide_job(request)
        .await
        .expect("decided")
        .into_inner();
    assert!(!response.actions.is_empty());
    // Small calls keep working on the same server.
    client
        .decide_job(small_request())
        .await
        .expect("small call");
}
