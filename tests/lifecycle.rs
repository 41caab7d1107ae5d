//! Load shedding and graceful shutdown, with a call held in flight on purpose:
//! a slow decision (many pods) holds a slot; a call whose body the test holds
//! back is in flight without one.
//!
//! The tests read the process-wide in-flight gauges, so they run one at a time
//! and in their own test binary: in the `it` binary, other modules' calls moved
//! the same gauges (a wait for "0 in flight" could time out, a "1" could be
//! another test's call).

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "it/common/mod.rs"]
mod common;

use std::time::{Duration, Instant};

use crate::common::{HeldCall, TestServer, WAIT, request_of_size, small_request};
use job_decider::server::ServerConfig;
use tokio::sync::Mutex;
use tokio_stream::StreamExt;
use tonic::Code;
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_types::StatusExt;

static ONE_AT_A_TIME: Mutex<()> = Mutex::const_new(());

/// A request whose decode and decision take long enough to watch: ~20 MB of pods.
fn slow_request() -> job_decider_api::pb::DecideJobRequest {
    request_of_size(20 << 20)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn overload_is_shed_fast_and_health_still_answers() {
    let _serial = ONE_AT_A_TIME.lock().await;
    let server = TestServer::start(ServerConfig {
        max_concurrent_requests: 1,
        queue_timeout: Duration::ZERO,
        ..ServerConfig::default()
    })
    .await;
    server
        .wait_for_metric_line("job_decider_requests_in_flight 0")
        .await;
    let mut slow_client = server.client().await;
    let slow = tokio::spawn(async move { slow_client.decide_job(slow_request()).await });
    server
        .wait_for_metric_line("job_decider_requests_in_flight 1")
        .await;

    let mut client = server.client().await;
    let started = Instant::now();
    let status = client
        .decide_job(small_request())
        .await
        .expect_err("no slot left");
    assert_eq!(status.code(), Code::Unavailable, "{status:?}");
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "shedding must not wait: {:?}",
        started.elapsed()
    );
    assert_eq!(
        status
            .get_error_details()
            .error_info()
            .map(|i| i.reason.clone()),
        Some("OVERLOADED".to_string())
    );

    // Health is outside the limit: probes keep working under load.
    let mut health = tonic_health::pb::health_client::HealthClient::new(server.channel().await);
    let check = health
        .check(tonic_health::pb::HealthCheckRequest {
            service: String::new(),
        })
        .await
        .expect("health under load")
        .into_inner();
    assert_eq!(check.status(), ServingStatus::Serving);

    // The slow call still completes, and the slot is free again afterwards.
    tokio::time::timeout(WAIT, slow)
        .await
        .expect("in time")
        .expect("task")
        .expect("slow call decided");
    server
        .wait_for_metric_line("job_decider_requests_in_flight 0")
        .await;
    client
        .decide_job(small_request())
        .await
        .expect("a slot again");
}

