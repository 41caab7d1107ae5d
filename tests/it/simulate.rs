//! `job-decider simulate`: the bundled scripts' timelines against their checked-in
//! expected files, the gRPC decider path, and bad scripts exiting 2 with the field.
//!
//! `UPDATE_EXPECTED=1 cargo test --test it simulate` rewrites the expected files
//! (review the diff: each is what upstream's controller does too, by
//! `conformance/simulate.sh`).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use job_decider::server::ServerConfig;

use crate::common::TestServer;

const BIN: &str = env!("CARGO_BIN_EXE_job-decider");

fn examples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/simulate")
}

fn run(args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .output()
        .expect("run job-decider")
}

fn path(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Every example directory: `job.yaml`, `script.yaml`, maybe `compare.yaml`.
fn example_dirs() -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(examples())
        .expect("examples/simulate")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    dirs
}

fn check_expected(file: &Path, got: &str) {
    if std::env::var_os("UPDATE_EXPECTED").is_some() {
        std::fs::write(file, got).expect("write expected");
        return;
    }
    let want = std::fs::read_to_string(file)
        .unwrap_or_else(|e| panic!("{}: {e} (UPDATE_EXPECTED=1 writes it)", file.display()));
    assert!(
        want == got,
        "{} differs from the simulation (UPDATE_EXPECTED=1 rewrites it):\n{got}",
        file.display()
    );
}

