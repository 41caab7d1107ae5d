//! Issue 22, item 2: message patterns have a bounded cost. The reviewer's patterns are
//! refused when the document is read (not matched for seconds), RE2's repetition limit
//! holds at the pattern's field, DecideJobSet's patterns and messages are capped, and a
//! call's matching is bounded up front by a budget whose error names the document and the
//! limit. Costs are asserted through the matcher's own byte counter, never a clock.

use job_decider_api::convert::failure_policy::MAX_MESSAGE_SCAN_BYTES;
use job_decider_api::convert_jobset::{
    MAX_CONDITION_MESSAGE_BYTES, MAX_MESSAGE_SCAN_BYTES as MAX_JOBSET_SCAN_BYTES,
    MAX_PATTERNS_PER_RULE,
};
use job_decider_api::{ApiError, fixtures, pb};
use job_decider_core::extended::FAILURE_POLICY_ANNOTATION;
use job_decider_core::message_pattern::{MAX_REPETITION, bytes_scanned};
use tonic::Code;

/// The reviewer's patterns: "any character" counted 200 times defeats a lazy DFA, and
/// `[ac]{3000}` is past RE2's repetition limit.
const DOT_200: &str = "a(?s:.){200}b";
const AC_3000: &str = "a[ac]{3000}b";

/// A document of `rules` Count rules, each searching its pattern from `patterns` in turn.
fn document(patterns: &[&str], rules: usize) -> String {
    let mut doc =
        String::from("apiVersion: job-decider.dev/v1alpha1\nkind: FailurePolicy\nrules:\n");
    for i in 0..rules {
        let pattern = patterns[i % patterns.len()].replace('\'', "''");
        doc.push_str(&format!(
            "- action: Count\n  onMessage: {{pattern: '{pattern}'}}\n"
        ));
    }
    doc
}

/// The realistic request of `pods` pods, every pod Failed with `message` as its own
/// message and as its first container's termination message.
fn failed_pods(pods: usize, message: &str) -> pb::DecideJobRequest {
    let mut request = fixtures::realistic_request(pods);
    for pod in &mut request.pods {
        let status = pod.status.get_or_insert_default();
        status.phase = "Failed".into();
        status.message = message.to_string();
        status.container_statuses[0].state = Some(pb::ContainerState {
            terminated: Some(pb::ContainerStateTerminated {
                exit_code: 1,
                reason: "Error".into(),
                message: message.to_string(),
                finished_at: Some(pbjson_types::Timestamp {
                    seconds: fixtures::NOW_SECONDS - 10,
                    nanos: 0,
                }),
                ..Default::default()
            }),
            ..Default::default()
        });
    }
    request
}

/// The violations of a refused call, after checking it is INVALID_ARGUMENT.
fn violations(err: ApiError) -> Vec<(String, String)> {
    let listed = match &err {
        ApiError::BadRequest { violations, .. } => violations
            .iter()
            .map(|v| (v.field.clone(), v.description()))
            .collect(),
        other => panic!("not a bad request: {other:?}"),
    };
    assert_eq!(tonic::Status::from(err).code(), Code::InvalidArgument);
    listed
}

fn decide_err(request: pb::DecideJobRequest) -> Vec<(String, String)> {
    match job_decider_api::decide(request) {
        Ok(_) => panic!("the call was decided"),
        Err(err) => violations(err),
    }
}

/// A 4 KiB message of `a`s and `b`s: what the reviewer's patterns are slowest on.
fn slow_message() -> String {
    "ab".repeat(2048)
}

#[test]
fn reviewer_patterns_are_refused_at_their_field() {
    let mut request = failed_pods(4, &slow_message());
    request.failure_policy = document(&[DOT_200, AC_3000], 2);
    let got = decide_err(request);
    let fields: Vec<&str> = got.iter().map(|(f, _)| f.as_str()).collect();
    assert_eq!(
        fields,
        [
            "failurePolicy.rules[0].onMessage.pattern",
            "failurePolicy.rules[1].onMessage.pattern"
        ]
    );
    assert!(got[0].1.contains("too large"), "{}", got[0].1);
    assert!(
        got[1].1.contains("invalid repeat count 3000"),
        "{}",
        got[1].1
    );
}

