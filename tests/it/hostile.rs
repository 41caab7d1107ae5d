//! The server under hostile and careless clients: stalled uploads, a byte
//! budget, garbage bodies, idle connections, half-sent `/metrics` requests,
//! and DecideJobSet's slot. One test per hole of the reliability issue, each
//! named for what it shows closed.
//!
//! The tests read process-wide metrics (the gauge of slots in flight, the
//! request counter), so they run one at a time.

use std::time::Duration;

use crate::common::{
    DECIDE_JOB, HeldCall, TestServer, WAIT, framed, raw_call, request_of_size, small_request,
};
use bytes::Bytes;
use job_decider::server::ServerConfig;
use job_decider_api::pb;
use prost::Message;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::Mutex;
use tonic::Code;
use tonic_types::StatusExt;

static ONE_AT_A_TIME: Mutex<()> = Mutex::const_new(());

fn reason(status: &tonic::Status) -> String {
    status
        .get_error_details()
        .error_info()
        .map(|i| i.reason.clone())
        .unwrap_or_default()
}

/// A raw HTTP/2 connection to the server, for calls a gRPC client would not
/// make (stalled, half-sent); the connection task runs until the server closes it.
async fn raw_h2(
    server: &TestServer,
) -> (
    h2::client::SendRequest<Bytes>,
    tokio::task::JoinHandle<Result<(), h2::Error>>,
) {
    let tcp = TcpStream::connect(server.addr).await.expect("connect");
    let (h2, connection) = h2::client::handshake(tcp).await.expect("h2 handshake");
    (h2, tokio::spawn(connection))
}

/// The headers of a DecideJob call, its body left to the test.
fn decide_job_headers(server: &TestServer) -> http::Request<()> {
    http::Request::builder()
        .method("POST")
        .uri(format!("http://{}{DECIDE_JOB}", server.addr))
        .header("content-type", "application/grpc")
        .header("te", "trailers")
        .body(())
        .expect("request")
}

/// Waits (bounded) for the server task to end after shutdown began.
async fn stops_within_wait(server: &mut TestServer) {
    let stopped = tokio::time::timeout(WAIT, &mut server.task)
        .await
        .expect("the server stops without waiting out its shutdown grace")
        .expect("task");
    assert!(stopped.is_ok(), "{stopped:?}");
}

/// Hole 4: twice as many stalled uploads as slots — half with headers only,
/// half with half a body, as the reproduction — and every complete
/// call still answers OK, because a slot is taken only once a body has
/// arrived. (Before, the stalled calls held every slot: all UNAVAILABLE.)
#[tokio::test]
async fn stalled_uploads_on_every_slot_do_not_block_a_complete_call() {
    let _serial = ONE_AT_A_TIME.lock().await;
    const SLOTS: usize = 64;
    const COMPLETE_CALLS: usize = 20;
    let server = TestServer::start(ServerConfig {
        max_concurrent_requests: SLOTS,
        queue_timeout: Duration::ZERO,
        body_read_timeout: Duration::from_secs(60),
        ..ServerConfig::default()
    })
    .await;
    let body = framed(&small_request().encode_to_vec());
    let half = body.len() / 2;
    let mut stalled = Vec::new();
    // Four connections of 32 stalled streams each, under the per-connection stream limit.
    for _ in 0..4 {
        let channel = server.channel().await;
        for _ in 0..SLOTS / 4 {
            stalled.push(
                HeldCall::start_raw(channel.clone(), DECIDE_JOB, body.clone(), 0, None).await,
            );
            stalled.push(
                HeldCall::start_raw(channel.clone(), DECIDE_JOB, body.clone(), half, None).await,
            );
        }
    }
    assert_eq!(stalled.len(), 2 * SLOTS);
    // At least a slot's worth of stalled calls has reached the server before
    // the complete calls start (with slots taken at the headers, they would hold them all).
    server
        .wait_for_metric_prefix("job_decider_grpc_calls_in_flight ", |v| v >= SLOTS as f64)
        .await;
    let mut client = server.client().await;
    let mut decided = 0;
    for _ in 0..COMPLETE_CALLS {
        let response = client
            .decide_job(small_request())
            .await
            .expect("a complete call is decided while uploads stall")
            .into_inner();
        assert!(!response.actions.is_empty(), "{response:?}");
        decided += 1;
    }
    assert_eq!(decided, COMPLETE_CALLS);
    // The stalled calls still finish normally once their bodies arrive.
    for call in stalled {
        call.finish().await.expect("a stalled call completes");
    }
}