/// `simulate -o json` of the example in `dir` (its job.yaml and script.yaml),
/// with `extra` arguments; the run must succeed.
fn example_json(dir: &Path, extra: &[&str]) -> serde_json::Value {
    let (job, script) = (dir.join("job.yaml"), dir.join("script.yaml"));
    let mut args = vec!["simulate", "--job", path(&job), "--script", path(&script)];
    args.extend_from_slice(extra);
    args.extend(["-o", "json"]);
    let out = run(&args);
    assert!(out.status.success(), "{}", text(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("json")
}

#[test]
fn every_example_timeline_is_its_expected_file() {
    let dirs = example_dirs();
    assert!(dirs.len() >= 7, "{dirs:?}");
    for dir in dirs {
        let (job, script) = (dir.join("job.yaml"), dir.join("script.yaml"));
        let out = run(&["simulate", "--job", path(&job), "--script", path(&script)]);
        assert!(
            out.status.success(),
            "{}: {}",
            dir.display(),
            text(&out.stderr)
        );
        check_expected(&dir.join("expected.txt"), &text(&out.stdout));
        let other = dir.join("compare.yaml");
        if other.exists() {
            let out = run(&[
                "simulate",
                "--job",
                path(&job),
                "--script",
                path(&script),
                "--compare",
                path(&other),
            ]);
            assert!(
                out.status.success(),
                "{}: {}",
                dir.display(),
                text(&out.stderr)
            );
            check_expected(&dir.join("compare.expected.txt"), &text(&out.stdout));
        }
    }
}

#[test]
fn json_is_the_timeline_and_the_same_every_time() {
    let dir = examples().join("what-if-oom-and-drain");
    let args = [
        "simulate",
        "--job",
        path(&dir.join("job.yaml")),
        "--script",
        path(&dir.join("script.yaml")),
        "-o",
        "json",
    ]
    .map(str::to_string);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let a = run(&args);
    let b = run(&args);
    assert!(a.status.success(), "{}", text(&a.stderr));
    assert_eq!(a.stdout, b.stdout);
    let v: serde_json::Value = serde_json::from_slice(&a.stdout).expect("json");
    assert_eq!(v["summary"]["result"], "Complete");
    assert_eq!(v["summary"]["perIndex"]["3"][0], "failed(137)");
    assert_eq!(v["summary"]["perIndex"]["3"][1], "failed(137)");
    let evicted = v["events"]
        .as_array()
        .expect("events")
        .iter()
        .find(|e| e["kind"] == "podEvicted")
        .expect("the drain at 5m");
    assert_eq!(evicted["offsetMs"], 300_000);
    assert_eq!(evicted["index"], 2);
    // Every attempt says how it ended, in words a program matches on.
    let endings: Vec<&str> = v["attempts"]
        .as_array()
        .expect("attempts")
        .iter()
        .map(|a| a["ending"].as_str().unwrap_or("missing"))
        .collect();
    let ignored = endings.iter().filter(|e| **e == "failedIgnored").count();
    assert_eq!(
        Some(ignored as u64),
        v["summary"]["failuresIgnored"].as_u64()
    );
    assert!(endings.contains(&"deleted"), "{endings:?}");
    assert!(endings.contains(&"succeeded"), "{endings:?}");
    assert!(!endings.contains(&"missing"), "{endings:?}");
}

#[test]
fn compare_json_names_where_the_policies_part() {
    let dir = examples().join("kep-3329-story1");
    let v = example_json(&dir, &["--compare", path(&dir.join("compare.yaml"))]);
    assert_eq!(v["left"]["summary"]["reason"], "PodFailurePolicy");
    assert_ne!(v["right"]["summary"]["reason"], "PodFailurePolicy");
    assert!(v["divergence"]["commonEvents"].as_u64().expect("count") > 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn decisions_over_grpc_give_the_same_timeline_as_in_process() {
    let server = TestServer::start(ServerConfig::default()).await;
    let addr = server.addr.to_string();
    let dir = examples().join("kep-3850-story2");
    let (job, script) = (dir.join("job.yaml"), dir.join("script.yaml"));
    let out = tokio::task::spawn_blocking(move || {
        let local = run(&[
            "simulate",
            "--job",
            path(&job),
            "--script",
            path(&script),
            "-o",
            "json",
        ]);
        let remote = run(&[
            "simulate",
            "--job",
            path(&job),
            "--script",
            path(&script),
            "-o",
            "json",
            "--decider-addr",
            &addr,
        ]);
        (local, remote)
    })
    .await
    .expect("join");
    assert!(out.1.status.success(), "{}", text(&out.1.stderr));
    assert_eq!(text(&out.0.stdout), text(&out.1.stdout));
}

#[test]
fn an_unreachable_decider_is_a_failure_not_bad_input() {
    let dir = examples().join("kep-3850-story2");
    let out = run(&[
        "simulate",
        "--job",
        path(&dir.join("job.yaml")),
        "--script",
        path(&dir.join("script.yaml")),
        "--decider-addr",
        "127.0.0.1:1",
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("--decider-addr 127.0.0.1:1"));
}

/// A bad script exits 2 and names the field, with the script's path.
#[test]
fn bad_scripts_exit_2_naming_the_field() {
    let dir = tempfile::tempdir().expect("tempdir");
    let indexed = examples().join("kep-3850-story1/job.yaml");
    let nonindexed = examples().join("kep-3329-story2/job.yaml");
    for (job, script, field) in [
        (
            &indexed,
            "attempts:\n- {exitCode: 1}\n- {exitCode: one}\n",
            "attempts[1].exitCode",
        ),
        (
            &indexed,
            "attempts:\n- {index: 1, exitcode: 1}\n",
            "attempts[0].exitcode",
        ),
        (
            &indexed,
            "attempts:\n- {percent: 150, exitCode: 1}\n",
            "attempts[0].percent",
        ),
        (
            &indexed,
            "events:\n- {at: 5m, drain: {index: 2}, suspend: true}\n",
            "events[0]",
        ),
        (
            &indexed,
            "events:\n- {at: 5 minutes, suspend: true}\n",
            "events[0].at",
        ),
        (&indexed, "horizon: forever\n", "horizon"),
        (
            &indexed,
            "attempts:\n- {container: sidecar, exitCode: 1}\n",
            "attempts[0].container",
        ),
        (
            &nonindexed,
            "attempts:\n- {index: 3, exitCode: 137}\n",
            "attempts[0].index",
        ),
        (
            &nonindexed,
            "events:\n- {at: 1m, drain: {index: 0}}\n",
            "events[0].drain.index",
        ),
    ] {
        let file = dir.path().join("script.yaml");
        std::fs::write(&file, script).expect("write");
        let out = run(&["simulate", "--job", path(job), "--script", path(&file)]);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{script}: {err}");
        assert!(
            err.contains(&format!("{}: {field}: ", file.display())),
            "{script}: {err}"
        );
    }
}

#[test]
fn a_job_the_decider_refuses_exits_2_and_says_why() {
    let dir = tempfile::tempdir().expect("tempdir");
    let job = std::fs::read_to_string(examples().join("kep-3329-story3/job.yaml")).expect("job");
    // A parallelism the API server would never have stored.
    let job = job.replace("  parallelism: 2\n", "  parallelism: -1\n");
    let file = dir.path().join("job.yaml");
    std::fs::write(&file, job).expect("write");
    let script = examples().join("kep-3329-story3/script.yaml");
    let out = run(&["simulate", "--job", path(&file), "--script", path(&script)]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("spec.parallelism"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn on_failure_containers_restart_in_place_and_the_summary_counts_them() {
    let dir = examples().join("restart-on-failure");
    let v = example_json(&dir, &[]);
    assert_eq!(v["summary"]["reason"], "BackoffLimitExceeded");
    assert_eq!(v["summary"]["podsCreated"], 2);
    assert_eq!(v["summary"]["restarts"], 4);
    let runs_of_index_0 = v["attempts"]
        .as_array()
        .expect("attempts")
        .iter()
        .filter(|a| a["index"] == 0)
        .count();
    assert_eq!(
        runs_of_index_0, 5,
        "one attempt per run of the restarted pod"
    );
}

#[test]
fn the_script_can_come_from_stdin_and_pods_cannot_be_compared() {
    use std::io::Write;
    let dir = examples().join("kep-3850-story2");
    let mut child = Command::new(BIN)
        .args([
            "simulate",
            "--job",
            path(&dir.join("job.yaml")),
            "--script",
            "-",
            "-o",
            "json",
        ])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn");
    let script = std::fs::read(dir.join("script.yaml")).expect("script");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(&script)
        .expect("write");
    let piped = child.wait_with_output().expect("run");
    let from_file = run(&[
        "simulate",
        "--job",
        path(&dir.join("job.yaml")),
        "--script",
        path(&dir.join("script.yaml")),
        "-o",
        "json",
    ]);
    assert!(piped.status.success(), "{}", text(&piped.stderr));
    assert_eq!(piped.stdout, from_file.stdout);
    let out = run(&[
        "simulate",
        "--job",
        path(&dir.join("job.yaml")),
        "--script",
        path(&dir.join("script.yaml")),
        "--pods",
        path(&dir.join("job.yaml")),
        "--compare",
        path(&dir.join("job.yaml")),
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("--compare cannot be used with --pods"));
}

#[test]
fn a_manifest_as_written_is_simulated_as_the_api_server_would_create_it() {
    let job = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/hand-written-job/job.yaml");
    let dir = tempfile::tempdir().expect("tempdir");
    let script = dir.path().join("script.yaml");
    std::fs::write(
        &script,
        "attempts:\n- {index: 1, attempt: 1, exitCode: 42}\n",
    )
    .expect("write");
    let out = run(&[
        "simulate",
        "--job",
        path(&job),
        "--script",
        path(&script),
        "-o",
        "json",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("no metadata.uid"),
        "{}",
        text(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    // Created at the default start; exit 42 matches the FailJob rule.
    assert_eq!(v["start"], "2025-01-01T00:00:00Z");
    assert_eq!(v["summary"]["reason"], "PodFailurePolicy");
}

#[test]
fn a_typo_in_the_job_is_an_error_naming_its_path_unless_lenient() {
    let dir = tempfile::tempdir().expect("tempdir");
    let job = std::fs::read_to_string(examples().join("kep-3329-story3/job.yaml")).expect("job");
    let file = dir.path().join("job.yaml");
    std::fs::write(
        &file,
        job.replace("  backoffLimit: 3\n", "  backofLimit: 3\n"),
    )
    .expect("write");
    let script = examples().join("kep-3329-story3/script.yaml");
    let out = run(&["simulate", "--job", path(&file), "--script", path(&script)]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("spec.backofLimit"),
        "{}",
        text(&out.stderr)
    );
    let out = run(&[
        "simulate",
        "--job",
        path(&file),
        "--script",
        path(&script),
        "--lenient",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("spec.backofLimit"),
        "{}",
        text(&out.stderr)
    );
}

/// A one-pod Job written as for `kubectl apply` with `terminationGracePeriodSeconds:
/// grace` in its template and a FailJob rule on exit 137, played with a user deleting
/// its pod at 1m whose app needs `stop` to stop after SIGTERM.
fn played_with_grace(grace: u32, stop: &str) -> serde_json::Value {
    let dir = tempfile::tempdir().expect("tempdir");
    let job = dir.path().join("job.yaml");
    std::fs::write(
        &job,
        format!(
            "apiVersion: batch/v1\nkind: Job\nmetadata: {{name: graceful, namespace: default}}\n\
             spec:\n  completions: 1\n  parallelism: 1\n  backoffLimit: 6\n\
             \x20 podFailurePolicy:\n    rules:\n    - action: FailJob\n\
             \x20     onExitCodes: {{operator: In, values: [137]}}\n\
             \x20 template:\n    spec:\n      restartPolicy: Never\n\
             \x20     terminationGracePeriodSeconds: {grace}\n\
             \x20     containers: [{{name: main, image: app}}]\n"
        ),
    )
    .expect("write");
    let script = dir.path().join("script.yaml");
    std::fs::write(
        &script,
        format!(
            "defaults: {{runTime: 10m, stopTime: {stop}}}\nevents:\n- {{at: 1m, deletePod: {{pod: 1}}}}\n"
        ),
    )
    .expect("write");
    let out = run(&[
        "simulate",
        "--job",
        path(&job),
        "--script",
        path(&script),
        "-o",
        "json",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("json")
}

#[test]
fn termination_grace_period_was_ignored_an_app_outlasting_it_is_killed_with_137() {
    // 10s grace, an app needing 25s: SIGKILL at 10s, exit 137, which the FailJob
    // rule on 137 sees (kubelet killContainer: StopContainer with the grace period).
    let v = played_with_grace(10, "25s");
    let first = &v["attempts"][0];
    assert_eq!(first["endedMs"], 70_000, "{v:#}");
    assert_eq!(first["exitCode"], 137, "{v:#}");
    assert_eq!(v["summary"]["reason"], "PodFailurePolicy", "{v:#}");
}

#[test]
fn termination_grace_period_was_ignored_a_long_grace_lets_the_app_stop_on_its_own() {
    // 120s grace, an app needing 90s: it stops at 90s with its SIGTERM exit (143);
    // the script's stopTime is no longer capped at 30s.
    let v = played_with_grace(120, "90s");
    let first = &v["attempts"][0];
    assert_eq!(first["endedMs"], 150_000, "{v:#}");
    assert_eq!(first["exitCode"], 143, "{v:#}");
    assert_eq!(v["summary"]["result"], "Complete", "{v:#}");
}

#[test]
fn container_restart_rules_were_ignored_a_matching_exit_restarts_in_place_uncounted() {
    // v1.37.2 enables ContainerRestartRules (KEP-5307) by default: exit 42 matches the
    // container's Restart rule, so the kubelet restarts it in place and the pod never
    // fails (backoffLimit 0 would fail the Job at one counted failure).
    let dir = tempfile::tempdir().expect("tempdir");
    let job = dir.path().join("job.yaml");
    std::fs::write(
        &job,
        "apiVersion: batch/v1\nkind: Job\nmetadata: {name: in-place, namespace: default}\n\
         spec:\n  completions: 2\n  parallelism: 2\n  backoffLimit: 1\n\
         \x20 completionMode: Indexed\n  template:\n    spec:\n      restartPolicy: Never\n\
         \x20     containers:\n      - name: main\n        image: app\n\
         \x20       restartPolicy: Never\n        restartPolicyRules:\n\
         \x20       - action: Restart\n          exitCodes: {operator: In, values: [42]}\n",
    )
    .expect("write");
    let script = dir.path().join("script.yaml");
    std::fs::write(
        &script,
        "attempts:\n- {index: 0, attempt: 1-2, exitCode: 42}\n- {index: 1, attempt: 1, exitCode: 1}\n",
    )
    .expect("write");
    let out = run(&[
        "simulate",
        "--job",
        path(&job),
        "--script",
        path(&script),
        "-o",
        "json",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(v["summary"]["result"], "Complete", "{v:#}");
    assert_eq!(v["summary"]["restarts"], 2, "{v:#}");
    // Index 0 restarted twice in its one pod; index 1's exit 1 matches no rule and
    // the container's own policy is Never: that pod fails and is replaced.
    assert_eq!(v["summary"]["podsCreated"], 3, "{v:#}");
    assert_eq!(v["summary"]["failuresCounted"], 1, "{v:#}");
}

/// Issue 25, defect 11: a Job `validate` rejects was played (a thousand identical
/// warnings, "Stopped: syncLimit", exit 0); now every violation, exit 2, nothing played.
#[test]
fn simulate_played_a_job_the_api_server_rejects() {
    let dir = tempfile::tempdir().expect("tempdir");
    let job = std::fs::read_to_string(examples().join("kep-3850-story1/job.yaml")).expect("job");
    let job = job
        .replace("completionMode: Indexed", "completionMode: indexed")
        .replace("  parallelism: 10\n", "  parallelism: -1\n");
    let file = dir.path().join("job.yaml");
    std::fs::write(&file, job).expect("write");
    let script = examples().join("kep-3850-story1/script.yaml");
    let validated = run(&["validate", path(&file)]);
    let out = run(&["simulate", "--job", path(&file), "--script", path(&script)]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        out.stdout.is_empty(),
        "nothing played: {}",
        text(&out.stdout)
    );
    for field in ["spec.completionMode", "spec.parallelism"] {
        assert!(err.contains(field), "{field}: {err}");
    }
    // The same violations as `validate`, in the same words.
    let validated = text(&validated.stderr);
    for line in validated.lines().skip(1) {
        assert!(err.contains(line.trim()), "{line}: {err}");
    }
    // The --compare Job is validated too, before anything is played.
    let good = examples().join("kep-3850-story1/job.yaml");
    let out = run(&[
        "simulate",
        "--job",
        path(&good),
        "--script",
        path(&script),
        "--compare",
        path(&file),
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(out.stdout.is_empty());
    assert!(text(&out.stderr).contains("spec.completionMode"));
}

/// Issue 25, defect 12: every script error at once, one path per message
/// (`events[0].at: events[0].at: …` before), each naming its field.
#[test]
fn script_errors_came_one_at_a_time_with_doubled_paths() {
    let dir = tempfile::tempdir().expect("tempdir");
    let job = examples().join("kep-3850-story1/job.yaml");
    let file = dir.path().join("script.yaml");
    // A field serde refuses: one error, its path once.
    std::fs::write(&file, "events:\n- {at: 5 minutes, suspend: true}\n").expect("write");
    let out = run(&["simulate", "--job", path(&job), "--script", path(&file)]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.matches("events[0].at").count(), 1, "{err}");
    // Mistakes the checks find, of the script alone and of the script with its Job: all of them.
    std::fs::write(
        &file,
        "attempts:\n- {percent: 150, exitCode: 1}\n- {container: sidecar, exitCode: 1}\n\
         - {exitCode: 300}\nevents:\n- {at: 1m, suspend: true, resume: true}\n",
    )
    .expect("write");
    let out = run(&["simulate", "--job", path(&job), "--script", path(&file)]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    for field in [
        "attempts[0].percent: ",
        "attempts[1].container: ",
        "attempts[2].exitCode: ",
        "events[0]: ",
    ] {
        assert_eq!(err.matches(field).count(), 1, "{field} once: {err}");
    }
}

/// `--quiet` silences the note about a manifest written without a uid (warnings stay).
#[test]
fn quiet_silences_the_manifest_note() {
    let job = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/hand-written-job/job.yaml");
    let dir = tempfile::tempdir().expect("tempdir");
    let script = dir.path().join("script.yaml");
    std::fs::write(
        &script,
        "attempts:\n- {index: 1, attempt: 1, exitCode: 42}\n",
    )
    .expect("write");
    let noisy = run(&["simulate", "--job", path(&job), "--script", path(&script)]);
    let quiet = run(&[
        "simulate",
        "--job",
        path(&job),
        "--script",
        path(&script),
        "--quiet",
    ]);
    assert!(quiet.status.success(), "{}", text(&quiet.stderr));
    assert!(text(&noisy.stderr).contains("no metadata.uid"));
    assert!(
        !text(&quiet.stderr).contains("no metadata.uid"),
        "{}",
        text(&quiet.stderr)
    );
    assert_eq!(quiet.stdout, noisy.stdout, "the same timeline");
}

/// Issue 25, defect 12: script mistakes that silently did nothing (exit 0) are
/// errors (exit 2) or warnings naming the field and what happens instead.
#[test]
fn script_mistakes_silently_did_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    // Indexed, 10 completions, parallelism 10, 30s grace (the default), not suspended.
    let job = examples().join("kep-3850-story1/job.yaml");
    let file = dir.path().join("script.yaml");
    let errors = [
        (
            "attempts:\n- {index: 12, exitCode: 1}\n",
            "attempts[0].index: ",
        ),
        (
            "events:\n- {at: 1m, drain: {index: 10}}\n",
            "events[0].drain.index: ",
        ),
        ("attempts:\n- {exitCode: 300}\n", "attempts[0].exitCode: "),
        (
            "attempts:\n- {exitCodes: [1, -1]}\n",
            "attempts[0].exitCodes: ",
        ),
        ("defaults: {exitCode: 256}\n", "defaults.exitCode: "),
    ];
    for (script, field) in errors {
        std::fs::write(&file, script).expect("write");
        let out = run(&["simulate", "--job", path(&job), "--script", path(&file)]);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{script}: {err}");
        assert!(err.contains(field), "{script}: {err}");
    }
    let warnings = [
        (
            "attempts:\n- {index: 8-12, exitCode: 1}\n",
            "attempts[0].index: ",
            "10-12",
        ),
        (
            "horizon: 1h\nevents:\n- {at: 2h, suspend: true}\n",
            "events[0].at: ",
            "horizon",
        ),
        (
            "events:\n- {at: 1m, resume: true}\n",
            "events[0].resume: ",
            "not suspended",
        ),
        (
            "defaults: {runTime: 10m, stopTime: 45s}\nevents:\n- {at: 1m, deletePod: {index: 1}}\n",
            "defaults.stopTime: ",
            "137",
        ),
        (
            "events:\n- {at: 1m, deletePod: {pod: 50}}\n",
            "events[0].deletePod: ",
            "never created",
        ),
        (
            "defaults: {startDelay: 5m}\nevents:\n- {at: 1m, drain: {pod: 1}}\n",
            "events[0].drain: ",
            "not running",
        ),
        (
            "defaults: {runTime: 10m}\nattempts:\n- {index: 2, runTime: 1m}\n\
             events:\n- {at: 3m, drain: {index: 2}}\n",
            "events[0].drain: ",
            "index 2",
        ),
    ];
    for (script, field, says) in warnings {
        std::fs::write(&file, script).expect("write");
        let out = run(&["simulate", "--job", path(&job), "--script", path(&file)]);
        let err = text(&out.stderr);
        assert!(out.status.success(), "{script}: {err}");
        let line = err
            .lines()
            .find(|l| l.starts_with("warning: ") && l.contains(field))
            .unwrap_or_else(|| panic!("{script}: a warning on {field}: {err}"));
        assert!(line.contains(says), "{script}: {line}");
    }
    // The bundled examples have none of these mistakes.
    for dir in example_dirs() {
        let out = run(&[
            "simulate",
            "--job",
            path(&dir.join("job.yaml")),
            "--script",
            path(&dir.join("script.yaml")),
        ]);
        assert!(
            !text(&out.stderr).contains("warning"),
            "{}: {}",
            dir.display(),
            text(&out.stderr)
        );
    }
}

/// Issue 25, defect 12: a scripted event after the Job finished never played, and
/// nothing said so (exit 0, no warning).
#[test]
fn an_event_after_the_job_finished_never_played_silently() {
    let dir = tempfile::tempdir().expect("tempdir");
    let job = examples().join("kep-3850-story1/job.yaml");
    let file = dir.path().join("script.yaml");
    // Every index succeeds after 4m: the Job is Complete at about 4m; the horizon is far.
    std::fs::write(
        &file,
        "horizon: 2h\ndefaults: {runTime: 4m}\nevents:\n- {at: 1m, deletePod: {index: 1}}\n\
         - {at: 30m, suspend: true}\n",
    )
    .expect("write");
    let out = run(&["simulate", "--job", path(&job), "--script", path(&file)]);
    let err = text(&out.stderr);
    assert!(out.status.success(), "{err}");
    let warnings: Vec<&str> = err.lines().filter(|l| l.starts_with("warning: ")).collect();
    assert_eq!(warnings.len(), 1, "only the late event: {err}");
    let line = warnings[0];
    assert!(line.contains("events[1].at: 30m"), "{line}");
    assert!(
        line.contains("the Job finished at 5m") && line.ends_with("this event never plays"),
        "{line}"
    );
}

#[test]
fn defect_9_summary_prints_only_the_answer() {
    let dir = examples().join("kep-3850-story1");
    let (job, script) = (dir.join("job.yaml"), dir.join("script.yaml"));
    let base = ["simulate", "--job", path(&job), "--script", path(&script)];
    let full = run(&base);
    assert!(full.status.success(), "{}", text(&full.stderr));
    let out = run(&[&base[..], &["--summary"]].concat());
    assert!(out.status.success(), "{}", text(&out.stderr));
    let (full, brief) = (text(&full.stdout), text(&out.stdout));
    // The summary block is the full text's last paragraph, and nothing else.
    let last = full.rsplit("\n\n").next().expect("a last paragraph");
    assert_eq!(brief, last);
    assert!(
        !brief.contains("Timeline:") && !brief.contains("Attempts:"),
        "{brief}"
    );
    assert!(
        brief
            .lines()
            .last()
            .is_some_and(|l| l.starts_with("Result:")),
        "{brief}"
    );
    // -o json --summary: the summary object alone, as in the full JSON.
    let json = run(&[&base[..], &["--summary", "-o", "json"]].concat());
    assert!(json.status.success(), "{}", text(&json.stderr));
    let brief: serde_json::Value = serde_json::from_slice(&json.stdout).expect("json");
    let whole = example_json(&dir, &[]);
    assert_eq!(brief, whole["summary"]);
}

#[test]
fn defect_9_summary_with_compare_prints_both_summaries_and_no_rows() {
    let dir = examples().join("extended-pending-timeout");
    let (job, script, other) = (
        dir.join("job.yaml"),
        dir.join("script.yaml"),
        dir.join("compare.yaml"),
    );
    let out = run(&[
        "simulate",
        "--job",
        path(&job),
        "--script",
        path(&script),
        "--compare",
        path(&other),
        "--summary",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let brief = text(&out.stdout);
    let results: Vec<&str> = brief.lines().filter(|l| l.starts_with("Result:")).collect();
    assert_eq!(results.len(), 2, "{brief}");
    assert!(results[0].contains("Complete"), "{brief}");
    assert!(results[1].contains("Unfinished"), "{brief}");
    assert!(brief.contains("default/stuck-image:\n"), "{brief}");
    assert!(brief.contains("default/stuck-image-upstream:\n"), "{brief}");
    assert!(!brief.contains("The stories agree"), "{brief}");
    assert!(!brief.contains("Timeline:"), "{brief}");
}