/// The reviewer's 0.4 MiB, 20-rule request (10.9 s of CPU on main) is refused when its
/// document is read, before a byte of a message is searched; through the Job's annotation too.
#[test]
fn a_20_rule_0_4_mib_request_is_refused_before_matching() {
    for through_annotation in [false, true] {
        let mut request = failed_pods(50, &slow_message());
        let doc = document(&[DOT_200, AC_3000], 20);
        if through_annotation {
            let job = request.job.as_mut().and_then(|j| j.metadata.as_mut());
            job.map(|m| m.annotations.insert(FAILURE_POLICY_ANNOTATION.into(), doc));
        } else {
            request.failure_policy = doc;
        }
        assert!(prost::Message::encoded_len(&request) > 400_000);
        let before = bytes_scanned();
        let got = decide_err(request);
        assert_eq!(bytes_scanned(), before, "nothing was searched");
        assert_eq!(got.len(), 20, "{got:?}");
        let prefix = if through_annotation {
            format!("metadata.annotations[{FAILURE_POLICY_ANNOTATION}]")
        } else {
            "failurePolicy".to_string()
        };
        assert!(
            got.iter()
                .enumerate()
                .all(|(i, (f, _))| *f == format!("{prefix}.rules[{i}].onMessage.pattern")),
            "{got:?}"
        );
    }
}

#[test]
fn repetition_1001_is_refused_at_its_field_path() {
    let mut request = failed_pods(1, "x");
    request.failure_policy = document(&["x{1,3}", "x{1001}"], 2);
    let got = decide_err(request);
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(got[0].0, "failurePolicy.rules[1].onMessage.pattern");
    assert!(
        got[0].1.contains(&format!(
            "invalid repeat count 1001: a counted repetition may be at most {MAX_REPETITION}"
        )),
        "{}",
        got[0].1
    );
}

/// A call whose patterns would search more than the budget is refused up front, naming the
/// document and the limit.
#[test]
fn the_budget_error_names_the_document_and_the_limit() {
    // 20 rules × (4 KiB pod message + 4 KiB container message) per pod: 3,400 pods pass 512 MiB.
    let message = "m".repeat(4096);
    let mut request = failed_pods(3400, &message);
    let patterns: Vec<String> = (0..20).map(|i| format!("needle {i}")).collect();
    let patterns: Vec<&str> = patterns.iter().map(String::as_str).collect();
    request.failure_policy = document(&patterns, 20);
    let before = bytes_scanned();
    let got = decide_err(request);
    assert_eq!(bytes_scanned(), before, "refused before matching");
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(got[0].0, "failurePolicy");
    let expected_cost = 3400u64 * 8192 * 20;
    assert!(
        got[0].1.contains(&expected_cost.to_string())
            && got[0].1.contains(&MAX_MESSAGE_SCAN_BYTES.to_string()),
        "{}",
        got[0].1
    );
}

/// A large Job with a few rules and short messages is decided, its matching counted by the
/// matcher within the up-front bound, and the budget has room for ten times as many pods.
#[test]
fn a_realistic_large_job_is_far_inside_the_budget() {
    let pods = 10_000u64;
    let message = format!("{:<300}", "container main exited: signal 9 (killed)");
    let mut request = failed_pods(10_000, &message);
    request.failure_policy = document(&["(?i)out of memory", r"CUDA error \d+", r"\bNCCL\b"], 3);
    let before = bytes_scanned();
    let decision = job_decider_api::decide(request).expect("decided");
    let scanned = bytes_scanned() - before;
    let bound = pods * 2 * 300 * 3;
    assert!(scanned > 0 && scanned <= bound, "{scanned} of {bound}");
    assert!(!decision.plan.actions.is_empty());
    // 100,000 such pods would need less than half of the budget.
    assert!(bound * 10 * 2 <= MAX_MESSAGE_SCAN_BYTES);
}

/// A JobSet request from the substring vector: one FailJobSet rule with patterns, one Job
/// failed with `message`.
fn jobset_request(patterns: &[&str], message: &str) -> pb::DecideJobSetRequest {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/vectors/jobset/message-pattern-is-a-substring-search.yaml");
    let text = std::fs::read_to_string(path).expect("vector");
    let doc: serde_json::Value = serde_yaml::from_str(&text).expect("yaml");
    let mut request: pb::DecideJobSetRequest =
        serde_json::from_value(doc["request"].clone()).expect("request");
    let policy = request
        .job_set
        .as_mut()
        .and_then(|js| js.spec.as_mut())
        .and_then(|s| s.failure_policy.as_mut())
        .expect("a failure policy");
    policy.rules[0].on_job_failure_message_patterns =
        patterns.iter().map(|p| p.to_string()).collect();
    for job in &mut request.jobs {
        for c in &mut job.status.get_or_insert_default().conditions {
            c.message = message.to_string();
        }
    }
    request
}

fn jobset_err(request: pb::DecideJobSetRequest) -> Vec<(String, String)> {
    match job_decider_api::decide_jobset(request) {
        Ok(_) => panic!("the call was decided"),
        Err(err) => violations(err),
    }
}

/// Whether the JobSet failed at once (its rule applied).
fn jobset_failed(request: pb::DecideJobSetRequest) -> bool {
    let response = job_decider_api::decide_jobset(request).expect("decided");
    format!("{response:?}").contains("FailJobSetFailurePolicyAction")
}