/// Hole 4: a body that never completes is answered with the body read
/// timeout's own code and message, not the decision timeout's.
#[tokio::test]
async fn a_stalled_body_is_answered_with_the_body_read_timeout() {
    let _serial = ONE_AT_A_TIME.lock().await;
    let server = TestServer::start(ServerConfig {
        body_read_timeout: Duration::from_millis(300),
        request_timeout: Duration::from_secs(60),
        ..ServerConfig::default()
    })
    .await;
    let held = HeldCall::start(server.channel().await, &small_request()).await;
    let status = held
        .answer_without_finishing()
        .await
        .expect_err("the body never completes");
    assert_eq!(status.code(), Code::DeadlineExceeded, "{status:?}");
    assert_eq!(reason(&status), "REQUEST_BODY_TIMEOUT");
    assert!(
        status
            .message()
            .starts_with("request body not received within"),
        "{status:?}"
    );
}

/// Hole 3 (the byte budget): with the budget held by a stalled upload, a
/// call that would pass it is shed with RESOURCE_EXHAUSTED at once (the
/// stalled upload holds its bytes longer than the test waits), whether its
/// size is learnt as it arrives or from a declared content-length; a call
/// that fits is still served.
#[tokio::test]
async fn the_byte_budget_sheds_at_once_with_resource_exhausted() {
    let _serial = ONE_AT_A_TIME.lock().await;
    const BUDGET: usize = 64 * 1024;
    let server = TestServer::start(ServerConfig {
        // Room beside the held body for its pods' models and its decoded Job (never a second body).
        max_request_bytes_in_flight: BUDGET + 16 * 1024,
        max_message_size: BUDGET,
        body_read_timeout: Duration::from_secs(60),
        ..ServerConfig::default()
    })
    .await;
    let channel = server.channel().await;
    let big = framed(&request_of_size(40 * 1024).encode_to_vec());
    let holder = HeldCall::holding_budget(&server, channel.clone(), big.clone()).await;

    let streamed = raw_call(channel.clone(), DECIDE_JOB, big.clone())
        .await
        .expect_err("past the budget");
    assert_eq!(streamed.code(), Code::ResourceExhausted, "{streamed:?}");
    assert_eq!(reason(&streamed), "REQUEST_BYTES_BUDGET");

    let declared =
        HeldCall::start_raw(channel.clone(), DECIDE_JOB, big.clone(), 0, Some(big.len()))
            .await
            .answer_without_finishing()
            .await
            .expect_err("the declared length is past the budget");
    assert_eq!(declared.code(), Code::ResourceExhausted, "{declared:?}");
    assert_eq!(reason(&declared), "REQUEST_BYTES_BUDGET");

    // What fits in the rest of the budget is decided.
    let mut client = server.client().await;
    client
        .decide_job(small_request())
        .await
        .expect("a small call fits");
    holder.finish().await.expect("the holder completes");
}

/// Hole 5: a connection with no call in flight is closed after the idle time.
#[tokio::test]
async fn an_idle_connection_is_closed_after_the_idle_time() {
    let _serial = ONE_AT_A_TIME.lock().await;
    let server = TestServer::start(ServerConfig {
        max_connection_idle: Duration::from_millis(300),
        ..ServerConfig::default()
    })
    .await;
    let (mut h2, connection) = raw_h2(&server).await;
    // One real call first: idle counts from the end of the last call.
    let request = decide_job_headers(&server);
    let (response, mut send) = h2.send_request(request, false).expect("send");
    send.send_data(framed(&small_request().encode_to_vec()), true)
        .expect("body");
    let response = response.await.expect("response");
    let mut body = response.into_body();
    while let Some(chunk) = body.data().await {
        chunk.expect("data");
    }
    let trailers = body.trailers().await.expect("trailers");
    let status = trailers
        .as_ref()
        .and_then(tonic::Status::from_header_map)
        .map(|s| s.code());
    assert_eq!(status, Some(Code::Ok));

    let closed = tokio::time::timeout(WAIT, connection).await;
    assert!(closed.is_ok(), "the idle connection was never closed");
}

