//! The built binary on the bundled examples and on bad files.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use job_decider_api::{self as api, pb};

const BIN: &str = env!("CARGO_BIN_EXE_job-decider");
const NOW: &str = "2025-06-02T10:00:00Z";

fn example(dir: &str, stem: &str) -> PathBuf {
    let base = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("examples")
        .join(dir);
    ["json", "yaml"]
        .iter()
        .map(|ext| base.join(format!("{stem}.{ext}")))
        .find(|p| p.exists())
        .unwrap_or_else(|| panic!("no {stem} in {}", base.display()))
}

fn run(args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .output()
        .expect("run job-decider")
}

fn decide(dir: &str, output: &str) -> Output {
    let job = example(dir, "job");
    let pods = example(dir, "pods");
    run(&[
        "decide",
        "--job",
        job.to_str().expect("utf-8 path"),
        "--pods",
        pods.to_str().expect("utf-8 path"),
        "--now",
        NOW,
        "-o",
        output,
    ])
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn decide_prints_proto3_json_and_yaml_of_the_same_response() {
    for dir in [
        "kep-3329-failjob-exit-code-42",
        "kep-3329-ignore-disruption",
        "kep-3850-backoff-limit-per-index",
        "indexed-job-mid-run",
    ] {
        let json = decide(dir, "json");
        assert_eq!(json.status.code(), Some(0), "{dir}: {}", stderr(&json));
        let response: pb::DecideJobResponse =
            serde_json::from_slice(&json.stdout).expect("stdout is a DecideJobResponse");
        assert!(
            !response.actions.is_empty(),
            "{dir}: every example has something to do"
        );
        // Exactly the proto3 JSON: printing the decoded response gives the same text.
        let reprinted = job_decider::documents::to_json(&response).expect("print") + "\n";
        assert!(
            !stdout(&json).contains("+00:00"),
            "{dir}: UTC is written with Z"
        );
        assert_eq!(stdout(&json), reprinted, "{dir}");

        let yaml = decide(dir, "yaml");
        assert_eq!(yaml.status.code(), Some(0), "{dir}");
        let value: serde_json::Value = serde_yaml::from_slice(&yaml.stdout).expect("yaml");
        let from_yaml: pb::DecideJobResponse = serde_json::from_value(value).expect("same message");
        assert_eq!(from_yaml, response, "{dir}");
    }
}

#[test]
fn decide_text_explains_each_pod_and_the_policy() {
    let out = decide("kep-3329-failjob-exit-code-42", "text");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains("rule 0: FailJob on exit codes In [42] of container \"main\""),
        "{text}"
    );
    assert!(
        text.contains("rule 1: Ignore on pod conditions DisruptionTarget=True"),
        "{text}"
    );
    for pod in [
        "-5s7hq: FailsJob: rule 0 (FailJob) matched exit code 42",
        "-k2x9d, job-pod-failure-policy-example-q8wzt (2 pods): Running: ready",
    ] {
        assert!(text.contains(pod), "{pod} in {text}");
    }
    assert!(text.contains("Actions"), "{text}");
}

