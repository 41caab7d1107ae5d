//! What operators read: the metric families a live server serves (names,
//! labels, counters that move) against the list the dashboard is checked
//! with, and the binary's log lines (plain text off a terminal, no per-call
//! lines at INFO, no `Some(…)` in fields).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use job_decider::server::ServerConfig;
use job_decider::server::metrics;
use job_decider::server::process;
use job_decider_api::pb;

use crate::common::{TestServer, example_request, small_request};

const BIN: &str = env!("CARGO_BIN_EXE_job-decider");

/// Families and their labels, as deploy/grafana/metrics-server.txt lists them.
type Families = BTreeMap<String, BTreeSet<String>>;

/// The families listed in deploy/grafana/metrics-server.txt, with their labels.
fn listed_families() -> Families {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/grafana/metrics-server.txt");
    std::fs::read_to_string(path)
        .expect("metrics list")
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| {
            let mut words = l.split_whitespace().map(str::to_string);
            let name = words.next().unwrap_or_default();
            (name, words.collect())
        })
        .collect()
}

/// The families of a scrape (from its `# TYPE` lines) and the label names
/// their samples carry, `le` aside.
fn families(text: &str) -> Families {
    let mut out: Families = text
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .filter_map(|l| l.split_whitespace().next())
        .map(|name| (name.to_string(), BTreeSet::new()))
        .collect();
    for line in text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
    {
        let end = line.find(['{', ' ']).unwrap_or(line.len());
        let series = &line[..end];
        let family = ["_bucket", "_sum", "_count", ""]
            .iter()
            .filter_map(|suffix| series.strip_suffix(suffix))
            .find(|base| out.contains_key(*base))
            .unwrap_or_else(|| panic!("sample of no family: {line}"))
            .to_string();
        let labels = line[end..]
            .strip_prefix('{')
            .and_then(|rest| rest.split('}').next())
            .unwrap_or_default();
        let names = out.entry(family).or_default();
        for pair in labels.split("\",").filter(|p| !p.is_empty()) {
            let name = pair.split('=').next().unwrap_or_default().trim_matches(',');
            if name != "le" {
                names.insert(name.to_string());
            }
        }
    }
    out
}

/// The value of the sample whose name and labels are exactly `series`.
fn value(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .filter_map(|l| l.strip_prefix(series))
        .filter_map(|rest| rest.strip_prefix(' '))
        .find_map(|v| v.trim().parse().ok())
}

fn jobset_request() -> pb::DecideJobSetRequest {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/vectors/jobset/kep-story1-failjobset-on-pod-failure-policy.yaml");
    let doc: serde_json::Value =
        serde_yaml::from_str(&std::fs::read_to_string(path).expect("vector")).expect("yaml");
    serde_json::from_value(doc["request"].clone()).expect("request")
}

const HANDLED_OK: &str = "grpc_server_handled_total{grpc_type=\"unary\",grpc_service=\"jobdecider.v1.JobDecider\",grpc_method=\"DecideJob\",grpc_code=\"OK\"}";
const HANDLED_INVALID: &str = "grpc_server_handled_total{grpc_type=\"unary\",grpc_service=\"jobdecider.v1.JobDecider\",grpc_method=\"DecideJob\",grpc_code=\"INVALID_ARGUMENT\"}";
const STARTED: &str = "grpc_server_started_total{grpc_type=\"unary\",grpc_service=\"jobdecider.v1.JobDecider\",grpc_method=\"DecideJob\"}";
const HANDLING_COUNT: &str = "grpc_server_handling_seconds_count{grpc_type=\"unary\",grpc_service=\"jobdecider.v1.JobDecider\",grpc_method=\"DecideJob\"}";
const REQUESTS_OK: &str = "job_decider_grpc_requests_total{method=\"DecideJob\",code=\"OK\"}";

/// Every family the server serves is in the dashboard's list and every listed
/// family is served; the names the code declares are the listed ones too.
#[tokio::test]
async fn a_live_server_serves_exactly_the_listed_metric_families() {
    let server = TestServer::start(ServerConfig::default()).await;
    let mut client = server.client().await;
    client
        .decide_job(example_request("indexed-job-mid-run"))
        .await
        .expect("decided");
    client
        .decide_job_set(jobset_request())
        .await
        .expect("jobset decided");
    let text = server.scrape().await;
    let listed = listed_families();
    let served = families(&text);
    assert_eq!(
        served, listed,
        "served (left) and deploy/grafana/metrics-server.txt (right) differ:\n{text}"
    );
    let declared: BTreeSet<String> = metrics::NAMES
        .iter()
        .chain(process::NAMES.iter())
        .map(|n| n.to_string())
        .collect();
    assert_eq!(declared, listed.keys().cloned().collect());
    // Everything is under the project's prefix, the gRPC names or the process names.
    for family in served.keys() {
        assert!(
            ["job_decider_", "grpc_server_", "process_"]
                .iter()
                .any(|p| family.starts_with(p)),
            "{family}"
        );
        assert!(!family.starts_with("job_decider_shim_"), "{family}");
    }
}