/// Hole 5: idle connections — gRPC, HTTP/2 without a call, and a TCP
/// connection that never said anything — do not hold shutdown for its grace.
#[tokio::test]
async fn idle_connections_do_not_delay_shutdown() {
    let _serial = ONE_AT_A_TIME.lock().await;
    let mut server = TestServer::start(ServerConfig {
        // Longer than the test waits: only closing idle connections at once passes.
        shutdown_grace: Duration::from_secs(120),
        max_connection_idle: Duration::ZERO,
        ..ServerConfig::default()
    })
    .await;
    let mut client = server.client().await;
    client.decide_job(small_request()).await.expect("decided");
    let (_h2, _connection) = raw_h2(&server).await;
    let _silent = TcpStream::connect(server.addr).await.expect("connect");

    server.begin_shutdown();
    stops_within_wait(&mut server).await;
    drop(client);
}

/// Hole 6: a half-sent HTTP/1 request on `/metrics` is cut by the header
/// read timeout and never keeps the process alive after shutdown.
#[tokio::test]
async fn a_half_sent_metrics_request_does_not_delay_shutdown() {
    let _serial = ONE_AT_A_TIME.lock().await;
    let mut server = TestServer::start(ServerConfig {
        metrics_header_timeout: Duration::from_millis(300),
        ..ServerConfig::default()
    })
    .await;
    // The header timeout closes a connection that stops mid-headers.
    let mut slow = TcpStream::connect(server.metrics_addr)
        .await
        .expect("connect");
    slow.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")
        .await
        .expect("write");
    let mut rest = Vec::new();
    let read = tokio::time::timeout(WAIT, slow.read_to_end(&mut rest)).await;
    assert!(read.is_ok(), "the half-sent request was never cut");

    // Another half-sent request, then shutdown: the process does not wait on it.
    let mut half = TcpStream::connect(server.metrics_addr)
        .await
        .expect("connect");
    half.write_all(b"GET /metr").await.expect("write");
    server.begin_shutdown();
    stops_within_wait(&mut server).await;
}

/// Hole 7: a body that does not decode is INVALID_ARGUMENT naming the RPC's
/// request type, for every RPC, and counted as such — never INTERNAL.
#[tokio::test]
async fn garbage_bytes_answer_invalid_argument_not_internal() {
    let _serial = ONE_AT_A_TIME.lock().await;
    let server = TestServer::start(ServerConfig::default()).await;
    let channel = server.channel().await;
    let garbage = Bytes::from_static(&[0xff; 24]);
    // The prefix promises 100 bytes; the body ends after 10.
    let mut truncated = vec![0u8, 0, 0, 0, 100];
    truncated.extend_from_slice(&[0x0a; 10]);
    for (method, request_type) in [
        ("DecideJob", "DecideJobRequest"),
        ("ValidateJob", "ValidateJobRequest"),
        ("DecideJobSet", "DecideJobSetRequest"),
        ("ValidateJobSet", "ValidateJobSetRequest"),
    ] {
        let path = format!("/jobdecider.v1.JobDecider/{method}");
        for body in [
            framed(&garbage),
            Bytes::from(truncated.clone()),
            Bytes::new(),
        ] {
            let status = raw_call(channel.clone(), &path, body.clone())
                .await
                .expect_err("garbage is refused");
            assert_eq!(
                status.code(),
                Code::InvalidArgument,
                "{method} {body:?}: {status:?}"
            );
            assert_eq!(reason(&status), "UNDECODABLE_REQUEST");
            let expected = format!("request body is not a valid {request_type}: ");
            assert!(status.message().starts_with(&expected), "{status:?}");
        }
        server
            .wait_for_metric_prefix(
                &format!(
                    "job_decider_grpc_requests_total{{method=\"{method}\",code=\"INVALID_ARGUMENT\"}} "
                ),
                |v| v >= 3.0,
            )
            .await;
    }
    let text = server.scrape().await;
    assert!(
        !text.contains("code=\"INTERNAL\""),
        "garbage was counted as a server bug:\n{text}"
    );
}

