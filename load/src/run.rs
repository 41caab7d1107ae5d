//! `job-decider-load run`: the whole suite in one go. The server runs pinned to
//! one core and ghz to another; the server's CPU per call comes from
//! `/proc/<pid>/stat`; upstream's syncJob is timed on the same core and the same
//! files; [`report`](crate::report) renders the table, goals and chart.

use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::Error;
use crate::client::Latencies;
use crate::ghz::{Call, Ghz, Load, Report};
use crate::proc_stat;
use crate::report::{self, CaseResult, CheckResult, Machine, Results, Upstream};
use crate::requests::{Case, Encoding, Mode, SIZES};

/// The run's settings; the defaults are `make load`'s.
#[derive(clap::Args, Debug, Clone)]
pub struct Options {
    /// The server binary.
    #[arg(long, default_value = "target/release/job-decider")]
    pub server: PathBuf,
    /// Extra arguments for `serve` (repeat the flag for each).
    #[arg(long = "server-arg", allow_hyphen_values = true)]
    pub server_args: Vec<String>,
    /// The conformance harness (its `loadtime` command times upstream's syncJob).
    #[arg(long, default_value = "conformance/bin/conformance")]
    pub upstream: PathBuf,
    /// The ghz binary.
    #[arg(long, default_value = "bin/ghz")]
    pub ghz: PathBuf,
    /// The checked-in ghz configs.
    #[arg(long, default_value = "load/ghz")]
    pub configs: PathBuf,
    /// The request files (`job-decider-load gen`).
    #[arg(long, default_value = "load/requests")]
    pub requests: PathBuf,
    /// Pods per Job, comma-separated.
    #[arg(long, value_delimiter = ',', default_values_t = SIZES)]
    pub sizes: Vec<usize>,
    /// The length each measurement aims at, in seconds.
    #[arg(long, default_value_t = 5.0)]
    pub seconds: f64,
    /// Fewest calls in a measurement.
    #[arg(long, default_value_t = 5)]
    pub min_calls: u64,
    /// Most calls in a measurement.
    #[arg(long, default_value_t = 50_000)]
    pub max_calls: u64,
    /// The steady rate for Check and the 10-pod DecideJobs (0 skips it).
    #[arg(long, default_value_t = 1000)]
    pub steady_rps: u32,
    /// Where results.md and chart.svg go.
    #[arg(long, default_value = "docs/load")]
    pub out: PathBuf,
    /// Where ghz's reports, the server's log and results.json go.
    #[arg(long, default_value = "target/load")]
    pub raw: PathBuf,
    /// A page (docs/performance.md) whose text between the load markers is replaced by the results.
    #[arg(long)]
    pub readme: Option<PathBuf>,
    /// The command to name as the one that made the figures.
    #[arg(long, default_value = "make load")]
    pub command: String,
    /// Run unpinned even where taskset and two cores are available.
    #[arg(long)]
    pub no_pin: bool,
}