/// The standard gRPC series carry the labels dashboards group by, and they
/// move with the calls, as the project's own counter does.
#[tokio::test]
async fn grpc_server_counters_move_with_calls_and_carry_standard_labels() {
    let server = TestServer::start(ServerConfig::default()).await;
    let mut client = server.client().await;
    // Warm up: the labelled series appear on their first call.
    client.decide_job(small_request()).await.expect("decided");
    let mut bad = small_request();
    bad.now = None;
    client.decide_job(bad.clone()).await.expect_err("no now");
    let before = server.scrape().await;

    client.decide_job(small_request()).await.expect("decided");
    client.decide_job(small_request()).await.expect("decided");
    client.decide_job(bad).await.expect_err("no now");
    let after = server.scrape().await;

    // Other tests in this process share the recorder: counters grow by at least ours.
    for (series, calls) in [
        (HANDLED_OK, 2.0),
        (HANDLED_INVALID, 1.0),
        (STARTED, 3.0),
        (HANDLING_COUNT, 3.0),
        (REQUESTS_OK, 2.0),
    ] {
        let was = value(&before, series).unwrap_or_else(|| panic!("{series} in:\n{before}"));
        let is = value(&after, series).unwrap_or_else(|| panic!("{series} in:\n{after}"));
        assert!(is - was >= calls, "{series}: {was} -> {is}");
    }
    // The handling histogram has the latency buckets, ending in +Inf.
    assert!(
        after.contains("grpc_server_handling_seconds_bucket{grpc_type=\"unary\",grpc_service=\"jobdecider.v1.JobDecider\",grpc_method=\"DecideJob\",le=\"+Inf\"}"),
        "{after}"
    );
    // One series per method is there from the start, at zero if unused.
    assert!(
        after.contains("grpc_server_started_total{grpc_type=\"unary\",grpc_service=\"jobdecider.v1.JobDecider\",grpc_method=\"ValidateJobSet\"}"),
        "{after}"
    );
}

/// build_info is 1 with the version, a revision and the rustc version.
#[tokio::test]
async fn build_info_names_version_revision_and_rustc() {
    let server = TestServer::start(ServerConfig::default()).await;
    let text = server.scrape().await;
    let line = text
        .lines()
        .find(|l| l.starts_with("job_decider_build_info{"))
        .unwrap_or_else(|| panic!("no build_info in:\n{text}"));
    assert!(line.ends_with("} 1"), "{line}");
    assert!(
        line.contains(&format!("version=\"{}\"", env!("CARGO_PKG_VERSION"))),
        "{line}"
    );
    let label = |name: &str| {
        let start = line.find(&format!("{name}=\"")).expect(name) + name.len() + 2;
        line[start..]
            .split('"')
            .next()
            .unwrap_or_default()
            .to_string()
    };
    let revision = label("revision");
    assert!(
        revision == "unknown"
            || (revision.len() >= 7 && revision.chars().all(|c| c.is_ascii_hexdigit())),
        "{line}"
    );
    let rustc = label("rustc");
    assert!(
        rustc.split('.').take(2).all(|p| p.parse::<u32>().is_ok()),
        "{line}"
    );
}

/// Latency is split by request size: the pods label names the decade.
#[tokio::test]
async fn decision_latency_is_labelled_by_pod_count_range() {
    let server = TestServer::start(ServerConfig::default()).await;
    let mut client = server.client().await;
    let mut request = example_request("indexed-job-mid-run");
    request.pods = crate::common::copies_of(&request.pods[0], 12);
    let before = server.scrape().await;
    let series = "job_decider_decision_duration_seconds_count{pods=\"11-100\"}";
    let was = value(&before, series).unwrap_or(0.0);
    client.decide_job(request).await.expect("decided");
    let after = server.scrape().await;
    let is = value(&after, series).unwrap_or_else(|| panic!("{series} in:\n{after}"));
    assert!(is > was, "{was} -> {is}");
    // Only the bounded set of ranges ever appears.
    for line in after
        .lines()
        .filter(|l| l.starts_with("job_decider_decision_duration_seconds"))
    {
        let range = line
            .split("pods=\"")
            .nth(1)
            .and_then(|r| r.split('"').next())
            .unwrap_or_else(|| panic!("no pods label: {line}"));
        assert!(metrics::POD_RANGES.contains(&range), "{line}");
    }
}