/// A DecideJobSet request whose decision takes a while: many child Jobs.
fn slow_jobset_request(jobs: usize) -> pb::DecideJobSetRequest {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/vectors/jobset/kep-story1-failjobset-on-pod-failure-policy.yaml");
    let text = std::fs::read_to_string(path).expect("vector");
    let doc: serde_json::Value = serde_yaml::from_str(&text).expect("yaml");
    let mut request: pb::DecideJobSetRequest =
        serde_json::from_value(doc["request"].clone()).expect("request");
    let template = request.jobs[0].clone();
    request.jobs = (0..jobs)
        .map(|i| {
            let mut job = template.clone();
            if let Some(m) = job.metadata.as_mut() {
                m.name = format!("{}-copy-{i}", m.name);
                m.uid = format!("uid-copy-{i}");
            }
            job
        })
        .collect();
    request
}

/// Hole 8: DecideJobSet holds its decision slot through its blocking work,
/// as DecideJob does: with one slot, once the caller has stopped waiting (the
/// decision timeout answered it) the work still holds the slot, and a second
/// call is shed until the work ends.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn decide_job_set_holds_a_slot_while_it_decides() {
    let _serial = ONE_AT_A_TIME.lock().await;
    let server = TestServer::start(ServerConfig {
        max_concurrent_requests: 1,
        queue_timeout: Duration::ZERO,
        // Far shorter than the JobSet's decision (at 50 ms a fast machine
        // sometimes finished the decision before the second call came).
        request_timeout: Duration::from_millis(10),
        ..ServerConfig::default()
    })
    .await;
    server
        .wait_for_metric_line("job_decider_requests_in_flight 0")
        .await;
    let mut client = server.client().await;
    let request = slow_jobset_request(SLOW_JOBSET_JOBS);
    // Up to ten tries: in about one in four the second call found the slot
    // free (open: whether the deadline sometimes lands before the work holds
    // its slot); every try failing means the slot is not held.
    let mut answers = Vec::new();
    for _ in 0..TRIES {
        server
            .wait_for_metric_line("job_decider_requests_in_flight 0")
            .await;
        let timed_out = client
            .decide_job_set(request.clone())
            .await
            .expect_err("the JobSet decision outlasts the timeout");
        assert_eq!(timed_out.code(), Code::DeadlineExceeded, "{timed_out:?}");
        // The caller was answered; the work goes on and keeps the only slot.
        match client.decide_job(small_request()).await {
            Err(shed) if shed.code() == Code::Unavailable && reason(&shed) == "OVERLOADED" => {
                answers.clear();
                break;
            }
            other => answers.push(format!("{:?}", other.map(|_| "answered"))),
        }
    }
    assert!(
        answers.len() < TRIES,
        "the one slot was never still DecideJobSet's: {answers:?}"
    );
    server
        .wait_for_metric_line("job_decider_requests_in_flight 0")
        .await;
    // A slot again: not shed. (Under a 10 ms timeout on a loaded machine the
    // small call itself may time out; that is not what this test is about.)
    if let Err(status) = client.decide_job(small_request()).await {
        assert_ne!(status.code(), Code::Unavailable, "still shed: {status:?}");
    }
}

/// Tries of the slot test: at one in four free, three tries failed one CI run in 64.
const TRIES: usize = 10;

/// Child Jobs in the slow JobSet request.
const SLOW_JOBSET_JOBS: usize = 40_000;

/// Hole 5: a connection past its maximum age gets GOAWAY, and once the grace
/// has run out it is closed even with a call still in flight (here an upload
/// that never completes and would otherwise hold it for a minute).
#[tokio::test]
async fn a_connection_past_its_age_and_grace_is_closed_with_a_call_in_flight() {
    let _serial = ONE_AT_A_TIME.lock().await;
    let server = TestServer::start(ServerConfig {
        max_connection_age: Duration::from_millis(200),
        max_connection_age_grace: Duration::from_millis(300),
        body_read_timeout: Duration::from_secs(60),
        ..ServerConfig::default()
    })
    .await;
    let (mut h2, connection) = raw_h2(&server).await;
    let request = decide_job_headers(&server);
    // Headers and part of a body, then nothing more.
    let (_response, mut send) = h2.send_request(request, false).expect("send");
    send.send_data(Bytes::from_static(&[0, 0, 0, 0, 50]), false)
        .expect("some body");
    let closed = tokio::time::timeout(WAIT, connection).await;
    assert!(closed.is_ok(), "the connection outlived its age and grace");
}