#[test]
fn state_from_a_previous_response_is_accepted() {
    let dir = tempfile::tempdir().expect("tempdir");
    let first = decide("kep-3329-ignore-disruption", "json");
    assert_eq!(first.status.code(), Some(0));
    let saved = dir.path().join("response.json");
    std::fs::write(&saved, &first.stdout).expect("save");
    let job = example("kep-3329-ignore-disruption", "job");
    let out = run(&[
        "decide",
        "--job",
        job.to_str().expect("path"),
        "--state",
        saved.to_str().expect("path"),
        "--now",
        NOW,
        "-o",
        "json",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

#[test]
fn validate_accepts_every_example_job() {
    for dir in [
        "kep-3329-failjob-exit-code-42",
        "kep-3329-ignore-disruption",
        "kep-3850-backoff-limit-per-index",
        "indexed-job-mid-run",
    ] {
        let job = example(dir, "job");
        let out = run(&["validate", job.to_str().expect("path")]);
        assert_eq!(out.status.code(), Some(0), "{dir}: {}", stderr(&out));
        assert!(stdout(&out).contains("valid"), "{dir}");
    }
}

/// Bad files exit 2 and name the field on stderr.
#[test]
fn bad_input_exits_2_naming_the_field() {
    let dir = tempfile::tempdir().expect("tempdir");
    let write = |name: &str, text: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, text).expect("write");
        path.to_str().expect("path").to_string()
    };
    let job = example("indexed-job-mid-run", "job");
    let job = job.to_str().expect("path");

    let no_uid = write(
        "pods-no-uid.yaml",
        "kind: PodList\nitems:\n- metadata: {name: a, uid: a1}\n- metadata: {name: b}\n",
    );
    let bad_type = write(
        "pods-bad-type.yaml",
        "kind: Pod\nmetadata: {name: a, uid: a1}\nstatus:\n  containerStatuses:\n  - name: main\n    restartCount: lots\n",
    );
    let bad_phase = write(
        "pods-bad-phase.json",
        r#"{"kind":"Pod","metadata":{"name":"a","uid":"a1"},"status":{"phase":"Sleeping"}}"#,
    );
    let not_yaml = write("broken.yaml", "kind: Job\nspec: [unclosed\n");
    let job_no_uid = write(
        "job-no-uid.yaml",
        "kind: Job\nmetadata: {name: j, namespace: default}\n",
    );

    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec!["decide", "--job", job, "--pods", &no_uid, "--now", NOW],
            "pods[1].metadata.uid",
        ),
        (
            vec!["decide", "--job", job, "--pods", &bad_type, "--now", NOW],
            "status.containerStatuses[0].restartCount",
        ),
        (
            vec!["decide", "--job", job, "--pods", &bad_phase, "--now", NOW],
            "pods[0].status.phase",
        ),
        (
            vec!["decide", "--job", &not_yaml, "--now", NOW],
            "broken.yaml",
        ),
        // Taken as created (docs/cli.md, "Manifests as written"), it lacks a pod template.
        (
            vec!["decide", "--job", &job_no_uid, "--now", NOW],
            "spec.template.spec.containers: Required value",
        ),
        (vec!["decide", "--job", job, "--now", "yesterday"], "--now"),
        (
            vec!["decide", "--job", "/nonexistent/job.yaml"],
            "/nonexistent/job.yaml",
        ),
        (vec!["validate", &not_yaml], "broken.yaml"),
    ];
    for (args, field) in cases {
        let out = run(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(
            stderr(&out).contains(field),
            "{args:?}: want {field} in {}",
            stderr(&out)
        );
        assert!(out.stdout.is_empty(), "{args:?}");
    }
}

