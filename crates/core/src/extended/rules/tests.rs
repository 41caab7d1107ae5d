//! Table tests of matching a failed pod against the document, one case per
//! behaviour (in the style of upstream's TestMatchPodFailurePolicy): every
//! matcher, AND across a rule's matchers, rule order, the implicit
//! PendingTimeout rule; then names → reasons and the FailJob messages.

use super::test_docs::*;
use super::*;
use crate::extended::RULE_MATCH_COUNTS_ANNOTATION;
use crate::fixtures::{PodExt, job, pod, t};
use crate::model::PendingTimeout;
use crate::model::{ConditionStatus, ContainerStatus, PodPhase};

use ExtendedAction::{Count, FailIndex, FailJob, Ignore};

const SIGKILL: (i32, i32) = (137, 137);
const SIGSEGV: (i32, i32) = (139, 139);

fn failed(name: &str) -> Pod {
    pod(name).phase(PodPhase::Failed)
}

fn exit_on(container: &str, exit_code: i32, init_container: bool) -> MatchedOn {
    MatchedOn::ExitCode {
        container: container.into(),
        exit_code,
        init_container,
    }
}

fn condition_on(condition_type: &str, status: ConditionStatus) -> MatchedOn {
    MatchedOn::Condition {
        condition_type: condition_type.into(),
        status,
    }
}

fn reason_on(container: &str, reason: &str, init_container: bool) -> MatchedOn {
    MatchedOn::ContainerReason {
        container: container.into(),
        reason: reason.into(),
        init_container,
    }
}

struct Case {
    name: &'static str,
    rules: Vec<ExtendedRule>,
    /// The document's pendingTimeout action, when it has one.
    pending: Option<ExtendedAction>,
    pod: Pod,
    /// The rule index that handles the pod and its action; `None`: the pod
    /// goes on to spec.podFailurePolicy.
    want: Option<(DocumentRule, ExtendedAction)>,
    /// What each matcher matched, in matcher order.
    want_on: Vec<MatchedOn>,
}

fn policy_of(c: &Case) -> ExtendedFailurePolicy {
    ExtendedFailurePolicy {
        rules: c.rules.clone(),
        pending_timeout: c.pending.map(|action| PendingTimeout {
            seconds: 300,
            reasons: vec!["ImagePullBackOff".into()],
            action,
        }),
        ..ExtendedFailurePolicy::default()
    }
}

fn check(cases: Vec<Case>) {
    for c in cases {
        let policy = policy_of(&c);
        let got = match_document(&policy, &c.pod);
        assert_eq!(
            got.map(|m| (m.rule, m.action)),
            c.want,
            "{}: rule and action",
            c.name
        );
        let on = got.map_or_else(Vec::new, |m| matched_on(&policy, m.rule, &c.pod));
        assert_eq!(on, c.want_on, "{}: matched on", c.name);
        assert_eq!(
            first_document_rule(&policy, &c.pod),
            c.want.map(|(r, _)| r),
            "{}: first rule",
            c.name
        );
    }
}

const R0: DocumentRule = DocumentRule::Rule(0);
const R1: DocumentRule = DocumentRule::Rule(1);

