//! Decides in process, with no server, on a Job and its pods read from files as
//! `kubectl get job X -o json` and `kubectl get pods -l … -o json` print them:
//!
//! `cargo run -p job-decider-k8s --example decide_files -- job.json pods.json [NOW]`
//!
//! NOW is an RFC 3339 time (the current time if left out). Prints the plan as
//! proto3 JSON, as `job-decider decide -o json` does; on a bad object, prints
//! each violation with its field path and exits with status 1.

use std::process::ExitCode;

use job_decider_core::time::Time;
use job_decider_k8s::{Inputs, Job, Pod, decide, now};
use k8s_openapi::jiff::Timestamp;

/// A PodList as kubectl prints it (its `kind` is `List`, which k8s-openapi's `List` refuses).
#[derive(serde::Deserialize)]
struct PodList {
    items: Vec<Pod>,
}

fn read<T: serde::de::DeserializeOwned>(path: &str) -> Result<T, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"))?;
    serde_json::from_str(&text).map_err(|e| format!("{path}: {e}"))
}

fn time(text: &str) -> Result<Time, String> {
    let ts: Timestamp = text.parse().map_err(|e| format!("NOW {text:?}: {e}"))?;
    let nanos = i64::try_from(ts.as_nanosecond())
        .map_err(|_| format!("NOW {text:?}: not between the years 1678 and 2262"))?;
    Ok(Time::from_unix_nanos(nanos))
}

/// Decides on the files `args` name; the plan as JSON, or the message to print.
pub fn run(args: &[String]) -> Result<String, String> {
    let (job, pods, at) = match args {
        [job, pods] => (job, pods, None),
        [job, pods, at] => (job, pods, Some(at)),
        _ => return Err("usage: decide_files JOB.json PODS.json [NOW]".to_string()),
    };
    let job: Job = read(job)?;
    let pods: PodList = read(pods)?;
    let now = match at {
        Some(text) => time(text)?,
        None => now().map_err(|e| e.to_string())?,
    };
    match decide(&job, &pods.items, &Inputs::at(now)) {
        Ok(decision) => {
            serde_json::to_string_pretty(&decision.response()).map_err(|e| e.to_string())
        }
        Err(err) => {
            let mut lines = vec![err.to_string()];
            lines.extend(err.violations().iter().map(|v| format!("  {v}")));
            Err(lines.join("\n"))
        }
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match run(&args) {
        Ok(plan) => {
            println!("{plan}");
            ExitCode::SUCCESS
        }
        Err(message) => {
            eprintln!("{message}");
            ExitCode::FAILURE
        }
    }
}
