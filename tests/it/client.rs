//! The Rust client's connection (`job_decider_k8s::client`, issue 26): retries
//! of OVERLOADED where a plain tonic client fails, a Unix socket, and the
//! deadline travelling to the server as `grpc-timeout`.

use std::time::Duration;

use job_decider::server::ServerConfig;
use job_decider_k8s::client::{Connect, NoDeadline};
use tokio::net::TcpListener;
use tokio::sync::mpsc;

use crate::common::{SocketServer, WAIT, small_request};
use crate::overload::{CALLS, concurrent_errors, one_slot_server};

/// Defect 2: at one slot a plain tonic client loses calls to OVERLOADED; the
/// client's retries (with the server's pushback) answer every one of them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_calls_at_one_slot_failed_overloaded_without_retries() {
    let server = one_slot_server().await;
    // Small decisions: thirty of them fit in the time four attempts span (a
    // larger request's thirty decisions outlast any bounded retry policy).
    let request = small_request();
    // The case is real: without retries some calls are shed (up to five rounds to see it).
    let mut plain_errors = Vec::new();
    for _ in 0..5 {
        plain_errors = concurrent_errors(server.client().await, &request).await;
        eprintln!("plain client: {} of {CALLS} failed", plain_errors.len());
        if !plain_errors.is_empty() {
            break;
        }
    }
    assert!(
        plain_errors
            .iter()
            .any(|s| s.code() == tonic::Code::Unavailable),
        "a plain client was never shed: {plain_errors:?}"
    );
    let client = Connect::new(server.addr.to_string())
        .connect()
        .await
        .expect("connect");
    let errors = concurrent_errors(client, &request).await;
    assert!(
        errors.is_empty(),
        "{} of {CALLS} failed: {errors:?}",
        errors.len()
    );
}

/// `unix:///abs/path`: the sidecar layout.
#[tokio::test]
async fn a_call_over_a_unix_socket_target() {
    let server = SocketServer::start(ServerConfig::default()).await;
    let path = server.path.clone();
    let target = format!("unix://{}", path.display());
    assert!(target.starts_with("unix:///"), "{target}");
    let mut client = Connect::new(target).connect().await.expect("connect");
    let plan = tokio::time::timeout(WAIT, client.decide_job(small_request()))
        .await
        .expect("answered in time")
        .expect("decided")
        .into_inner();
    assert!(!plan.actions.is_empty(), "{plan:?}");
    server.stop().await;
}

/// A raw HTTP/2 server that reports each call's `grpc-timeout` (or its absence)
/// and answers UNIMPLEMENTED at once.
async fn timeout_recorder() -> (
    std::net::SocketAddr,
    mpsc::UnboundedReceiver<Option<String>>,
) {
    recorder(&[("grpc-status", "12")]).await
}

/// A raw HTTP/2 server that reports each call's `grpc-timeout` (or its absence)
/// and answers every call at once with a trailers-only response of `trailers`.
async fn recorder(
    trailers: &[(&'static str, &'static str)],
) -> (
    std::net::SocketAddr,
    mpsc::UnboundedReceiver<Option<String>>,
) {
    let trailers = trailers.to_vec();
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let (tx, rx) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let tx = tx.clone();
            let trailers = trailers.clone();
            tokio::spawn(async move {
                let Ok(mut connection) = h2::server::handshake(tcp).await else {
                    return;
                };
                while let Some(Ok((request, mut respond))) = connection.accept().await {
                    let timeout = request
                        .headers()
                        .get("grpc-timeout")
                        .map(|v| v.to_str().expect("ascii").to_string());
                    let _ = tx.send(timeout);
                    let mut response =
                        http::Response::builder().header("content-type", "application/grpc");
                    for (name, value) in &trailers {
                        response = response.header(*name, *value);
                    }
                    let response = response.body(()).expect("response");
                    let _ = respond.send_response(response, true);
                }
            });
        }
    });
    (addr, rx)
}

/// A `grpc-timeout` value as a duration (the units this client writes).
fn timeout_of(value: &str) -> Duration {
    let (digits, unit) = value.split_at(value.len() - 1);
    let n: u64 = digits.parse().expect("digits");
    match unit {
        "u" => Duration::from_micros(n),
        "m" => Duration::from_millis(n),
        "S" => Duration::from_secs(n),
        other => panic!("unit {other}"),
    }
}

/// The default deadline (10 s), a per-call one and "none" reach the server as
/// `grpc-timeout` (so it stops the work when the caller stops waiting).
#[tokio::test]
async fn the_deadline_reaches_the_server_as_grpc_timeout() {
    let (addr, mut seen) = timeout_recorder().await;
    let mut client = Connect::new(addr.to_string())
        .connect()
        .await
        .expect("connect");
    let mut next = async || {
        tokio::time::timeout(WAIT, seen.recv())
            .await
            .expect("a call arrived")
            .expect("recorder running")
    };

    let status = client
        .decide_job(small_request())
        .await
        .expect_err("UNIMPLEMENTED");
    assert_eq!(status.code(), tonic::Code::Unimplemented, "{status:?}");
    let default = timeout_of(&next().await.expect("a default grpc-timeout"));
    assert!(
        default <= Duration::from_secs(10) && default > Duration::from_secs(9),
        "{default:?}"
    );

    let mut request = tonic::Request::new(small_request());
    request.set_timeout(Duration::from_millis(2500));
    let _ = client.decide_job(request).await.expect_err("UNIMPLEMENTED");
    let per_call = timeout_of(&next().await.expect("a per-call grpc-timeout"));
    assert!(
        per_call <= Duration::from_millis(2500) && per_call > Duration::from_secs(2),
        "{per_call:?}"
    );

    let mut request = tonic::Request::new(small_request());
    request.extensions_mut().insert(NoDeadline);
    let _ = client.decide_job(request).await.expect_err("UNIMPLEMENTED");
    assert_eq!(next().await, None, "NoDeadline sent a grpc-timeout");
    // UNIMPLEMENTED is not retried: three calls, three requests.
    assert!(seen.try_recv().is_err(), "a call was sent twice");
}

