//! `--from-cluster` and the kubectl plugin name, on the built binary: the
//! argument rules, the errors without a cluster, and the read itself against a
//! small fake API server (the e2e suite runs it against a real kube-apiserver).

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

const BIN: &str = env!("CARGO_BIN_EXE_job-decider");
const NOW: &str = "2025-06-02T10:00:00Z";
const EXAMPLE: &str = "examples/kep-3329-failjob-exit-code-42";

/// Runs `bin` with `args` and the environment changes `env` (a `None` value unsets).
fn run_with(bin: &Path, args: &[&str], env: &[(&str, Option<&str>)]) -> Output {
    let mut cmd = Command::new(bin);
    cmd.args(args);
    for (key, value) in env {
        match value {
            Some(v) => cmd.env(key, v),
            None => cmd.env_remove(key),
        };
    }
    // In a pod, kube-rs would fall back to the service account, and a proxy
    // in the environment would carry the calls to loopback: neither here.
    for key in ["KUBERNETES_SERVICE_HOST", "HTTPS_PROXY", "https_proxy"] {
        cmd.env_remove(key);
    }
    cmd.output().expect("run job-decider")
}

fn run(args: &[&str]) -> Output {
    run_with(Path::new(BIN), args, &[])
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Requires exit code `code` and an error naming each of `wants`.
fn expect_error(out: &Output, code: i32, wants: &[&str]) {
    let err = stderr(out);
    assert_eq!(out.status.code(), Some(code), "{err}");
    for want in wants {
        assert!(err.contains(want), "stderr does not say {want:?}:\n{err}");
    }
}

fn read_json(path: &str) -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(path);
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
}

#[test]
fn from_cluster_and_files_are_exclusive_usage_errors() {
    let job = format!("{EXAMPLE}/job.json");
    for (args, wants) in [
        (
            vec!["decide", "--from-cluster", "--job", &job, "pi"],
            vec!["--from-cluster", "cannot be used with --job"],
        ),
        (
            vec!["decide", "--from-cluster", "--pods", &job, "pi"],
            vec!["cannot be used with --job or --pods"],
        ),
        (vec!["decide", "--from-cluster"], vec!["<NAME>"]),
        (vec!["request", "--from-cluster"], vec!["<NAME>"]),
        // A name alone, or cluster flags with files, ask for --from-cluster.
        (vec!["decide", "pi"], vec!["--from-cluster"]),
        (
            vec!["decide", "--job", &job, "-n", "ns"],
            vec!["--from-cluster"],
        ),
        (
            vec!["decide", "--job", &job, "--context", "c"],
            vec!["--from-cluster"],
        ),
        (vec!["validate", "-n", "ns", &job], vec!["--from-cluster"]),
        // simulate: the same rules, and no --compare (the live pods are the first Job's).
        (
            vec![
                "simulate",
                "--from-cluster",
                "--job",
                &job,
                "--script",
                &job,
                "pi",
            ],
            vec!["cannot be used with --job or --pods"],
        ),
        (
            vec![
                "simulate",
                "--from-cluster",
                "--script",
                &job,
                "--compare",
                &job,
                "pi",
            ],
            vec!["--compare cannot be used with --from-cluster"],
        ),
        (
            vec!["simulate", "--from-cluster", "--script", &job],
            vec!["<NAME>"],
        ),
        (
            vec!["simulate", "--script", &job, "pi"],
            vec!["--from-cluster"],
        ),
        // JobSets have no --from-cluster.
        (
            vec!["jobset", "validate", "--from-cluster", "js"],
            vec!["--from-cluster"],
        ),
    ] {
        let out = run(&args);
        assert!(out.stdout.is_empty(), "{args:?}");
        expect_error(&out, 2, &wants);
    }
}

#[test]
fn without_a_kubeconfig_the_error_says_where_one_is_looked_for() {
    let home = tempfile::tempdir().unwrap();
    let out = run_with(
        Path::new(BIN),
        &["decide", "--from-cluster", "pi"],
        &[
            ("KUBECONFIG", None),
            ("HOME", Some(home.path().to_str().unwrap())),
        ],
    );
    expect_error(
        &out,
        2,
        &["no cluster to read from", "KUBECONFIG", "--kubeconfig"],
    );
    let out = run(&[
        "validate",
        "--from-cluster",
        "--kubeconfig",
        "/nonexistent/kubeconfig",
        "pi",
    ]);
    expect_error(
        &out,
        2,
        &["--kubeconfig /nonexistent/kubeconfig", "No such file"],
    );
}