#[tokio::test]
async fn graceful_shutdown_flips_health_and_finishes_calls_in_flight() {
    let _serial = ONE_AT_A_TIME.lock().await;
    let mut server = TestServer::start(ServerConfig {
        shutdown_delay: Duration::from_millis(200),
        shutdown_grace: Duration::from_secs(10),
        ..ServerConfig::default()
    })
    .await;
    let mut health = tonic_health::pb::health_client::HealthClient::new(server.channel().await);
    let mut watch = health
        .watch(tonic_health::pb::HealthCheckRequest {
            service: "jobdecider.v1.JobDecider".into(),
        })
        .await
        .expect("watch")
        .into_inner();
    let first = watch.next().await.expect("first").expect("ok");
    assert_eq!(first.status(), ServingStatus::Serving);

    // In flight without a slot: its body is held back, its first bytes taken from the budget.
    let held = HeldCall::start(server.channel().await, &small_request()).await;
    server
        .wait_for_metric_prefix("job_decider_request_bytes_in_flight ", |v| v >= 8.0)
        .await;

    server.begin_shutdown();
    let flipped = tokio::time::timeout(WAIT, watch.next())
        .await
        .expect("health changes in time")
        .expect("an update")
        .expect("ok");
    assert_eq!(flipped.status(), ServingStatus::NotServing);
    // A watch never ends by itself; the client lets go so the drain can finish.
    drop(watch);
    drop(health);

    // Past the delay the server takes no new connections...
    tokio::time::sleep(Duration::from_millis(400)).await;
    let refused = tonic::transport::Endpoint::from_shared(format!("http://{}", server.addr))
        .expect("endpoint")
        .connect_timeout(Duration::from_secs(2))
        .connect()
        .await;
    assert!(
        refused.is_err(),
        "a new connection was accepted while draining"
    );

    // ...but the call in flight finishes with a real answer.
    let response = held.finish().await.expect("in-flight call completes");
    assert!(!response.actions.is_empty(), "{response:?}");
    let stopped = tokio::time::timeout(WAIT, &mut server.task)
        .await
        .expect("server stops within the deadline")
        .expect("task");
    assert!(stopped.is_ok(), "{stopped:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_past_the_timeout_is_deadline_exceeded_and_frees_its_slot() {
    let _serial = ONE_AT_A_TIME.lock().await;
    let server = TestServer::start(ServerConfig {
        // Shorter than the slow decision, long enough for a small one.
        request_timeout: Duration::from_millis(50),
        max_concurrent_requests: 1,
        ..ServerConfig::default()
    })
    .await;
    let mut client = server.client().await;
    let started = Instant::now();
    let status = client
        .decide_job(slow_request())
        .await
        .expect_err("the decision outlasts the timeout");
    assert_eq!(status.code(), Code::DeadlineExceeded, "{status:?}");
    assert_eq!(
        status
            .get_error_details()
            .error_info()
            .map(|i| i.reason.clone()),
        Some("DECISION_TIMEOUT".to_string())
    );
    assert!(started.elapsed() < WAIT);
    // The slot is freed when the decision's work ends, not before.
    server
        .wait_for_metric_line("job_decider_requests_in_flight 0")
        .await;
    // A slot again: not shed. (Under a 50 ms timeout on a loaded machine the
    // small call itself may time out; that is not what this test is about.)
    if let Err(status) = client.decide_job(small_request()).await {
        assert_ne!(status.code(), Code::Unavailable, "still shed: {status:?}");
    }
}

/// Waits until `/metrics` at `addr` has a line `prefix<value>` with a value passing `check`.
async fn wait_for_metric_at(addr: std::net::SocketAddr, prefix: &str, check: impl Fn(f64) -> bool) {
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let text = reqwest::get(format!("http://{addr}/metrics"))
            .await
            .expect("scrape")
            .text()
            .await
            .expect("metrics body");
        let found = text
            .lines()
            .filter_map(|l| l.strip_prefix(prefix))
            .filter_map(|v| v.trim().parse::<f64>().ok())
            .any(&check);
        if found {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "metrics never showed {prefix:?} as expected:\n{text}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn over_a_unix_socket_shutdown_finishes_the_call_in_flight_and_removes_the_socket() {
    use job_decider::address;
    use job_decider::server::socket::bind_unix;
    use job_decider::server::{GrpcListener, Listeners, serve_on};

    let _serial = ONE_AT_A_TIME.lock().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("decider.sock");
    let (listener, file) = bind_unix(&path, 0o660).expect("bind the socket");
    let metrics = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind metrics");
    let metrics_addr = metrics.local_addr().expect("metrics addr");
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let mut task = tokio::spawn(serve_on(
        Listeners {
            grpc: GrpcListener::Unix(listener, Some(file)),
            metrics: Some(metrics),
            health: None,
        },
        ServerConfig {
            shutdown_grace: Duration::from_secs(10),
            ..ServerConfig::default()
        },
        async {
            let _ = stopped.await;
        },
    ));
    let url = address::unix_url(&path);

    // In flight without a slot: its body is held back, its first bytes taken from the budget.
    let channel = address::connect(&url).await.expect("connect");
    let held = HeldCall::start(channel, &small_request()).await;
    wait_for_metric_at(metrics_addr, "job_decider_request_bytes_in_flight ", |v| {
        v >= 8.0
    })
    .await;

    let _ = stop.send(());
    // The server stops accepting and the socket goes with the listener...
    let deadline = tokio::time::Instant::now() + WAIT;
    while path.exists() {
        assert!(tokio::time::Instant::now() < deadline, "socket still there");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(
        address::connect(&url).await.is_err(),
        "a new connection while draining"
    );
    // ...but the call in flight finishes with a real answer.
    let response = held.finish().await.expect("in-flight call completes");
    assert!(!response.actions.is_empty(), "{response:?}");
    let ended = tokio::time::timeout(WAIT, &mut task)
        .await
        .expect("server stops within the deadline")
        .expect("task");
    assert!(ended.is_ok(), "{ended:?}");
}

/// A request whose conversion and decision take 10+ s in a debug build (~30 MB of pods).
fn very_slow_request() -> job_decider_api::pb::DecideJobRequest {
    request_of_size(30 << 20)
}

/// The slots held and the request bytes in flight, from one scrape.
async fn slots_and_bytes(server: &TestServer) -> (f64, f64) {
    let text = server.scrape().await;
    let value = |name: &str| {
        text.lines()
            .filter_map(|l| l.strip_prefix(name))
            .filter_map(|v| v.trim().parse::<f64>().ok())
            .next()
            .unwrap_or_else(|| panic!("no {name} in:\n{text}"))
    };
    (
        value("job_decider_requests_in_flight "),
        value("job_decider_request_bytes_in_flight "),
    )
}

/// Watches the gauges until the slot is free: the bytes must stay held as long
/// as the slot is (the work still holds its request), and the slot must come
/// back within `within`. Returns how long the slot stayed held.
async fn watch_work_stop(server: &TestServer, within: Duration) -> Duration {
    let since = Instant::now();
    loop {
        let (slots, bytes) = slots_and_bytes(server).await;
        if slots == 0.0 {
            return since.elapsed();
        }
        assert!(
            bytes > 0.0,
            "the byte budget was given back while the work still holds its slot \
             ({:?} after the call ended)",
            since.elapsed()
        );
        assert!(
            since.elapsed() < within,
            "the work still holds its slot {:?} after its call ended",
            since.elapsed()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Issue 22, item 1: after DEADLINE_EXCEEDED the work stops soon (it asks
/// between pods) and gives back the slot and the bytes together, only then.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn timed_out_call_keeps_its_slot_and_bytes_until_its_work_stops_and_stops_soon() {
    let _serial = ONE_AT_A_TIME.lock().await;
    let server = TestServer::start(ServerConfig {
        request_timeout: Duration::from_millis(500),
        max_concurrent_requests: 1,
        ..ServerConfig::default()
    })
    .await;
    server
        .wait_for_metric_line("job_decider_request_bytes_in_flight 0")
        .await;
    let mut client = server.client().await;
    let status = client
        .decide_job(very_slow_request())
        .await
        .expect_err("the decision outlasts the timeout");
    assert_eq!(status.code(), Code::DeadlineExceeded, "{status:?}");
    let held = watch_work_stop(&server, Duration::from_secs(2)).await;
    eprintln!("slot held {held:?} after DEADLINE_EXCEEDED");
    server
        .wait_for_metric_line("job_decider_request_bytes_in_flight 0")
        .await;
}

/// Issue 22, item 1: a client that goes away ends its call's work too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn abandoned_call_stops_its_work_and_frees_its_slot() {
    let _serial = ONE_AT_A_TIME.lock().await;
    let server = TestServer::start(ServerConfig {
        request_timeout: Duration::from_secs(120),
        max_concurrent_requests: 1,
        ..ServerConfig::default()
    })
    .await;
    server
        .wait_for_metric_line("job_decider_requests_in_flight 0")
        .await;
    let mut client = server.client().await;
    let call = tokio::spawn(async move { client.decide_job(very_slow_request()).await });
    server
        .wait_for_metric_line("job_decider_requests_in_flight 1")
        .await;
    // The client gives up: its call is reset, the server's handler dropped.
    call.abort();
    let _ = call.await;
    let held = watch_work_stop(&server, Duration::from_secs(2)).await;
    eprintln!("slot held {held:?} after the client left");
    server
        .wait_for_metric_line("job_decider_request_bytes_in_flight 0")
        .await;
}

/// A DecideJobSet request whose decision takes seconds in a debug build: 512
/// failed child Jobs, each with a 32 KiB Failed message (the longest accepted)
/// that none of the 32 patterns (two rules of 16) matches, so every rule
/// searches every message — 512 MiB of matching, the per-call budget. Few Jobs
/// and long messages: the request decodes fast (its decode is not interruptible),
/// and its cost is the matching.
fn very_slow_jobset_request() -> job_decider_api::pb::DecideJobSetRequest {
    const JOBS: usize = 512;
    let rule = |name: &str, first: usize| {
        serde_json::json!({
            "name": name,
            "action": "FailJobSet",
            "onJobFailureMessagePatterns": (first..first + 16)
                .map(|i| format!("needle {i}"))
                .collect::<Vec<_>>(),
        })
    };
    let mut request: job_decider_api::pb::DecideJobSetRequest =
        serde_json::from_value(serde_json::json!({
            "now": "2024-01-01T12:00:00Z",
            "jobSet": {
                "metadata": {"name": "js", "namespace": "default", "uid": "uid-js"},
                "spec": {
                    "replicatedJobs": [{"name": "rj", "replicas": JOBS}],
                    "failurePolicy": {
                        "maxRestarts": 3,
                        "rules": [rule("first", 0), rule("second", 16)],
                    },
                },
            },
        }))
        .expect("a JobSet request");
    let message = "m".repeat(32 * 1024);
    request.jobs = (0..JOBS)
        .map(|i| {
            serde_json::from_value(serde_json::json!({
                "metadata": {
                    "name": format!("js-rj-{i}"),
                    "namespace": "default",
                    "uid": format!("uid-{i}"),
                    "labels": {
                        "jobset.sigs.k8s.io/replicatedjob-name": "rj",
                        "jobset.sigs.k8s.io/job-index": i.to_string(),
                        "jobset.sigs.k8s.io/restart-attempt": "0",
                    },
                },
                "status": {
                    "failed": 1,
                    "conditions": [{
                        "type": "Failed",
                        "status": "True",
                        "reason": "BackoffLimitExceeded",
                        "message": message,
                        "lastTransitionTime": "2024-01-01T11:00:00Z",
                    }],
                },
            }))
            .expect("a child Job")
        })
        .collect();
    request
}

/// Issue 22, item 1, for DecideJobSet: its conversion and its rules' matching
/// ask the call's interrupt too, so a JobSet call past its deadline stops soon
/// and holds its slot and bytes until then, not until its decision is done.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn timed_out_jobset_call_stops_its_work_soon_and_frees_its_slot() {
    let _serial = ONE_AT_A_TIME.lock().await;
    let server = TestServer::start(ServerConfig {
        request_timeout: Duration::from_millis(500),
        max_concurrent_requests: 1,
        ..ServerConfig::default()
    })
    .await;
    server
        .wait_for_metric_line("job_decider_request_bytes_in_flight 0")
        .await;
    let request = very_slow_jobset_request();
    let mut client = server.client().await;
    let status = client
        .decide_job_set(request)
        .await
        .expect_err("the decision outlasts the timeout");
    assert_eq!(status.code(), Code::DeadlineExceeded, "{status:?}");
    let held = watch_work_stop(&server, Duration::from_secs(2)).await;
    eprintln!("JobSet slot held {held:?} after DEADLINE_EXCEEDED");
    server
        .wait_for_metric_line("job_decider_request_bytes_in_flight 0")
        .await;
}

/// Issue 22, item 1, for DecideJobSet: a client that goes away ends its JobSet call's work.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn abandoned_jobset_call_stops_its_work_and_frees_its_slot() {
    let _serial = ONE_AT_A_TIME.lock().await;
    let server = TestServer::start(ServerConfig {
        request_timeout: Duration::from_secs(120),
        max_concurrent_requests: 1,
        ..ServerConfig::default()
    })
    .await;
    server
        .wait_for_metric_line("job_decider_requests_in_flight 0")
        .await;
    let request = very_slow_jobset_request();
    let mut client = server.client().await;
    let call = tokio::spawn(async move { client.decide_job_set(request).await });
    server
        .wait_for_metric_line("job_decider_requests_in_flight 1")
        .await;
    call.abort();
    let _ = call.await;
    let held = watch_work_stop(&server, Duration::from_secs(2)).await;
    eprintln!("JobSet slot held {held:?} after the client left");
    server
        .wait_for_metric_line("job_decider_request_bytes_in_flight 0")
        .await;
}
