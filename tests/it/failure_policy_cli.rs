//! The extended failure policy document through the binary: `validate`,
//! `decide` and `request` read it from the Job's annotation or from
//! `--failure-policy FILE` (or `-`), and name a bad one's fields.

use std::path::{Path, PathBuf};
use std::process::Output;

const NOW: &str = "2025-06-02T10:00:00Z";
const ANNOTATION: &str = "job-decider.dev/failure-policy";

const GOOD: &str = "apiVersion: job-decider.dev/v1alpha1\nkind: FailurePolicy\n\
    rules:\n- name: sigkill\n  action: FailJob\n  onExitCodes: {operator: In, signals: [SIGKILL]}\n";
const BAD: &str = "apiVersion: job-decider.dev/v1alpha1\nkind: FailurePolicy\n\
    rules:\n- action: Count\n  onExitCodes: {operator: In, ranges: [\"0-255\"]}\n";

fn example(stem: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("examples/kep-3329-failjob-exit-code-42")
        .join(format!("{stem}.json"))
}

fn run(args: &[&str], stdin: Option<&str>) -> Output {
    crate::common::run_with_stdin(args, stdin.unwrap_or_default().as_bytes())
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The example Job with `document` in its annotation, written to `dir`.
fn annotated_job(dir: &Path, document: &str) -> String {
    let text = std::fs::read_to_string(example("job")).expect("read the example");
    let mut job: serde_json::Value = serde_json::from_str(&text).expect("a JSON Job");
    let metadata = job
        .get_mut("metadata")
        .and_then(|m| m.as_object_mut())
        .expect("metadata");
    let annotations = metadata
        .entry("annotations")
        .or_insert_with(|| serde_json::json!({}));
    annotations[ANNOTATION] = serde_json::Value::String(document.to_string());
    let path = dir.join(format!("job-{}.json", document.len()));
    std::fs::write(&path, serde_json::to_string(&job).expect("json")).expect("write");
    path.to_str().expect("utf-8 path").to_string()
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).expect("write");
    path.to_str().expect("utf-8 path").to_string()
}

#[test]
fn validate_names_a_bad_documents_field_and_exits_2() {
    let dir = tempfile::tempdir().expect("tempdir");
    let job = example("job");
    let job = job.to_str().expect("path");
    let bad_job = annotated_job(dir.path(), BAD);
    let bad = write(dir.path(), "bad.yaml", BAD);
    let cases: Vec<(Vec<&str>, Option<&str>, &str)> = vec![
        (
            vec!["validate", &bad_job],
            None,
            "metadata.annotations[job-decider.dev/failure-policy].rules[0].onExitCodes.ranges[0]",
        ),
        (
            vec!["validate", job, "--failure-policy", &bad],
            None,
            "failurePolicy.rules[0].onExitCodes.ranges[0]",
        ),
        (
            vec!["validate", job, "--failure-policy", "-"],
            Some(BAD),
            "failurePolicy.rules[0].onExitCodes.ranges[0]",
        ),
        (
            vec!["decide", "--job", &bad_job, "--now", NOW],
            None,
            "metadata.annotations[job-decider.dev/failure-policy].rules[0].onExitCodes.ranges[0]",
        ),
        (
            vec![
                "decide",
                "--job",
                job,
                "--now",
                NOW,
                "--failure-policy",
                &bad,
            ],
            None,
            "failurePolicy.rules[0].onExitCodes.ranges[0]",
        ),
    ];
    for (args, stdin, field) in cases {
        let out = run(&args, stdin);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(
            stderr(&out).contains(field),
            "{args:?}: want {field} in {}",
            stderr(&out)
        );
    }
    // Both set, unequal.
    let good_job = annotated_job(dir.path(), GOOD);
    let out = run(&["validate", &good_job, "--failure-policy", &bad], None);
    assert_eq!(out.status.code(), Some(2));
    // Two files on stdin cannot be.
    let out = run(&["validate", "-", "--failure-policy", "-"], Some(GOOD));
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    // An empty file is refused, not read as "no document".
    let empty = write(dir.path(), "empty.yaml", "\n");
    let out = run(&["validate", job, "--failure-policy", &empty], None);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("empty"), "{}", stderr(&out));
}