#[test]
fn usage_errors_exit_2() {
    let out = run(&["decide", "--pods", "x.yaml"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("--job"), "{}", stderr(&out));
    let out = run(&["serve", "--max-message-size", "lots"]);
    assert_eq!(out.status.code(), Some(2));
}

/// The real binary: flags from the environment, JSON logs naming the job, SIGTERM.
#[cfg(unix)]
#[tokio::test]
async fn serve_reads_env_logs_json_and_stops_on_sigterm() {
    use std::io::Read;
    use std::process::Stdio;
    use std::time::{Duration, Instant};

    // Reserve two free ports; the binary binds them right after.
    let free = || {
        std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("free port")
    };
    let (addr, metrics_addr) = (free(), free());
    let mut child = Command::new(BIN)
        .arg("serve")
        .env("JOB_DECIDER_ADDR", addr.to_string())
        .env("JOB_DECIDER_METRICS_ADDR", metrics_addr.to_string())
        .env("JOB_DECIDER_LOG_FORMAT", "json")
        // A call that succeeds is logged at DEBUG (failures at WARN).
        .env("JOB_DECIDER_LOG_LEVEL", "info,job_decider=debug")
        .env("JOB_DECIDER_SHUTDOWN_GRACE", "5s")
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .expect("spawn serve");

    let deadline = Instant::now() + Duration::from_secs(20);
    let channel = crate::common::connect_when_up(addr).await;
    let mut client = pb::job_decider_client::JobDeciderClient::new(channel);
    let job: pb::Job = job_decider::documents::parse_job(
        &std::fs::read_to_string(example("indexed-job-mid-run", "job")).expect("read"),
        "job",
    )
    .expect("job");
    let request = pb::DecideJobRequest {
        job: Some(job),
        now: Some(pbjson_types::Timestamp {
            seconds: 1_748_858_400,
            nanos: 0,
        }),
        ..Default::default()
    };
    client.decide_job(request).await.expect("decided");
    let metrics = reqwest::get(format!("http://{metrics_addr}/metrics"))
        .await
        .expect("scrape")
        .text()
        .await
        .expect("text");
    assert!(
        metrics.contains("job_decider_grpc_requests_total"),
        "{metrics}"
    );

    let kill = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .expect("kill");
    assert!(kill.success());
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        assert!(Instant::now() < deadline, "serve did not stop on SIGTERM");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(status.code(), Some(0));
    let mut logs = String::new();
    child
        .stderr
        .take()
        .expect("stderr")
        .read_to_string(&mut logs)
        .expect("logs");
    let decided = logs
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find(|l| l["message"] == "call finished" && l["span"]["rpc.method"] == "DecideJob")
        .unwrap_or_else(|| panic!("no JSON 'call finished' line in:\n{logs}"));
    assert_eq!(decided["code"], "OK", "{decided}");
    assert_eq!(decided["span"]["job.namespace"], "default", "{decided}");
    assert_eq!(decided["span"]["job.name"], "indexed-job", "{decided}");
    assert_eq!(
        decided["span"]["job.uid"], "0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c44",
        "{decided}"
    );
    assert!(logs.contains("SIGTERM"), "{logs}");
}

#[test]
fn jobset_decide_explains_which_rule_matched_which_job() {
    let jobset = example("jobset-restart-within-budget", "jobset");
    let jobs = example("jobset-restart-within-budget", "jobs");
    let args = |output: &'static str| {
        run(&[
            "jobset",
            "decide",
            "--jobset",
            jobset.to_str().expect("utf-8 path"),
            "--jobs",
            jobs.to_str().expect("utf-8 path"),
            "--now",
            "2024-01-01T12:00:00Z",
            "-o",
            output,
        ])
    };
    let text = args("text");
    assert_eq!(text.status.code(), Some(0), "{}", stderr(&text));
    let out = stdout(&text);
    assert!(
        out.contains("rule 0 (failurePolicyRule0) on restart-jobset-example-buggy-job-0: matches"),
        "{out}"
    );
    assert!(out.contains("RestartJobSet"), "{out}");

    let json = args("json");
    assert_eq!(json.status.code(), Some(0), "{}", stderr(&json));
    let response: pb::DecideJobSetResponse =
        serde_json::from_slice(&json.stdout).expect("stdout is a DecideJobSetResponse");
    let status = response
        .actions
        .iter()
        .find_map(|a| match &a.kind {
            Some(pb::job_set_action::Kind::UpdateStatus(u)) => u.status.clone(),
            _ => None,
        })
        .expect("a status write");
    assert_eq!((status.restarts, status.restarts_count_towards_max), (4, 4));
}

#[test]
fn jobset_validate_names_the_broken_rule() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("jobset.yaml");
    std::fs::write(
        &path,
        "apiVersion: jobset.x-k8s.io/v1alpha2\nkind: JobSet\nmetadata: {name: js, namespace: default, uid: u}\n\
         spec:\n  replicatedJobs: [{name: workers, replicas: 2}]\n  failurePolicy:\n    maxRestarts: 1\n    rules:\n\
         \x20   - {name: r-leader, action: FailJobSet, targetReplicatedJobs: [leaders]}\n",
    )
    .expect("write");
    let out = run(&["jobset", "validate", path.to_str().expect("utf-8 path")]);
    assert_eq!(out.status.code(), Some(2), "{}", stdout(&out));
    let err = stderr(&out);
    assert!(err.contains("spec.failurePolicy.rules[0].name"), "{err}");
    assert!(
        err.contains("spec.failurePolicy.rules[0].targetReplicatedJobs[0]"),
        "{err}"
    );
}

/// `job-decider request` on a bundled example with a fixed time.
fn request(dir: &str, extra: &[&str]) -> Output {
    let job = example(dir, "job");
    let pods = example(dir, "pods");
    let mut args = vec![
        "request",
        "--job",
        job.to_str().expect("utf-8 path"),
        "--pods",
        pods.to_str().expect("utf-8 path"),
        "--now",
        NOW,
    ];
    args.extend_from_slice(extra);
    run(&args)
}

