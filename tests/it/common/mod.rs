//! Shared helpers for the integration tests: an in-process server on
//! ephemeral 127.0.0.1 ports, requests built from the bundled examples, and
//! a call whose body the test holds back (a deterministic call in flight).
#![allow(dead_code)]

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use bytes::Bytes;
use http_body::Frame;
use http_body_util::{BodyExt, StreamBody};
use job_decider::address;
use job_decider::documents;
use job_decider::server::socket::bind_unix;
use job_decider::server::{GrpcListener, Listeners, ServeError, ServerConfig, serve_on};
use job_decider_api::pb;
use prost::Message;
use tokio::net::TcpListener;
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;
use tokio_stream::wrappers::ReceiverStream;
use tonic::transport::{Channel, Endpoint};
use tower::ServiceExt;

/// Every wait in these tests is bounded by this.
pub const WAIT: Duration = Duration::from_secs(20);

/// A server running in this process.
pub struct TestServer {
    /// gRPC address.
    pub addr: SocketAddr,
    /// `/metrics` address.
    pub metrics_addr: SocketAddr,
    /// The plaintext health-only address, when started with one.
    pub health_addr: Option<SocketAddr>,
    shutdown: Option<oneshot::Sender<()>>,
    /// The serving task; ends after shutdown.
    pub task: JoinHandle<Result<(), ServeError>>,
}

impl TestServer {
    /// Starts a server with `config` on ephemeral ports.
    pub async fn start(config: ServerConfig) -> TestServer {
        Self::start_on(config, false).await
    }

    /// Starts a server with `config` and a plaintext health-only port.
    pub async fn start_with_health(config: ServerConfig) -> TestServer {
        Self::start_on(config, true).await
    }

    async fn start_on(config: ServerConfig, with_health: bool) -> TestServer {
        let bind = || async { TcpListener::bind("127.0.0.1:0").await.expect("bind") };
        let grpc = bind().await;
        let metrics = bind().await;
        let health = if with_health {
            Some(bind().await)
        } else {
            None
        };
        let addr = grpc.local_addr().expect("grpc addr");
        let metrics_addr = metrics.local_addr().expect("metrics addr");
        let health_addr = health
            .as_ref()
            .map(|l| l.local_addr().expect("health addr"));
        let (tx, rx) = oneshot::channel::<()>();
        let listeners = Listeners {
            grpc: grpc.into(),
            metrics: Some(metrics),
            health,
        };
        let task = tokio::spawn(serve_on(listeners, config, async {
            let _ = rx.await;
        }));
        TestServer {
            addr,
            metrics_addr,
            health_addr,
            shutdown: Some(tx),
            task,
        }
    }

    /// A plaintext channel to the server.
    pub async fn channel(&self) -> Channel {
        Endpoint::from_shared(format!("http://{}", self.addr))
            .expect("endpoint")
            .connect_timeout(WAIT)
            .connect()
            .await
            .expect("connect")
    }

    /// A JobDecider client.
    pub async fn client(&self) -> pb::job_decider_client::JobDeciderClient<Channel> {
        pb::job_decider_client::JobDeciderClient::new(self.channel().await)
            .max_decoding_message_size(usize::MAX)
    }

    /// Starts a graceful shutdown (as SIGTERM would).
    pub fn begin_shutdown(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
    }

    /// The `/metrics` text.
    pub async fn scrape(&self) -> String {
        let url = format!("http://{}/metrics", self.metrics_addr);
        let response = reqwest::get(&url).await.expect("scrape");
        assert!(response.status().is_success(), "{}", response.status());
        response.text().await.expect("metrics body")
    }

