//! Table tests of `failureMessage: Detailed`, through one sync (`sync::decide`)
//! so that the wiring is tested with the text: which pod explains each kind of
//! failure, what is said about it, the bound, determinism, and that without
//! the field (or with `Upstream`) the message is upstream's byte for byte.

use std::sync::Arc;

use super::*;
use crate::extended::rules::test_docs::*;
use crate::extended::timeouts::Timeout;
use crate::fixtures::*;
use crate::model::ExtendedAction::{Count, FailIndex, FailJob};
use crate::model::*;
use crate::plan::{Action, Plan};
use crate::sync::decide;

/// (name, Job, document, pods, the FailureTarget message wanted).
type Case = (
    &'static str,
    Job,
    Arc<ExtendedFailurePolicy>,
    Vec<Pod>,
    String,
);

const BACKOFF: &str = "Job has reached the specified backoff limit";

/// The document with these rules, asking for detailed messages.
fn detailed(rules: Vec<ExtendedRule>) -> Arc<ExtendedFailurePolicy> {
    Arc::new(ExtendedFailurePolicy {
        rules,
        failure_message: FailureMessage::Detailed,
        ..ExtendedFailurePolicy::default()
    })
}

/// A started Job carrying `doc`.
fn started(mut job: Job, doc: Option<Arc<ExtendedFailurePolicy>>) -> Job {
    job.extended_failure_policy = doc;
    job.status.start_time = Some(t(0));
    job
}

/// A Failed pod whose container "main" exited with `code` at `at` on `node`
/// with termination reason `reason` (empty: none).
fn failed_on(name: &str, code: i32, at: i64, node: &str, reason: &str) -> Pod {
    let mut p = failed_with(name, code, at);
    let details = p.failure_details.get_or_insert_default();
    details.node_name = node.into();
    if !reason.is_empty() {
        p = p.termination("main", false, reason, "");
    }
    p
}

/// The FailureTarget the plan writes, as (reason, message).
fn failure_target(plan: &Plan) -> Option<(String, String)> {
    last_status(plan)
        .conditions
        .iter()
        .find(|c| c.condition_type == JobConditionType::FailureTarget)
        .map(|c| (c.reason.clone(), c.message.clone()))
}

fn message_of(job: Job, pods: Vec<Pod>, now: i64) -> String {
    failure_target(&decide(&snapshot(job, pods, t(now))))
        .map(|(_, m)| m)
        .unwrap_or_default()
}