/// A kubeconfig whose one context points at `server`, with no credentials.
fn kubeconfig(dir: &Path, server: &str) -> PathBuf {
    let path = dir.join("kubeconfig");
    let text = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: {server}\n\
         users:\n- name: u\n  user: {{}}\ncontexts:\n- name: ctx\n  context:\n    cluster: c\n    user: u\n    namespace: default\n\
         current-context: ctx\n"
    );
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn an_unreachable_api_server_is_a_failure_not_bad_input() {
    let dir = tempfile::tempdir().unwrap();
    // A port just released: nothing listens there.
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let config = kubeconfig(dir.path(), &format!("http://127.0.0.1:{port}"));
    let out = run(&[
        "decide",
        "--from-cluster",
        "--kubeconfig",
        config.to_str().unwrap(),
        "pi",
    ]);
    expect_error(&out, 1, &["cannot reach http://127.0.0.1:", "refused"]);
    assert_eq!(stderr(&out).lines().count(), 1, "{}", stderr(&out));
}

/// A fake API server on loopback: the example's Job, and the namespace's pods
/// in two pages (the Job's own, an orphan it selects, another owner's pod and
/// an unrelated one). It records the request lines it answers.
struct FakeApiServer {
    url: String,
    requests: Arc<Mutex<Vec<String>>>,
}

impl FakeApiServer {
    fn start(job: Value, pages: Vec<Vec<Value>>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let requests = Arc::new(Mutex::new(Vec::new()));
        let seen = Arc::clone(&requests);
        let job_path = format!(
            "/apis/batch/v1/namespaces/default/jobs/{}",
            job["metadata"]["name"].as_str().unwrap()
        );
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { return };
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut request_line = String::new();
                if reader.read_line(&mut request_line).is_err() {
                    continue;
                }
                // The headers, up to the blank line (GETs have no body).
                let mut line = String::new();
                while reader.read_line(&mut line).is_ok_and(|n| n > 2) {
                    line.clear();
                }
                let target = request_line.split(' ').nth(1).unwrap_or("").to_string();
                seen.lock().unwrap().push(target.clone());
                let (path, query) = target.split_once('?').unwrap_or((&target, ""));
                let (status, body) = if path == job_path {
                    ("200 OK", job.clone())
                } else if path == "/api/v1/namespaces/default/pods" {
                    let page: usize = query
                        .split('&')
                        .find_map(|kv| kv.strip_prefix("continue=page-"))
                        .map_or(0, |n| n.parse().unwrap());
                    let next = (page + 1 < pages.len()).then(|| format!("page-{}", page + 1));
                    (
                        "200 OK",
                        json!({"kind": "PodList", "apiVersion": "v1",
                               "metadata": {"resourceVersion": "7", "continue": next},
                               "items": pages[page]}),
                    )
                } else {
                    (
                        "404 Not Found",
                        json!({"kind": "Status", "apiVersion": "v1", "status": "Failure",
                               "message": "not found", "reason": "NotFound", "code": 404}),
                    )
                };
                let body = body.to_string();
                let _ = write!(
                    stream,
                    "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
            }
        });
        FakeApiServer { url, requests }
    }
}

/// The example's Job and its three pods, plus an orphan the Job selects,
/// a pod another controller owns and an unrelated pod, over two pages.
fn example_cluster() -> (Value, Vec<Vec<Value>>, Vec<Value>) {
    let job = read_json(&format!("{EXAMPLE}/job.json"));
    let pods = read_json(&format!("{EXAMPLE}/pods.json"))["items"]
        .as_array()
        .unwrap()
        .clone();
    let renamed = |pod: &Value, name: &str, uid: &str| {
        let mut pod = pod.clone();
        pod["metadata"]["name"] = json!(name);
        pod["metadata"]["uid"] = json!(uid);
        pod
    };
    let mut orphan = renamed(&pods[2], "orphan", "0a000000-0000-0000-0000-000000000001");
    orphan["metadata"]
        .as_object_mut()
        .unwrap()
        .remove("ownerReferences");
    let mut foreign = renamed(&pods[1], "foreign", "0a000000-0000-0000-0000-000000000002");
    foreign["metadata"]["ownerReferences"][0]["uid"] =
        json!("0a000000-0000-0000-0000-0000000000ff");
    foreign["metadata"]["ownerReferences"][0]["kind"] = json!("ReplicaSet");
    let mut unrelated = renamed(&orphan, "unrelated", "0a000000-0000-0000-0000-000000000003");
    unrelated["metadata"]["labels"] = json!({"app": "web"});
    let pages = vec![
        vec![pods[0].clone(), foreign],
        vec![pods[1].clone(), unrelated, pods[2].clone(), orphan.clone()],
    ];
    let expected = vec![pods[0].clone(), pods[1].clone(), pods[2].clone(), orphan];
    (job, pages, expected)
}