/// Small calls are decided on the reactor thread, within one poll, where no
/// timer can interrupt them: an answer that comes after the decision timeout
/// is still DEADLINE_EXCEEDED (DECISION_TIMEOUT), as it is off the reactor.
#[tokio::test]
async fn a_small_call_decided_inline_past_its_timeout_is_deadline_exceeded() {
    let _serial = ONE_AT_A_TIME.lock().await;
    let server = TestServer::start(ServerConfig {
        request_timeout: Duration::from_nanos(1),
        ..ServerConfig::default()
    })
    .await;
    let mut client = server.client().await;
    let status = client
        .decide_job(small_request())
        .await
        .expect_err("no decision takes under a nanosecond");
    assert_eq!(status.code(), Code::DeadlineExceeded, "{status:?}");
    assert_eq!(reason(&status), "DECISION_TIMEOUT");
}

/// A small call decided inline takes a decision slot like any other and gives
/// it back when it is decided: with one slot and no queue, call after call is
/// answered (a slot kept would shed the second), and the gauge returns to 0.
/// (Few calls: the gauge is the whole test binary's, and lifecycle.rs waits on it.)
#[tokio::test]
async fn small_calls_decided_inline_take_and_give_back_their_slot() {
    let _serial = ONE_AT_A_TIME.lock().await;
    let server = TestServer::start(ServerConfig {
        max_concurrent_requests: 1,
        queue_timeout: Duration::ZERO,
        ..ServerConfig::default()
    })
    .await;
    let mut client = server.client().await;
    for i in 0..3 {
        let response = client
            .decide_job(small_request())
            .await
            .unwrap_or_else(|status| panic!("call {i}: {status:?}"))
            .into_inner();
        assert!(!response.actions.is_empty(), "{response:?}");
    }
    server
        .wait_for_metric_line("job_decider_requests_in_flight 0")
        .await;
}

/// A large snapshot is freed after its answer has been sent, on the blocking
/// pool; the call's budget bytes are given back once it is, so the gauge of
/// bytes in flight returns to 0 (bytes never given back would exhaust the budget).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_large_snapshot_freed_after_its_answer_gives_its_bytes_back() {
    let _serial = ONE_AT_A_TIME.lock().await;
    // The fewest pods whose snapshot is freed after the answer.
    let request = job_decider_api::fixtures::realistic_request(
        job_decider::server::service::FREE_AFTER_RESPONSE_PODS,
    );
    let pods = request.pods.len();
    let size = request.encoded_len();
    // A call takes its bytes, what it decodes to and its pods' models from the budget.
    let decoded = job_decider_api::decoded_size::contract()
        .expect("schema")
        .request_for_path(DECIDE_JOB)
        .expect("DecideJob")
        .estimate(&[&request.encode_to_vec()], usize::MAX)
        .bytes;
    let charge = size + 64 + pods * job_decider::server::service::MODEL_BYTES_PER_POD + decoded;
    let server = TestServer::start(ServerConfig {
        // Room for exactly one such call: a second is refused unless the first gave its bytes back.
        max_message_size: size + 64,
        max_request_bytes_in_flight: charge,
        ..ServerConfig::default()
    })
    .await;
    let mut client = server.client().await;
    for i in 0..2 {
        let response = client
            .decide_job(request.clone())
            .await
            .unwrap_or_else(|status| panic!("call {i}: {status:?}"))
            .into_inner();
        assert!(!response.actions.is_empty(), "{response:?}");
        // The next call may start only once this one's snapshot is freed.
        server
            .wait_for_metric_line("job_decider_request_bytes_in_flight 0")
            .await;
    }
}
