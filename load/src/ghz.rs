//! Running ghz and reading its JSON report.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde::Deserialize;

use crate::Error;

/// The calls the suite makes; each has a checked-in config under `load/ghz/`.
#[derive(Clone, Debug)]
pub enum Call {
    /// `grpc.health.v1.Health/Check` (`check.json`): the floor a call costs.
    Check,
    /// `jobdecider.v1.JobDecider/DecideJob` (`decide.json`) with a binary request file.
    Decide(PathBuf),
}

/// How hard to call.
#[derive(Clone, Copy, Debug)]
pub struct Load {
    /// Workers calling at once.
    pub concurrency: u32,
    /// Connections they share.
    pub connections: u32,
    /// Calls in all.
    pub total: u64,
    /// A steady rate (calls a second), or as fast as the workers go.
    pub rps: Option<u32>,
    /// A bound on the run's length: past it ghz is killed and the run fails.
    pub max_duration: Duration,
}

/// Where and how ghz runs.
#[derive(Clone, Debug)]
pub struct Ghz {
    /// The ghz binary.
    pub bin: PathBuf,
    /// The directory of the checked-in configs.
    pub configs: PathBuf,
    /// The core list for `taskset -c`, when pinning.
    pub pin: Option<String>,
    /// The server's address.
    pub host: String,
}

/// One entry of ghz's latency distribution.
#[derive(Clone, Debug, Deserialize)]
pub struct Percentile {
    /// The percentile (10, 25, 50, 75, 90, 95, 99).
    pub percentage: u32,
    /// Its latency in nanoseconds.
    pub latency: u64,
}

/// The parts of ghz's JSON report the suite reads (durations in nanoseconds).
#[derive(Clone, Debug, Deserialize)]
pub struct Report {
    /// Calls made.
    pub count: u64,
    /// The run's length.
    pub total: u64,
    /// Calls a second over the run.
    pub rps: f64,
    /// Why the run ended ("normal" when every call was made).
    #[serde(rename = "endReason", default)]
    pub end_reason: String,
    /// Errors by message.
    #[serde(rename = "errorDistribution", default)]
    pub errors: Option<BTreeMap<String, u64>>,
    /// Calls by gRPC status code.
    #[serde(rename = "statusCodeDistribution", default)]
    pub status_codes: Option<BTreeMap<String, u64>>,
    /// Latency percentiles (absent when no call succeeded).
    #[serde(rename = "latencyDistribution", default)]
    pub latencies: Option<Vec<Percentile>>,
}

impl Report {
    /// Parses ghz's `-O json` output.
    pub fn parse(json: &[u8]) -> Result<Report, Error> {
        serde_json::from_slice(json)
            .map_err(|e| Error::tool("ghz", format!("unreadable JSON report: {e}")))
    }

    /// The latency at `percentage`, if ghz reported it.
    pub fn percentile(&self, percentage: u32) -> Option<Duration> {
        self.latencies
            .as_ref()?
            .iter()
            .find(|p| p.percentage == percentage)
            .map(|p| Duration::from_nanos(p.latency))
    }

    /// The run's length over its calls.
    pub fn wall_per_call(&self) -> Duration {
        Duration::from_nanos(self.total / self.count.max(1))
    }

    /// Fails unless all `expected` calls were made and every one answered OK.
    pub fn check(&self, what: &str, expected: u64) -> Result<(), Error> {
        let codes = self.status_codes.clone().unwrap_or_default();
        let ok = codes.get("OK").copied().unwrap_or(0);
        let errors = self.errors.clone().unwrap_or_default();
        if ok == expected && self.count == expected && errors.is_empty() {
            return Ok(());
        }
        Err(Error::Failed {
            what: what.to_string(),
            detail: format!(
                "{ok} of {expected} calls OK (made {}, ended: {}); status codes {codes:?}; errors {errors:?}",
                self.count, self.end_reason
            ),
        })
    }
}

impl Ghz {
    /// The command line for one run (without the output format).
    pub fn command(&self, call: &Call, load: &Load) -> Command {
        let mut cmd = match &self.pin {
            Some(cpus) => {
                let mut c = Command::new("taskset");
                c.arg("-c").arg(cpus).arg(&self.bin);
                // One core: one OS thread for Go's scheduler.
                c.arg("--cpus").arg("1");
                c
            }
            None => Command::new(&self.bin),
        };
        match call {
            Call::Check => {
                cmd.arg("--config").arg(self.configs.join("check.json"));
            }
            Call::Decide(file) => {
                // ghz 0.121 reads `--binary --data-file` as JSON; `--binary-file` is its binary input.
                cmd.arg("--config")
                    .arg(self.configs.join("decide.json"))
                    .arg("--binary-file")
                    .arg(file);
            }
        }
        cmd.arg("-c")
            .arg(load.concurrency.to_string())
            .arg("--connections")
            .arg(load.connections.to_string())
            .arg("-n")
            .arg(load.total.to_string());
        if let Some(rps) = load.rps {
            cmd.arg("--rps").arg(rps.to_string());
        }
        cmd.arg(&self.host);
        cmd
    }

