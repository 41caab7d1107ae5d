//! `job-decider-load hostile` (`make hostile`): issue 22's hostile sequences from
//! one client without credentials, against the release server started with the
//! deploy's own flags (read from the Deployment), pinned to one core.
//!
//! While the sequences play, the server's RSS is read from `/proc/<pid>/status`
//! every 100 ms (VmHWM reset per sequence), `/metrics` is read every 100 ms
//! (slots held, budget in use), and kubelet's two gRPC probes (liveness `""`,
//! readiness `jobdecider.v1.JobDecider`) are made every second on the health
//! port, each on a new connection with kubelet's default 1 s timeout. Each
//! sequence gets one row; a bound exceeded fails the run.
//!
//! A slot held past its call: at each metrics sample, slots held beyond the
//! calls still open belong to calls already answered; the k surplus slots are
//! put on the k calls answered last (the kindest reading), and the time since
//! the k-th last answer is how long the slot outlived its call.

pub mod deploy;
pub mod requests;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tonic::transport::{Channel, Endpoint};

use crate::Error;
use crate::client::Raw;
use crate::run::{can_pin, free_port, pinned};
use deploy::DeployFlags;

const DECIDE_JOB: &str = "/jobdecider.v1.JobDecider/DecideJob";
const VALIDATE_JOB: &str = "/jobdecider.v1.JobDecider/ValidateJob";
const DECIDE_JOB_SET: &str = "/jobdecider.v1.JobDecider/DecideJobSet";
const HEALTH_CHECK: &str = "/grpc.health.v1.Health/Check";
/// The readiness probe's service in the Deployment.
const READINESS_SERVICE: &str = "jobdecider.v1.JobDecider";
/// The memory arithmetic (docs/operations.md): the process idles at about 10 MiB.
const BASELINE_BYTES: u64 = 10 << 20;
/// How late past its call's end a slot may still be held.
const SLOT_GRACE: Duration = Duration::from_secs(1);
/// kubelet's default probe timeout.
const PROBE_TIMEOUT: Duration = Duration::from_secs(1);

/// `job-decider-load hostile`'s flags.
#[derive(clap::Args, Clone, Debug)]
pub struct Options {
    /// The server binary.
    #[arg(long, default_value = "target/release/job-decider")]
    pub server: PathBuf,
    /// The Deployment whose `serve` flags and memory limit are used.
    #[arg(long, default_value = "deploy/base/decider-deployment.yaml")]
    pub deployment: PathBuf,
    /// Where the table, the samples and the server's log go.
    #[arg(long, default_value = "target/hostile")]
    pub out: PathBuf,
    /// Request sizes and loop lengths times this (1: the reviewer's sizes; the smoke uses 0.01).
    #[arg(long, default_value_t = 1.0)]
    pub scale: f64,
    /// Only the sequences whose names start with one of these (e.g. a1,c).
    #[arg(long, value_delimiter = ',')]
    pub only: Vec<String>,
    /// Run unpinned even where taskset and two cores are available.
    #[arg(long)]
    pub no_pin: bool,
    /// The command to name in the table's header.
    #[arg(long, default_value = "make hostile")]
    pub command: String,
}

/// One metrics sample: read after `t`.
#[derive(Clone, Copy, Debug)]
struct Sample {
    t: Instant,
    slots: f64,
    bytes: f64,
    metrics_len: usize,
}

/// One call's life, from the client's side.
#[derive(Clone, Debug)]
struct CallRec {
    start: Instant,
    end: Instant,
    code: String,
}

/// One probe's outcome.
#[derive(Clone, Debug)]
struct Probe {
    t: Instant,
    ok: bool,
    detail: String,
}

/// What the samplers write and the sequences read.
#[derive(Default)]
struct Shared {
    samples: Mutex<Vec<Sample>>,
    rss: Mutex<Vec<(Instant, u64, u64)>>,
    probes: Mutex<Vec<Probe>>,
    scrape_failures: Mutex<u64>,
    stop: AtomicBool,
    killed: AtomicBool,
}