#[test]
fn a_good_document_validates_from_either_source() {
    let dir = tempfile::tempdir().expect("tempdir");
    let job = example("job");
    let job = job.to_str().expect("path");
    let good = write(dir.path(), "good.yaml", GOOD);
    let good_job = annotated_job(dir.path(), GOOD);
    for (args, stdin) in [
        (vec!["validate", &good_job], None),
        (vec!["validate", job, "--failure-policy", &good], None),
        (vec!["validate", job, "--failure-policy", "-"], Some(GOOD)),
        // The same document in both places is fine.
        (vec!["validate", &good_job, "--failure-policy", &good], None),
    ] {
        let out = run(&args, stdin);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", stderr(&out));
    }
}

#[test]
fn request_carries_the_document_in_its_field() {
    let dir = tempfile::tempdir().expect("tempdir");
    let job = example("job");
    let good = write(dir.path(), "good.yaml", GOOD);
    let out = run(
        &[
            "request",
            "--job",
            job.to_str().expect("path"),
            "--now",
            NOW,
            "--failure-policy",
            &good,
        ],
        None,
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let request: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(request["failurePolicy"], GOOD);
    // Without the flag the request is as it always was: no such field.
    let out = run(
        &[
            "request",
            "--job",
            job.to_str().expect("path"),
            "--now",
            NOW,
        ],
        None,
    );
    let request: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert!(request.get("failurePolicy").is_none(), "{request}");
}

/// A document that asks for nothing (no rules, backoff, timeout or avoidance)
/// decides exactly as no document: the same response, byte for byte.
#[test]
fn an_empty_document_decides_as_none() {
    let dir = tempfile::tempdir().expect("tempdir");
    let job = example("job");
    let pods = example("pods");
    let empty = write(
        dir.path(),
        "empty.yaml",
        "apiVersion: job-decider.dev/v1alpha1\nkind: FailurePolicy\n",
    );
    let base = [
        "decide",
        "--job",
        job.to_str().expect("path"),
        "--pods",
        pods.to_str().expect("path"),
        "--now",
        NOW,
        "-o",
        "json",
    ];
    let without = run(&base, None);
    assert_eq!(without.status.code(), Some(0), "{}", stderr(&without));
    let mut args = base.to_vec();
    args.extend(["--failure-policy", &empty]);
    let with = run(&args, None);
    assert_eq!(with.status.code(), Some(0), "{}", stderr(&with));
    assert!(!without.stdout.is_empty());
    assert_eq!(
        String::from_utf8_lossy(&with.stdout),
        String::from_utf8_lossy(&without.stdout)
    );
}

/// `simulate --failure-policy` plays the Job under the document; `--compare`
/// plays the other Job without it, so one run shows the difference.
#[test]
fn simulate_plays_the_document_and_compares_without_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let base =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/simulate/what-if-oom-and-drain");
    let job = base.join("job.yaml");
    let script = base.join("script.yaml");
    let (job, script) = (job.to_str().expect("path"), script.to_str().expect("path"));
    let doc = write(
        dir.path(),
        "oom.yaml",
        "apiVersion: job-decider.dev/v1alpha1\nkind: FailurePolicy\n\
         rules:\n- name: oom\n  action: FailJob\n  onContainerReasons: {values: [OOMKilled]}\n",
    );
    let with = run(
        &[
            "simulate",
            "--job",
            job,
            "--script",
            script,
            "--failure-policy",
            &doc,
        ],
        None,
    );
    assert_eq!(with.status.code(), Some(0), "{}", stderr(&with));
    let with = String::from_utf8_lossy(&with.stdout).into_owned();
    assert!(with.contains("PodFailurePolicy_oom"), "{with}");
    let without = run(&["simulate", "--job", job, "--script", script], None);
    let without = String::from_utf8_lossy(&without.stdout).into_owned();
    assert!(!without.contains("PodFailurePolicy_oom"), "{without}");
    let compared = run(
        &[
            "simulate",
            "--job",
            job,
            "--script",
            script,
            "--failure-policy",
            &doc,
            "--compare",
            job,
        ],
        None,
    );
    assert_eq!(compared.status.code(), Some(0), "{}", stderr(&compared));
    let compared = String::from_utf8_lossy(&compared.stdout).into_owned();
    assert!(compared.contains("rule \"oom\" (FailJob)"), "{compared}");
    assert!(
        compared.contains("no pod failure policy rule matches"),
        "{compared}"
    );
    // A bad document stops the simulation naming its field.
    let bad = write(dir.path(), "bad.yaml", BAD);
    let out = run(
        &[
            "simulate",
            "--job",
            job,
            "--script",
            script,
            "--failure-policy",
            &bad,
        ],
        None,
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("failurePolicy.rules[0].onExitCodes.ranges[0]"),
        "{}",
        stderr(&out)
    );
}

