//! Explanations: `explain: true` over gRPC returns the structured explanation
//! (and `false` does not), bounded for a large Job; the CLI's text, rendered
//! from it, says what the issue found missing — which indexes failed, why each
//! deletion, until when backoff holds, the condition that follows, a `--now`
//! far in the past without a huge number, and why a Job managed by another
//! controller gets no actions.

use std::path::Path;
use std::process::{Command, Output};

use prost::Message;

use crate::common::{TestServer, example_request};
use job_decider::server::ServerConfig;
use job_decider_api::pb;

const BIN: &str = env!("CARGO_BIN_EXE_job-decider");

fn example(dir: &str, stem: &str) -> String {
    let base = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("examples")
        .join(dir);
    ["json", "yaml"]
        .iter()
        .map(|ext| base.join(format!("{stem}.{ext}")))
        .find(|p| p.exists())
        .unwrap_or_else(|| panic!("no {stem} in {}", base.display()))
        .display()
        .to_string()
}

/// `decide` on an example at `now`, with more arguments; the text on success.
fn decide_text(dir: &str, now: &str, more: &[&str]) -> String {
    let (job, pods) = (example(dir, "job"), example(dir, "pods"));
    let mut args = vec!["decide", "--job", &job, "--pods", &pods, "--now", now];
    args.extend_from_slice(more);
    let out: Output = Command::new(BIN).args(&args).output().expect("run");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    text
}

#[tokio::test]
async fn explain_true_returns_the_explanation_and_false_does_not() {
    let server = TestServer::start(ServerConfig::default()).await;
    let mut client = server.client().await;
    let mut request = example_request("kep-3329-failjob-exit-code-42");
    let plain = client
        .decide_job(request.clone())
        .await
        .expect("decided")
        .into_inner();
    assert_eq!(plain.explanation, None, "not asked, not sent");
    request.explain = true;
    let explained = client
        .decide_job(request.clone())
        .await
        .expect("decided")
        .into_inner();
    // The same plan, with the explanation beside it.
    assert_eq!(explained.actions, plain.actions);
    assert_eq!(explained.requeue_after, plain.requeue_after);
    let e = explained.explanation.expect("asked, sent");
    let fails = e
        .pods
        .iter()
        .find(|g| g.verdict == "FailsJob")
        .expect("the pod that failed with 42");
    assert_eq!(fails.rule_index, Some(0));
    assert_eq!(fails.rule_action, "FailJob");
    assert_eq!(
        fails.matched,
        "exit code 42 of container \"main\" (In [42])"
    );
    let deletion = e
        .action_reasons
        .iter()
        .find(|r| r.action == 0)
        .expect("why the first action");
    assert_eq!(deletion.reason, "JobFinishing");
    let coming = e.coming_condition.expect("the coming condition");
    assert_eq!(
        (coming.interim.as_str(), coming.terminal.as_str()),
        ("FailureTarget", "Failed")
    );
    assert!(!coming.terminal_now);

    // The lean encoding asks the same way and gets the same explanation.
    let mut lean = job_decider_api::lean::lean_request(request)
        .unwrap_or_else(|(i, e)| panic!("pod {i}: {e}"));
    lean.explain = true;
    let from_lean = client.decide_job(lean).await.expect("decided").into_inner();
    assert_eq!(
        from_lean.explanation.map(|e| e.pods.len()),
        Some(e.pods.len())
    );
}

#[tokio::test]
async fn explain_names_the_controller_to_decide_for_when_managed_by_another() {
    let server = TestServer::start(ServerConfig::default()).await;
    let mut client = server.client().await;
    let mut request = example_request("kep-3329-failjob-exit-code-42");
    request.explain = true;
    let spec = request
        .job
        .as_mut()
        .and_then(|j| j.spec.as_mut())
        .expect("spec");
    spec.managed_by = Some("job-decider.dev/shim".into());
    let response = client.decide_job(request).await.expect("ok").into_inner();
    assert!(response.actions.is_empty());
    let n = response
        .explanation
        .and_then(|e| e.not_managed)
        .expect("why nothing");
    assert_eq!(n.managed_by, "job-decider.dev/shim");
    assert_eq!(n.controller_name, "kubernetes.io/job-controller");
    assert!(n.message.contains("controller_name"), "{}", n.message);
}

/// A 100,000-pod Job's explanation is a small fraction of the question.
#[test]
fn explanation_of_a_large_job_is_bounded() {
    let mut request = job_decider_api::fixtures::realistic_request(100_000);
    request.explain = true;
    // Many verdicts: a rule that matches every failure, and half the pods failed
    // with one of 300 exit codes, so 300 groups would be listed without the cap.
    let spec = request
        .job
        .as_mut()
        .and_then(|j| j.spec.as_mut())
        .expect("spec");
    spec.pod_failure_policy = Some(pb::PodFailurePolicy {
        rules: vec![pb::PodFailurePolicyRule {
            action: "Count".into(),
            on_exit_codes: Some(pb::PodFailurePolicyOnExitCodesRequirement {
                container_name: None,
                operator: "NotIn".into(),
                values: vec![0],
            }),
            on_pod_conditions: vec![],
        }],
    });
    for (i, pod) in request
        .pods
        .iter_mut()
        .enumerate()
        .filter(|(i, _)| i % 2 == 1)
    {
        let status = pod.status.as_mut().expect("status");
        status.phase = "Failed".into();
        for container in &mut status.container_statuses {
            container.state = Some(pb::ContainerState {
                terminated: Some(pb::ContainerStateTerminated {
                    exit_code: 1 + i32::try_from(i % 300).expect("small"),
                    ..Default::default()
                }),
                ..Default::default()
            });
        }
    }
    let question = request.encoded_len();
    let decision = job_decider_api::decide(request).expect("decided");
    let response = decision.response();
    let explanation = response.explanation.as_ref().expect("asked");
    assert_eq!(explanation.pods.len(), 100, "groups are capped");
    assert!(explanation.pod_groups_omitted > 0, "and the rest counted");
    let size = explanation.encoded_len();
    // The figure for docs/cli.md ("Explanations"): `cargo test --test it explanation_of -- --nocapture`.
    println!("explanation {size} bytes for a {question}-byte question");
    assert!(
        size * 100 < question,
        "explanation {size} bytes for a {question}-byte question"
    );
    let whole = response.encoded_len();
    let plan_only = job_decider_api::convert::response_from_plan(&decision.plan).encoded_len();
    // The explanation is all it adds: its bytes, a tag and a length.
    let added = whole - plan_only;
    assert!(added > size && added <= size + 6, "{added} vs {size}");
}