#[test]
fn exit_codes_match_like_upstream_over_the_interval_set() {
    check(vec![
        Case {
            name: "In: a listed value",
            rules: vec![rule(FailJob).exit_in(&[(42, 42)])],
            pending: None,
            pod: failed("p").exit("main", 42, t(1)),
            want: Some((R0, FailJob)),
            want_on: vec![exit_on("main", 42, false)],
        },
        Case {
            name: "In: a range's lower bound",
            rules: vec![rule(Count).exit_in(&[(128, 255)])],
            pending: None,
            pod: failed("p").exit("main", 128, t(1)),
            want: Some((R0, Count)),
            want_on: vec![exit_on("main", 128, false)],
        },
        Case {
            name: "In: a range's upper bound",
            rules: vec![rule(Count).exit_in(&[(128, 255)])],
            pending: None,
            pod: failed("p").exit("main", 255, t(1)),
            want: Some((R0, Count)),
            want_on: vec![exit_on("main", 255, false)],
        },
        Case {
            name: "In: just below and above a range do not match",
            rules: vec![rule(Count).exit_in(&[(128, 255)])],
            pending: None,
            pod: failed("p").exit("main", 127, t(1)).exit("side", 256, t(1)),
            want: None,
            want_on: vec![],
        },
        Case {
            name: "In: signals are 128+n (SIGKILL 137, SIGSEGV 139), between values of other intervals",
            rules: vec![rule(Ignore).exit_in(&[(1, 1), SIGKILL, SIGSEGV])],
            pending: None,
            pod: failed("p").exit("main", 138, t(1)).exit("side", 139, t(1)),
            want: Some((R0, Ignore)),
            want_on: vec![exit_on("side", 139, false)],
        },
        Case {
            name: "In: negative exit codes (Windows) as single-value intervals",
            rules: vec![
                rule(Ignore).exit_in(&[(-1073741676, -1073741676), (-1073741510, -1073741510)]),
            ],
            pending: None,
            pod: failed("p").exit("main", -1073741510, t(1)),
            want: Some((R0, Ignore)),
            want_on: vec![exit_on("main", -1073741510, false)],
        },
        Case {
            name: "In: exit 0 never matches, even in a range that holds it",
            rules: vec![rule(FailJob).exit_in(&[(0, 10)])],
            pending: None,
            pod: failed("p").exit("main", 0, t(1)),
            want: None,
            want_on: vec![],
        },
        Case {
            name: "NotIn: a code outside the set",
            rules: vec![rule(FailJob).exit_not_in(&[(1, 1), (128, 255)])],
            pending: None,
            pod: failed("p").exit("main", 2, t(1)),
            want: Some((R0, FailJob)),
            want_on: vec![exit_on("main", 2, false)],
        },
        Case {
            name: "NotIn: successful containers are skipped (upstream)",
            rules: vec![rule(FailJob).exit_not_in(&[(111, 111)])],
            pending: None,
            pod: failed("p")
                .init_exit("init", 0, t(1))
                .exit("main", 111, t(1))
                .exit("side", 0, t(1)),
            want: None,
            want_on: vec![],
        },
        Case {
            name: "NotIn: a code inside a range does not match",
            rules: vec![rule(FailJob).exit_not_in(&[(128, 255)])],
            pending: None,
            pod: failed("p").exit("main", 200, t(1)),
            want: None,
            want_on: vec![],
        },
        Case {
            name: "containerName restricts the match to that container",
            rules: vec![
                rule(FailJob)
                    .exit_in(&[(5, 5), (42, 42)])
                    .exit_container("main"),
            ],
            pending: None,
            pod: failed("p").exit("other", 5, t(1)).exit("main", 42, t(1)),
            want: Some((R0, FailJob)),
            want_on: vec![exit_on("main", 42, false)],
        },
        Case {
            name: "containerName of a container whose code is not in the set gives no match",
            rules: vec![rule(FailJob).exit_in(&[(5, 5)]).exit_container("main")],
            pending: None,
            pod: failed("p").exit("other", 5, t(1)).exit("main", 42, t(1)),
            want: None,
            want_on: vec![],
        },
        Case {
            name: "init containers match too",
            rules: vec![rule(FailJob).exit_in(&[(5, 7)])],
            pending: None,
            pod: failed("p")
                .init_exit("setup", 5, t(1))
                .exit("main", 143, t(1)),
            want: Some((R0, FailJob)),
            want_on: vec![exit_on("setup", 5, true)],
        },
        Case {
            name: "a regular container is found before an init container",
            rules: vec![rule(FailJob).exit_in(&[(5, 6)])],
            pending: None,
            pod: failed("p")
                .init_exit("setup", 5, t(1))
                .exit("main", 6, t(1)),
            want: Some((R0, FailJob)),
            want_on: vec![exit_on("main", 6, false)],
        },
        Case {
            name: "a running container has no exit code",
            rules: vec![rule(Count).exit_not_in(&[(1, 1)])],
            pending: None,
            pod: {
                let mut p = failed("p");
                p.container_statuses.push(ContainerStatus {
                    name: "main".into(),
                    terminated: None,
                    restart_count: 0,
                });
                p
            },
            want: None,
            want_on: vec![],
        },
        Case {
            name: "an unknown operator never matches",
            rules: vec![{
                let mut r = rule(FailJob).exit_in(&[(1, 255)]);
                if let Some(m) = r.on_exit_codes.as_mut() {
                    m.operator = crate::model::ExitCodeOperator::Unknown("Between".into());
                }
                r
            }],
            pending: None,
            pod: failed("p").exit("main", 3, t(1)),
            want: None,
            want_on: vec![],
        },
    ]);
}