#[test]
fn each_cause_names_its_pod_container_node_rule_and_limit() {
    let mut limited = job();
    limited.spec.backoff_limit = 1;
    let mut on_failure = job();
    on_failure.spec.backoff_limit = 2;
    on_failure.spec.template.restart_policy = RestartPolicy::OnFailure;
    let mut restarting = pod("r");
    restarting.container_statuses = vec![ContainerStatus {
        name: "main".into(),
        terminated: None,
        restart_count: 2,
    }];
    let mut per_index = indexed_job(2, 2);
    per_index.spec.backoff_limit_per_index = Some(0);
    let mut max_failed = indexed_job(3, 3);
    max_failed.spec.backoff_limit_per_index = Some(0);
    max_failed.spec.max_failed_indexes = Some(0);
    let mut upstream_policy = job();
    upstream_policy.spec.pod_failure_policy = Some(PodFailurePolicy {
        rules: vec![exit_rule(PodFailurePolicyAction::FailJob, vec![42])],
    });
    let flaky = || rule(Count).named("flaky").exit_in(&[(1, 1)]);
    let cases: Vec<Case> =
        vec![
        (
            "backoff limit: the pod that finished last, its rule",
            limited.clone(),
            detailed(vec![flaky()]),
            vec![
                failed_on("a", 1, 5, "n1", "Error"),
                failed_on("b", 1, 8, "n2", "Error"),
            ],
            format!(
                "{BACKOFF} (pod b on node n2: container main exit code 1 reason Error; \
                 rule rules[0] \"flaky\" action Count; limit backoffLimit=1)"
            ),
        ),
        (
            "backoff limit, no rule: the pod and the limit only",
            limited.clone(),
            detailed(vec![]),
            vec![failed_on("a", 3, 5, "", ""), failed_on("b", 3, 4, "", "")],
            format!("{BACKOFF} (pod a: container main exit code 3; limit backoffLimit=1)"),
        ),
        (
            "backoff limit: equal finish times go to the smaller name",
            limited.clone(),
            detailed(vec![]),
            vec![failed_on("z", 3, 5, "", ""), failed_on("m", 3, 5, "", "")],
            format!("{BACKOFF} (pod m: container main exit code 3; limit backoffLimit=1)"),
        ),
        (
            "backoff limit: an evicted pod without exit codes gives its reason",
            limited.clone(),
            detailed(vec![]),
            vec![
                failed_on("a", 3, 5, "", ""),
                pod("e").phase(PodPhase::Failed).pod_reason("Evicted"),
            ],
            // The evicted pod's finish time is its creation (t 0): a finished later.
            format!("{BACKOFF} (pod a: container main exit code 3; limit backoffLimit=1)"),
        ),
        (
            "restartPolicy OnFailure: the container with the most restarts",
            on_failure,
            detailed(vec![]),
            vec![restarting],
            format!(
                "{BACKOFF} (pod r: container main restarted 2 times; limit backoffLimit=2)"
            ),
        ),
        (
            "a document FailJob rule: the matched pod, no limit",
            job(),
            detailed(vec![rule(FailJob).named("oom").container_reasons(None, &["OOMKilled"])]),
            vec![failed_on("p", 137, 5, "gpu-7", "OOMKilled")],
            "Container main for pod default/p terminated with reason OOMKilled matching FailJob \
             rule \"oom\" (pod p on node gpu-7: container main exit code 137 reason OOMKilled; \
             rule rules[0] \"oom\" action FailJob)"
                .into(),
        ),
        (
            "a rule whose retries ran out: its maxRetries is the limit",
            job(),
            detailed(vec![flaky().max_retries(1, FailJob)]),
            vec![failed_on("p", 1, 5, "n1", "").carried(&[("flaky", 1)])],
            "Container main for pod default/p failed with exit code 1 matching rule \"flaky\" \
             for the 2nd time in the Job: its 1 retries are used up (pod p on node n1: container \
             main exit code 1; rule rules[0] \"flaky\" action FailJob (maxRetries=1 used up); \
             limit maxRetries=1)"
                .into(),
        ),
        (
            "a spec.podFailurePolicy FailJob rule is named by its path",
            upstream_policy,
            detailed(vec![]),
            vec![failed_on("p", 42, 5, "", "")],
            "Container main for pod default/p failed with exit code 42 matching FailJob rule at \
             index 0 (pod p: container main exit code 42; rule spec.podFailurePolicy.rules[0] \
             action FailJob)"
                .into(),
        ),
        (
            "failed indexes: the last failed pod of a failed index",
            per_index,
            detailed(vec![]),
            vec![
                failed_on("i1", 2, 5, "n3", "").index(1),
                pod("i0").phase(PodPhase::Succeeded).index(0),
            ],
            "Job has failed indexes (pod i1 index 1 on node n3: container main exit code 2; \
             limit backoffLimitPerIndex=0)"
                .into(),
        ),
        (
            "too many failed indexes: a FailIndex rule and maxFailedIndexes",
            max_failed,
            detailed(vec![rule(FailIndex).exit_in(&[(7, 7)])]),
            vec![failed_on("i2", 7, 5, "", "").index(2)],
            "Job has exceeded the specified maximal number of failed indexes (pod i2 index 2: \
             container main exit code 7; rule rules[0] action FailIndex; limit maxFailedIndexes=0)"
                .into(),
        ),
    ];
    let mut timed_out = (*detailed(vec![])).clone();
    timed_out.pending_timeout = Some(PendingTimeout {
        seconds: 60,
        reasons: vec!["ImagePullBackOff".into()],
        action: Count,
    });
    let mut deleted_pods = job();
    deleted_pods.spec.backoff_limit = 0;
    let mut zero = job();
    zero.spec.backoff_limit = 0;
    let cases = cases.into_iter().chain([
        (
            "the implicit PendingTimeout rule is named by its name",
            zero,
            Arc::new(timed_out),
            vec![pod("p").phase(PodPhase::Failed).pending_timed_out()],
            format!(
                "{BACKOFF} (pod p: condition job-decider.dev/PendingTimeout=True; \
                 rule PendingTimeout action Count; limit backoffLimit=0)"
            ),
        ),
        (
            "a pod deleted before it finished",
            deleted_pods,
            detailed(vec![]),
            vec![pod("d").deleted(t(5), Some(0))],
            format!("{BACKOFF} (pod d: deleted; limit backoffLimit=0)"),
        ),
    ]);
    for (name, job, doc, pods, want) in cases {
        let got = message_of(started(job, Some(doc)), pods, 10);
        assert_eq!(got, want, "{name}");
    }
}