    /// Runs ghz once, writing its JSON report to `raw` (kept for a look afterwards).
    /// ghz is killed if it runs past the load's bound: its own `--max-duration`
    /// replaces `-n` instead of bounding it.
    pub fn run(&self, call: &Call, load: &Load, raw: &Path) -> Result<Report, Error> {
        let stderr_path = raw.with_extension("stderr");
        let stderr = std::fs::File::create(&stderr_path).map_err(|e| Error::io(&stderr_path, e))?;
        let mut cmd = self.command(call, load);
        cmd.arg("-O")
            .arg("json")
            .arg("-o")
            .arg(raw)
            .stdout(Stdio::null())
            .stderr(stderr);
        let mut child = cmd
            .spawn()
            .map_err(|e| Error::tool("ghz", format!("{}: {e}", self.bin.display())))?;
        let deadline = Instant::now() + load.max_duration;
        let status = loop {
            match child.try_wait() {
                Ok(Some(status)) => break status,
                Ok(None) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(20));
                }
                Ok(None) => {
                    // Our own child, by its handle.
                    let _ = child.kill();
                    let _ = child.wait();
                    return Err(Error::tool(
                        "ghz",
                        format!("still running after {:?}; killed", load.max_duration),
                    ));
                }
                Err(e) => return Err(Error::tool("ghz", e.to_string())),
            }
        };
        if !status.success() {
            let text = std::fs::read_to_string(&stderr_path).unwrap_or_default();
            let head: String = text.chars().take(500).collect();
            return Err(Error::tool("ghz", format!("{status}: {head}")));
        }
        let json = std::fs::read(raw).map_err(|e| Error::io(raw, e))?;
        Report::parse(&json)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const OK: &str = r#"{"date":"2026-11-26T09:12:38Z","endReason":"normal","count":5,"total":17768986,
        "average":3381203,"rps":281.39,"errorDistribution":{},"statusCodeDistribution":{"OK":5},
        "latencyDistribution":[{"percentage":50,"latency":199208},{"percentage":99,"latency":16220004}],
        "details":[]}"#;

    #[test]
    fn a_clean_report_gives_its_percentiles() {
        let r = Report::parse(OK.as_bytes()).expect("parses");
        assert_eq!(r.percentile(50), Some(Duration::from_nanos(199_208)));
        assert_eq!(r.percentile(75), None);
        assert!(r.check("check", 5).is_ok());
        // Fewer calls than asked for (cut off by --max-duration) fail.
        assert!(r.check("check", 6).is_err());
    }

    #[test]
    fn any_call_not_ok_fails_the_run() {
        let json = r#"{"count":3,"total":1,"rps":1.0,"endReason":"normal",
            "errorDistribution":{"rpc error: code = Unavailable desc = overloaded":1},
            "statusCodeDistribution":{"OK":2,"Unavailable":1},"latencyDistribution":null}"#;
        let r = Report::parse(json.as_bytes()).expect("parses");
        let err = r
            .check("decide", 3)
            .expect_err("one call failed")
            .to_string();
        assert!(err.contains("Unavailable"), "{err}");
        assert_eq!(r.percentile(50), None);
    }

    #[test]
    fn decide_runs_read_the_file_as_binary_and_pin_when_asked() {
        let ghz = Ghz {
            bin: "bin/ghz".into(),
            configs: "load/ghz".into(),
            pin: Some("1".into()),
            host: "127.0.0.1:1".into(),
        };
        let load = Load {
            concurrency: 4,
            connections: 2,
            total: 100,
            rps: Some(1000),
            max_duration: Duration::from_secs(30),
        };
        let cmd = ghz.command(&Call::Decide("x.bin".into()), &load);
        let args: Vec<String> = cmd
            .get_args()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        assert_eq!(cmd.get_program(), "taskset");
        let joined = args.join(" ");
        for part in [
            "-c 1 bin/ghz --cpus 1",
            "--binary-file x.bin",
            "--rps 1000",
            "-n 100",
        ] {
            assert!(joined.contains(part), "{part:?} not in {joined}");
        }
    }
}