#[test]
fn reads_the_job_and_the_pods_its_controller_would_consider_page_by_page() {
    let (job, pages, expected) = example_cluster();
    let server = FakeApiServer::start(job, pages);
    let dir = tempfile::tempdir().unwrap();
    let config = kubeconfig(dir.path(), &server.url);
    let config = config.to_str().unwrap();
    let name = "job-pod-failure-policy-example";

    let out = run(&["request", "--from-cluster", "--kubeconfig", config, name]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let request: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let names: Vec<&str> = request["pods"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["metadata"]["name"].as_str().unwrap())
        .collect();
    let want: Vec<&str> = expected
        .iter()
        .map(|p| p["metadata"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, want);
    let requests = server.requests.lock().unwrap().clone();
    let pod_lists: Vec<&String> = requests.iter().filter(|r| r.contains("/pods")).collect();
    assert_eq!(pod_lists.len(), 2, "{requests:?}");
    assert!(
        pod_lists.iter().all(|r| r.contains("limit=500")),
        "{requests:?}"
    );
    assert!(pod_lists[1].contains("continue=page-1"), "{requests:?}");

    // The same plan as from files holding the same objects.
    let pods_file = dir.path().join("pods.json");
    std::fs::write(
        &pods_file,
        json!({"apiVersion": "v1", "kind": "List", "items": expected}).to_string(),
    )
    .unwrap();
    let job_file = format!("{}/{EXAMPLE}/job.json", env!("CARGO_MANIFEST_DIR"));
    let from_files = run(&[
        "decide",
        "--job",
        &job_file,
        "--pods",
        pods_file.to_str().unwrap(),
        "--now",
        NOW,
        "-o",
        "json",
    ]);
    let live = run(&[
        "decide",
        "--from-cluster",
        "--kubeconfig",
        config,
        name,
        "--now",
        NOW,
        "-o",
        "json",
    ]);
    assert_eq!(live.status.code(), Some(0), "{}", stderr(&live));
    assert_eq!(stdout(&live), stdout(&from_files));
    assert!(stdout(&live).contains("adoptPods"), "{}", stdout(&live));

    // A Job the server does not have is bad input, as a missing file is.
    let out = run(&["decide", "--from-cluster", "--kubeconfig", config, "nope"]);
    expect_error(&out, 2, &[r#"job "nope" not found in namespace "default""#]);
}

#[cfg(unix)]
#[test]
fn as_kubectl_job_decider_the_binary_reads_from_the_cluster() {
    let (job, pages, _) = example_cluster();
    let server = FakeApiServer::start(job, pages);
    let dir = tempfile::tempdir().unwrap();
    let config = kubeconfig(dir.path(), &server.url);
    let plugin = dir.path().join("kubectl-job_decider");
    std::os::unix::fs::symlink(BIN, &plugin).unwrap();
    let env = [("KUBECONFIG", Some(config.to_str().unwrap()))];

    let out = run_with(&plugin, &["decide", "job-pod-failure-policy-example"], &env);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).contains("FailureTarget"), "{}", stdout(&out));
    let out = run_with(
        &plugin,
        &["validate", "job-pod-failure-policy-example"],
        &env,
    );
    assert_eq!(
        stdout(&out),
        "job default/job-pod-failure-policy-example: valid\n"
    );
    // simulate plays the live Job's future.
    let script = dir.path().join("script.yaml");
    std::fs::write(&script, "defaults: {runTime: 1h}\n").unwrap();
    let out = run_with(
        &plugin,
        &[
            "simulate",
            "--script",
            script.to_str().unwrap(),
            "job-pod-failure-policy-example",
        ],
        &env,
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("Job default/job-pod-failure-policy-example from"),
        "{}",
        stdout(&out)
    );
    assert!(
        stdout(&out).contains("Result:            Failed"),
        "{}",
        stdout(&out)
    );
    // Files still work under the plugin's name, and usage names the plugin.
    let job_file = format!("{}/{EXAMPLE}/job.json", env!("CARGO_MANIFEST_DIR"));
    let out = run_with(&plugin, &["decide", "--job", &job_file, "--now", NOW], &env);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let out = run_with(&plugin, &["decide", "--help"], &env);
    assert!(
        stdout(&out).contains("Usage: kubectl job-decider decide"),
        "{}",
        stdout(&out)
    );
}

/// `simulate -o json`'s timeline.
fn timeline(out: &Output) -> Value {
    assert_eq!(out.status.code(), Some(0), "{}", stderr(out));
    serde_json::from_str(&stdout(out)).unwrap()
}

/// The example Job's timeline under `script` from files, with `pods` in a List
/// written to `dir`, starting at [`NOW`].
fn simulate_from_files(dir: &Path, pods: &[Value], script: &str) -> Value {
    let pods_file = dir.join("pods.json");
    std::fs::write(
        &pods_file,
        json!({"apiVersion": "v1", "kind": "List", "items": pods}).to_string(),
    )
    .unwrap();
    let job_file = format!("{}/{EXAMPLE}/job.json", env!("CARGO_MANIFEST_DIR"));
    timeline(&run(&[
        "simulate",
        "--job",
        &job_file,
        "--pods",
        pods_file.to_str().unwrap(),
        "--script",
        script,
        "--start",
        NOW,
        "-o",
        "json",
    ]))
}

#[test]
fn simulate_from_cluster_plays_the_future_from_the_jobs_current_state() {
    let (job, pages, expected) = example_cluster();
    let server = FakeApiServer::start(job.clone(), pages);
    let dir = tempfile::tempdir().unwrap();
    let config = kubeconfig(dir.path(), &server.url);
    let config = config.to_str().unwrap();
    let name = "job-pod-failure-policy-example";
    let script = dir.path().join("script.yaml");
    // The running pods outlast the verdict: their run time is no matter here.
    std::fs::write(&script, "defaults: {runTime: 1h}\n").unwrap();
    let script = script.to_str().unwrap();

    // The same timeline as from files holding the same objects, at the same start.
    let from_files = simulate_from_files(dir.path(), &expected, script);
    let live = timeline(&run(&[
        "simulate",
        "--from-cluster",
        "--kubeconfig",
        config,
        "--script",
        script,
        "--start",
        NOW,
        "-o",
        "json",
        name,
    ]));
    assert_eq!(live, from_files);
    // The failure already there (exit 42, a FailJob rule) fails the Job at once.
    assert_eq!(live["summary"]["result"], "Failed");
    assert_eq!(live["summary"]["podsCreated"], 0);
    // That failure, there before the start, is the one that failed the Job.
    assert_eq!(live["attempts"][0]["ending"], "failedTheJobOrIndex");
    assert_eq!(
        (
            &live["attempts"][0]["startedMs"],
            &live["attempts"][0]["endedMs"]
        ),
        (&json!(-117_000), &json!(-112_000))
    );
    assert_eq!(live["attempts"][1]["ending"], "deleted");
    assert_eq!(
        live["attempts"].as_array().map(Vec::len),
        Some(expected.len())
    );

    // Without --start, the future starts now.
    let before = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let live = timeline(&run(&[
        "simulate",
        "--from-cluster",
        "--kubeconfig",
        config,
        "--script",
        script,
        "-o",
        "json",
        name,
    ]));
    let start: k8s_openapi::jiff::Timestamp = live["start"].as_str().unwrap().parse().unwrap();
    let start = u64::try_from(start.as_second()).unwrap();
    assert!(start + 1 >= before, "{start} < {before}");
    // The pods' own times keep their places before it.
    let failed = &live["attempts"][0];
    assert!(failed["endedMs"].as_i64().unwrap() < 0, "{failed}");
}

#[test]
fn simulate_from_cluster_runs_live_pods_for_the_scripts_run_time_from_now() {
    let (job, _, expected) = example_cluster();
    // Only the two running pods: the Job runs on.
    let running = vec![expected[1].clone(), expected[2].clone()];
    let server = FakeApiServer::start(job, vec![running.clone()]);
    let dir = tempfile::tempdir().unwrap();
    let config = kubeconfig(dir.path(), &server.url);
    let script = dir.path().join("script.yaml");
    std::fs::write(&script, "defaults: {runTime: 2m}\n").unwrap();
    let script = script.to_str().unwrap();
    let live = timeline(&run(&[
        "simulate",
        "--from-cluster",
        "--kubeconfig",
        config.to_str().unwrap(),
        "--script",
        script,
        "--start",
        NOW,
        "-o",
        "json",
        "job-pod-failure-policy-example",
    ]));
    // Started at 09:58:03, 117 s before the start; each runs 2m more from now.
    for k in 0..2 {
        let a = &live["attempts"][k];
        assert_eq!(a["startedMs"], -117_000, "{a}");
        assert_eq!(a["endedMs"], 120_000, "{a}");
        assert_eq!(a["ending"], "succeeded", "{a}");
    }
    // From a file, a snapshot keeps its start times: the same pods are overdue and end
    // about at once.
    let from_files = simulate_from_files(dir.path(), &running, script);
    let ended = from_files["attempts"][0]["endedMs"].as_i64().unwrap();
    assert!(ended < 120_000, "{ended}");
}

// Issue 22, item 9: the API server is not trusted for size or length.

/// How a hostile API server answers the pod list (the Job itself it answers
/// well, unless `job_too` says otherwise).
#[derive(Clone, Copy)]
enum Hostile {
    /// Every page says "continue from `again`".
    RepeatedToken,
    /// An answer that never ends, sent as fast as the client reads.
    EndlessBody,
    /// One byte every second, for ever (the Job's answer too).
    Dribble,
}

/// A fake API server that answers the pod list (and, when dribbling, the Job) as `how` says.
fn hostile_api_server(how: Hostile) -> String {
    let job = read_json(&format!("{EXAMPLE}/job.json"));
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let job = job.clone();
            std::thread::spawn(move || {
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut request_line = String::new();
                if reader.read_line(&mut request_line).is_err() {
                    return;
                }
                let mut line = String::new();
                while reader.read_line(&mut line).is_ok_and(|n| n > 2) {
                    line.clear();
                }
                let pods = request_line.contains("/pods");
                let head =
                    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n";
                match how {
                    Hostile::RepeatedToken if pods => {
                        let body = json!({"kind": "PodList", "apiVersion": "v1",
                            "metadata": {"resourceVersion": "7", "continue": "again"}, "items": []})
                        .to_string();
                        let _ =
                            write!(stream, "{head}Content-Length: {}\r\n\r\n{body}", body.len());
                    }
                    Hostile::EndlessBody if pods => {
                        let _ = write!(stream, "{head}\r\n{{\"kind\": \"PodList\", \"items\": [");
                        let spaces = vec![b' '; 64 * 1024];
                        while stream.write_all(&spaces).is_ok() {}
                    }
                    Hostile::Dribble => {
                        let _ = write!(stream, "{head}\r\n");
                        while stream.write_all(b" ").and_then(|()| stream.flush()).is_ok() {
                            std::thread::sleep(std::time::Duration::from_secs(1));
                        }
                    }
                    _ => {
                        let body = job.to_string();
                        let _ =
                            write!(stream, "{head}Content-Length: {}\r\n\r\n{body}", body.len());
                    }
                }
            });
        }
    });
    url
}

