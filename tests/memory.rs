//! Memory of DecideJob calls, measured on the real server binary in a child
//! process: its peak resident set during one call (VmHWM, reset through
//! /proc/PID/clear_refs before the call) against the request's size on the
//! wire, and its resident set once the call is over against its baseline.
//!
//! The server is the `job-decider` binary cargo builds beside this test (debug
//! under `cargo test`, release under `cargo test --release`): the allocator,
//! the transport and the pipeline are the ones deployed, and nothing in this
//! process (the client, the fixture) counts. A debug build allocates the same
//! structures as a release build, only slower, so the bounds hold in both;
//! `tools/memory-table.sh` runs the release build for docs/performance.md's table.
//!
//! `memory_phases` (ignored; a measurement) follows one 100,000-pod request
//! through the pipeline in this process under a counting allocator, to show
//! which copy of the request exists when.
//!
//! Linux only (it reads /proc).
#![cfg(target_os = "linux")]
// The counting allocator (for `memory_phases`) is the one unsafe thing here.
#![allow(unsafe_code)]
// A panic in a test helper is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod counting_alloc;

use std::net::{SocketAddr, TcpListener};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use bytes::{BufMut, Bytes};
use job_decider_api::{LazyDecideJobRequest, convert, fixtures, pb};
use job_decider_core::model::Snapshot;
use prost::Message;
use tonic::Status;
use tonic::codec::{Codec, DecodeBuf, Decoder, EncodeBuf, Encoder};
use tonic::transport::{Channel, Endpoint};

/// Waits for the server to start or a call to end are bounded by this (debug builds are slow).
const WAIT: Duration = Duration::from_secs(300);
/// After a call, how long the server may take to hand memory back (allocator decay).
const SETTLE: Duration = Duration::from_secs(5);
/// The bounds the reliability issue sets: peak per call over wire size, and after over baseline.
const MAX_PEAK_PER_WIRE_BYTE: f64 = 3.0;
const MAX_AFTER_PER_BASELINE: f64 = 2.0;

/// A `job-decider serve` child process on loopback ports.
struct Server {
    child: Child,
    addr: SocketAddr,
}

/// A free loopback port (bound, read and released; the server binds it next).
fn free_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind an ephemeral port");
    listener.local_addr().expect("local addr").port()
}