/// `--nodes`: the terminating pod on a node the file shows unreachable is
/// failed for its terminatingTimeout (and force-deleted); without the file the
/// node is not reported and nothing is failed; with `--missing-nodes` naming it
/// the node is gone and the pod is failed; a misspelt Node field is named and
/// exits 2.
#[test]
fn decide_reads_nodes_for_the_terminating_timeout() {
    let dir = tempfile::tempdir().expect("tempdir");
    let doc = write(
        dir.path(),
        "doc.yaml",
        "apiVersion: job-decider.dev/v1alpha1\nkind: FailurePolicy\n\
         terminatingTimeout: {seconds: 60, onNodes: Unhealthy, forceDelete: true}\n",
    );
    // The two running pods of the example; the first was deleted 10 minutes ago.
    let text = std::fs::read_to_string(example("pods")).expect("read the example");
    let mut pods: serde_json::Value = serde_json::from_str(&text).expect("JSON pods");
    let items = pods["items"].as_array_mut().expect("items");
    items.retain(|p| p["status"]["phase"] == "Running");
    items[0]["metadata"]["deletionTimestamp"] = "2025-06-02T09:50:00Z".into();
    items[0]["metadata"]["deletionGracePeriodSeconds"] = 30.into();
    let node = items[0]["spec"]["nodeName"]
        .as_str()
        .expect("a node")
        .to_string();
    let pods = write(dir.path(), "pods.json", &pods.to_string());
    let nodes = write(
        dir.path(),
        "nodes.yaml",
        &format!(
            "apiVersion: v1\nkind: NodeList\nitems:\n- metadata: {{name: {node}}}\n  \
             spec: {{taints: [{{key: node.kubernetes.io/unreachable, effect: NoExecute}}]}}\n  \
             status: {{conditions: [{{type: Ready, status: Unknown}}]}}\n"
        ),
    );
    let job = example("job");
    let job = job.to_str().expect("path");
    let base = [
        "decide",
        "--job",
        job,
        "--pods",
        &pods,
        "--failure-policy",
        &doc,
        "--now",
        NOW,
        "-o",
        "json",
    ];
    let with_nodes: Vec<&str> = base.iter().copied().chain(["--nodes", &nodes]).collect();
    let out = run(&with_nodes, None);
    assert!(out.status.success(), "{}", stderr(&out));
    let plan: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let failed: Vec<&serde_json::Value> = plan["actions"]
        .as_array()
        .expect("actions")
        .iter()
        .filter_map(|a| a.get("failPods"))
        .flat_map(|f| f["pods"].as_array().into_iter().flatten())
        .collect();
    assert_eq!(failed.len(), 1, "{plan}");
    assert_eq!(
        failed[0]["conditionType"],
        "job-decider.dev/TerminatingTimeout"
    );
    assert_eq!(failed[0]["forceDelete"], true);
    assert!(
        failed[0]["message"]
            .as_str()
            .is_some_and(|m| m.contains(&node)),
        "{plan}"
    );

    let out = run(&base, None);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        !String::from_utf8_lossy(&out.stdout).contains("failPods"),
        "no node reported, none failed"
    );

    // `--missing-nodes`: the node is gone, so the pod is failed and the message says so.
    let missing: Vec<&str> = base
        .iter()
        .copied()
        .chain(["--missing-nodes", &node])
        .collect();
    let out = run(&missing, None);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("the node no longer exists"), "{text}");

    let typo = write(
        dir.path(),
        "typo.yaml",
        "apiVersion: v1\nkind: Node\nmetadata: {name: n}\nspec: {taintz: []}\n",
    );
    let bad: Vec<&str> = base.iter().copied().chain(["--nodes", &typo]).collect();
    let out = run(&bad, None);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("spec.taintz"), "{}", stderr(&out));
}