/// The request `request` prints is the one `decide` decides: the same plan, byte for
/// byte; it holds only the contract's fields (kubectl's others are dropped), so
/// grpcurl reads it without `-allow-unknown-fields`; binary is the same message.
#[test]
fn request_prints_the_request_decide_decides() {
    for dir in [
        "kep-3329-failjob-exit-code-42",
        "kep-3329-ignore-disruption",
        "kep-3850-backoff-limit-per-index",
        "indexed-job-mid-run",
    ] {
        let out = request(dir, &[]);
        assert_eq!(out.status.code(), Some(0), "{dir}: {}", stderr(&out));
        let printed: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
        let parsed: pb::DecideJobRequest =
            serde_json::from_value(printed.clone()).expect("a DecideJobRequest");
        // Nothing the message does not hold: reprinting the parsed message gives the same value.
        let reprinted: serde_json::Value =
            serde_json::from_str(&job_decider::documents::to_json(&parsed).expect("print"))
                .expect("JSON");
        assert_eq!(printed, reprinted, "{dir}");
        assert_eq!(printed["now"], NOW, "{dir}");
        assert!(!parsed.pods.is_empty(), "{dir}");

        // The plan of the printed request is the plan `decide` prints.
        let decided = api::decide(parsed.clone()).expect("decided");
        let plan = job_decider::documents::to_json(&decided.response()).expect("print") + "\n";
        let decide_json = decide(dir, "json");
        assert_eq!(stdout(&decide_json), plan, "{dir}");

        // Binary, under either name, is the same message.
        for flags in [["-o", "binary"], ["--format", "binpb"]] {
            let binary = request(dir, &flags);
            assert_eq!(binary.status.code(), Some(0), "{dir}: {}", stderr(&binary));
            let decoded =
                <pb::DecideJobRequest as prost::Message>::decode(binary.stdout.as_slice())
                    .expect("binary protobuf");
            assert_eq!(decoded, parsed, "{dir} {flags:?}");
        }
    }
    // kubectl prints fields the contract lacks; they are gone from the request.
    let kubectl =
        std::fs::read_to_string(example("kep-3329-failjob-exit-code-42", "pods")).expect("example");
    let printed = stdout(&request("kep-3329-failjob-exit-code-42", &[]));
    for dropped in ["\"image\"", "\"args\"", "\"dnsPolicy\""] {
        assert!(kubectl.contains(dropped), "the example has {dropped}");
        assert!(
            !printed.contains(dropped),
            "{dropped} is not in the contract"
        );
    }
}