impl Server {
    /// Starts the binary with the server's default limits (the timeout aside: debug builds are slow).
    fn start() -> Server {
        let addr: SocketAddr = format!("127.0.0.1:{}", free_port())
            .parse()
            .expect("loopback address");
        // JOB_DECIDER_BIN measures another build (another allocator, an older commit).
        let binary = std::env::var_os("JOB_DECIDER_BIN")
            .unwrap_or_else(|| env!("CARGO_BIN_EXE_job-decider").into());
        let child = Command::new(binary)
            .args([
                "serve",
                "--addr",
                &addr.to_string(),
                "--metrics-addr",
                "127.0.0.1:0",
                "--log-level",
                "warn",
                "--request-timeout",
                "300s",
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .spawn()
            .expect("start the server binary");
        Server { child, addr }
    }

    /// A line of /proc/PID/status, in bytes (the kernel gives kB).
    fn status_bytes(&self, key: &str) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .expect("read the server's /proc status");
        status
            .lines()
            .find_map(|line| line.strip_prefix(key)?.strip_prefix(':'))
            .and_then(|rest| {
                rest.trim()
                    .trim_end_matches("kB")
                    .trim()
                    .parse::<u64>()
                    .ok()
            })
            .map(|kb| kb * 1024)
            .unwrap_or_else(|| panic!("{key} missing from /proc status"))
    }

    /// Resident set now.
    fn rss(&self) -> u64 {
        self.status_bytes("VmRSS")
    }

    /// Highest resident set since the last [`Server::reset_peak`].
    fn peak(&self) -> u64 {
        self.status_bytes("VmHWM")
    }

    /// Resets the high-water mark to the current resident set ("5" in clear_refs).
    fn reset_peak(&self) {
        std::fs::write(format!("/proc/{}/clear_refs", self.child.id()), "5")
            .expect("reset the server's peak RSS");
    }

    /// A channel, once the server accepts connections.
    async fn channel(&self) -> Channel {
        let deadline = Instant::now() + WAIT;
        loop {
            let endpoint = Endpoint::from_shared(format!("http://{}", self.addr))
                .expect("endpoint")
                .connect_timeout(Duration::from_secs(1));
            match endpoint.connect().await {
                Ok(channel) => return channel,
                Err(err) if Instant::now() > deadline => panic!("server never listened: {err}"),
                Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
            }
        }
    }

    /// Waits (bounded by [`SETTLE`]) for the resident set to fall to `target`; returns the last reading.
    async fn settle(&self, target: u64) -> u64 {
        let deadline = Instant::now() + SETTLE;
        loop {
            let rss = self.rss();
            if rss <= target || Instant::now() > deadline {
                return rss;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Sends an already encoded request, so the client encodes nothing per call.
#[derive(Default)]
struct PreEncoded;

struct RawEncoder;

impl Encoder for RawEncoder {
    type Item = Bytes;
    type Error = Status;

    fn encode(&mut self, item: Bytes, buf: &mut EncodeBuf<'_>) -> Result<(), Status> {
        buf.put_slice(&item);
        Ok(())
    }
}

struct ResponseDecoder;

impl Decoder for ResponseDecoder {
    type Item = pb::DecideJobResponse;
    type Error = Status;

    fn decode(&mut self, buf: &mut DecodeBuf<'_>) -> Result<Option<Self::Item>, Status> {
        pb::DecideJobResponse::decode(buf)
            .map(Some)
            .map_err(|e| Status::internal(e.to_string()))
    }
}

impl Codec for PreEncoded {
    type Encode = Bytes;
    type Decode = pb::DecideJobResponse;
    type Encoder = RawEncoder;
    type Decoder = ResponseDecoder;

    fn encoder(&mut self) -> RawEncoder {
        RawEncoder
    }

    fn decoder(&mut self) -> ResponseDecoder {
        ResponseDecoder
    }
}

/// One DecideJob call with an encoded request.
async fn decide(channel: Channel, body: Bytes) -> Result<pb::DecideJobResponse, Status> {
    let mut grpc = tonic::client::Grpc::new(channel)
        .max_encoding_message_size(usize::MAX)
        .max_decoding_message_size(usize::MAX);
    grpc.ready()
        .await
        .map_err(|e| Status::unavailable(e.to_string()))?;
    let path = http::uri::PathAndQuery::from_static("/jobdecider.v1.JobDecider/DecideJob");
    grpc.unary(tonic::Request::new(body), path, PreEncoded)
        .await
        .map(tonic::Response::into_inner)
}

/// A realistic request of `pods` pods, encoded.
fn encoded_request(pods: usize) -> Bytes {
    Bytes::from(fixtures::realistic_request(pods).encode_to_vec())
}

/// What one measurement found, in bytes.
#[derive(Debug)]
struct Measured {
    /// Wire size of one request.
    wire: u64,
    /// Resident set before the calls (after a small warm-up call).
    baseline: u64,
    /// Highest resident set during the calls.
    peak: u64,
    /// Resident set once the calls were over and the allocator had time to hand memory back.
    after: u64,
    /// Wall time of the calls, as the client saw it.
    elapsed: Duration,
    /// Calls answered OK.
    answered: usize,
    /// Calls turned away with RESOURCE_EXHAUSTED (the server's byte budget).
    refused: usize,
}

impl Measured {
    fn peak_per_wire(&self) -> f64 {
        self.peak.saturating_sub(self.baseline) as f64 / self.wire as f64
    }
}

/// Starts a server, warms it up, and runs `rounds` rounds of `concurrent` calls at once with `body`.
async fn measure(body: Bytes, concurrent: usize, rounds: usize) -> Measured {
    let server = Server::start();
    let channel = server.channel().await;
    // A warm-up call: the runtime's threads, the metrics registry and the like exist from then on.
    decide(channel.clone(), encoded_request(10))
        .await
        .expect("warm-up call");
    let baseline = server.rss();
    // One connection per concurrent caller, as separate clients would have.
    let mut channels = vec![channel];
    while channels.len() < concurrent {
        channels.push(server.channel().await);
    }
    server.reset_peak();
    let started = Instant::now();
    let (mut answered, mut refused) = (0, 0);
    for _ in 0..rounds {
        let calls: Vec<_> = channels
            .iter()
            .map(|c| tokio::spawn(decide(c.clone(), body.clone())))
            .collect();
        for call in calls {
            match tokio::time::timeout(WAIT, call)
                .await
                .expect("call within the wait")
                .expect("call task")
            {
                Ok(response) => {
                    assert!(
                        !response.actions.is_empty(),
                        "a realistic Job's plan writes its status"
                    );
                    answered += 1;
                }
                // The server's budget of request bytes in flight turned the call away.
                Err(status) if status.code() == tonic::Code::ResourceExhausted => refused += 1,
                Err(status) => panic!("DecideJob failed: {status:?}"),
            }
        }
    }
    let elapsed = started.elapsed();
    let peak = server.peak();
    let after = server
        .settle((baseline as f64 * MAX_AFTER_PER_BASELINE) as u64)
        .await;
    Measured {
        wire: body.len() as u64,
        baseline,
        peak,
        after,
        elapsed,
        answered,
        refused,
    }
}

/// One 100,000-pod call peaks at most at 3× its wire size above the server's
/// baseline, and the server's resident set is back within 2× its baseline afterwards.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hundred_thousand_pod_call_peaks_under_three_times_its_wire_size() {
    let body = encoded_request(100_000);
    let m = measure(body, 1, 1).await;
    assert_eq!(m.answered, 1, "the call is answered, not refused");
    eprintln!(
        "100k pods: wire {} B, baseline {} B, peak {} B ({:.2}x wire above baseline), after {} B, {:?}",
        m.wire,
        m.baseline,
        m.peak,
        m.peak_per_wire(),
        m.after,
        m.elapsed
    );
    assert!(
        m.peak_per_wire() <= MAX_PEAK_PER_WIRE_BYTE,
        "peak {} B is {:.2}x the {} B request above the {} B baseline",
        m.peak,
        m.peak_per_wire(),
        m.wire,
        m.baseline
    );
    assert!(
        m.after as f64 <= m.baseline as f64 * MAX_AFTER_PER_BASELINE,
        "after the call the server holds {} B, over 2x its {} B baseline",
        m.after,
        m.baseline
    );
}

fn mib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / (1024.0 * 1024.0))
}

/// Prints docs/performance.md's memory table (`tools/memory-table.sh` runs it on the release build).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a measurement for docs/performance.md, not a check: run by tools/memory-table.sh"]
async fn memory_table() {
    let rows: [(&str, usize, usize, usize); 5] = [
        ("1,000 pods", 1_000, 1, 1),
        ("10,000 pods", 10_000, 1, 1),
        ("100,000 pods", 100_000, 1, 1),
        ("100,000 pods, 5 calls in a row", 100_000, 1, 5),
        ("100,000 pods, 8 calls at once", 100_000, 8, 1),
    ];
    println!(
        "| request | size on the wire | baseline RSS | peak RSS | peak − baseline ÷ size | RSS after | time | answered |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    for (label, pods, concurrent, rounds) in rows {
        let body = encoded_request(pods);
        let m = measure(body, concurrent, rounds).await;
        let wire = m.wire * concurrent as u64;
        let answered = if m.refused == 0 {
            format!("{}", m.answered)
        } else {
            format!("{} ({} RESOURCE_EXHAUSTED)", m.answered, m.refused)
        };
        println!(
            "| {label} | {} | {} | {} | {:.2}× | {} | {:.2} s | {answered} |",
            mib(wire),
            mib(m.baseline),
            mib(m.peak),
            m.peak.saturating_sub(m.baseline) as f64 / wire as f64,
            mib(m.after),
            m.elapsed.as_secs_f64(),
        );
    }
}

/// Counts the bytes live in this process and their peak (for `memory_phases`;
/// the server child process is not affected).
#[global_allocator]
static ALLOCATOR: counting_alloc::Counting = counting_alloc::Counting;

/// Prints the bytes live after a phase and the most live during it, above `base`, and resets the peak.
fn phase(name: &str, base: usize, wire: usize) {
    let live = counting_alloc::live().saturating_sub(base);
    let peak = counting_alloc::peak().saturating_sub(base);
    let ratio = |b: usize| b as f64 / wire as f64;
    println!(
        "| {name} | {} ({:.2}×) | {} ({:.2}×) |",
        mib(live as u64),
        ratio(live),
        mib(peak as u64),
        ratio(peak)
    );
    counting_alloc::reset_peak();
}

/// Which copies of a 100,000-pod request exist at each step of the server's pipeline
/// (bytes asked of the allocator, so no allocator's rounding or caching is counted),
/// with its pods as `Pod`s and as `LeanPod`s.
#[test]
#[ignore = "a measurement for docs/performance.md: cargo test --release --test memory -- --ignored memory_phases --nocapture"]
fn memory_phases() {
    let full = fixtures::realistic_request(100_000);
    let lean = job_decider_api::lean::lean_request(full.clone()).expect("has a lean form");
    for (encoding, request) in [("pods", full), ("leanPods", lean)] {
        let encoded = request.encode_to_vec();
        drop(request);
        let wire = encoded.len();
        // What was live before the body, the decoded request it came from already gone.
        let base = counting_alloc::live().saturating_sub(encoded.capacity());
        // The body as tonic hands it to the codec.
        let body = Bytes::from(encoded);
        counting_alloc::reset_peak();
        println!("\n{encoding}, {} on the wire:\n", mib(wire as u64));
        println!("| step | live after | most live during |");
        println!("|---|---|---|");
        phase("request body buffered", base, wire);
        let whole = pb::DecideJobRequest::decode(body.clone()).expect("decodes");
        phase(
            "(for comparison: the whole request decoded by prost)",
            base,
            wire,
        );
        drop(whole);
        counting_alloc::reset_peak();
        let lazy = LazyDecideJobRequest::decode(body.clone()).expect("decodes");
        drop(body);
        phase(
            "decoded, each pod a slice of the body (which they keep alive)",
            base,
            wire,
        );
        let snapshot = Snapshot::try_from(lazy).expect("converts");
        phase(
            "converted pod by pod, the body freed with its last slice: the domain snapshot",
            base,
            wire,
        );
        let plan = job_decider_core::sync::decide(&snapshot);
        phase("decided", base, wire);
        let response = convert::response_from_plan(&plan);
        drop(snapshot);
        drop(plan);
        phase(
            "response built; snapshot and plan freed (the server frees them after sending it)",
            base,
            wire,
        );
        assert!(!response.actions.is_empty());
    }
}
