//! Hostile scripts and Jobs for `job-decider simulate` (issue 22, item 7): each
//! is refused at once with exit 2 and the field and bound named, where it used
//! to run for minutes and take gigabytes.

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_job-decider");

/// CPU time well within the bound for each case; the old behaviour ran far
/// past it. CPU, not wall time: on a loaded machine a niced run waits.
const QUICK: Duration = Duration::from_secs(20);

/// Wall time after which a run is stopped whatever its CPU (a hang).
const PATIENCE: Duration = Duration::from_secs(600);

/// The CPU time a live process has used (Linux /proc; USER_HZ is 100), or
/// `None` where it cannot be read.
fn cpu_time(pid: u32) -> Option<Duration> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command name, which may hold spaces: state is 0, utime 11, stime 12.
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let ticks: u64 = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    Some(Duration::from_millis(ticks * 10))
}

/// A small Job as a user writes it (the CLI fills in uid and labels).
fn job_yaml(completions: u64, parallelism: u64, restart: &str) -> String {
    format!(
        "apiVersion: batch/v1\nkind: Job\nmetadata: {{name: big, namespace: default}}\n\
         spec:\n  completions: {completions}\n  parallelism: {parallelism}\n  backoffLimit: 6\n\
         \x20 template:\n    spec:\n      restartPolicy: {restart}\n      containers: [{{name: main, image: x}}]\n"
    )
}

/// Plays `script` on `job`, killing the run (and failing) if it uses more CPU
/// than [`QUICK`] (or, where CPU time cannot be read, more wall time), or
/// runs longer than [`PATIENCE`].
fn simulate(dir: &Path, job: &str, script: &str) -> Output {
    let job_path = dir.join("job.yaml");
    let script_path = dir.join("script.yaml");
    std::fs::write(&job_path, job).unwrap();
    std::fs::write(&script_path, script).unwrap();
    let mut child = Command::new(BIN)
        .arg("simulate")
        .arg("--job")
        .arg(&job_path)
        .arg("--script")
        .arg(&script_path)
        .args(["-o", "json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run job-decider");
    let started = Instant::now();
    while child.try_wait().expect("wait").is_none() {
        let used = cpu_time(child.id()).unwrap_or_else(|| started.elapsed());
        if used > QUICK || started.elapsed() > PATIENCE {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "simulate still ran after {used:?} of CPU, {:?} of wall time",
                started.elapsed()
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    child.wait_with_output().expect("output")
}

/// Exit 2, nothing on stdout, and an error saying each of `wants`.
fn refused(out: &Output, wants: &[&str]) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        out.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    for want in wants {
        assert!(err.contains(want), "stderr does not say {want:?}:\n{err}");
    }
}

#[test]
fn an_alias_bomb_of_attempt_numbers_is_refused_fast() {
    let dir = tempfile::tempdir().unwrap();
    // About a kilobyte of YAML; each alias used to be a million more numbers.
    let mut script = String::from("attempts:\n- &a {attempt: \"1-1000000\", exitCode: 1}\n");
    for _ in 0..100 {
        script.push_str("- *a\n");
    }
    let out = simulate(dir.path(), &job_yaml(4, 2, "Never"), &script);
    refused(&out, &["attempts[1].attempt", "1000000 numbers in all"]);
}

#[test]
fn max_syncs_of_two_to_the_32_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let out = simulate(
        dir.path(),
        &job_yaml(4, 2, "OnFailure"),
        "maxSyncs: 4294967295\nattempts:\n- {exitCode: 1}\n",
    );
    refused(&out, &["maxSyncs", "1000000"]);
}

#[test]
fn a_million_completions_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let out = simulate(dir.path(), &job_yaml(1_000_000, 1_000_000, "Never"), "");
    refused(&out, &["spec.completions", "10000 pods"]);
}
