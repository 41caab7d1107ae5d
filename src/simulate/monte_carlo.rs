//! `simulate --runs N`: N lives of the Job under the script, played in parallel
//! (`--jobs`, default every core) and summed up in life order, so the report is
//! the same whatever the thread count; `--replay I` is in `simulate` itself.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use job_decider_api::pb;
use job_decider_sim::monte_carlo::{self, Life, Report, Requests};
use job_decider_sim::{Options, Script};

use super::{SimulateArgs, SimulateOutput, sim_error};
use crate::input::CliError;

/// The most lives one run plays.
pub const MAX_RUNS: u64 = 10_000_000;

/// One Job to play: its name for people, the Job, its options and its pods' requests.
pub struct Subject<'a> {
    /// The name in columns and headers.
    pub name: String,
    /// The Job.
    pub job: pb::Job,
    /// How to play it.
    pub options: &'a Options,
    /// A pod's resource requests, from the manifest's template.
    pub requests: Requests,
}

/// The threads to play on: `--jobs`, else every core.
fn threads(args: &SimulateArgs, runs: u64) -> usize {
    let cores = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
    let want = args.jobs.unwrap_or(cores).max(1);
    usize::try_from(runs).map_or(want, |r| want.min(r.max(1)))
}

/// Lives 1..=runs of `subject`, in life order. Threads take the next life from a
/// shared counter; the first error (in life order) is the answer.
pub fn lives(
    script: &Script,
    script_path: &Path,
    subject: &Subject<'_>,
    pods: &[pb::Pod],
    seed: u64,
    runs: u64,
    threads: usize,
) -> Result<Vec<Life>, CliError> {
    let next = AtomicU64::new(1);
    let play_one = |life: u64| -> Result<Life, CliError> {
        let life_seed = Script::life_seed(seed, life);
        let played = job_decider_sim::play(
            subject.job.clone(),
            pods.to_vec(),
            &script.life(life_seed),
            subject.options,
            &mut super::InProcess,
        )
        .map_err(|e| match sim_error(script_path, e) {
            CliError::BadInput(m) => CliError::BadInput(format!("life {life}: {m}")),
            CliError::Failed(m) => CliError::Failed(format!("life {life}: {m}")),
        })?;
        Ok(Life::of(
            life,
            life_seed,
            &played.timeline,
            &subject.requests,
        ))
    };
    let worker = || {
        let mut out = Vec::new();
        loop {
            let life = next.fetch_add(1, Ordering::Relaxed);
            if life > runs {
                break;
            }
            out.push((life, play_one(life)));
        }
        out
    };
    let mut all: Vec<(u64, Result<Life, CliError>)> = if threads <= 1 {
        worker()
    } else {
        std::thread::scope(|s| {
            let handles: Vec<_> = (0..threads).map(|_| s.spawn(worker)).collect();
            handles
                .into_iter()
                .flat_map(|h| h.join().unwrap_or_default())
                .collect()
        })
    };
    all.sort_by_key(|(life, _)| *life);
    if all.len() as u64 != runs {
        return Err(CliError::Failed(
            "a thread playing lives stopped before its end".to_string(),
        ));
    }
    all.into_iter().map(|(_, life)| life).collect()
}