/// The process figures are there and plausible.
#[tokio::test]
async fn process_metrics_describe_this_process() {
    let server = TestServer::start(ServerConfig::default()).await;
    let text = server.scrape().await;
    let get = |name: &str| value(&text, name).unwrap_or_else(|| panic!("{name} in:\n{text}"));
    assert!(get("process_resident_memory_bytes") > 1e6);
    assert!(get("process_open_fds") >= 3.0);
    assert!(get("process_max_fds") >= get("process_open_fds"));
    assert!(get("process_threads") >= 1.0);
    assert!(get("process_cpu_seconds_total") >= 0.0);
    assert!(text.contains("# TYPE process_cpu_seconds_total counter"));
    assert!(get("process_start_time_seconds") > 1_577_836_800.0);
}

/// Runs the binary with `format` and `level`, makes one good and one bad
/// DecideJob call, stops it with SIGTERM and returns what it logged.
async fn serve_and_log(format: &str, level: &str) -> String {
    use std::io::Read;
    let free = || {
        std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("free port")
    };
    let (addr, metrics_addr) = (free(), free());
    let mut child = Command::new(BIN)
        .args(["serve", "--addr", &addr.to_string()])
        .args(["--metrics-addr", &metrics_addr.to_string()])
        .args(["--log-format", format, "--log-level", level])
        .args(["--shutdown-grace", "5s"])
        .env_remove("NO_COLOR")
        // A pipe, not a terminal: no colour whatever the format.
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .expect("spawn serve");
    let deadline = Instant::now() + Duration::from_secs(20);
    let channel = crate::common::connect_when_up(addr).await;
    let mut client = pb::job_decider_client::JobDeciderClient::new(channel);
    client.decide_job(small_request()).await.expect("decided");
    let mut bad = small_request();
    bad.now = None;
    client.decide_job(bad).await.expect_err("no now");
    let kill = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .expect("kill");
    assert!(kill.success());
    loop {
        if child.try_wait().expect("wait").is_some() {
            break;
        }
        assert!(Instant::now() < deadline, "serve did not stop on SIGTERM");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let mut logs = String::new();
    child
        .stderr
        .take()
        .expect("stderr")
        .read_to_string(&mut logs)
        .expect("logs");
    logs
}

/// Regression for issue 16: colour codes in log files, every call at INFO,
/// and `addr=Some(127.0.0.1:9171)`.
#[cfg(unix)]
#[tokio::test]
async fn text_logs_off_a_terminal_are_plain_with_no_call_lines_at_info() {
    let logs = serve_and_log("text", "info").await;
    assert!(!logs.contains('\x1b'), "ANSI escapes in:\n{logs}");
    assert!(!logs.contains("Some("), "{logs}");
    assert!(
        !logs.contains("call finished") && !logs.contains("call failed"),
        "{logs}"
    );
    let metrics_line = logs
        .lines()
        .find(|l| l.contains("metrics listening"))
        .unwrap_or_else(|| panic!("no metrics line in:\n{logs}"));
    assert!(metrics_line.contains("addr=127.0.0.1:"), "{metrics_line}");
    assert!(logs.contains("serving"), "{logs}");
}

/// At DEBUG each call has one line, the failed one with its code and status
/// message; every JSON field is a plain value (no Debug-printed Option) and
/// appears once (the status message once overwrote the line's own message).
#[cfg(unix)]
#[tokio::test]
async fn json_logs_have_one_debug_line_per_call_and_plain_fields() {
    let logs = serve_and_log("json", "info,job_decider=debug").await;
    assert!(!logs.contains('\x1b'), "ANSI escapes in:\n{logs}");
    for line in logs.lines() {
        assert_eq!(line.matches("\"message\":").count(), 1, "{line}");
    }
    let lines: Vec<serde_json::Value> = logs
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    fn plain(value: &serde_json::Value) -> bool {
        match value {
            serde_json::Value::String(s) => !s.starts_with("Some(") && s != "None",
            serde_json::Value::Object(o) => o.values().all(plain),
            serde_json::Value::Array(a) => a.iter().all(plain),
            _ => true,
        }
    }
    for line in &lines {
        assert!(plain(line), "{line}");
    }
    let calls: Vec<&serde_json::Value> = lines
        .iter()
        .filter(|l| l["message"] == "call finished" || l["message"] == "call failed")
        .collect();
    assert_eq!(calls.len(), 2, "{logs}");
    assert!(calls.iter().all(|l| l["level"] == "DEBUG"), "{logs}");
    assert!(
        calls.iter().any(|l| l["code"] == "INVALID_ARGUMENT"
            && l["message"] == "call failed"
            && l["status_message"]
                .as_str()
                .is_some_and(|m| m.contains("now"))),
        "{logs}"
    );
    let metrics_line = lines
        .iter()
        .find(|l| l["message"] == "metrics listening")
        .unwrap_or_else(|| panic!("{logs}"));
    assert!(
        metrics_line["addr"]
            .as_str()
            .is_some_and(|a| a.starts_with("127.0.0.1:")),
        "{metrics_line}"
    );
}