#[test]
fn conditions_and_reasons_match() {
    let disruption = "DisruptionTarget";
    check(vec![
        Case {
            name: "onPodConditions: type and status",
            rules: vec![rule(Ignore).on_condition(disruption, ConditionStatus::True)],
            pending: None,
            pod: failed("p").condition(disruption, t(1)),
            want: Some((R0, Ignore)),
            want_on: vec![condition_on(disruption, ConditionStatus::True)],
        },
        Case {
            name: "onPodConditions: the status must be the pattern's",
            rules: vec![rule(Ignore).on_condition(disruption, ConditionStatus::False)],
            pending: None,
            pod: failed("p").condition(disruption, t(1)),
            want: None,
            want_on: vec![],
        },
        Case {
            name: "onPodReasons: the pod's status.reason, exactly",
            rules: vec![rule(Count).pod_reasons(&["Evicted", "UnexpectedAdmissionError"])],
            pending: None,
            pod: failed("p").pod_reason("UnexpectedAdmissionError"),
            want: Some((R0, Count)),
            want_on: vec![MatchedOn::PodReason {
                reason: "UnexpectedAdmissionError".into(),
            }],
        },
        Case {
            name: "onPodReasons: no prefix or case-insensitive match",
            rules: vec![rule(Count).pod_reasons(&["Evicted"])],
            pending: None,
            pod: failed("p").pod_reason("evicted"),
            want: None,
            want_on: vec![],
        },
        Case {
            name: "onPodReasons: a pod without details (no reason) does not match",
            rules: vec![rule(Count).pod_reasons(&["Evicted"])],
            pending: None,
            pod: failed("p"),
            want: None,
            want_on: vec![],
        },
        Case {
            name: "onContainerReasons: any container",
            rules: vec![rule(FailJob).container_reasons(None, &["OOMKilled"])],
            pending: None,
            pod: failed("p")
                .termination("side", false, "Completed", "")
                .termination("main", false, "OOMKilled", ""),
            want: Some((R0, FailJob)),
            want_on: vec![reason_on("main", "OOMKilled", false)],
        },
        Case {
            name: "onContainerReasons: containerName restricts it",
            rules: vec![rule(FailJob).container_reasons(Some("main"), &["OOMKilled"])],
            pending: None,
            pod: failed("p")
                .termination("side", false, "OOMKilled", "")
                .termination("main", false, "Error", ""),
            want: None,
            want_on: vec![],
        },
        Case {
            name: "onContainerReasons: init containers too, after regular ones",
            rules: vec![rule(Count).container_reasons(None, &["Error", "ContainerCannotRun"])],
            pending: None,
            pod: failed("p")
                .termination("setup", true, "Error", "")
                .termination("main", false, "ContainerCannotRun", ""),
            want: Some((R0, Count)),
            want_on: vec![reason_on("main", "ContainerCannotRun", false)],
        },
        Case {
            name: "onMessage: searched in the pod's message",
            rules: vec![rule(FailJob).message("CUDA error: [a-z ]+")],
            pending: None,
            pod: failed("p").pod_message("fatal: CUDA error: out of memory at step 3"),
            want: Some((R0, FailJob)),
            want_on: vec![MatchedOn::Message { container: None }],
        },
        Case {
            name: "onMessage: searched in each terminated container's message",
            rules: vec![rule(FailJob).message("^disk quota")],
            pending: None,
            pod: failed("p")
                .pod_message("the pod failed")
                .termination("side", false, "Error", "oops")
                .termination("main", false, "Error", "disk quota exceeded"),
            want: Some((R0, FailJob)),
            want_on: vec![MatchedOn::Message {
                container: Some("main".into()),
            }],
        },
        Case {
            name: "onMessage: no message holds the pattern",
            rules: vec![rule(FailJob).message("CUDA")],
            pending: None,
            pod: failed("p")
                .pod_message("killed")
                .termination("main", false, "Error", "segfault"),
            want: None,
            want_on: vec![],
        },
        Case {
            name: "onMessage: an empty message is no message (a pattern matching \"\" does not hold)",
            rules: vec![rule(FailJob).message("^$")],
            pending: None,
            pod: failed("p").pod_reason("Evicted"),
            want: None,
            want_on: vec![],
        },
    ]);
}