/// The server process; killed when dropped, so an error path leaves nothing behind.
struct Server {
    child: Child,
    addr: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        // The child is ours alone (started by this run), so killing it by its handle is safe.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Whether `taskset -c <cpu>` works here (the tool exists and the core is ours).
pub(crate) fn can_pin(cpu: &str) -> bool {
    Command::new("taskset")
        .args(["-c", cpu, "true"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// A command, behind `taskset -c cpus` when pinning.
pub(crate) fn pinned(program: &Path, pin: Option<&str>) -> Command {
    match pin {
        Some(cpus) => {
            let mut c = Command::new("taskset");
            c.arg("-c").arg(cpus).arg(program);
            c
        }
        None => Command::new(program),
    }
}

pub(crate) fn free_port() -> Result<u16, Error> {
    let listener =
        TcpListener::bind("127.0.0.1:0").map_err(|e| Error::tool("loopback", e.to_string()))?;
    listener
        .local_addr()
        .map(|a| a.port())
        .map_err(|e| Error::tool("loopback", e.to_string()))
}

fn start_server(o: &Options, pin: Option<&str>) -> Result<Server, Error> {
    let port = free_port()?;
    let addr = format!("127.0.0.1:{port}");
    let log_path = o.raw.join("server.log");
    let log = std::fs::File::create(&log_path).map_err(|e| Error::io(&log_path, e))?;
    let log2 = log.try_clone().map_err(|e| Error::io(&log_path, e))?;
    let child = pinned(&o.server, pin)
        .args(["serve", "--addr", &addr, "--metrics-addr", "127.0.0.1:0"])
        // ghz takes more than the default 10 s to send a 100,000-pod request on one core.
        .args(["--body-read-timeout", "120s"])
        .args(&o.server_args)
        .stdout(log)
        .stderr(log2)
        .spawn()
        .map_err(|e| Error::tool("server", format!("{}: {e}", o.server.display())))?;
    let mut server = Server { child, addr };
    let deadline = Instant::now() + Duration::from_secs(30);
    while TcpStream::connect(&server.addr).is_err() {
        if let Ok(Some(status)) = server.child.try_wait() {
            return Err(Error::tool(
                "server",
                format!("exited with {status}; see {}", log_path.display()),
            ));
        }
        if Instant::now() > deadline {
            return Err(Error::tool("server", "not listening after 30 s"));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Ok(server)
}

/// One ghz run with the server's CPU over it.
struct Measured {
    report: Report,
    /// Server CPU per call.
    cpu_per_call: Duration,
}

struct Runner<'a> {
    o: &'a Options,
    ghz: Ghz,
    server_pid: u32,
    ticks_per_second: u64,
}

impl Runner<'_> {
    fn measure(&self, name: &str, call: &Call, load: Load) -> Result<Measured, Error> {
        let raw = self.o.raw.join(format!("{name}.json"));
        let before = proc_stat::cpu_ticks(self.server_pid)?;
        let report = self.ghz.run(call, &load, &raw)?;
        let after = proc_stat::cpu_ticks(self.server_pid)?;
        report.check(name, load.total)?;
        let cpu = proc_stat::ticks_to_duration(after.saturating_sub(before), self.ticks_per_second);
        let cpu_per_call = cpu / u32::try_from(report.count.max(1)).unwrap_or(u32::MAX);
        eprintln!(
            "  {name}: {} calls, {:.0} calls/s, p50 {}, server CPU {} a call",
            report.count,
            report.rps,
            report::fmt_duration(report.percentile(50).unwrap_or_default()),
            report::fmt_duration(cpu_per_call)
        );
        Ok(Measured {
            report,
            cpu_per_call,
        })
    }

    /// The pre-encoded client (`client`), pinned like ghz, with the server's CPU over it.
    fn pre_encoded(
        &self,
        name: &str,
        file: &Path,
        calls: u64,
    ) -> Result<(Latencies, Duration), Error> {
        let exe = std::env::current_exe().map_err(|e| Error::tool("client", e.to_string()))?;
        let before = proc_stat::cpu_ticks(self.server_pid)?;
        let out = pinned(&exe, self.ghz.pin.as_deref())
            .arg("client")
            .arg("--addr")
            .arg(&self.ghz.host)
            .arg("--file")
            .arg(file)
            .arg("--calls")
            .arg(calls.to_string())
            .stderr(Stdio::inherit())
            .output()
            .map_err(|e| Error::tool("client", e.to_string()))?;
        let after = proc_stat::cpu_ticks(self.server_pid)?;
        if !out.status.success() {
            return Err(Error::tool("client", format!("{name}: {}", out.status)));
        }
        let l: Latencies = serde_json::from_slice(&out.stdout)
            .map_err(|e| Error::tool("client", format!("unreadable output: {e}")))?;
        let cpu = proc_stat::ticks_to_duration(after.saturating_sub(before), self.ticks_per_second);
        let cpu_per_call = cpu / u32::try_from(l.calls.max(1)).unwrap_or(u32::MAX);
        eprintln!(
            "  {name}-pre-encoded: {} calls, p50 {}, server CPU {} a call",
            l.calls,
            report::fmt_duration(Duration::from_nanos(l.p50_ns)),
            report::fmt_duration(cpu_per_call)
        );
        Ok((l, cpu_per_call))
    }

    /// One request file: the round trip and the server's CPU one call at a time
    /// (pre-encoded client), ghz one at a time, then ghz saturating (small files).
    fn decide(&self, name: &str, file: &Path, saturate: u32) -> Result<DecideRun, Error> {
        let (probe, _) = self.pre_encoded(&format!("{name}-probe"), file, 2)?;
        let wall = Duration::from_nanos(probe.total_ns / probe.calls.max(1));
        let n = self.calls_for(self.o.seconds, wall);
        let (one, cpu_per_call) = self.pre_encoded(name, file, n)?;
        let call = Call::Decide(file.to_path_buf());
        let wall = Duration::from_nanos(one.total_ns / one.calls.max(1));
        // ghz re-encodes the request every call (seconds at 100,000 pods): a few calls
        // to see it through ghz, more where that is cheap.
        let ghz_calls = if saturate <= 1 {
            3
        } else {
            self.calls_for(self.o.seconds / 2.0, wall * 3)
        };
        let ghz_one = self.measure(
            &format!("{name}-ghz-c1"),
            &call,
            Load {
                concurrency: 1,
                connections: 1,
                total: ghz_calls,
                rps: None,
                max_duration: Duration::from_secs(300),
            },
        )?;
        let saturated = if saturate > 1 {
            let n = self.calls_for(self.o.seconds, ghz_one.report.wall_per_call());
            Some(self.measure(
                &format!("{name}-c{saturate}"),
                &call,
                Load {
                    concurrency: saturate,
                    connections: saturate.min(4),
                    total: n,
                    rps: None,
                    max_duration: self.bound(n, ghz_one.report.wall_per_call()),
                },
            )?)
        } else {
            None
        };
        Ok(DecideRun {
            one,
            cpu_per_call,
            ghz_one,
            saturated,
        })
    }

    fn calls_for(&self, seconds: f64, per_call: Duration) -> u64 {
        let n = seconds / per_call.as_secs_f64().max(1e-7);
        (n as u64).clamp(self.o.min_calls, self.o.max_calls)
    }

    fn bound(&self, calls: u64, per_call: Duration) -> Duration {
        // Generous: the bound only stops a run gone wrong (ghz's cut-off calls then fail it).
        Duration::from_secs_f64(
            10.0 * self.o.seconds + 30.0 + 3.0 * calls as f64 * per_call.as_secs_f64(),
        )
    }

    /// Latency one call at a time, then (for small requests) CPU per call at saturation.
    fn call(
        &self,
        name: &str,
        call: &Call,
        saturate: u32,
    ) -> Result<(Measured, Option<Measured>), Error> {
        let one = |total| Load {
            concurrency: 1,
            connections: 1,
            total,
            rps: None,
            max_duration: Duration::from_secs(120),
        };
        // A few calls to warm up and to size the runs.
        let probe = self.measure(&format!("{name}-probe"), call, one(3))?;
        // The run's wall time per call, the client's share included: what sizes a run's length.
        let per_call = probe.report.wall_per_call();
        let n = self.calls_for(self.o.seconds, per_call);
        let latency = self.measure(
            &format!("{name}-c1"),
            call,
            Load {
                max_duration: self.bound(n, per_call),
                ..one(n)
            },
        )?;
        if saturate <= 1 {
            return Ok((latency, None));
        }
        // Sized as if as fast as one at a time: with one client core ghz, not the
        // server, is usually the limit (the table shows how busy the server's core was).
        let per_call_saturated = latency.report.wall_per_call();
        let n = self.calls_for(self.o.seconds, per_call_saturated);
        let saturated = self.measure(
            &format!("{name}-c{saturate}"),
            call,
            Load {
                concurrency: saturate,
                connections: saturate.min(4),
                total: n,
                rps: None,
                max_duration: self.bound(n, per_call_saturated),
            },
        )?;
        Ok((latency, Some(saturated)))
    }

    fn steady(&self, name: &str, call: &Call) -> Result<Option<Duration>, Error> {
        if self.o.steady_rps == 0 {
            return Ok(None);
        }
        let total = ((self.o.seconds * f64::from(self.o.steady_rps)) as u64).max(self.o.min_calls);
        let m = self.measure(
            &format!("{name}-rps{}", self.o.steady_rps),
            call,
            Load {
                concurrency: 8,
                connections: 1,
                total,
                rps: Some(self.o.steady_rps),
                max_duration: Duration::from_secs_f64(3.0 * self.o.seconds + 30.0),
            },
        )?;
        Ok(Some(m.cpu_per_call))
    }
}

/// What [`Runner::decide`] measured.
struct DecideRun {
    one: Latencies,
    cpu_per_call: Duration,
    ghz_one: Measured,
    saturated: Option<Measured>,
}

/// Workers for the saturation run: enough to keep one server core busy.
fn saturation_concurrency(pods: usize) -> u32 {
    match pods {
        0..=100 => 16,
        101..=2_000 => 4,
        // A call of 10,000 pods or more keeps the core busy on its own.
        _ => 1,
    }
}

#[derive(Serialize, Deserialize)]
struct UpstreamLine {
    median_ns: u64,
    reps: u32,
    #[serde(default)]
    sync_error: Option<String>,
}

fn time_upstream(
    o: &Options,
    pin: Option<&str>,
    file: &Path,
    pods: usize,
) -> Result<Upstream, Error> {
    let reps = (100_000 / pods.max(1)).clamp(3, 100);
    let max_time = (o.seconds * 6.0).max(0.5);
    let out = pinned(&o.upstream, pin)
        .arg("loadtime")
        .arg("--reps")
        .arg(reps.to_string())
        .arg("--max-time")
        .arg(format!("{max_time}s"))
        .arg(file)
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| Error::tool("upstream", format!("{}: {e}", o.upstream.display())))?;
    if !out.status.success() {
        return Err(Error::tool(
            "upstream",
            format!("{} on {}", out.status, file.display()),
        ));
    }
    let line: UpstreamLine = serde_json::from_slice(&out.stdout)
        .map_err(|e| Error::tool("upstream", format!("unreadable output: {e}")))?;
    if let Some(e) = line.sync_error.filter(|e| !e.is_empty()) {
        eprintln!(
            "  note: upstream's syncJob returned an error on {}: {e}",
            file.display()
        );
    }
    Ok(Upstream {
        sync: Duration::from_nanos(line.median_ns),
        reps: line.reps,
    })
}

fn machine(pinned: bool) -> Machine {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = cpuinfo
        .lines()
        .find_map(|l| {
            l.strip_prefix("model name")
                .and_then(|r| r.split_once(':'))
                .map(|(_, m)| m.trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let commit = Command::new("git")
        .args(["rev-parse", "--short", "HEAD"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default();
    Machine {
        cpu: model,
        cores,
        pinned,
        commit,
    }
}

/// Runs the whole suite and writes the results.
pub fn run(o: &Options) -> Result<(), Error> {
    let started = Instant::now();
    std::fs::create_dir_all(&o.raw).map_err(|e| Error::io(&o.raw, e))?;
    let pin = !o.no_pin && can_pin("0") && can_pin("1");
    let (server_pin, client_pin) = if pin {
        (Some("0"), Some("1"))
    } else {
        (None, None)
    };
    if pin {
        eprintln!("pinned: server and upstream's sync on core 0, ghz on core 1");
    } else {
        eprintln!(
            "NOT pinned (taskset missing, fewer than two usable cores, or --no-pin): figures are noisier"
        );
    }
    let server = start_server(o, server_pin)?;
    let runner = Runner {
        o,
        ghz: Ghz {
            bin: o.ghz.clone(),
            configs: o.configs.clone(),
            pin: client_pin.map(Into::into),
            host: server.addr.clone(),
        },
        server_pid: server.child.id(),
        ticks_per_second: proc_stat::ticks_per_second()?,
    };

    eprintln!("== health Check (the floor)");
    let (check_c1, check_sat) = runner.call("check", &Call::Check, saturation_concurrency(0))?;
    let check = CheckResult {
        p50: check_c1.report.percentile(50).unwrap_or_default(),
        saturated: check_sat.as_ref().map(|m| (m.report.rps, m.cpu_per_call)),
        steady: runner.steady("check", &Call::Check)?,
    };

    let mut cases = Vec::new();
    for case in Case::all(&o.sizes) {
        let file = o.requests.join(case.file_name());
        let bytes = std::fs::metadata(&file)
            .map_err(|e| Error::io(&file, e))?
            .len();
        let name = case.file_name().trim_end_matches(".bin").to_string();
        eprintln!("== DecideJob {name} ({bytes} bytes)");
        let saturate = saturation_concurrency(case.pods);
        let run = runner.decide(&name, &file, saturate)?;
        let call = Call::Decide(file);
        let steady = if case.pods <= 10 {
            runner.steady(&name, &call)?
        } else {
            None
        };
        cases.push(CaseResult {
            case,
            bytes,
            p50: Duration::from_nanos(run.one.p50_ns),
            p99: Duration::from_nanos(run.one.p99_ns),
            calls: run.one.calls,
            rps: run.one.calls as f64 / (run.one.total_ns.max(1) as f64 / 1e9),
            cpu_per_call: run.cpu_per_call,
            ghz_p50: run.ghz_one.report.percentile(50).unwrap_or_default(),
            saturated: run
                .saturated
                .as_ref()
                .map(|m| (saturate, m.report.rps, m.cpu_per_call)),
            steady_cpu_per_call: steady,
        });
    }
    drop(server);

    eprintln!(
        "== upstream's syncJob in process, same files{}",
        if pin { ", core 0" } else { "" }
    );
    let mut upstream = Vec::new();
    for &pods in &o.sizes {
        for mode in Mode::ALL {
            // Upstream reads Kubernetes pods; the lean file is the same snapshot.
            let case = Case {
                mode,
                pods,
                encoding: Encoding::Pods,
            };
            let u = time_upstream(o, server_pin, &o.requests.join(case.file_name()), pods)?;
            eprintln!(
                "  {mode} {pods}: {} (median of {})",
                report::fmt_duration(u.sync),
                u.reps
            );
            upstream.push((mode, pods, u));
        }
    }

    let results = Results {
        machine: machine(pin),
        command: o.command.clone(),
        check,
        cases,
        upstream,
        steady_rps: o.steady_rps,
    };
    let json_path = o.raw.join("results.json");
    let json =
        serde_json::to_vec_pretty(&results).map_err(|e| Error::tool("results", e.to_string()))?;
    std::fs::write(&json_path, json).map_err(|e| Error::io(&json_path, e))?;

    std::fs::create_dir_all(&o.out).map_err(|e| Error::io(&o.out, e))?;
    let table = report::markdown(&results, "chart.svg");
    let md_path = o.out.join("results.md");
    std::fs::write(&md_path, &table).map_err(|e| Error::io(&md_path, e))?;
    let svg_path = o.out.join("chart.svg");
    std::fs::write(&svg_path, report::svg(&results)).map_err(|e| Error::io(&svg_path, e))?;
    if let Some(readme) = &o.readme {
        let text = std::fs::read_to_string(readme).map_err(|e| Error::io(readme, e))?;
        // The chart's link is relative to the page it is spliced into (docs/performance.md).
        let page_dir = readme.parent().unwrap_or(Path::new(""));
        let chart = svg_path
            .strip_prefix(page_dir)
            .unwrap_or(&svg_path)
            .to_string_lossy()
            .into_owned();
        let spliced =
            report::splice(&text, &report::markdown(&results, &chart)).ok_or_else(|| {
                Error::tool(
                    "readme",
                    format!(
                        "{}: no {} ... {} markers",
                        readme.display(),
                        report::BEGIN,
                        report::END
                    ),
                )
            })?;
        std::fs::write(readme, spliced).map_err(|e| Error::io(readme, e))?;
    }
    println!("{table}");
    eprintln!(
        "wrote {}, {}, {} ({:.0} s)",
        md_path.display(),
        svg_path.display(),
        json_path.display(),
        started.elapsed().as_secs_f64()
    );
    Ok(())
}
