//! Hostile input files and documents (issue 22, items 5 and 10): nesting and
//! size bounded before parsing, keys given twice and numbers that are not
//! finite refused by path, and input text escaped wherever it is shown.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::common::TestServer;
use job_decider::server::ServerConfig;
use job_decider_api::fixtures;
use job_decider_api::yaml_bounds::MAX_WHOLE_FILE_BYTES;
use tonic::Code;
use tonic_types::StatusExt;

const BIN: &str = env!("CARGO_BIN_EXE_job-decider");
const NOW: &str = "2025-06-02T10:00:00Z";
/// A hang guard, not a timing assertion: on the unbounded reader these ran past a minute.
const HANG: Duration = Duration::from_secs(45);

fn example_path(rel: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("examples")
        .join(rel)
        .to_str()
        .expect("utf-8 path")
        .to_string()
}

/// A scratch directory of this test's own.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("jd-hostile-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("scratch dir");
    dir
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).expect("write");
    path.to_str().expect("utf-8 path").to_string()
}

/// Runs the binary, killing it (and failing) if it outlives [`HANG`].
fn run(args: &[&str]) -> Output {
    let mut child = Command::new(BIN)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn job-decider");
    let start = Instant::now();
    while child.try_wait().expect("wait").is_none() {
        if start.elapsed() > HANG {
            let _ = child.kill();
            let _ = child.wait();
            panic!("job-decider {args:?} still running after {HANG:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    child.wait_with_output().expect("output")
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn assert_bad_input(out: &Output, wants: &[&str]) {
    let err = stderr(out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    for want in wants {
        assert!(err.contains(want), "want {want:?} in:\n{err}");
    }
}

#[test]
fn deeply_nested_yaml_files_are_refused_quickly_naming_file_and_limit() {
    let dir = scratch("deep");
    let deep = format!("metadata:\n  name: {}\n", "[".repeat(200_000));
    let bad = write(&dir, "deep.yaml", &deep);
    let job = example_path("kep-3329-ignore-disruption/job.yaml");
    let pods = example_path("kep-3329-ignore-disruption/pods.yaml");
    let sim_job = example_path("simulate/extended-backoff/job.yaml");
    let jobset = example_path("jobset-restart-within-budget/jobset.yaml");
    let cases: Vec<Vec<&str>> = vec![
        vec!["validate", &bad],
        vec!["decide", "--job", &bad, "--now", NOW],
        vec!["decide", "--job", &job, "--pods", &bad, "--now", NOW],
        vec!["simulate", "--job", &sim_job, "--script", &bad],
        vec!["jobset", "decide", "--jobset", &bad, "--now", NOW],
        vec![
            "jobset", "decide", "--jobset", &jobset, "--jobs", &bad, "--now", NOW,
        ],
    ];
    for args in cases {
        let out = run(&args);
        assert_bad_input(&out, &["deep.yaml", "nested more than 100 levels"]);
    }
    // A failure policy document from a file is the server's reader: named by its field
    // (under its 32 KiB cap, which is checked first).
    let policy = write(
        &dir,
        "policy.yaml",
        &format!("rules: {}", "[".repeat(30_000)),
    );
    let out = run(&[
        "decide",
        "--job",
        &job,
        "--pods",
        &pods,
        "--failure-policy",
        &policy,
        "--now",
        NOW,
    ]);
    assert_bad_input(&out, &["failurePolicy", "nested more than 100 levels"]);
}

#[test]
fn a_yaml_file_over_the_whole_read_cap_is_refused_naming_file_cap_and_json() {
    let dir = scratch("cap");
    // Comments: cheap to parse, so only the cap can refuse it.
    let line = format!("# {}\n", "x".repeat(1021));
    let big = line.repeat(MAX_WHOLE_FILE_BYTES / 1024 + 1);
    let pods = write(&dir, "big-pods.yaml", &big);
    let job = example_path("kep-3329-ignore-disruption/job.yaml");
    let out = run(&["decide", "--job", &job, "--pods", &pods, "--now", NOW]);
    assert_bad_input(
        &out,
        &[
            "big-pods.yaml",
            &format!("at most {MAX_WHOLE_FILE_BYTES} are read"),
            "JSON PodList",
        ],
    );
}

#[test]
fn a_key_given_twice_is_refused_naming_its_path_and_key() {
    let dir = scratch("dup");
    let yaml = write(
        &dir,
        "job.yaml",
        "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: a\n  namespace: default\n  name: b\n",
    );
    let out = run(&["validate", &yaml]);
    assert_bad_input(
        &out,
        &["job.yaml: metadata: the key \"name\" is given twice"],
    );
    let json = write(
        &dir,
        "pods.json",
        r#"{"kind":"PodList","items":[{"metadata":{"name":"a"}},{"metadata":{"name":"a","labels":{"x":"1","x":"2"}}}]}"#,
    );
    let job = example_path("kep-3329-ignore-disruption/job.yaml");
    let out = run(&["decide", "--job", &job, "--pods", &json, "--now", NOW]);
    assert_bad_input(
        &out,
        &["pods.json: items[1].metadata.labels: the key \"x\" is given twice"],
    );
    let top = write(&dir, "top.json", r#"{"kind":"Job","kind":"Job"}"#);
    let out = run(&["validate", &top]);
    assert_bad_input(&out, &["top.json: the key \"kind\" is given twice"]);
}

#[test]
fn numbers_that_are_not_finite_are_refused_naming_the_field() {
    let dir = scratch("nan");
    for value in [".nan", ".inf", "-.inf", "1e400"] {
        let job = write(
            &dir,
            "job.yaml",
            &format!(
                "apiVersion: batch/v1\nkind: Job\nmetadata: {{name: a, namespace: default}}\nspec:\n  backoffLimit: {value}\n"
            ),
        );
        let out = run(&["validate", &job]);
        // serde_yaml reads `1e400` as a string, which the integer reader already refused.
        let finite = if value == "1e400" { "" } else { "finite" };
        assert_bad_input(&out, &["job.yaml: spec.backoffLimit:", finite]);
    }
}

#[test]
fn escape_sequences_from_the_input_are_printed_escaped() {
    let dir = scratch("esc");
    // An unknown field's name is quoted in the error.
    let bad_job = write(
        &dir,
        "job.yaml",
        "apiVersion: batch/v1\nkind: Job\nmetadata: {name: a, namespace: default}\nspec:\n  \"x\\e]0;owned\\a\\e[2J\": 1\n",
    );
    let out = run(&["validate", &bad_job]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(!err.contains('\x1b') && !err.contains('\x07'), "{err:?}");
    assert!(err.contains("x\\u{1b}]0;owned\\u{7}\\u{1b}[2J"), "{err}");
    // A pod's name is printed by `decide -o text`.
    let example = std::fs::read_to_string(example_path("kep-3329-ignore-disruption/pods.yaml"))
        .expect("pods");
    let pods = write(
        &dir,
        "pods.yaml",
        &example.replacen(
            "name: job-pod-failure-policy-ignore-7bdxm",
            "name: \"job-pod\\e[31m\\u202E-7bdxm\"",
            1,
        ),
    );
    let job = example_path("kep-3329-ignore-disruption/job.yaml");
    let out = run(&[
        "decide", "--job", &job, "--pods", &pods, "--now", NOW, "-o", "text",
    ]);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        !text.contains('\x1b') && !text.contains('\u{202e}'),
        "{text:?}"
    );
    assert!(text.contains("job-pod\\u{1b}[31m\\u{202e}-7bdxm"), "{text}");
    // The script's description is printed by `simulate -o text`.
    let script = write(
        &dir,
        "script.yaml",
        "description: \"red \\e[31m and \\u202E reversed\"\nattempts:\n- {attempt: 1, exitCode: 1, runTime: 5s}\n",
    );
    let sim_job = example_path("simulate/extended-backoff/job.yaml");
    let out = run(&["simulate", "--job", &sim_job, "--script", &script]);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        !text.contains('\x1b') && !text.contains('\u{202e}'),
        "{text:?}"
    );
    assert!(
        text.contains("red \\u{1b}[31m and \\u{202e} reversed"),
        "{text}"
    );
}

#[test]
fn a_bidi_override_in_the_html_report_is_escaped() {
    let dir = scratch("bidi");
    let script = write(
        &dir,
        "script.yaml",
        "description: \"invoice \\u202Efdp.exe\"\nattempts:\n- {attempt: 1, exitCode: 1, runTime: 5s}\n",
    );
    let html = dir.join("report.html");
    let sim_job = example_path("simulate/extended-backoff/job.yaml");
    let out = run(&[
        "simulate",
        "--job",
        &sim_job,
        "--script",
        &script,
        "--html",
        html.to_str().expect("utf-8 path"),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let page = std::fs::read_to_string(&html).expect("report");
    assert!(!page.contains('\u{202e}'), "U+202E in the report");
    assert!(page.contains("invoice \\u{202e}fdp.exe"));
}

fn violations(status: &tonic::Status) -> Vec<(String, String)> {
    status
        .get_error_details()
        .bad_request()
        .map(|b| {
            b.field_violations
                .iter()
                .map(|v| (v.field.clone(), v.description.clone()))
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test]
async fn a_deeply_nested_failure_policy_document_is_invalid_argument_naming_field_and_limit() {
    let server = TestServer::start(ServerConfig::default()).await;
    let mut client = server.client().await;
    for document in [
        "[".repeat(32 * 1024 - 1),
        format!("rules: {}", "{a: ".repeat(8000)),
    ] {
        let mut request = fixtures::realistic_request(2);
        request.failure_policy = document;
        let status = client.decide_job(request).await.expect_err("refused");
        assert_eq!(status.code(), Code::InvalidArgument);
        let found = violations(&status);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].0, "failurePolicy");
        assert!(
            found[0].1.contains("nested more than 100 levels"),
            "{found:?}"
        );
    }
    // A key given twice in the document is refused too (serde_yaml's mapping does).
    let mut request = fixtures::realistic_request(2);
    request.failure_policy =
        "apiVersion: job-decider.dev/v1alpha1\nkind: FailurePolicy\nkind: FailurePolicy\n".into();
    let status = client.decide_job(request).await.expect_err("refused");
    assert_eq!(status.code(), Code::InvalidArgument);
    let found = violations(&status);
    assert!(
        found
            .iter()
            .any(|(f, d)| f == "failurePolicy" && d.contains("kind")),
        "{found:?}"
    );
}