#[test]
fn without_the_field_or_with_upstream_the_message_is_upstreams() {
    let mut limited = job();
    limited.spec.backoff_limit = 0;
    let pods = || vec![failed_on("b", 1, 8, "n2", "Error")];
    let mut upstream_doc = (*detailed(vec![])).clone();
    upstream_doc.failure_message = FailureMessage::Upstream;
    for doc in [
        None,
        Some(Arc::new(ExtendedFailurePolicy::default())),
        Some(Arc::new(upstream_doc)),
    ] {
        let got = message_of(started(limited.clone(), doc.clone()), pods(), 10);
        assert_eq!(got, BACKOFF, "document {doc:?}");
    }
}

#[test]
fn an_active_deadline_is_not_explained() {
    let mut j = job();
    j.spec.active_deadline_seconds = Some(5);
    let got = message_of(
        started(j, Some(detailed(vec![]))),
        vec![failed_on("a", 1, 2, "n1", "")],
        10,
    );
    assert_eq!(got, "Job was active longer than specified deadline");
}

#[test]
fn failed_and_its_event_repeat_the_explained_failure_target() {
    let mut limited = started(job(), Some(detailed(vec![])));
    limited.spec.backoff_limit = 0;
    // Nothing else runs, so one sync writes FailureTarget, then Failed and its event.
    let plan = decide(&snapshot(
        limited,
        vec![failed_on("b", 1, 8, "n2", "")],
        t(10),
    ));
    let (_, explained) = failure_target(&plan).expect("FailureTarget");
    assert_eq!(
        explained,
        format!("{BACKOFF} (pod b on node n2: container main exit code 1; limit backoffLimit=0)")
    );
    let failed = last_status(&plan)
        .conditions
        .iter()
        .find(|c| c.condition_type == JobConditionType::Failed)
        .map(|c| c.message.clone());
    assert_eq!(failed.as_deref(), Some(explained.as_str()));
    let events: Vec<&str> = plan
        .actions
        .iter()
        .filter_map(|a| match a {
            Action::RecordEvent(e) if e.reason == "BackoffLimitExceeded" => {
                Some(e.message.as_str())
            }
            _ => None,
        })
        .collect();
    assert_eq!(events, vec![explained.as_str()]);
}

#[test]
fn a_failure_target_written_earlier_is_copied_as_it_is() {
    // Failed copies the FailureTarget in the status, whatever the document says now.
    let mut limited = started(job(), Some(detailed(vec![])));
    limited.spec.backoff_limit = 0;
    limited.status.failed = 1;
    limited.status.conditions = vec![JobCondition {
        condition_type: JobConditionType::FailureTarget,
        status: ConditionStatus::True,
        last_probe_time: Some(t(9)),
        last_transition_time: Some(t(9)),
        reason: "BackoffLimitExceeded".into(),
        message: BACKOFF.into(),
    }];
    let gone = vec![failed_on("b", 1, 8, "n2", "").without_finalizer()];
    let plan = decide(&snapshot(limited, gone, t(20)));
    let failed = last_status(&plan)
        .conditions
        .iter()
        .find(|c| c.condition_type == JobConditionType::Failed)
        .map(|c| c.message.clone());
    assert_eq!(failed.as_deref(), Some(BACKOFF));
}

#[test]
fn huge_names_and_reasons_stay_within_the_bound() {
    let long = "x".repeat(10_000);
    let mut limited = started(job(), Some(detailed(vec![])));
    limited.spec.backoff_limit = 0;
    limited.spec.template.containers = vec![long.clone()];
    let mut p = pod(&long).phase(PodPhase::Failed).exit(&long, 1, t(5));
    p.failure_details.get_or_insert_default().node_name = long.clone();
    let p = p.termination(&long, false, &long, &long);
    let got = message_of(limited, vec![p], 10);
    assert!(
        got.len() <= MAX_DETAILED_MESSAGE_BYTES,
        "{} bytes",
        got.len()
    );
    assert!(got.starts_with(&format!("{BACKOFF} (pod xxx")), "{got}");
    // Each value is cut on its own, before the whole is.
    assert!(got.contains("…[truncated from 10000 bytes]"), "{got}");
    assert!(!got.contains(&"x".repeat(MAX_ECHOED_BYTES + 1)), "{got}");
}