#[test]
fn text_says_which_indexes_failed_and_completed() {
    let text = decide_text(
        "kep-3850-backoff-limit-per-index",
        "2025-06-02T10:00:00Z",
        &[],
    );
    assert!(
        text.contains("Failed indexes: 0 (1 index) — index 0 has failed; maxFailedIndexes 5"),
        "{text}"
    );
    assert!(text.contains("Completed indexes: 1 (1 index)"), "{text}");
    assert!(
        text.contains("FailsIndex: its index had already failed backoffLimitPerIndex (1) time(s)"),
        "{text}"
    );
}

#[test]
fn text_gives_each_deletion_its_reason_and_the_coming_failed_condition() {
    let text = decide_text("kep-3329-failjob-exit-code-42", "2025-06-02T10:00:00Z", &[]);
    let delete = text
        .lines()
        .position(|l| l.starts_with("  1. delete "))
        .expect("a deletion");
    let why = text.lines().nth(delete + 1).unwrap_or_default();
    assert!(
        why.contains("why: the Job is finishing (FailureTarget, reason PodFailurePolicy)"),
        "{text}"
    );
    assert!(
        text.contains(
            "Next condition: FailureTarget (PodFailurePolicy) now, then Failed (PodFailurePolicy) once the 2 terminating pod(s) are gone"
        ),
        "{text}"
    );
}

#[test]
fn text_says_until_when_backoff_holds_and_after_which_failure() {
    let text = decide_text("kep-3329-ignore-disruption", "2025-06-02T09:59:20Z", &[]);
    assert!(
        text.contains("Backoff: new pods wait until 09:59:22, in 2s (10s after the 1st failure)"),
        "{text}"
    );
    assert!(
        text.contains("Decide again after 2s: the pod-failure backoff ends then"),
        "{text}"
    );
}

/// Regression: `--now 1999-…` printed "Decide again after 833709562s".
#[test]
fn now_far_in_the_past_is_said_and_no_huge_number_is_printed() {
    let text = decide_text("kep-3329-ignore-disruption", "1999-01-01T00:00:00Z", &[]);
    assert!(
        text.contains("is far in the past: about 26 years before the Job's startTime"),
        "{text}"
    );
    assert!(
        text.contains("Decide again after more than a year"),
        "{text}"
    );
    // No count of seconds, minutes or hours with six digits or more.
    let huge = text.split(|c: char| !c.is_ascii_alphanumeric()).any(|w| {
        let digits = w.chars().take_while(char::is_ascii_digit).count();
        digits >= 6 && matches!(&w[digits..], "s" | "m" | "h" | "d")
    });
    assert!(!huge, "{text}");
}

#[test]
fn managed_by_another_controller_says_which_flag_to_pass() {
    let dir = tempfile::tempdir().expect("tempdir");
    let source = example("kep-3329-failjob-exit-code-42", "job");
    let mut job: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&source).expect("read")).expect("json");
    job["spec"]["managedBy"] = "job-decider.dev/shim".into();
    let path = dir.path().join("job.json");
    std::fs::write(&path, job.to_string()).expect("write");
    let pods = example("kep-3329-failjob-exit-code-42", "pods");
    let run = |more: &[&str]| {
        let path = path.display().to_string();
        let mut args = vec![
            "decide",
            "--job",
            &path,
            "--pods",
            &pods,
            "--now",
            "2025-06-02T10:00:00Z",
        ];
        args.extend_from_slice(more);
        let out = Command::new(BIN).args(&args).output().expect("run");
        assert_eq!(out.status.code(), Some(0));
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let text = run(&[]);
    assert!(text.contains("Actions: none"), "{text}");
    assert!(
        text.contains("pass --controller-name job-decider.dev/shim"),
        "{text}"
    );
    let as_shim = run(&["--controller-name", "job-decider.dev/shim"]);
    assert!(!as_shim.contains("Actions: none"), "{as_shim}");
}

#[test]
fn json_carries_the_explanation_only_with_explain() {
    let dir = "kep-3329-failjob-exit-code-42";
    let now = "2025-06-02T10:00:00Z";
    let plain = decide_text(dir, now, &["-o", "json"]);
    assert!(!plain.contains("\"explanation\""), "{plain}");
    let explained = decide_text(dir, now, &["-o", "json", "--explain"]);
    let response: pb::DecideJobResponse = serde_json::from_str(&explained).expect("response");
    assert!(response.explanation.is_some(), "{explained}");
}