#[test]
fn a_rule_holds_only_when_all_its_matchers_hold() {
    let oom = || {
        rule(FailJob)
            .named("oom")
            .exit_in(&[SIGKILL])
            .container_reasons(Some("main"), &["OOMKilled"])
    };
    check(vec![
        Case {
            name: "AND: exit code and container reason both hold",
            rules: vec![oom()],
            pending: None,
            pod: failed("p")
                .exit("main", 137, t(1))
                .termination("main", false, "OOMKilled", ""),
            want: Some((R0, FailJob)),
            want_on: vec![
                exit_on("main", 137, false),
                reason_on("main", "OOMKilled", false),
            ],
        },
        Case {
            name: "AND: the exit code holds, the reason does not",
            rules: vec![oom()],
            pending: None,
            pod: failed("p")
                .exit("main", 137, t(1))
                .termination("main", false, "Error", ""),
            want: None,
            want_on: vec![],
        },
        Case {
            name: "AND: the reason holds, the exit code does not",
            rules: vec![oom()],
            pending: None,
            pod: failed("p")
                .exit("main", 1, t(1))
                .termination("main", false, "OOMKilled", ""),
            want: None,
            want_on: vec![],
        },
        Case {
            name: "AND: all five matchers",
            rules: vec![
                rule(Ignore)
                    .exit_in(&[(1, 1)])
                    .on_condition("DisruptionTarget", ConditionStatus::True)
                    .pod_reasons(&["Evicted"])
                    .container_reasons(None, &["Error"])
                    .message("node drain"),
            ],
            pending: None,
            pod: failed("p")
                .exit("main", 1, t(1))
                .condition("DisruptionTarget", t(1))
                .pod_reason("Evicted")
                .pod_message("evicted by node drain")
                .termination("main", false, "Error", ""),
            want: Some((R0, Ignore)),
            want_on: vec![
                exit_on("main", 1, false),
                condition_on("DisruptionTarget", ConditionStatus::True),
                MatchedOn::PodReason {
                    reason: "Evicted".into(),
                },
                reason_on("main", "Error", false),
                MatchedOn::Message { container: None },
            ],
        },
        Case {
            name: "AND: one of five missing",
            rules: vec![
                rule(Ignore)
                    .exit_in(&[(1, 1)])
                    .on_condition("DisruptionTarget", ConditionStatus::True)
                    .pod_reasons(&["Evicted"])
                    .container_reasons(None, &["Error"])
                    .message("node drain"),
            ],
            pending: None,
            pod: failed("p")
                .exit("main", 1, t(1))
                .condition("DisruptionTarget", t(1))
                .pod_reason("Evicted")
                .pod_message("evicted")
                .termination("main", false, "Error", ""),
            want: None,
            want_on: vec![],
        },
        Case {
            name: "a rule without matchers matches nothing",
            rules: vec![rule(FailJob)],
            pending: None,
            pod: failed("p").exit("main", 1, t(1)).pod_reason("Evicted"),
            want: None,
            want_on: vec![],
        },
    ]);
}

