//! The lean pod encoding through the real server: the same answer as the
//! Kubernetes-shaped pods, and bad lean input named by its field.

use crate::common::{TestServer, example_request};
use job_decider::server::ServerConfig;
use job_decider_api::lean::lean_request;
use job_decider_api::{fixtures, pb};
use tonic::Code;
use tonic_types::StatusExt;

/// Field paths of a failed call's BadRequest.
fn fields(status: &tonic::Status) -> Vec<String> {
    status
        .get_error_details()
        .bad_request()
        .map(|b| b.field_violations.iter().map(|v| v.field.clone()).collect())
        .unwrap_or_default()
}

#[tokio::test]
async fn lean_pods_get_the_answer_the_same_pods_get() {
    let server = TestServer::start(ServerConfig::default()).await;
    let mut client = server.client().await;
    for request in [
        example_request("kep-3329-failjob-exit-code-42"),
        example_request("kep-3850-backoff-limit-per-index"),
        fixtures::realistic_request(300),
    ] {
        let lean = lean_request(request.clone()).expect("every pod has a lean form");
        assert!(lean.pods.is_empty() && !lean.lean_pods.is_empty());
        let full = client.decide_job(request).await.expect("full").into_inner();
        let lean = client.decide_job(lean).await.expect("lean").into_inner();
        assert!(!full.actions.is_empty(), "the requests decide something");
        assert_eq!(full, lean);
    }
}

#[tokio::test]
async fn pods_and_lean_pods_together_are_rejected_naming_lean_pods() {
    let server = TestServer::start(ServerConfig::default()).await;
    let mut client = server.client().await;
    let request = fixtures::realistic_request(2);
    let mut both = lean_request(request.clone()).expect("lean");
    both.pods = request.pods;
    let status = client.decide_job(both).await.expect_err("rejected");
    assert_eq!(status.code(), Code::InvalidArgument);
    // Then each pod sent twice is named as a duplicate.
    assert_eq!(
        fields(&status),
        ["leanPods", "leanPods[0].uid", "leanPods[1].uid"]
    );
}

#[tokio::test]
async fn bad_lean_pods_are_named_by_their_lean_paths() {
    let server = TestServer::start(ServerConfig::default()).await;
    let mut client = server.client().await;
    let mut request = lean_request(fixtures::realistic_request(3)).expect("lean");
    request.lean_pods[1].uid.clear();
    request.lean_pods[2].phase = 42;
    request.lean_pods[2].container_statuses[0].restart_count = -1;
    let status = client.decide_job(request).await.expect_err("rejected");
    assert_eq!(status.code(), Code::InvalidArgument);
    assert_eq!(
        fields(&status),
        [
            "leanPods[1].uid",
            "leanPods[2].phase",
            "leanPods[2].containerStatuses[0].restartCount",
        ]
    );
}

#[tokio::test]
async fn a_lean_pod_that_is_not_a_lean_pod_is_named_not_panicked_on() {
    use prost::Message;
    let server = TestServer::start(ServerConfig::default()).await;
    let request = lean_request(fixtures::realistic_request(2)).expect("lean");
    // Field 7 (leanPods) holding bytes that end inside a string.
    let mut body = request.encode_to_vec();
    body.extend([0x3a, 0x03, 0x0a, 0x05, b'a']);
    let status = crate::common::raw_call(
        server.channel().await,
        "/jobdecider.v1.JobDecider/DecideJob",
        crate::common::framed(&body),
    )
    .await
    .expect_err("rejected");
    assert_eq!(status.code(), Code::InvalidArgument);
    assert_eq!(fields(&status), ["leanPods[2]"]);
    assert!(status.message().len() < 4096);
}

#[test]
fn a_realistic_lean_request_is_under_a_third_of_its_full_size() {
    use prost::Message;
    let request: pb::DecideJobRequest = fixtures::realistic_request(1_000);
    let full = request.encode_to_vec().len();
    let lean = lean_request(request).expect("lean").encode_to_vec().len();
    assert!(lean * 3 < full, "lean {lean} B against {full} B");
}

/// Regression: the byte budget counted only request bytes, and a lean pod's
/// domain model is several times its bytes (a 100,000-pod lean call held 5.4×
/// what it was charged). Each pod is now charged its model's fixed part too.
#[tokio::test]
async fn regression_lean_pods_are_charged_for_their_model_not_only_their_bytes() {
    use job_decider::server::service::MODEL_BYTES_PER_POD;
    use prost::Message;
    let budget = 1 << 20;
    let server = TestServer::start(ServerConfig {
        max_request_bytes_in_flight: budget,
        max_message_size: budget,
        ..ServerConfig::default()
    })
    .await;
    let mut client = server.client().await;
    // Lean pods small on the wire: 3,000 of them are well inside the budget's
    // bytes, but their models (3,000 × MODEL_BYTES_PER_POD) are not.
    let too_many = lean_request(fixtures::realistic_request(3_000)).expect("lean");
    let wire = too_many.encoded_len();
    assert!(wire < budget && wire + 3_000 * MODEL_BYTES_PER_POD > budget);
    let status = client
        .decide_job(too_many)
        .await
        .expect_err("past the budget");
    assert_eq!(status.code(), Code::ResourceExhausted, "{status:?}");
    assert_eq!(
        status
            .get_error_details()
            .error_info()
            .map(|i| i.reason.clone()),
        Some("REQUEST_BYTES_BUDGET".to_string())
    );
    // A call whose bytes and models fit is decided, and the budget came back.
    let fits = lean_request(fixtures::realistic_request(1_000)).expect("lean");
    client.decide_job(fits.clone()).await.expect("fits");
    client.decide_job(fits).await.expect("fits again");
}