/// TLS from a directory laid out as cert-manager writes a Secret: `ca.crt`,
/// and `tls.crt` + `tls.key` for the client certificate mTLS asks for.
#[tokio::test]
async fn mtls_from_a_cert_manager_directory() {
    use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, IsCa, KeyPair};
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).expect("ca params");
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca =
        CertifiedIssuer::self_signed(ca_params, KeyPair::generate().expect("ca key")).expect("ca");
    let signed = |name: &str| {
        let key = KeyPair::generate().expect("key");
        let cert = CertificateParams::new(vec![name.to_string()])
            .expect("params")
            .signed_by(&key, &ca)
            .expect("cert");
        (cert.pem(), key.serialize_pem())
    };
    let (server_cert, server_key) = signed("localhost");
    let (client_cert, client_key) = signed("controller.example");
    let server_dir = tempfile::tempdir().expect("tempdir");
    let write = |dir: &std::path::Path, name: &str, text: &str| {
        let path = dir.join(name);
        std::fs::write(&path, text).expect("write pem");
        path
    };
    let server = crate::common::TestServer::start(ServerConfig {
        tls: Some(job_decider::server::TlsFiles {
            cert: write(server_dir.path(), "tls.crt", &server_cert),
            key: write(server_dir.path(), "tls.key", &server_key),
            client_ca: Some(write(server_dir.path(), "ca.crt", &ca.pem())),
        }),
        ..ServerConfig::default()
    })
    .await;
    let target = format!("localhost:{}", server.addr.port());

    let with_cert = tempfile::tempdir().expect("tempdir");
    write(with_cert.path(), "ca.crt", &ca.pem());
    write(with_cert.path(), "tls.crt", &client_cert);
    write(with_cert.path(), "tls.key", &client_key);
    let mut client = Connect::new(target.clone())
        .tls_dir(with_cert.path())
        .connect()
        .await
        .expect("connect");
    let plan = client
        .decide_job(small_request())
        .await
        .expect("decided over mTLS");
    assert!(!plan.into_inner().actions.is_empty());

    // ca.crt alone: no client certificate, and the server requires one.
    let ca_only = tempfile::tempdir().expect("tempdir");
    write(ca_only.path(), "ca.crt", &ca.pem());
    let mut client = Connect::new(target)
        .tls_dir(ca_only.path())
        .max_attempts(1)
        .connect()
        .await
        .expect("connect (lazily)");
    let refused = client.decide_job(small_request()).await;
    assert!(refused.is_err(), "served without a client certificate");
}

/// Every call sent before `recorder` reports nothing new for a while.
async fn drain(seen: &mut mpsc::UnboundedReceiver<Option<String>>) -> Vec<Option<String>> {
    let mut calls = Vec::new();
    while let Ok(Some(call)) = tokio::time::timeout(Duration::from_millis(300), seen.recv()).await {
        calls.push(call);
    }
    calls
}

/// UNAVAILABLE without pushback: four attempts in all, then the error.
#[tokio::test]
async fn unavailable_is_retried_four_times_in_all() {
    let (addr, mut seen) = recorder(&[("grpc-status", "14"), ("grpc-message", "down")]).await;
    let mut client = Connect::new(addr.to_string())
        .connect()
        .await
        .expect("connect");
    let status = client
        .decide_job(small_request())
        .await
        .expect_err("UNAVAILABLE");
    assert_eq!(status.code(), tonic::Code::Unavailable, "{status:?}");
    assert_eq!(drain(&mut seen).await.len(), 4);
}

/// The server's pushback sets the wait, and the deadline covers every attempt:
/// a 1 s pushback under a 1.5 s deadline leaves room for one retry, sent with
/// what is left of the deadline, and not for a third attempt.
#[tokio::test]
async fn the_pushback_sets_the_wait_and_the_deadline_covers_every_attempt() {
    let (addr, mut seen) = recorder(&[
        ("grpc-status", "14"),
        ("grpc-message", "overloaded"),
        ("grpc-retry-pushback-ms", "1000"),
    ])
    .await;
    let mut client = Connect::new(addr.to_string())
        .timeout(Some(Duration::from_millis(1500)))
        .connect()
        .await
        .expect("connect");
    let started = std::time::Instant::now();
    let status = client
        .decide_job(small_request())
        .await
        .expect_err("UNAVAILABLE");
    let took = started.elapsed();
    assert_eq!(status.code(), tonic::Code::Unavailable, "{status:?}");
    assert!(
        took >= Duration::from_millis(1000) && took < Duration::from_millis(1500),
        "{took:?}"
    );
    let calls = drain(&mut seen).await;
    assert_eq!(calls.len(), 2, "{calls:?}");
    let second = timeout_of(calls[1].as_deref().expect("grpc-timeout on the retry"));
    assert!(second <= Duration::from_millis(500), "{second:?}");
}