#[test]
fn rules_are_tried_in_order_after_the_pending_timeout_rule() {
    check(vec![
        Case {
            name: "the first rule that holds wins, though a later one holds too",
            rules: vec![
                rule(Count).exit_in(&[(2, 2)]),
                rule(Ignore).exit_in(&[(1, 255)]),
                rule(FailJob).exit_in(&[(1, 1)]),
            ],
            pending: None,
            pod: failed("p").exit("main", 1, t(1)),
            want: Some((R1, Ignore)),
            want_on: vec![exit_on("main", 1, false)],
        },
        Case {
            name: "no rule holds: on to spec.podFailurePolicy",
            rules: vec![rule(FailJob).exit_in(&[(2, 2)])],
            pending: Some(FailJob),
            pod: failed("p").exit("main", 1, t(1)),
            want: None,
            want_on: vec![],
        },
        Case {
            name: "a pod failed for its pending timeout takes pendingTimeout.action first",
            rules: vec![rule(FailJob).on_condition(
                crate::extended::PENDING_TIMEOUT_CONDITION,
                ConditionStatus::True,
            )],
            pending: Some(Count),
            pod: failed("p").pending_timed_out(),
            want: Some((DocumentRule::Timeout(Timeout::Pending), Count)),
            want_on: vec![MatchedOn::Timeout(Timeout::Pending)],
        },
        Case {
            name: "pendingTimeout removed from the document: the pod falls through to the rules",
            rules: vec![rule(FailIndex).on_condition(
                crate::extended::PENDING_TIMEOUT_CONDITION,
                ConditionStatus::True,
            )],
            pending: None,
            pod: failed("p").pending_timed_out(),
            want: Some((R0, FailIndex)),
            want_on: vec![condition_on(
                crate::extended::PENDING_TIMEOUT_CONDITION,
                ConditionStatus::True,
            )],
        },
        Case {
            name: "the pending-timeout condition must be True",
            rules: vec![],
            pending: Some(FailJob),
            pod: {
                let mut p = failed("p").pending_timed_out();
                p.conditions[0].status = ConditionStatus::False;
                p
            },
            want: None,
            want_on: vec![],
        },
    ]);
}

#[test]
fn names_give_the_failed_reason() {
    let policy = ExtendedFailurePolicy {
        rules: vec![
            rule(FailJob).named("oom").exit_in(&[SIGKILL]),
            rule(FailJob).exit_in(&[(1, 1)]),
        ],
        pending_timeout: Some(PendingTimeout {
            seconds: 60,
            reasons: vec![],
            action: FailJob,
        }),
        ..ExtendedFailurePolicy::default()
    };
    assert_eq!(fail_job_reason(&policy, R0), "PodFailurePolicy_oom");
    assert_eq!(fail_job_reason(&policy, R1), "PodFailurePolicy");
    assert_eq!(
        fail_job_reason(&policy, DocumentRule::Timeout(Timeout::Pending)),
        "PodFailurePolicy_PendingTimeout"
    );
    assert_eq!(rule_label(&policy, R0), "\"oom\"");
    assert_eq!(
        rule_label(&policy, R1),
        "at index 1 of the failure policy document"
    );
}

/// The FailJob message of the document's match on `pod` in `job`.
fn message(job: &crate::model::Job, pod: &Pod) -> String {
    let policy = job.extended_failure_policy.as_deref().expect("a document");
    let m = match_document(policy, pod).expect("a match");
    fail_job_message(job, &m, pod)
}

#[test]
fn fail_job_messages_name_the_rule_in_upstreams_words() {
    let doc = document(vec![
        rule(FailJob).named("oom").exit_in(&[(128, 255)]),
        rule(FailJob).exit_in(&[(42, 42)]),
        rule(FailJob).on_condition("ConfigIssue", ConditionStatus::True),
        rule(FailJob)
            .named("admission")
            .pod_reasons(&["UnexpectedAdmissionError"]),
        rule(FailJob)
            .named("cannot_run")
            .container_reasons(None, &["ContainerCannotRun"]),
        rule(FailJob).named("cuda").message("CUDA"),
    ]);
    let job = with_document(job(), doc);
    let cases = [
        (
            failed("p").exit("main", 137, t(1)),
            "Container main for pod default/p failed with exit code 137 matching FailJob rule \"oom\"",
        ),
        (
            failed("p").exit("main", 42, t(1)),
            "Container main for pod default/p failed with exit code 42 matching FailJob rule at index 1 of the failure policy document",
        ),
        (
            failed("p").condition("ConfigIssue", t(1)),
            "Pod default/p has condition ConfigIssue matching FailJob rule at index 2 of the failure policy document",
        ),
        (
            failed("p").pod_reason("UnexpectedAdmissionError"),
            "Pod default/p failed with reason UnexpectedAdmissionError matching FailJob rule \"admission\"",
        ),
        (
            failed("p").termination("main", false, "ContainerCannotRun", ""),
            "Container main for pod default/p terminated with reason ContainerCannotRun matching FailJob rule \"cannot_run\"",
        ),
        (
            failed("p").termination("main", false, "Error", "CUDA error"),
            "Container main for pod default/p failed with a message matching FailJob rule \"cuda\"",
        ),
        (
            failed("p").pod_message("CUDA error"),
            "Pod default/p failed with a message matching FailJob rule \"cuda\"",
        ),
    ];
    for (pod, want) in cases {
        assert_eq!(message(&job, &pod), want);
    }
    let mut pending = (*document(vec![])).clone();
    pending.pending_timeout = Some(PendingTimeout {
        seconds: 60,
        reasons: vec![],
        action: FailJob,
    });
    let job = with_document(crate::fixtures::job(), std::sync::Arc::new(pending));
    assert_eq!(
        message(&job, &failed("p").pending_timed_out()),
        "Pod default/p has condition job-decider.dev/PendingTimeout matching FailJob rule \"PendingTimeout\""
    );
}