    /// Waits until `/metrics` shows `line` (bounded by [`WAIT`]).
    pub async fn wait_for_metric_line(&self, line: &str) {
        let deadline = tokio::time::Instant::now() + WAIT;
        loop {
            let text = self.scrape().await;
            if text.lines().any(|l| l == line) {
                return;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "metrics never showed {line:?}:\n{text}"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

impl TestServer {
    /// Waits until `/metrics` has a line `prefix<value>` whose value passes `check` (bounded by [`WAIT`]).
    pub async fn wait_for_metric_prefix(&self, prefix: &str, check: impl Fn(f64) -> bool) {
        let deadline = tokio::time::Instant::now() + WAIT;
        loop {
            let text = self.scrape().await;
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
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.begin_shutdown();
    }
}

/// Asserts that the server behind `channel` reports SERVING, overall and for the JobDecider service.
pub async fn assert_health_serving(channel: Channel) {
    let mut health = tonic_health::pb::health_client::HealthClient::new(channel);
    for service in ["", "jobdecider.v1.JobDecider"] {
        let response = health
            .check(tonic_health::pb::HealthCheckRequest {
                service: service.into(),
            })
            .await
            .expect("check")
            .into_inner();
        assert_eq!(
            response.status(),
            tonic_health::pb::health_check_response::ServingStatus::Serving,
            "service {service:?}"
        );
    }
}

/// The repository's `examples/` directory.
pub fn examples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("examples")
}

/// The DecideJobRequest for a bundled example, read as the CLI reads it.
pub fn example_request(dir: &str) -> pb::DecideJobRequest {
    let dir = examples().join(dir);
    let read = |stem: &str| {
        ["json", "yaml"]
            .iter()
            .map(|ext| dir.join(format!("{stem}.{ext}")))
            .find(|p| p.exists())
            .map(|p| std::fs::read_to_string(&p).expect("read example"))
            .expect("example file")
    };
    pb::DecideJobRequest {
        job: Some(documents::parse_job(&read("job"), "job").expect("job parses")),
        pods: documents::parse_pods(&read("pods"), "pods").expect("pods parse"),
        now: Some(documents::parse_time("2025-06-02T10:00:00Z", "now").expect("time")),
        ..Default::default()
    }
}

/// A minimal valid request (one Job, no pods).
pub fn small_request() -> pb::DecideJobRequest {
    let mut request = example_request("kep-3329-failjob-exit-code-42");
    request.pods.clear();
    request
}

/// A call whose request body is held back until [`HeldCall::finish`].
pub struct HeldCall {
    tx: mpsc::Sender<Result<Frame<Bytes>, tonic::Status>>,
    rest: Bytes,
    response: JoinHandle<Result<http::Response<tonic::body::Body>, tonic::transport::Error>>,
}

impl HeldCall {
    /// Sends DecideJob's headers and the first bytes of `request`, then waits.
    pub async fn start(channel: Channel, request: &pb::DecideJobRequest) -> HeldCall {
        Self::start_raw(
            channel,
            DECIDE_JOB,
            framed(&request.encode_to_vec()),
            8,
            None,
        )
        .await
    }

    /// Sends all of the DecideJob `body` but its last byte and waits until the
    /// server's byte budget shows it held: a body that keeps the budget taken.
    pub async fn holding_budget(server: &TestServer, channel: Channel, body: Bytes) -> HeldCall {
        let held = body.len() - 1;
        let call = HeldCall::start_raw(channel, DECIDE_JOB, body, held, None).await;
        server
            .wait_for_metric_prefix("job_decider_request_bytes_in_flight ", |v| v >= held as f64)
            .await;
        call
    }

    /// Sends a call to `path` whose body is `body`, of which only the first
    /// `send_first` bytes go out now (none: headers only), with an optional
    /// declared `content-length`.
    pub async fn start_raw(
        channel: Channel,
        path: &str,
        mut body: Bytes,
        send_first: usize,
        content_length: Option<usize>,
    ) -> HeldCall {
        let first = body.split_to(send_first.min(body.len()));
        let (tx, rx) = mpsc::channel(4);
        if !first.is_empty() {
            tx.send(Ok(Frame::data(first))).await.expect("first bytes");
        }
        let stream_body = tonic::body::Body::new(StreamBody::new(ReceiverStream::new(rx)));
        let mut http_request = http::Request::builder()
            .method("POST")
            .uri(path)
            .header("content-type", "application/grpc")
            .header("te", "trailers");
        if let Some(length) = content_length {
            http_request = http_request.header("content-length", length);
        }
        let http_request = http_request.body(stream_body).expect("request");
        let response = tokio::spawn(async move { channel.oneshot(http_request).await });
        HeldCall {
            tx,
            rest: body,
            response,
        }
    }

    /// Sends the rest of the request and returns the call's outcome.
    pub async fn finish(self) -> Result<pb::DecideJobResponse, tonic::Status> {
        decode_response(self.finish_raw().await?)
    }

    /// Sends the rest of the request and returns the response message's bytes.
    pub async fn finish_raw(self) -> Result<Bytes, tonic::Status> {
        if !self.rest.is_empty() {
            self.tx
                .send(Ok(Frame::data(self.rest)))
                .await
                .map_err(|_| tonic::Status::internal("server stopped reading"))?;
        }
        drop(self.tx);
        Self::outcome(self.response).await
    }

    /// Waits for the server's answer without ever sending the rest of the request.
    pub async fn answer_without_finishing(self) -> Result<pb::DecideJobResponse, tonic::Status> {
        let _keep_body_open = self.tx;
        decode_response(Self::outcome(self.response).await?)
    }

    async fn outcome(
        response: JoinHandle<Result<http::Response<tonic::body::Body>, tonic::transport::Error>>,
    ) -> Result<Bytes, tonic::Status> {
        let response = tokio::time::timeout(WAIT, response)
            .await
            .expect("response in time")
            .expect("task")
            .map_err(|e| tonic::Status::unavailable(e.to_string()))?;
        if let Some(status) = tonic::Status::from_header_map(response.headers())
            && status.code() != tonic::Code::Ok
        {
            return Err(status);
        }
        let collected = response
            .into_body()
            .collect()
            .await
            .map_err(|e| tonic::Status::internal(e.to_string()))?;
        if let Some(status) = collected
            .trailers()
            .and_then(tonic::Status::from_header_map)
            && status.code() != tonic::Code::Ok
        {
            return Err(status);
        }
        let bytes = collected.to_bytes();
        if bytes.len() < 5 {
            return Err(tonic::Status::internal("no message"));
        }
        Ok(bytes.slice(5..))
    }
}

/// DecideJob's path.
pub const DECIDE_JOB: &str = "/jobdecider.v1.JobDecider/DecideJob";

/// `message` with gRPC's 5-byte prefix (uncompressed).
pub fn framed(message: &[u8]) -> Bytes {
    let mut framed = Vec::with_capacity(message.len() + 5);
    framed.push(0);
    let len = u32::try_from(message.len()).expect("message under 4 GiB");
    framed.extend_from_slice(&len.to_be_bytes());
    framed.extend_from_slice(message);
    Bytes::from(framed)
}

fn decode_response(payload: Bytes) -> Result<pb::DecideJobResponse, tonic::Status> {
    pb::DecideJobResponse::decode(payload).map_err(|e| tonic::Status::internal(e.to_string()))
}

/// Sends `body` to `path` in full and returns the response message's bytes.
pub async fn raw_call(channel: Channel, path: &str, body: Bytes) -> Result<Bytes, tonic::Status> {
    let len = body.len();
    HeldCall::start_raw(channel, path, body, len, None)
        .await
        .finish_raw()
        .await
}

/// `job-decider` with `stdin` as its standard input.
pub fn run_with_stdin(args: &[&str], stdin: &[u8]) -> std::process::Output {
    use std::io::Write;
    use std::process::Stdio;
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_job-decider"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn job-decider");
    let written = child.stdin.take().expect("stdin").write_all(stdin);
    // A command that refuses its arguments exits without reading stdin: a broken pipe then
    // is the child's choice, not a failure of the test.
    if let Err(err) = written {
        assert_eq!(
            err.kind(),
            std::io::ErrorKind::BrokenPipe,
            "write stdin: {err}"
        );
    }
    child.wait_with_output().expect("wait")
}

/// `n` copies of `pod`, each its own pod (uid `uid-{i}`, name `pod-{i}`).
pub fn copies_of(pod: &pb::Pod, n: usize) -> Vec<pb::Pod> {
    (0..n)
        .map(|i| {
            let mut pod = pod.clone();
            if let Some(m) = pod.metadata.as_mut() {
                m.uid = format!("uid-{i}");
                m.name = format!("pod-{i}");
            }
            pod
        })
        .collect()
}

/// A channel to a server started as a process at `addr`, once it accepts
/// connections (it fails the test after 20 s).
pub async fn connect_when_up(addr: SocketAddr) -> Channel {
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        let endpoint = Endpoint::from_shared(format!("http://{addr}")).expect("endpoint");
        match endpoint.connect().await {
            Ok(channel) => return channel,
            Err(err) => {
                assert!(
                    std::time::Instant::now() < deadline,
                    "server never came up: {err}"
                );
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    }
}

/// A DecideJob request of at least `bytes` encoded bytes (pods of a bundled example, repeated).
pub fn request_of_size(bytes: usize) -> pb::DecideJobRequest {
    let mut request = example_request("indexed-job-mid-run");
    let pod = request.pods[2].clone();
    request.pods.clear();
    // The request's exact encoded length, counted as it grows: each pod adds
    // its field's one-byte key, its length prefix and its bytes. A test that
    // holds half a budget needs the body past the half, whatever a pod weighs
    // (a guessed +6 per pod once left it a few bytes under).
    let mut size = request.encoded_len();
    let mut i = 0;
    while size < bytes {
        let mut pod = pod.clone();
        if let Some(m) = pod.metadata.as_mut() {
            m.uid = format!("uid-{i}");
            m.name = format!("pod-{i}");
        }
        let len = pod.encoded_len();
        size += 1 + prost::encoding::encoded_len_varint(len as u64) + len;
        request.pods.push(pod);
        i += 1;
    }
    debug_assert_eq!(size, request.encoded_len());
    request
}

/// A server on a socket in a temporary directory, bound as `serve` binds it.
pub struct SocketServer {
    /// The temporary directory that holds the socket.
    pub dir: tempfile::TempDir,
    /// The socket's path.
    pub path: PathBuf,
    shutdown: Option<oneshot::Sender<()>>,
    task: JoinHandle<Result<(), ServeError>>,
}

impl SocketServer {
    /// Starts a server with `config` on `decider.sock` in a new temporary directory.
    pub async fn start(config: ServerConfig) -> SocketServer {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("decider.sock");
        Self::start_at(dir, path, config).await
    }

    /// Starts a server with `config` on `path` (in `dir`).
    pub async fn start_at(
        dir: tempfile::TempDir,
        path: PathBuf,
        config: ServerConfig,
    ) -> SocketServer {
        let (listener, file) = bind_unix(&path, config.socket_mode).expect("bind the socket");
        let listeners = Listeners {
            grpc: GrpcListener::Unix(listener, Some(file)),
            metrics: None,
            health: None,
        };
        let (tx, rx) = oneshot::channel::<()>();
        let task = tokio::spawn(serve_on(listeners, config, async {
            let _ = rx.await;
        }));
        SocketServer {
            dir,
            path,
            shutdown: Some(tx),
            task,
        }
    }

    /// A channel to it, through the server's own `unix:` address handling.
    pub async fn channel(&self) -> Channel {
        let url = address::unix_url(&self.path);
        tokio::time::timeout(WAIT, address::connect(&url))
            .await
            .expect("connect in time")
            .expect("connect")
    }

    /// A generated client on [`SocketServer::channel`].
    pub async fn client(&self) -> pb::job_decider_client::JobDeciderClient<Channel> {
        pb::job_decider_client::JobDeciderClient::new(self.channel().await)
            .max_decoding_message_size(usize::MAX)
    }

    /// Starts a graceful shutdown and waits for the server to end.
    pub async fn stop(mut self) -> (tempfile::TempDir, PathBuf) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        tokio::time::timeout(WAIT, &mut self.task)
            .await
            .expect("stopped in time")
            .expect("task")
            .expect("served");
        (self.dir, self.path)
    }
}
