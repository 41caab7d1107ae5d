//! Issue 26, defect 2: an OVERLOADED answer tells the caller how long to wait,
//! twice, with the same value: a `google.rpc.RetryInfo` detail (read by
//! clients' interceptors) and the `grpc-retry-pushback-ms` trailer (gRPC A6,
//! honoured by grpc-core and grpc-go under a service-config retry policy),
//! jittered in [50, 150] ms so that shed callers do not come back together.

use std::time::Duration;

use job_decider::server::ServerConfig;
use job_decider_api::pb;
use tonic::Code;
use tonic_types::StatusExt;

use crate::common::{TestServer, request_of_size};

/// Concurrent calls per round: as the reproduction (9 of 30 were shed).
pub const CALLS: usize = 30;

/// A server at one decision slot, as `serve --max-concurrent-requests 1`.
pub async fn one_slot_server() -> TestServer {
    TestServer::start(ServerConfig {
        max_concurrent_requests: 1,
        ..ServerConfig::default()
    })
    .await
}

/// A request whose decision takes long enough for calls to overlap.
pub fn overlapping_request() -> pb::DecideJobRequest {
    request_of_size(256 * 1024)
}

/// The errors of [`CALLS`] concurrent DecideJob calls through `client`.
pub async fn concurrent_errors<T>(
    client: pb::job_decider_client::JobDeciderClient<T>,
    request: &pb::DecideJobRequest,
) -> Vec<tonic::Status>
where
    T: tonic::client::GrpcService<tonic::body::Body> + Clone + Send + 'static,
    T::Future: Send,
    T::Error: Into<tonic::codegen::StdError>,
    T::ResponseBody: tonic::codegen::Body<Data = bytes::Bytes> + Send + 'static,
    <T::ResponseBody as tonic::codegen::Body>::Error: Into<tonic::codegen::StdError> + Send,
{
    let calls: Vec<_> = (0..CALLS)
        .map(|_| {
            let mut client = client.clone();
            let request = request.clone();
            tokio::spawn(async move { client.decide_job(request).await })
        })
        .collect();
    let mut errors = Vec::new();
    for call in calls {
        if let Err(status) = call.await.expect("call task") {
            errors.push(status);
        }
    }
    errors
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_overloaded_answer_said_nothing_of_when_to_retry() {
    let server = one_slot_server().await;
    let request = overlapping_request();
    let mut shed = Vec::new();
    // Up to five rounds: every round answering every call means no shedding to look at.
    for _ in 0..5 {
        shed = concurrent_errors(server.client().await, &request).await;
        if !shed.is_empty() {
            break;
        }
    }
    assert!(!shed.is_empty(), "no call was shed at one slot");
    let mut delays = Vec::new();
    for status in &shed {
        assert_eq!(status.code(), Code::Unavailable, "{status:?}");
        let details = status.get_error_details();
        let reason = details.error_info().map(|i| i.reason.clone());
        assert_eq!(reason.as_deref(), Some("OVERLOADED"), "{status:?}");
        let delay = details
            .retry_info()
            .and_then(|r| r.retry_delay)
            .unwrap_or_else(|| panic!("no RetryInfo.retry_delay: {status:?}"));
        assert!(
            (Duration::from_millis(50)..=Duration::from_millis(150)).contains(&delay),
            "retry_delay {delay:?} outside [50, 150] ms"
        );
        let pushback = status
            .metadata()
            .get("grpc-retry-pushback-ms")
            .unwrap_or_else(|| panic!("no grpc-retry-pushback-ms: {status:?}"))
            .to_str()
            .expect("ascii");
        assert_eq!(pushback, delay.as_millis().to_string(), "{status:?}");
        delays.push(delay);
    }
    // Jitter: five or more shed calls told the very same wait is a one-in-10^8 chance.
    if delays.len() >= 5 {
        assert!(
            delays.iter().any(|d| *d != delays[0]),
            "no jitter: {delays:?}"
        );
    }
}