#[test]
fn a_jobset_with_too_many_patterns_is_refused_naming_the_field() {
    let patterns: Vec<String> = (0..=MAX_PATTERNS_PER_RULE)
        .map(|i| format!("p{i}"))
        .collect();
    let patterns: Vec<&str> = patterns.iter().map(String::as_str).collect();
    let got = jobset_err(jobset_request(&patterns, "some message"));
    assert_eq!(
        got[0].0,
        "jobSet.spec.failurePolicy.rules[0].onJobFailureMessagePatterns"
    );
    assert!(
        got[0]
            .1
            .contains(&format!("at most {MAX_PATTERNS_PER_RULE}")),
        "{}",
        got[0].1
    );
}

#[test]
fn a_jobset_condition_message_too_long_is_refused_naming_the_field() {
    let message = "some message ".repeat(MAX_CONDITION_MESSAGE_BYTES / 13 + 1);
    let got = jobset_err(jobset_request(&["some message"], &message));
    let fields: Vec<&str> = got.iter().map(|(f, _)| f.as_str()).collect();
    assert_eq!(
        fields,
        [
            "jobs[0].status.conditions[0].message",
            "jobs[0].status.conditions[1].message"
        ]
    );
    assert!(got[0].1.contains(&MAX_CONDITION_MESSAGE_BYTES.to_string()));
}

/// A valid RE2 pattern whose DFA is past this service's limits fails the decision at its
/// field: treating it as never matching would guess where upstream may match.
#[test]
fn a_jobset_pattern_past_the_dfa_limits_is_refused_at_decide() {
    let got = jobset_err(jobset_request(&["some message", DOT_200], "some message"));
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(
        got[0].0,
        "jobSet.spec.failurePolicy.rules[0].onJobFailureMessagePatterns[1]"
    );
    assert!(got[0].1.contains("valid RE2"), "{}", got[0].1);
}

/// RE2 refuses `x{1001}` (JobSet's controller would log it and never match it), so, as
/// for every invalid pattern, the webhook's check refuses the decision at the pattern.
#[test]
fn a_jobset_repetition_past_1000_is_refused_at_its_field() {
    let message = "x".repeat(1001);
    let got = jobset_err(jobset_request(&["^x+$", "x{1001}"], &message));
    assert_eq!(got.len(), 1, "{got:?}");
    // The path in the request, as for the pattern past the DFA limits above.
    assert_eq!(
        got[0].0,
        "jobSet.spec.failurePolicy.rules[0].onJobFailureMessagePatterns[1]"
    );
    assert!(
        got[0].1.contains("invalid repeat count 1001"),
        "{}",
        got[0].1
    );
    // The valid pattern alone decides: the rule applies and the JobSet fails.
    assert!(jobset_failed(jobset_request(&["^x+$"], &message)));
}

/// Above the budget a JobSet decision is refused before matching, naming the limit.
#[test]
fn a_jobset_past_the_matching_budget_is_refused() {
    let message = "m".repeat(MAX_CONDITION_MESSAGE_BYTES);
    let patterns: Vec<String> = (0..MAX_PATTERNS_PER_RULE)
        .map(|i| format!("needle {i}"))
        .collect();
    let patterns: Vec<&str> = patterns.iter().map(String::as_str).collect();
    let mut request = jobset_request(&patterns, &message);
    // Σ Failed messages × patterns past the budget: copies of the failed Job, one per index.
    let per_job = u64::try_from(MAX_CONDITION_MESSAGE_BYTES * MAX_PATTERNS_PER_RULE).unwrap_or(0);
    let jobs = usize::try_from(MAX_JOBSET_SCAN_BYTES / per_job + 1).unwrap_or(0);
    let template = request.jobs[0].clone();
    request.jobs = (0..jobs)
        .map(|i| {
            let mut job = template.clone();
            if let Some(m) = job.metadata.as_mut() {
                m.name = format!("js-rj-{i}");
                m.uid = format!("uid-{i}");
                m.labels
                    .insert("jobset.sigs.k8s.io/job-index".into(), i.to_string());
            }
            job
        })
        .collect();
    if let Some(rj) = request
        .job_set
        .as_mut()
        .and_then(|js| js.spec.as_mut())
        .and_then(|s| s.replicated_jobs.first_mut())
    {
        rj.replicas = Some(i32::try_from(jobs).unwrap_or(i32::MAX));
    }
    let before = bytes_scanned();
    let got = jobset_err(request);
    assert_eq!(bytes_scanned(), before, "refused before matching");
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(got[0].0, "jobSet.spec.failurePolicy");
    assert!(
        got[0].1.contains(&MAX_JOBSET_SCAN_BYTES.to_string()),
        "{}",
        got[0].1
    );
}
