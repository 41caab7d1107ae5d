//! `job-decider simulate --runs N`: Monte Carlo reports that are the seed's alone
//! (whatever the thread count), a CSV row per life that `--replay` plays back
//! exactly, costs from the template's requests, and distributions checked like
//! every other script field.

use std::path::Path;
use std::process::{Command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_job-decider");

fn run(args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .output()
        .expect("run job-decider")
}

fn ok(args: &[&str]) -> String {
    let out = run(args);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8")
}

fn path(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

/// An Indexed Job with 8 GPUs per pod (written as a limit only: the request defaults to it).
const JOB: &str = r"apiVersion: batch/v1
kind: Job
metadata: {name: train, namespace: default}
spec:
  completionMode: Indexed
  completions: 4
  parallelism: 4
  backoffLimit: 2
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: main
        image: trainer
        resources:
          limits: {nvidia.com/gpu: 8}
          requests: {cpu: 500m}
";

/// The same Job with a per-index backoff instead.
const PER_INDEX: &str = r"apiVersion: batch/v1
kind: Job
metadata: {name: train-per-index, namespace: default}
spec:
  completionMode: Indexed
  completions: 4
  parallelism: 4
  backoffLimitPerIndex: 1
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: main
        image: trainer
        resources:
          limits: {nvidia.com/gpu: 8}
";

const SCRIPT: &str = "seed: 11\ndefaults: {runTime: {logNormal: {median: 40m, sigma: 0.3}}, startDelay: {uniform: [1s, 20s]}}\n\
attempts:\n- {percent: 20, exitCodes: [1, 137], runTime: {exponential: {mean: 10m}}}\n\
nodes: 4\nevents:\n- {at: {uniform: [10m, 50m]}, percent: 25, drain: {node: node-1}}\n";

struct Files {
    dir: tempfile::TempDir,
}

impl Files {
    fn new() -> Files {
        let dir = tempfile::tempdir().expect("tempdir");
        for (name, text) in [
            ("job.yaml", JOB),
            ("per-index.yaml", PER_INDEX),
            ("script.yaml", SCRIPT),
        ] {
            std::fs::write(dir.path().join(name), text).expect("write");
        }
        Files { dir }
    }

    fn at(&self, name: &str) -> String {
        path(&self.dir.path().join(name)).to_string()
    }

    /// `simulate --job job.yaml --script script.yaml` and `more`.
    fn simulate(&self, more: &[&str]) -> String {
        let (job, script) = (self.at("job.yaml"), self.at("script.yaml"));
        let mut args = vec!["simulate", "--job", &job, "--script", &script];
        args.extend_from_slice(more);
        ok(&args)
    }
}

#[test]
fn monte_carlo_same_seed_same_report_and_another_seed_another() {
    let f = Files::new();
    let a = f.simulate(&["--runs", "60", "--seed", "5", "-o", "json"]);
    let b = f.simulate(&["--runs", "60", "--seed", "5", "-o", "json"]);
    assert_eq!(a, b);
    let c = f.simulate(&["--runs", "60", "--seed", "6", "-o", "json"]);
    assert_ne!(a, c);
    let report: serde_json::Value = serde_json::from_str(&a).expect("json");
    assert_eq!(report["runs"], 60);
    let p = |k: &str| report[k].as_f64().expect(k);
    assert!((p("pComplete") + p("pFailed") + p("pUnfinished") - 1.0).abs() < 1e-9);
    // Without --seed the script's seed is the seed.
    let d = f.simulate(&["--runs", "60", "-o", "json"]);
    let e = f.simulate(&["--runs", "60", "--seed", "11", "-o", "json"]);
    assert_eq!(d, e);
}

#[test]
fn monte_carlo_report_is_the_same_on_one_thread_or_two() {
    let f = Files::new();
    let (one, two) = (f.at("one.csv"), f.at("two.csv"));
    let a = f.simulate(&["--runs", "80", "--jobs", "1", "--csv", &one]);
    let b = f.simulate(&["--runs", "80", "--jobs", "2", "--csv", &two]);
    assert_eq!(a, b);
    assert_eq!(
        std::fs::read_to_string(&one).expect("csv"),
        std::fs::read_to_string(&two).expect("csv")
    );
    assert!(
        a.lines().last().expect("a line").starts_with("Result:"),
        "{a}"
    );
    assert!(a.contains("nvidia.com/gpu-hours:"), "{a}");
}

#[test]
fn monte_carlo_csv_has_a_row_per_life_with_the_documented_columns() {
    let f = Files::new();
    let csv = f.at("lives.csv");
    f.simulate(&["--runs", "25", "--csv", &csv]);
    let text = std::fs::read_to_string(&csv).expect("csv");
    let rows: Vec<&str> = text.lines().collect();
    assert_eq!(rows.len(), 26);
    assert_eq!(
        rows[0],
        "life,seed,result,reason,stopped,wall_time_s,pods_created,pods_failed,failures_counted,failures_ignored,backoff_waits,backoff_held_s,pod_hours,pod_hours_succeeded,pod_hours_burned,\
cpu-hours,cpu-hours_succeeded,cpu-hours_burned,nvidia.com/gpu-hours,nvidia.com/gpu-hours_succeeded,nvidia.com/gpu-hours_burned"
    );
    for (i, row) in rows[1..].iter().enumerate() {
        let cols: Vec<&str> = row.split(',').collect();
        assert_eq!(cols.len(), 21, "{row}");
        assert_eq!(cols[0], (i + 1).to_string());
        // GPU-hours are 8 times the pod-hours, CPU-hours half of them.
        let n = |c: usize| cols[c].parse::<f64>().expect("a number");
        assert!((n(18) - 8.0 * n(12)).abs() < 1e-3, "{row}");
        assert!((n(15) - 0.5 * n(12)).abs() < 1e-3, "{row}");
        assert!((n(13) + n(14) - n(12)).abs() < 1e-3, "{row}");
    }
}

#[test]
fn monte_carlo_replay_plays_the_life_the_csv_counts() {
    let f = Files::new();
    let csv = f.at("lives.csv");
    f.simulate(&["--runs", "30", "--seed", "3", "--csv", &csv]);
    let text = std::fs::read_to_string(&csv).expect("csv");
    let rows: Vec<Vec<String>> = text
        .lines()
        .skip(1)
        .map(|r| r.split(',').map(str::to_string).collect())
        .collect();
    // Lives differ (that is the point), and each replays as its row says.
    let distinct: std::collections::BTreeSet<&str> = rows.iter().map(|r| r[5].as_str()).collect();
    assert!(distinct.len() > 1, "every life alike: {text}");
    for life in [1usize, 7, 30] {
        let row = &rows[life - 1];
        let out = f.simulate(&[
            "--seed",
            "3",
            "--replay",
            &life.to_string(),
            "-o",
            "json",
            "--summary",
        ]);
        let s: serde_json::Value = serde_json::from_str(&out).expect("json");
        assert_eq!(s["result"], row[2].as_str(), "life {life}");
        assert_eq!(s["reason"].as_str().unwrap_or(""), row[3], "life {life}");
        assert_eq!(s["stopped"], row[4].as_str(), "life {life}");
        let wall = s["wallTimeMs"].as_i64().expect("ms") as f64 / 1000.0;
        assert_eq!(wall.to_string(), row[5], "life {life}");
        assert_eq!(s["podsCreated"].to_string(), row[6], "life {life}");
        assert_eq!(s["podsFailed"].to_string(), row[7], "life {life}");
        assert_eq!(s["failuresCounted"].to_string(), row[8], "life {life}");
        assert_eq!(s["backoffWaits"].to_string(), row[10], "life {life}");
    }
}

#[test]
fn monte_carlo_gpu_hours_of_a_hand_computable_job() {
    // Four pods of exactly 1h each (starts land on whole seconds after creation): 4
    // pod-hours and 32 GPU-hours, give or take the seconds before each start.
    let f = Files::new();
    std::fs::write(f.dir.path().join("fixed.yaml"), "defaults: {runTime: 1h}\n").expect("write");
    let (job, script) = (f.at("job.yaml"), f.at("fixed.yaml"));
    let out = ok(&[
        "simulate", "--job", &job, "--script", &script, "--runs", "3", "-o", "json",
    ]);
    let r: serde_json::Value = serde_json::from_str(&out).expect("json");
    let gpu = r["resourceHours"]["nvidia.com/gpu"]["total"]["max"]
        .as_f64()
        .expect("gpu-hours");
    assert!((32.0..32.0 + 32.0 * 2.0 / 3600.0).contains(&gpu), "{gpu}");
    assert_eq!(r["pComplete"], 1.0);
    assert_eq!(r["resourceHours"]["nvidia.com/gpu"]["burned"]["max"], 0.0);
}

#[test]
fn monte_carlo_compare_plays_both_jobs_over_the_same_lives() {
    let f = Files::new();
    let (other, html) = (f.at("per-index.yaml"), f.at("report.html"));
    let out = f.simulate(&["--runs", "40", "--compare", &other, "--html", &html]);
    assert!(out.contains("default/train"), "{out}");
    assert!(out.contains("default/train-per-index"), "{out}");
    assert!(out.contains("Result:"), "{out}");
    let page = std::fs::read_to_string(&html).expect("html");
    assert!(page.contains("<svg"), "no chart");
    let json = f.simulate(&["--runs", "40", "--compare", &other, "-o", "json"]);
    let v: serde_json::Value = serde_json::from_str(&json).expect("json");
    assert_eq!(v["left"]["runs"], 40);
    assert_eq!(v["right"]["runs"], 40);
    // The left side is the Job's own report.
    let alone: serde_json::Value =
        serde_json::from_str(&f.simulate(&["--runs", "40", "-o", "json"])).expect("json");
    assert_eq!(v["left"], alone);
}

#[test]
fn monte_carlo_bad_distributions_exit_2_naming_the_field() {
    let f = Files::new();
    std::fs::write(
        f.dir.path().join("bad.yaml"),
        "defaults: {runTime: {uniform: [50m, 30m]}}\nattempts:\n- {runTime: {logNormal: {median: 40m, sigma: -0.3}}}\n\
         events:\n- {at: {exponential: {mean: 0s}}, percent: 120, suspend: true}\n",
    )
    .expect("write");
    let (job, script) = (f.at("job.yaml"), f.at("bad.yaml"));
    let out = run(&[
        "simulate", "--job", &job, "--script", &script, "--runs", "10",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("attempts[0].runTime.logNormal.sigma"), "{err}");
    assert!(err.contains("defaults.runTime.uniform"), "{err}");
    assert!(err.contains("events[0].at.exponential.mean"), "{err}");
    assert!(err.contains("events[0].percent"), "{err}");
    // A single run checks the script as written too, not its life's draws.
    let single = run(&["simulate", "--job", &job, "--script", &script]);
    assert_eq!(single.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&single.stderr).contains("events[0].at.exponential.mean"),
        "{}",
        String::from_utf8_lossy(&single.stderr)
    );
    // And a shape serde refuses.
    std::fs::write(
        f.dir.path().join("bad.yaml"),
        "defaults: {runTime: {gamma: 3}}\n",
    )
    .expect("write");
    let out = run(&["simulate", "--job", &job, "--script", &script]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("defaults.runTime"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn monte_carlo_refuses_flags_it_cannot_honour() {
    let f = Files::new();
    let (job, script, svg) = (f.at("job.yaml"), f.at("script.yaml"), f.at("x.svg"));
    for extra in [
        vec!["--runs", "2", "--svg", svg.as_str()],
        vec!["--runs", "0"],
        vec!["--replay", "0"],
        vec!["--runs", "2", "--jobs", "0"],
    ] {
        let mut args = vec!["simulate", "--job", &job, "--script", &script];
        args.extend_from_slice(&extra);
        let out = run(&args);
        assert_eq!(out.status.code(), Some(2), "{extra:?}");
    }
}