/// What a sequence plays.
enum Play {
    /// Calls one after another, each with its client deadline (None: the server's timeout).
    Serial(&'static str, Vec<(Bytes, Option<Duration>)>),
    /// `workers` callers each sending `body` again as soon as it is answered, for the duration.
    Loop {
        method: &'static str,
        body: Bytes,
        workers: usize,
        deadline: Option<Duration>,
        run_for: Duration,
    },
    /// `workers` callers sharing out distinct bodies.
    Many(&'static str, Vec<Bytes>, usize),
}

/// A hostile sequence: a name, what it does, and how to build its calls.
struct Sequence {
    name: &'static str,
    what: String,
    build: Box<dyn Fn() -> Result<Play, Error>>,
}

/// One row of the table.
#[derive(Clone, Debug)]
pub struct Row {
    /// The sequence's name and what it does.
    pub sequence: String,
    /// Calls made.
    pub calls: usize,
    /// How they were answered, e.g. `6 client deadline`.
    pub answers: String,
    /// The server's peak RSS during the sequence, bytes.
    pub peak_rss: u64,
    /// The most request bytes in flight the metrics showed.
    pub peak_budget: u64,
    /// The most slots held at once.
    pub peak_slots: u64,
    /// The largest `/metrics` answer, bytes.
    pub metrics_len: usize,
    /// The longest call, from its first byte sent to its answer.
    pub longest_call: Duration,
    /// The longest a slot was seen held after its call was answered (or its deadline passed).
    pub held_past_call: Duration,
    /// From the last answer to no slot and no byte in use.
    pub drain: Duration,
    /// Health probes failed, and made.
    pub probes_failed: usize,
    /// Health probes made.
    pub probes: usize,
    /// The bounds this row exceeds.
    pub exceeded: Vec<String>,
}

/// The limits every row is checked against.
#[derive(Clone, Copy, Debug)]
pub struct Bounds {
    /// The memory arithmetic (docs/operations.md): 3 × budget + 10 MiB.
    pub rss: u64,
    /// The request timeout + 1 s.
    pub call: Duration,
    /// The Deployment's memory limit.
    pub memory_limit: u64,
}

/// Runs the hostile sequences; fails when any bound is exceeded.
pub fn run(o: &Options) -> Result<(), Error> {
    std::fs::create_dir_all(&o.out).map_err(|e| Error::io(&o.out, e))?;
    let text = std::fs::read_to_string(&o.deployment).map_err(|e| Error::io(&o.deployment, e))?;
    let flags = deploy::read_deployment(&text)?;
    let timeout = request_timeout(&o.server, &flags)?;
    let bounds = Bounds {
        rss: 3 * flags.budget + BASELINE_BYTES,
        call: timeout + SLOT_GRACE,
        memory_limit: flags.memory_limit,
    };
    let pin = (!o.no_pin && can_pin("0") && can_pin("1")).then_some("0");
    let (api, metrics, health) = (free_port()?, free_port()?, free_port()?);
    let args = flags.loopback_args(api, metrics, health);
    eprintln!(
        "hostile: {} serve {}{}",
        o.server.display(),
        args.join(" "),
        if pin.is_some() {
            " (taskset -c 0)"
        } else {
            " (NOT pinned)"
        }
    );
    let log_path = o.out.join("server.log");
    let log = std::fs::File::create(&log_path).map_err(|e| Error::io(&log_path, e))?;
    let log2 = log.try_clone().map_err(|e| Error::io(&log_path, e))?;
    let child = pinned(&o.server, pin)
        .arg("serve")
        .args(&args)
        .stdout(log)
        .stderr(log2)
        .spawn()
        .map_err(|e| Error::tool("server", format!("{}: {e}", o.server.display())))?;
    let mut server = ServerGuard(child);
    let pid = server.0.id();

    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| Error::tool("client", e.to_string()))?;
    let shared = Arc::new(Shared::default());
    let result = rt.block_on(play_all(
        o, &flags, bounds, timeout, pid, api, metrics, health, &shared,
    ));
    shared.stop.store(true, Ordering::SeqCst);
    let alive = matches!(server.0.try_wait(), Ok(None));
    drop(server);
    let rows = result?;
    let table = table(o, &flags, bounds, timeout, &rows, pin.is_some());
    let results = o.out.join("results.md");
    std::fs::write(&results, &table).map_err(|e| Error::io(&results, e))?;
    println!("{table}");
    let failed: Vec<&Row> = rows.iter().filter(|r| !r.exceeded.is_empty()).collect();
    if !alive || shared.killed.load(Ordering::SeqCst) {
        return Err(Error::Failed {
            what: "hostile".into(),
            detail: format!(
                "the server did not survive the run (see {})",
                log_path.display()
            ),
        });
    }
    if !failed.is_empty() {
        return Err(Error::Failed {
            what: "hostile".into(),
            detail: failed
                .iter()
                .map(|r| format!("{}: {}", r.sequence, r.exceeded.join("; ")))
                .collect::<Vec<_>>()
                .join(" | "),
        });
    }
    eprintln!("hostile: every bound held ({})", results.display());
    Ok(())
}

/// Kills the server (ours alone, started by this run) on every path out.
struct ServerGuard(Child);

impl Drop for ServerGuard {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `--request-timeout` from the Deployment, else `serve`'s own default.
fn request_timeout(server: &Path, flags: &DeployFlags) -> Result<Duration, Error> {
    let text = match flags.flag("--request-timeout") {
        Some(v) => v.to_string(),
        None => {
            let out = Command::new(server)
                .args(["serve", "--help"])
                .stderr(Stdio::null())
                .output()
                .map_err(|e| Error::tool("server", format!("{}: {e}", server.display())))?;
            deploy::default_from_help(&String::from_utf8_lossy(&out.stdout), "--request-timeout")
                .ok_or_else(|| {
                    Error::tool("server", "serve --help names no --request-timeout default")
                })?
        }
    };
    deploy::parse_duration(&text)
        .ok_or_else(|| Error::tool("server", format!("--request-timeout {text:?}")))
}

#[allow(clippy::too_many_arguments)]
async fn play_all(
    o: &Options,
    flags: &DeployFlags,
    bounds: Bounds,
    timeout: Duration,
    pid: u32,
    api: u16,
    metrics: u16,
    health: u16,
    shared: &Arc<Shared>,
) -> Result<Vec<Row>, Error> {
    let api_addr = format!("127.0.0.1:{api}");
    wait_listening(&api_addr, pid).await?;
    wait_listening(&format!("127.0.0.1:{metrics}"), pid).await?;
    wait_listening(&format!("127.0.0.1:{health}"), pid).await?;
    spawn_rss_sampler(pid, bounds.memory_limit * 2, Arc::clone(shared));
    tokio::spawn(scrape_loop(metrics, Arc::clone(shared)));
    tokio::spawn(probe_loop(health, Arc::clone(shared)));
    tokio::time::sleep(Duration::from_secs(1)).await;

    let mut rows = Vec::new();
    for seq in sequences(o.scale, flags, timeout) {
        if !o.only.is_empty() && !o.only.iter().any(|p| seq.name.starts_with(p.as_str())) {
            continue;
        }
        if shared.killed.load(Ordering::SeqCst) {
            break;
        }
        eprintln!("== {}: {}", seq.name, seq.what);
        let play = (seq.build)()?;
        // VmHWM from here on is this sequence's peak (Linux: 5 to clear_refs).
        let _ = std::fs::write(format!("/proc/{pid}/clear_refs"), "5");
        let start = Instant::now();
        let calls = play_one(&api_addr, play).await?;
        let last_end = calls.iter().map(|c| c.end).max().unwrap_or(start);
        let drained = wait_drained(shared, last_end, timeout + Duration::from_secs(10)).await;
        // One more probe round inside the window.
        tokio::time::sleep(Duration::from_millis(300)).await;
        let end = Instant::now();
        let hwm = read_status(pid).map(|(_, hwm)| hwm).unwrap_or(0);
        let row = analyse(
            seq.name,
            &seq.what,
            &calls,
            shared,
            start,
            end,
            drained.map(|d| d - last_end),
            hwm,
            bounds,
        );
        eprintln!(
            "   {} calls ({}), peak RSS {:.0} MiB, held past call {:.2} s, probes failed {}/{}{}",
            row.calls,
            row.answers,
            mib(row.peak_rss),
            row.held_past_call.as_secs_f64(),
            row.probes_failed,
            row.probes,
            if row.exceeded.is_empty() {
                String::new()
            } else {
                format!("  EXCEEDED: {}", row.exceeded.join("; "))
            }
        );
        rows.push(row);
    }
    write_samples(&o.out, shared)?;
    Ok(rows)
}

async fn wait_listening(addr: &str, pid: u32) -> Result<(), Error> {
    let deadline = Instant::now() + Duration::from_secs(30);
    while tokio::net::TcpStream::connect(addr).await.is_err() {
        if Instant::now() > deadline || !Path::new(&format!("/proc/{pid}")).exists() {
            return Err(Error::tool("server", format!("not listening on {addr}")));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Ok(())
}

/// VmRSS and VmHWM of `pid`, bytes.
fn read_status(pid: u32) -> Option<(u64, u64)> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let field = |name: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|kb| kb.parse::<u64>().ok())
            .map(|kb| kb * 1024)
    };
    Some((field("VmRSS:")?, field("VmHWM:")?))
}

/// RSS every 100 ms; past `kill_above` the server is killed, as the kernel would have.
fn spawn_rss_sampler(pid: u32, kill_above: u64, shared: Arc<Shared>) {
    std::thread::spawn(move || {
        while !shared.stop.load(Ordering::SeqCst) {
            if let Some((rss, hwm)) = read_status(pid) {
                if let Ok(mut v) = shared.rss.lock() {
                    v.push((Instant::now(), rss, hwm));
                }
                if rss > kill_above && !shared.killed.swap(true, Ordering::SeqCst) {
                    eprintln!(
                        "hostile: server RSS {} MiB, past twice the limit: killed",
                        rss >> 20
                    );
                    let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
                }
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    });
}

/// `/metrics` every 100 ms (HTTP/1.1, one connection a scrape, 1 s each).
async fn scrape_loop(port: u16, shared: Arc<Shared>) {
    while !shared.stop.load(Ordering::SeqCst) {
        let t = Instant::now();
        match tokio::time::timeout(Duration::from_secs(1), scrape(port)).await {
            Ok(Ok(text)) => {
                let value = |name: &str| {
                    text.lines()
                        .find_map(|l| l.strip_prefix(name).and_then(|r| r.strip_prefix(' ')))
                        .and_then(|v| v.trim().parse::<f64>().ok())
                        .unwrap_or(0.0)
                };
                let sample = Sample {
                    t,
                    slots: value("job_decider_requests_in_flight"),
                    bytes: value("job_decider_request_bytes_in_flight"),
                    metrics_len: text.len(),
                };
                if let Ok(mut v) = shared.samples.lock() {
                    v.push(sample);
                }
            }
            _ => {
                if let Ok(mut n) = shared.scrape_failures.lock() {
                    *n += 1;
                }
            }
        }
        tokio::time::sleep(Duration::from_millis(100).saturating_sub(t.elapsed())).await;
    }
}

async fn scrape(port: u16) -> std::io::Result<String> {
    let mut s = tokio::net::TcpStream::connect(("127.0.0.1", port)).await?;
    s.write_all(b"GET /metrics HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        .await?;
    let mut body = Vec::new();
    s.read_to_end(&mut body).await?;
    let text = String::from_utf8_lossy(&body);
    Ok(text
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default())
}

/// kubelet's two gRPC probes every second, each on a new connection within 1 s.
async fn probe_loop(port: u16, shared: Arc<Shared>) {
    while !shared.stop.load(Ordering::SeqCst) {
        let t = Instant::now();
        for service in ["", READINESS_SERVICE] {
            let shared = Arc::clone(&shared);
            tokio::spawn(async move {
                let t = Instant::now();
                let outcome = tokio::time::timeout(PROBE_TIMEOUT, probe(port, service)).await;
                let (ok, detail) = match outcome {
                    Ok(Ok(())) => (true, String::new()),
                    Ok(Err(e)) => (false, e),
                    Err(_) => (false, format!("{service:?}: no answer within 1 s")),
                };
                if let Ok(mut v) = shared.probes.lock() {
                    v.push(Probe { t, ok, detail });
                }
            });
        }
        tokio::time::sleep(Duration::from_secs(1).saturating_sub(t.elapsed())).await;
    }
}

async fn probe(port: u16, service: &str) -> Result<(), String> {
    let channel = Endpoint::from_shared(format!("http://127.0.0.1:{port}"))
        .map_err(|e| e.to_string())?
        .connect()
        .await
        .map_err(|e| format!("connect: {e}"))?;
    let mut grpc = tonic::client::Grpc::new(channel);
    grpc.ready().await.map_err(|e| e.to_string())?;
    // HealthCheckRequest { service }: field 1, length-delimited.
    let mut body = vec![0x0a, u8::try_from(service.len()).unwrap_or(0)];
    body.extend_from_slice(service.as_bytes());
    let answer = grpc
        .unary(
            tonic::Request::new(Bytes::from(body)),
            http::uri::PathAndQuery::from_static(HEALTH_CHECK),
            Raw,
        )
        .await
        .map_err(|s| format!("{service:?}: {:?} {}", s.code(), s.message()))?
        .into_inner();
    // HealthCheckResponse { status: SERVING (1) }.
    if answer.as_ref() == [0x08, 0x01] {
        Ok(())
    } else {
        Err(format!("{service:?}: not SERVING: {answer:?}"))
    }
}

async fn connect(addr: &str) -> Result<Channel, Error> {
    Endpoint::from_shared(format!("http://{addr}"))
        .map_err(|e| Error::tool("client", e.to_string()))?
        .connect()
        .await
        .map_err(|e| Error::tool("client", format!("{addr}: {e}")))
}

/// One call; the client's deadline (if any) drops it, resetting its stream as a leaving client does.
async fn call(
    channel: &Channel,
    method: &'static str,
    body: Bytes,
    deadline: Option<Duration>,
) -> CallRec {
    let mut grpc = tonic::client::Grpc::new(channel.clone())
        .max_decoding_message_size(usize::MAX)
        .max_encoding_message_size(usize::MAX);
    let start = Instant::now();
    let work = async {
        grpc.ready().await.map_err(|e| format!("transport: {e}"))?;
        let mut request = tonic::Request::new(body);
        if let Some(d) = deadline {
            request.set_timeout(d);
        }
        grpc.unary(request, http::uri::PathAndQuery::from_static(method), Raw)
            .await
            .map(|_| "OK".to_string())
            .map_err(|s| format!("{:?}", s.code()))
    };
    let outcome = match deadline {
        Some(d) => tokio::time::timeout(d, work)
            .await
            .unwrap_or_else(|_| Err("client deadline".into())),
        None => work.await,
    };
    CallRec {
        start,
        end: Instant::now(),
        code: outcome.unwrap_or_else(|e| e),
    }
}

async fn play_one(addr: &str, play: Play) -> Result<Vec<CallRec>, Error> {
    match play {
        Play::Serial(method, bodies) => {
            let channel = connect(addr).await?;
            let mut calls = Vec::new();
            for (body, deadline) in bodies {
                calls.push(call(&channel, method, body, deadline).await);
            }
            Ok(calls)
        }
        Play::Loop {
            method,
            body,
            workers,
            deadline,
            run_for,
        } => {
            let until = Instant::now() + run_for;
            let mut tasks = Vec::new();
            for _ in 0..workers {
                let channel = connect(addr).await?;
                let body = body.clone();
                tasks.push(tokio::spawn(async move {
                    let mut calls = Vec::new();
                    while Instant::now() < until {
                        calls.push(call(&channel, method, body.clone(), deadline).await);
                    }
                    calls
                }));
            }
            let mut calls = Vec::new();
            for t in tasks {
                calls.extend(t.await.map_err(|e| Error::tool("client", e.to_string()))?);
            }
            Ok(calls)
        }
        Play::Many(method, bodies, workers) => {
            let bodies = Arc::new(Mutex::new(bodies));
            let mut tasks = Vec::new();
            for _ in 0..workers {
                let channel = connect(addr).await?;
                let bodies = Arc::clone(&bodies);
                tasks.push(tokio::spawn(async move {
                    let mut calls = Vec::new();
                    loop {
                        let next = bodies.lock().ok().and_then(|mut b| b.pop());
                        let Some(body) = next else { break };
                        calls.push(call(&channel, method, body, None).await);
                    }
                    calls
                }));
            }
            let mut calls = Vec::new();
            for t in tasks {
                calls.extend(t.await.map_err(|e| Error::tool("client", e.to_string()))?);
            }
            Ok(calls)
        }
    }
}

/// When, after `after`, the metrics first showed no slot and no byte in use.
async fn wait_drained(shared: &Shared, after: Instant, within: Duration) -> Option<Instant> {
    let give_up = Instant::now() + within;
    loop {
        let found = shared.samples.lock().ok().and_then(|v| {
            v.iter()
                .find(|s| s.t >= after && s.slots == 0.0 && s.bytes == 0.0)
                .map(|s| s.t)
        });
        if found.is_some() {
            return found;
        }
        if Instant::now() > give_up {
            return None;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[allow(clippy::too_many_arguments)]
fn analyse(
    name: &str,
    what: &str,
    calls: &[CallRec],
    shared: &Shared,
    start: Instant,
    end: Instant,
    drain: Option<Duration>,
    hwm: u64,
    bounds: Bounds,
) -> Row {
    let samples: Vec<Sample> = shared
        .samples
        .lock()
        .map(|v| {
            v.iter()
                .filter(|s| s.t >= start && s.t <= end)
                .copied()
                .collect()
        })
        .unwrap_or_default();
    let peak_rss = shared
        .rss
        .lock()
        .map(|v| {
            v.iter()
                .filter(|(t, _, _)| *t >= start && *t <= end)
                .map(|(_, rss, _)| *rss)
                .max()
                .unwrap_or(0)
        })
        .unwrap_or(0)
        .max(hwm);
    let mut ends: Vec<Instant> = calls.iter().map(|c| c.end).collect();
    ends.sort();
    let mut held_past_call = Duration::ZERO;
    for s in &samples {
        let open = calls
            .iter()
            .filter(|c| c.start <= s.t && s.t < c.end)
            .count();
        let surplus = (s.slots as usize).saturating_sub(open);
        let answered = ends.partition_point(|e| *e <= s.t);
        if surplus > 0 && answered > 0 {
            let kth_last = ends[answered - surplus.min(answered)];
            held_past_call = held_past_call.max(s.t.saturating_duration_since(kth_last));
        }
    }
    let drain_or_max = drain.unwrap_or(bounds.call + Duration::from_secs(10));
    let probes: Vec<Probe> = shared
        .probes
        .lock()
        .map(|v| {
            v.iter()
                .filter(|p| p.t >= start && p.t <= end)
                .cloned()
                .collect()
        })
        .unwrap_or_default();
    let failed: Vec<&Probe> = probes.iter().filter(|p| !p.ok).collect();
    let mut answers: BTreeMap<&str, usize> = BTreeMap::new();
    for c in calls {
        *answers.entry(c.code.as_str()).or_default() += 1;
    }
    let longest_call = calls
        .iter()
        .map(|c| c.end - c.start)
        .max()
        .unwrap_or_default();
    let mut exceeded = Vec::new();
    if peak_rss > bounds.rss {
        exceeded.push(format!(
            "peak RSS {:.0} MiB > {:.0} MiB",
            mib(peak_rss),
            mib(bounds.rss)
        ));
    }
    let held_past_call = held_past_call.max(drain_or_max);
    if held_past_call > SLOT_GRACE || drain.is_none() {
        exceeded.push(format!(
            "a slot held {:.2} s past its call (drained: {})",
            held_past_call.as_secs_f64(),
            drain.map_or("never".to_string(), |d| format!("{:.2} s", d.as_secs_f64()))
        ));
    }
    if longest_call > bounds.call {
        exceeded.push(format!(
            "a call took {:.1} s > {:.0} s",
            longest_call.as_secs_f64(),
            bounds.call.as_secs_f64()
        ));
    }
    if !failed.is_empty() {
        exceeded.push(format!(
            "{} of {} health probes failed (first: {})",
            failed.len(),
            probes.len(),
            failed[0].detail
        ));
    }
    Row {
        sequence: format!("{name}: {what}"),
        calls: calls.len(),
        answers: answers
            .iter()
            .map(|(code, n)| format!("{n} {code}"))
            .collect::<Vec<_>>()
            .join(", "),
        peak_rss,
        peak_budget: samples.iter().map(|s| s.bytes as u64).max().unwrap_or(0),
        peak_slots: samples.iter().map(|s| s.slots as u64).max().unwrap_or(0),
        metrics_len: samples.iter().map(|s| s.metrics_len).max().unwrap_or(0),
        longest_call,
        held_past_call: held_past_call.max(drain_or_max),
        drain: drain_or_max,
        probes_failed: failed.len(),
        probes: probes.len(),
        exceeded,
    }
}

fn mib(bytes: u64) -> f64 {
    bytes as f64 / f64::from(1u32 << 20)
}

/// The raw samples, for a second look.
fn write_samples(out: &Path, shared: &Shared) -> Result<(), Error> {
    let mut text = String::from("kind,t_ms,a,b\n");
    let t0 = shared
        .rss
        .lock()
        .ok()
        .and_then(|v| v.first().map(|s| s.0))
        .unwrap_or_else(Instant::now);
    let ms = |t: Instant| t.saturating_duration_since(t0).as_millis();
    if let Ok(v) = shared.rss.lock() {
        for (t, rss, hwm) in v.iter() {
            let _ = writeln!(text, "rss,{},{rss},{hwm}", ms(*t));
        }
    }
    if let Ok(v) = shared.samples.lock() {
        for s in v.iter() {
            let _ = writeln!(text, "metrics,{},{},{}", ms(s.t), s.slots, s.bytes);
        }
    }
    if let Ok(v) = shared.probes.lock() {
        for p in v.iter() {
            let _ = writeln!(text, "probe,{},{},{:?}", ms(p.t), p.ok, p.detail);
        }
    }
    let path = out.join("samples.csv");
    std::fs::write(&path, text).map_err(|e| Error::io(&path, e))
}

fn table(
    o: &Options,
    flags: &DeployFlags,
    bounds: Bounds,
    timeout: Duration,
    rows: &[Row],
    pinned: bool,
) -> String {
    let mut t = String::new();
    let _ = writeln!(
        t,
        "`{}`: `job-decider serve {}` (from {}; request timeout {} s){}. Bounds: peak RSS ≤ 3 × {:.0} MiB budget + 10 MiB = {:.0} MiB (memory limit {:.0} MiB); no slot held more than {:.0} s past its call's answer or deadline, no call longer than {:.0} s; every health probe (liveness and readiness, new connection, 1 s) answered SERVING.\n",
        o.command,
        flags.args.join(" "),
        o.deployment.display(),
        timeout.as_secs(),
        if pinned {
            ", server `taskset -c 0`, client on core 1"
        } else {
            ", NOT pinned"
        },
        mib(flags.budget),
        mib(bounds.rss),
        mib(bounds.memory_limit),
        SLOT_GRACE.as_secs_f64(),
        bounds.call.as_secs_f64(),
    );
    t.push_str("| sequence | calls | answers | peak RSS MiB | budget in use MiB (max) | slots (max) | /metrics KiB (max) | longest call s | slot held past its call s | drained s | health probes failed | verdict |\n");
    t.push_str("|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---|\n");
    for r in rows {
        let _ = writeln!(
            t,
            "| {} | {} | {} | {:.0} | {:.0} | {} | {:.0} | {:.1} | {:.2} | {:.2} | {} of {} | {} |",
            r.sequence,
            r.calls,
            r.answers,
            mib(r.peak_rss),
            mib(r.peak_budget),
            r.peak_slots,
            r.metrics_len as f64 / 1024.0,
            r.longest_call.as_secs_f64(),
            r.held_past_call.as_secs_f64(),
            r.drain.as_secs_f64(),
            r.probes_failed,
            r.probes,
            if r.exceeded.is_empty() {
                "ok".to_string()
            } else {
                format!("**EXCEEDED**: {}", r.exceeded.join("; "))
            }
        );
    }
    t
}

/// Issue 22's hostile sequences, at `scale` of the reviewer's sizes.
fn sequences(scale: f64, flags: &DeployFlags, timeout: Duration) -> Vec<Sequence> {
    use requests as r;
    let s = scale;
    let bytes = move |b: f64| (b * s) as u64;
    let slots = flags.slots;
    let max_message = flags.max_message;
    let memory_limit = flags.memory_limit;
    let longer = move |d: Duration| d.mul_f64(s.min(1.0)).max(Duration::from_secs(1));
    let mut v: Vec<Sequence> = Vec::new();
    let big = move || r::encode(&r::decide_of_size(bytes(110.7 * 1_048_576.0)));
    v.push(Sequence {
        name: "a1",
        what: "6 × 110.7 MiB DecideJob one after another, client deadlines 0.5 to 5 s".into(),
        build: Box::new(move || {
            let body = big();
            Ok(Play::Serial(
                DECIDE_JOB,
                [500, 1000, 1500, 2000, 3000, 5000]
                    .iter()
                    .map(|ms| (body.clone(), Some(Duration::from_millis(*ms))))
                    .collect(),
            ))
        }),
    });
    v.push(Sequence {
        name: "a2",
        what: "6 × 110.7 MiB DecideJob one after another, the server's timeout".into(),
        build: Box::new(move || Ok(Play::Serial(DECIDE_JOB, vec![(big(), None); 6]))),
    });
    v.push(Sequence {
        name: "b1",
        what: "the reviewer's patterns (`a(?s:.){200}b`, `a[ac]{3000}b`, 20 rules; 0.4 and 1.2 MiB; field and annotation) × 5".into(),
        build: Box::new(move || {
            let mut bodies = Vec::new();
            for _ in 0..5 {
                for pods in [50, 150] {
                    for annotation in [false, true] {
                        bodies.push((r::encode(&r::reviewer_patterns(r::scaled(pods, s.max(0.1)), annotation)), None));
                    }
                }
            }
            Ok(Play::Serial(DECIDE_JOB, bodies))
        }),
    });
    v.push(Sequence {
        name: "b2",
        what: "20 rules over failed pods' 4 KiB messages just inside the 512 MiB scan budget (26 MiB) × 4".into(),
        build: Box::new(move || Ok(Play::Serial(DECIDE_JOB, vec![(r::encode(&r::patterns_at_budget(s)), None); 4]))),
    });
    v.push(Sequence {
        name: "b3",
        what: "one rule over 120 MiB of 64 KiB pod messages × 2".into(),
        build: Box::new(move || {
            let size = bytes(120.0 * 1_048_576.0).min(max_message.saturating_sub(4 << 20));
            Ok(Play::Serial(
                DECIDE_JOB,
                vec![(r::encode(&r::one_rule_big_messages(size)), None); 2],
            ))
        }),
    });
    v.push(Sequence {
        name: "c1",
        what: format!("{slots} callers pinning every slot with b2's call, each resent at once, for the timeout + 5 s"),
        build: Box::new(move || {
            Ok(Play::Loop {
                method: DECIDE_JOB,
                body: r::encode(&r::patterns_at_budget(s)),
                workers: slots,
                deadline: None,
                run_for: longer(timeout + Duration::from_secs(5)),
            })
        }),
    });
    v.push(Sequence {
        name: "c2",
        what: format!(
            "{slots} callers sending b2's call and leaving it at 2 s, again and again, for 20 s"
        ),
        build: Box::new(move || {
            Ok(Play::Loop {
                method: DECIDE_JOB,
                body: r::encode(&r::patterns_at_budget(s)),
                workers: slots,
                deadline: Some(Duration::from_secs(2)),
                run_for: longer(Duration::from_secs(20)),
            })
        }),
    });
    v.push(Sequence {
        name: "d1",
        what: "the reviewer's DecideJobSet: 33 patterns, or 16 × `a(?s:.){200}b`, over 4 KiB messages × 10".into(),
        build: Box::new(move || {
            let mut bodies = Vec::new();
            for i in 0..10 {
                bodies.push((r::jobset_reviewer(i % 2 == 0)?, None));
            }
            Ok(Play::Serial(DECIDE_JOB_SET, bodies))
        }),
    });
    v.push(Sequence {
        name: "d2",
        what:
            "DecideJobSet at the caps: 16 patterns, 32 KiB condition messages, 64 MiB of Jobs × 3"
                .into(),
        build: Box::new(move || {
            Ok(Play::Serial(
                DECIDE_JOB_SET,
                vec![(r::jobset_at_caps(bytes(64.0 * 1_048_576.0))?, None); 3],
            ))
        }),
    });
    v.push(Sequence {
        name: "d3",
        what: "d2's call with a client deadline of 0.3 s × 3".into(),
        build: Box::new(move || {
            let body = r::jobset_at_caps(bytes(64.0 * 1_048_576.0))?;
            Ok(Play::Serial(
                DECIDE_JOB_SET,
                vec![(body, Some(Duration::from_millis(300))); 3],
            ))
        }),
    });
    v.push(Sequence {
        name: "e1",
        what: "ValidateJob of 3,000,000 containers with one name (14.3 MiB) × 3".into(),
        build: Box::new(move || {
            let body = r::validate_duplicate_containers(r::scaled(3_000_000, s))?;
            Ok(Play::Serial(VALIDATE_JOB, vec![(body, None); 3]))
        }),
    });
    v.push(Sequence {
        name: "f1",
        what: "10,000 small calls on the reactor (8 pods, no document) from 16 callers, each with its own FailureTarget reason".into(),
        build: Box::new(move || {
            let n = r::scaled(10_000, s);
            let bodies = (0..n).map(|i| r::encode(&r::small_with_reason(&format!("HostileReason{i}")))).collect();
            Ok(Play::Many(DECIDE_JOB, bodies, 16))
        }),
    });
    v.push(Sequence {
        name: "f2",
        what: "small calls with a slow document (4 × `a[ac]{3000}b` over a 4 KiB message), 4 callers for 10 s".into(),
        build: Box::new(move || {
            Ok(Play::Loop {
                method: DECIDE_JOB,
                body: r::encode(&r::small_with_slow_document()),
                workers: 4,
                deadline: None,
                run_for: longer(Duration::from_secs(10)),
            })
        }),
    });
    v.push(Sequence {
        name: "g1",
        what: "a 32,000-byte failure-policy document of `[` (quadratic YAML nesting) × 20".into(),
        build: Box::new(move || {
            Ok(Play::Serial(
                DECIDE_JOB,
                vec![(r::encode(&r::nested_document(32_000)), None); 20],
            ))
        }),
    });
    v.push(Sequence {
        name: "e2",
        what: "DecideJob whose Job template holds 2-byte empty containers (a decoded Container each), × 2".into(),
        build: Box::new(move || {
            // Sized so the decoded list is about the memory limit: past the bound if decoded,
            // short of the watchdog (twice the limit). Last, since it may end the server.
            let each = std::mem::size_of::<job_decider_api::pb::Container>() as u64;
            let n = (memory_limit / each.max(1)).min(max_message / 3);
            let n = r::scaled(usize::try_from(n).unwrap_or(usize::MAX), s);
            Ok(Play::Serial(DECIDE_JOB, vec![(r::decide_empty_containers(n)?, None); 2]))
        }),
    });
    v
}