#[test]
fn an_upstream_message_near_the_bound_is_left_alone() {
    let parts = vec!["pod p".to_string()];
    let long = "m".repeat(MAX_DETAILED_MESSAGE_BYTES - MIN_EXPLANATION_BYTES + 1);
    assert_eq!(bounded(&long, &parts), long);
    let fits = "m".repeat(MAX_DETAILED_MESSAGE_BYTES - MIN_EXPLANATION_BYTES);
    let got = bounded(&fits, &["p".repeat(500)]);
    assert!(got.starts_with(&fits) && got.len() <= MAX_DETAILED_MESSAGE_BYTES);
    assert!(got.ends_with("bytes]"), "the cut says so: {got}");
    assert_eq!(bounded("m", &[]), "m", "nothing to add");
}

#[test]
fn the_same_pods_in_any_order_give_the_same_message() {
    let mut limited = started(job(), Some(detailed(vec![])));
    limited.spec.backoff_limit = 2;
    let pods = vec![
        failed_on("c", 1, 9, "n1", "Error"),
        failed_on("a", 2, 9, "n2", ""),
        failed_on("b", 3, 7, "n3", ""),
    ];
    let forward = message_of(limited.clone(), pods.clone(), 10);
    let mut reversed = pods;
    reversed.reverse();
    assert_eq!(forward, message_of(limited, reversed, 10));
    assert!(forward.contains("pod a on node n2"), "{forward}");
}

/// The document with detailed messages and `timeout` (60 seconds, Count).
fn detailed_with(timeout: Timeout) -> Arc<ExtendedFailurePolicy> {
    let mut doc = (*detailed(vec![])).clone();
    match timeout {
        Timeout::Pending => {
            doc.pending_timeout = Some(PendingTimeout {
                seconds: 60,
                reasons: vec!["ImagePullBackOff".into()],
                action: Count,
            });
        }
        Timeout::Ready => {
            doc.ready_timeout = Some(ReadyTimeout {
                seconds: 60,
                action: Count,
            });
        }
        Timeout::Attempt => {
            doc.attempt_deadline = Some(AttemptDeadline {
                seconds: 60,
                action: Count,
            });
        }
        Timeout::Terminating => {
            doc.terminating_timeout = Some(TerminatingTimeout {
                seconds: 60,
                on_nodes: TerminatingNodes::Any,
                action: Count,
                force_delete: false,
            });
        }
    }
    Arc::new(doc)
}

/// A pod the controller failed for `timeout`: killed (exit code 137, reason
/// Error) when its timeout's condition was set.
fn timed_out_by(timeout: Timeout) -> Pod {
    failed_on("p", 137, 5, "n1", "Error").condition(timeout.condition_type(), t(5))
}

#[test]
fn detailed_message_names_the_attempt_deadline_not_the_exit_code() {
    let mut zero = job();
    zero.spec.backoff_limit = 0;
    let got = message_of(
        started(zero, Some(detailed_with(Timeout::Attempt))),
        vec![timed_out_by(Timeout::Attempt)],
        10,
    );
    assert_eq!(
        got,
        format!(
            "{BACKOFF} (pod p on node n1: condition job-decider.dev/AttemptDeadlineExceeded=True; \
             rule AttemptDeadline action Count; limit backoffLimit=0)"
        )
    );
}

#[test]
fn detailed_message_names_every_timeout_as_it_names_the_pending_timeout() {
    let cases = [
        (
            Timeout::Pending,
            "job-decider.dev/PendingTimeout",
            "PendingTimeout",
        ),
        (
            Timeout::Ready,
            "job-decider.dev/ReadyTimeout",
            "ReadyTimeout",
        ),
        (
            Timeout::Attempt,
            "job-decider.dev/AttemptDeadlineExceeded",
            "AttemptDeadline",
        ),
        (
            Timeout::Terminating,
            "job-decider.dev/TerminatingTimeout",
            "TerminatingTimeout",
        ),
    ];
    for (timeout, condition, rule) in cases {
        let mut zero = job();
        zero.spec.backoff_limit = 0;
        let got = message_of(
            started(zero, Some(detailed_with(timeout))),
            vec![timed_out_by(timeout)],
            10,
        );
        assert_eq!(
            got,
            format!(
                "{BACKOFF} (pod p on node n1: condition {condition}=True; \
                 rule {rule} action Count; limit backoffLimit=0)"
            ),
            "{timeout:?}"
        );
    }
}