/// Runs the binary, killing it (and failing) if it still runs after `limit`.
fn run_within(args: &[&str], limit: std::time::Duration) -> Output {
    let mut cmd = Command::new(BIN);
    cmd.args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    for key in ["KUBERNETES_SERVICE_HOST", "HTTPS_PROXY", "https_proxy"] {
        cmd.env_remove(key);
    }
    let mut child = cmd.spawn().expect("run job-decider");
    let started = std::time::Instant::now();
    while child.try_wait().expect("wait").is_none() {
        if started.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{args:?} still ran after {limit:?}");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    child.wait_with_output().expect("output")
}

/// `decide --from-cluster` against a hostile server, within `limit`.
fn decide_against(how: Hostile, extra: &[&str], limit: std::time::Duration) -> Output {
    let url = hostile_api_server(how);
    let dir = tempfile::tempdir().unwrap();
    let config = kubeconfig(dir.path(), &url);
    let mut args = vec![
        "decide",
        "--from-cluster",
        "--kubeconfig",
        config.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    args.push("job-pod-failure-policy-example");
    run_within(&args, limit)
}

#[test]
fn a_repeated_continue_token_ends_the_pod_list_with_an_error() {
    let out = decide_against(
        Hostile::RepeatedToken,
        &[],
        std::time::Duration::from_secs(20),
    );
    expect_error(&out, 1, &["continue token \"again\" a second time"]);
}

#[test]
fn an_endless_answer_is_cut_at_its_byte_bound() {
    let out = decide_against(
        Hostile::EndlessBody,
        &[],
        std::time::Duration::from_secs(30),
    );
    expect_error(&out, 1, &["an answer of more than 67108864 bytes"]);
}

#[test]
fn a_dribbling_api_server_meets_one_deadline_for_the_whole_read() {
    let started = std::time::Instant::now();
    let out = decide_against(
        Hostile::Dribble,
        &["--request-timeout", "3s"],
        std::time::Duration::from_secs(20),
    );
    expect_error(&out, 1, &["did not answer in 3s", "--request-timeout"]);
    assert!(started.elapsed() < std::time::Duration::from_secs(10));
}