#[test]
fn an_exhausted_limit_says_which_match_and_where() {
    let doc = document(vec![
        rule(Count)
            .named("oom")
            .exit_in(&[SIGKILL])
            .max_retries(2, FailJob),
    ]);
    let job = with_document(job(), doc);
    let p = failed("p").exit("main", 137, t(1)).carried(&[("oom", 2)]);
    assert_eq!(
        message(&job, &p),
        "Container main for pod default/p failed with exit code 137 matching rule \"oom\" for the 3rd time in the Job: its 2 retries are used up"
    );
    let mut indexed = job.clone();
    indexed.spec.completion_mode = crate::model::CompletionMode::Indexed;
    indexed.spec.completions = Some(4);
    assert!(
        message(&indexed, &p.index(3))
            .ends_with("for the 3rd time in index 3: its 2 retries are used up"),
    );
    // The annotation named here is the one that carried the count.
    assert_eq!(
        RULE_MATCH_COUNTS_ANNOTATION,
        "job-decider.dev/rule-match-counts"
    );
}

#[test]
fn messages_and_matches_stay_bounded() {
    let doc = document(vec![
        rule(FailJob)
            .named("huge")
            .pod_reasons(&[&"R".repeat(10_000)])
            .container_reasons(None, &[&"C".repeat(10_000)]),
    ]);
    let job = with_document(job(), doc.clone());
    let p = failed(&"p".repeat(253))
        .pod_reason(&"R".repeat(10_000))
        .termination(&"c".repeat(5_000), false, &"C".repeat(10_000), "");
    let got = message(&job, &p);
    assert!(got.len() <= MAX_FAIL_JOB_MESSAGE_BYTES, "{}", got.len());
    for on in matched_on(&doc, R0, &p) {
        let described = on.describe(&asked(&doc, R0));
        assert!(described.len() <= crate::text::MAX_TEXT_BYTES);
        match on {
            MatchedOn::PodReason { reason } => assert!(reason.len() <= MAX_QUOTED_BYTES),
            MatchedOn::ContainerReason {
                container, reason, ..
            } => assert!(container.len() <= MAX_QUOTED_BYTES && reason.len() <= MAX_QUOTED_BYTES),
            other => panic!("unexpected {other:?}"),
        }
    }
}

#[test]
fn document_actions_read_as_upstreams() {
    use crate::model::PodFailurePolicyAction as A;
    assert_eq!(policy_action_of(FailJob), &A::FailJob);
    assert_eq!(policy_action_of(FailIndex), &A::FailIndex);
    assert_eq!(policy_action_of(Ignore), &A::Ignore);
    assert_eq!(policy_action_of(Count), &A::Count);
}

#[test]
fn codes_contain_searches_disjoint_intervals() {
    let codes = [(-5, -5), (1, 1), (3, 7), (128, 255)];
    let inside = [-5, 1, 3, 5, 7, 128, 200, 255];
    let outside = [i32::MIN, -6, -4, 0, 2, 8, 127, 256, i32::MAX];
    for c in inside {
        assert!(codes_contain(&codes, c), "{c}");
    }
    for c in outside {
        assert!(!codes_contain(&codes, c), "{c}");
    }
    assert!(!codes_contain(&[], 1));
    assert_eq!(codes_text(&codes), "-5, 1, 3-7, 128-255");
}

mod sync;