/// Plays `runs` lives of the Job (and of the --compare Job, the same lives) and
/// renders the report; writes --csv and --html.
pub fn run(
    args: &SimulateArgs,
    script: &Script,
    seed: u64,
    runs: u64,
    left: &Subject<'_>,
    right: Option<&Subject<'_>>,
    pods: &[pb::Pod],
) -> Result<String, CliError> {
    let threads = threads(args, runs);
    let l = lives(script, &args.script, left, pods, seed, runs, threads)?;
    let left_report = Report::of(&left.name, seed, &l);
    let r = match right {
        Some(subject) => {
            let lives = lives(script, &args.script, subject, pods, seed, runs, threads)?;
            let report = Report::of(&subject.name, seed, &lives);
            Some((subject, lives, report))
        }
        None => None,
    };
    if let Some(path) = &args.csv {
        let text = match &r {
            None => monte_carlo::csv(&l, &names(&left.requests, None)),
            Some((subject, lives, _)) => {
                let resources = names(&left.requests, Some(&subject.requests));
                let a = monte_carlo::csv(&l, &resources);
                let b = monte_carlo::csv(lives, &resources);
                // Each row names its Job in a first column.
                let mut out = format!("job,{}\n", monte_carlo::csv_header(&resources));
                for (name, text) in [(&left.name, a), (&subject.name, b)] {
                    for row in text.lines().skip(1) {
                        out.push_str(&format!("{},{row}\n", csv_field(name)));
                    }
                }
                out
            }
        };
        write(path, "--csv", &text)?;
    }
    if let Some(path) = &args.html {
        let page = match &r {
            None => monte_carlo::html(&left_report, &l),
            Some((subject, lives, report)) => monte_carlo::compare_html(
                &left.name,
                (&left_report, &l),
                &subject.name,
                (report, lives),
            ),
        };
        write(path, "--html", &page)?;
    }
    let failed = |e: &dyn std::fmt::Display| CliError::Failed(format!("cannot print: {e}"));
    match (&r, args.output) {
        (None, SimulateOutput::Text) => {
            Ok(job_decider_api::safe_text::escaped(&left_report.text()).into_owned())
        }
        (None, SimulateOutput::Json) => serde_json::to_string_pretty(&left_report)
            .map(|s| s + "\n")
            .map_err(|e| failed(&e)),
        (Some((subject, _, report)), SimulateOutput::Text) => Ok(
            job_decider_api::safe_text::escaped(&monte_carlo::compare_text(
                &left.name,
                &left_report,
                &subject.name,
                report,
            ))
            .into_owned(),
        ),
        (Some((_, _, report)), SimulateOutput::Json) => {
            serde_json::to_string_pretty(&serde_json::json!({
                "left": left_report,
                "right": report,
            }))
            .map(|s| s + "\n")
            .map_err(|e| failed(&e))
        }
    }
}

/// The resources of either Job's requests, in name order.
fn names(left: &Requests, right: Option<&Requests>) -> Vec<String> {
    let mut out: Vec<String> = left.keys().cloned().collect();
    for k in right.into_iter().flat_map(Requests::keys) {
        if !out.contains(k) {
            out.push(k.clone());
        }
    }
    out.sort();
    out
}

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

fn write(path: &Path, flag: &str, text: &str) -> Result<(), CliError> {
    if path.as_os_str() == "-" {
        return Err(CliError::BadInput(format!(
            "{flag} -: standard output carries the report; give {flag} a file name"
        )));
    }
    std::fs::write(path, text)
        .map_err(|e| CliError::Failed(format!("{flag} {}: {e}", path.display())))
}

/// A pod's requests from the template (`spec.template.spec`) as the scheduler counts
/// them: each container's `resources.requests` (its `limits` where a request is not
/// written, as the API server defaults them), the regular containers and sidecars
/// (init containers with `restartPolicy: Always`) added up, and the largest
/// of the other init containers if it is larger (they run one at a time, before).
pub fn requests(spec: &serde_json::Value) -> Requests {
    let of = |c: &serde_json::Value| -> Requests {
        let mut out = Requests::new();
        for key in ["limits", "requests"] {
            let Some(map) = c
                .pointer(&format!("/resources/{key}"))
                .and_then(|v| v.as_object())
            else {
                continue;
            };
            for (name, q) in map {
                let text = match q {
                    serde_json::Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                if let Some(v) = monte_carlo::quantity(&text) {
                    out.insert(name.clone(), v);
                }
            }
        }
        out
    };
    let list = |key: &str| {
        spec.get(key)
            .and_then(serde_json::Value::as_array)
            .cloned()
            .unwrap_or_default()
    };
    let mut total = Requests::new();
    let mut init_most = Requests::new();
    let sidecar = |c: &serde_json::Value| {
        c.get("restartPolicy").and_then(serde_json::Value::as_str) == Some("Always")
    };
    for c in list("containers")
        .iter()
        .chain(list("initContainers").iter().filter(|c| sidecar(c)))
    {
        for (name, v) in of(c) {
            *total.entry(name).or_default() += v;
        }
    }
    for c in list("initContainers").iter().filter(|c| !sidecar(c)) {
        for (name, v) in of(c) {
            let most = init_most.entry(name).or_default();
            *most = most.max(v);
        }
    }
    for (name, v) in init_most {
        let t = total.entry(name).or_default();
        *t = t.max(v);
    }
    total.retain(|_, v| *v > 0.0);
    total
}