/// `--lean` sends every pod as a `LeanPod`, and the plan is the same.
#[test]
fn request_lean_decides_alike() {
    let dir = "kep-3329-failjob-exit-code-42";
    let full: pb::DecideJobRequest =
        serde_json::from_slice(&request(dir, &[]).stdout).expect("full request");
    let out = request(dir, &["--lean"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let lean: pb::DecideJobRequest = serde_json::from_slice(&out.stdout).expect("lean request");
    assert!(lean.pods.is_empty());
    assert_eq!(lean.lean_pods.len(), full.pods.len());
    let plan = |r: pb::DecideJobRequest| api::decide(r).expect("decided").response();
    assert_eq!(plan(lean), plan(full));
}

/// `-` reads a file from stdin, a PodList or `jq .items`'s array alike; `--now`
/// defaults to the clock.
#[test]
fn request_reads_stdin_and_arrays() {
    let dir = "kep-3329-failjob-exit-code-42";
    let job = example(dir, "job");
    let job = job.to_str().expect("path");
    let from_file = request(dir, &[]);
    let pod_list = std::fs::read(example(dir, "pods")).expect("pods");
    let items = serde_json::to_vec(
        &serde_json::from_slice::<serde_json::Value>(&pod_list).expect("JSON")["items"],
    )
    .expect("array");
    for stdin in [&pod_list, &items] {
        let out = crate::common::run_with_stdin(
            &["request", "--job", job, "--pods", "-", "--now", NOW],
            stdin,
        );
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        assert_eq!(stdout(&out), stdout(&from_file));
    }
    let out = crate::common::run_with_stdin(
        &["request", "--job", "-", "--pods", "-", "--now", NOW],
        &pod_list,
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("only one of"), "{}", stderr(&out));

    let before = chrono::Utc::now().timestamp();
    let out = run(&["request", "--job", job]);
    let after = chrono::Utc::now().timestamp();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let printed: pb::DecideJobRequest = serde_json::from_slice(&out.stdout).expect("request");
    let now = printed.now.expect("now").seconds;
    assert!(
        (before..=after).contains(&now),
        "{before} <= {now} <= {after}"
    );
}

/// Unreadable files name the field and exit 2; a request the server will reject
/// is still printed, since the server's answer is the check; a Job without a
/// uid is printed as the API server would create it.
#[test]
fn request_bad_input_exits_2_naming_the_field() {
    let dir = tempfile::tempdir().expect("tempdir");
    let write = |name: &str, text: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, text).expect("write");
        path.to_str().expect("path").to_string()
    };
    let job = example("indexed-job-mid-run", "job");
    let job = job.to_str().expect("path");
    let bad_type = write(
        "pods.json",
        r#"{"kind":"PodList","items":[{},{"status":{"containerStatuses":[{"restartCount":"lots"}]}}]}"#,
    );
    let bad_phase = write(
        "pods-phase.yaml",
        "kind: Pod\nmetadata: {name: a, uid: a1}\nstatus: {phase: Sleeping}\n",
    );
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec!["request", "--job", job, "--pods", &bad_type],
            "items[1].status.containerStatuses[0].restartCount",
        ),
        (
            vec!["request", "--job", job, "--pods", &bad_phase, "--lean"],
            "pods[0].status.phase",
        ),
        (vec!["request", "--job", job, "--now", "soon"], "--now"),
        (vec!["request", "--job", job, "-o", "xml"], "xml"),
    ];
    for (args, field) in cases {
        let out = run(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(
            stderr(&out).contains(field),
            "{args:?}: want {field} in {}",
            stderr(&out)
        );
        assert!(out.stdout.is_empty(), "{args:?}");
    }
    // Without --lean the unknown phase is the server's to reject, by name.
    let out = run(&["request", "--job", job, "--pods", &bad_phase]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let no_uid = write("job.yaml", "kind: Job\nmetadata: {name: j}\n");
    let out = run(&["request", "--job", &no_uid, "--now", NOW]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let printed: pb::DecideJobRequest = serde_json::from_slice(&out.stdout).expect("request");
    assert_eq!(
        printed.job.and_then(|j| j.metadata).map(|m| m.uid),
        Some(job_decider::manifest::derived_uid("default", "j"))
    );
    assert!(
        stderr(&out).contains("has no metadata.uid"),
        "{}",
        stderr(&out)
    );
}

/// `--state` (a saved response) and `--controller-name` go into the request as given.
#[test]
fn request_carries_state_and_controller_name() {
    let dir = tempfile::tempdir().expect("tempdir");
    let first = decide("kep-3329-failjob-exit-code-42", "json");
    assert_eq!(first.status.code(), Some(0), "{}", stderr(&first));
    let response: pb::DecideJobResponse = serde_json::from_slice(&first.stdout).expect("response");
    let want_state = response.state.expect("the example's plan has a state");
    let saved = dir.path().join("response.json");
    std::fs::write(&saved, &first.stdout).expect("save");
    let out = request(
        "kep-3329-failjob-exit-code-42",
        &[
            "--state",
            saved.to_str().expect("path"),
            "--controller-name",
            "example.com/mine",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let printed: pb::DecideJobRequest = serde_json::from_slice(&out.stdout).expect("request");
    assert_eq!(printed.state, Some(want_state));
    assert_eq!(printed.controller_name, "example.com/mine");
}

/// Regression: `decide -o text` ended without a newline, so a note on stderr or the shell's
/// prompt ran into its last line.
#[test]
fn regression_text_output_ends_with_a_newline() {
    let dir = "kep-3329-failjob-exit-code-42";
    let (job, pods) = (example(dir, "job"), example(dir, "pods"));
    let out = run(&[
        "decide",
        "--job",
        job.to_str().expect("path"),
        "--pods",
        pods.to_str().expect("path"),
        "--now",
        NOW,
        "-o",
        "text",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).ends_with(".\n"), "{:?}", stdout(&out));
}
