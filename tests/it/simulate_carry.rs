//! `simulate --carry-all-pods`: every example, and seeded random scripts on the
//! examples' Jobs, played with requests pruned (the default) and with every pod in
//! every request give the same JSON timeline byte for byte. `conformance/simulate.sh`
//! plays the same both ways against upstream's controller.

use std::path::{Path, PathBuf};
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_job-decider");

/// Every example Job: `job.yaml`, and `compare.yaml` where there is one, with its script.
fn example_jobs() -> Vec<(PathBuf, PathBuf)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/simulate");
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(root)
        .expect("examples/simulate")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    let mut jobs = Vec::new();
    for dir in dirs {
        for name in ["job.yaml", "compare.yaml"] {
            let job = dir.join(name);
            if job.exists() {
                jobs.push((job, dir.join("script.yaml")));
            }
        }
    }
    jobs
}

/// Whether `job` has at most 100 completions (random scripts play on those).
fn small(job: &Path) -> bool {
    let text = std::fs::read_to_string(job).expect("read the Job");
    let manifest: serde_yaml::Value = serde_yaml::from_str(&text).expect("a YAML Job");
    manifest["spec"]["completions"].as_i64().unwrap_or(1) <= 100
}

/// `simulate -o json` of `job` with `script`, with `--carry-all-pods` or without.
fn timeline(job: &Path, script: &Path, carry_all_pods: bool) -> String {
    let mut args = vec![
        "simulate".to_string(),
        "--quiet".to_string(),
        "--job".to_string(),
        job.display().to_string(),
        "--script".to_string(),
        script.display().to_string(),
        "-o".to_string(),
        "json".to_string(),
    ];
    if carry_all_pods {
        args.push("--carry-all-pods".to_string());
    }
    let out = Command::new(BIN)
        .args(&args)
        .output()
        .expect("run job-decider");
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8")
}

/// A seeded random script in the manner of `conformance/simulate.sh`'s.
fn random_script(seed: u64) -> String {
    let mut state = seed;
    let mut rnd = |n: u64| {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (state >> 33) % n
    };
    let r = rnd(20);
    let mut out = format!(
        "seed: {seed}\nhorizon: 3h\ndefaults: {{runTime: {}m, startDelay: {}s, stopTime: {}s}}\nattempts:\n",
        r + 1,
        r % 5,
        r % 31
    );
    let r = rnd(3);
    out += &format!(
        "  - {{attempt: {}, exitCode: {}, runTime: {}m}}\n",
        r + 1,
        (r * 41) % 138,
        r + 2
    );
    out += &format!(
        "  - {{percent: {}, exitCodes: [1, 42, 137]}}\n",
        rnd(40) + 5
    );
    let mut events = Vec::new();
    let mut t = 0;
    for _ in 0..rnd(5) {
        t += rnd(15) + 1;
        let pod = rnd(6) + 1;
        events.push(match rnd(5) {
            0 => format!("  - {{at: {t}m, drain: {{pod: {pod}}}}}"),
            1 => format!("  - {{at: {t}m, preempt: {{pod: {pod}}}}}"),
            2 => format!("  - {{at: {t}m, deletePod: {{pod: {pod}}}}}"),
            3 => {
                let resume = t + rnd(10) + 1;
                let line =
                    format!("  - {{at: {t}m, suspend: true}}\n  - {{at: {resume}m, resume: true}}");
                t = resume;
                line
            }
            _ => format!("  - {{at: {t}m, parallelism: {}}}", rnd(6)),
        });
    }
    if events.is_empty() {
        out += "events: []\n";
    } else {
        out += &format!("events:\n{}\n", events.join("\n"));
    }
    out
}

#[test]
fn every_example_plays_the_same_with_every_pod_carried() {
    let jobs = example_jobs();
    assert!(jobs.len() >= 20, "{} example Jobs", jobs.len());
    for (job, script) in &jobs {
        let pruned = timeline(job, script, false);
        let full = timeline(job, script, true);
        assert!(
            pruned == full,
            "{}: pruned requests changed the timeline",
            job.display()
        );
    }
}

#[test]
fn seeded_random_scripts_play_the_same_with_every_pod_carried() {
    let dir = tempfile::tempdir().expect("tempdir");
    let jobs = example_jobs();
    for seed in 1..=3 {
        let script = dir.path().join(format!("random-{seed}.yaml"));
        let text = random_script(seed);
        std::fs::write(&script, &text).expect("write script");
        // Random shapes are the small Jobs' work (as in conformance/simulate.sh):
        // a large example plays its own script both ways above.
        for (job, _) in jobs.iter().filter(|(job, _)| small(job)) {
            let pruned = timeline(job, &script, false);
            let full = timeline(job, &script, true);
            assert!(
                pruned == full,
                "{} with seed {seed}:\n{text}\npruned requests changed the timeline",
                job.display()
            );
        }
    }
}
