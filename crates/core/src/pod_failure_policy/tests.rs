use super::*;
use crate::fixtures::{PodExt, pod, t};
use crate::model::{
    ConditionStatus, OnExitCodes, OnPodConditionsPattern, PodFailurePolicyAction as Action,
    PodFailurePolicyRule, PodPhase,
};

fn on_exit(action: Action, operator: ExitCodeOperator, values: &[i32]) -> PodFailurePolicyRule {
    PodFailurePolicyRule {
        action,
        on_exit_codes: Some(OnExitCodes {
            container_name: None,
            operator,
            values: values.to_vec(),
        }),
        on_pod_conditions: vec![],
    }
}

fn in_codes(action: Action, values: &[i32]) -> PodFailurePolicyRule {
    on_exit(action, ExitCodeOperator::In, values)
}

fn not_in_codes(action: Action, values: &[i32]) -> PodFailurePolicyRule {
    on_exit(action, ExitCodeOperator::NotIn, values)
}

fn in_container(mut rule: PodFailurePolicyRule, name: &str) -> PodFailurePolicyRule {
    if let Some(req) = rule.on_exit_codes.as_mut() {
        req.container_name = Some(name.to_string());
    }
    rule
}

fn on_condition(action: Action, ty: &str, status: ConditionStatus) -> PodFailurePolicyRule {
    PodFailurePolicyRule {
        action,
        on_exit_codes: None,
        on_pod_conditions: vec![OnPodConditionsPattern {
            condition_type: ty.to_string(),
            status,
        }],
    }
}

fn failed(name: &str) -> Pod {
    pod(name).phase(PodPhase::Failed)
}

fn with_condition(mut p: Pod, ty: &str, status: ConditionStatus) -> Pod {
    p.conditions.push(PodCondition {
        condition_type: ty.into(),
        status,
        last_transition_time: None,
    });
    p
}

fn running_container(mut p: Pod, name: &str) -> Pod {
    p.container_statuses.push(ContainerStatus {
        name: name.into(),
        terminated: None,
        restart_count: 0,
    });
    p
}

struct Case {
    name: &'static str,
    rules: Option<Vec<PodFailurePolicyRule>>,
    pod: Pod,
    want_message: Option<&'static str>,
    want_counted: bool,
    want_action: Option<Action>,
    want_rule: Option<usize>,
}

fn check(cases: Vec<Case>) {
    for c in cases {
        let policy = c.rules.map(|rules| PodFailurePolicy { rules });
        let got = match_pod_failure_policy(policy.as_ref(), "default", &c.pod);
        assert_eq!(
            got.fail_job_message.as_deref(),
            c.want_message,
            "{}: message",
            c.name
        );
        assert_eq!(got.counts_failure(), c.want_counted, "{}: counted", c.name);
        assert_eq!(got.action, c.want_action, "{}: action", c.name);
        assert_eq!(got.rule_index, c.want_rule, "{}: rule index", c.name);
        assert_eq!(
            got.matched_on.is_some(),
            c.want_rule.is_some(),
            "{}: matched on",
            c.name
        );
    }
}

const DISRUPTION: &str = "DisruptionTarget";

// Upstream TestMatchPodFailurePolicy, one case per upstream case (the
// FailIndex gate is always on here), plus the exact match details.
#[test]
fn matches_like_upstream() {
    let cases = vec![
        Case {
            name: "unknown action for rule matching by exit codes - skip rule with unknown action",
            rules: Some(vec![
                in_codes(Action::Unknown("UnknownAction".into()), &[1, 2]),
                in_codes(Action::FailJob, &[2, 3]),
            ]),
            pod: failed("mypod").exit("main-container", 2, t(0)),
            want_message: Some(
                "Container main-container for pod default/mypod failed with exit code 2 matching FailJob rule at index 1",
            ),
            want_counted: true,
            want_action: Some(Action::FailJob),
            want_rule: Some(1),
        },
        Case {
            name: "unknown action for rule matching by pod conditions - skip rule with unknown action",
            rules: Some(vec![
                on_condition(
                    Action::Unknown("UnkonwnAction".into()),
                    DISRUPTION,
                    ConditionStatus::True,
                ),
                on_condition(Action::Ignore, DISRUPTION, ConditionStatus::True),
            ]),
            pod: failed("mypod").condition(DISRUPTION, t(0)),
            want_message: None,
            want_counted: false,
            want_action: Some(Action::Ignore),
            want_rule: Some(1),
        },
        Case {
            name: "unknown operator - rule with unknown action is skipped for onExitCodes",
            rules: Some(vec![
                on_exit(
                    Action::Ignore,
                    ExitCodeOperator::Unknown("UnknownOperator".into()),
                    &[1, 2],
                ),
                in_codes(Action::FailJob, &[2, 3]),
            ]),
            pod: failed("mypod").exit("main-container", 2, t(0)),
            want_message: Some(
                "Container main-container for pod default/mypod failed with exit code 2 matching FailJob rule at index 1",
            ),
            want_counted: true,
            want_action: Some(Action::FailJob),
            want_rule: Some(1),
        },
        Case {
            name: "no policy rules",
            rules: None,
            pod: failed("mypod").exit("", 2, t(0)),
            want_message: None,
            want_counted: true,
            want_action: None,
            want_rule: None,
        },
        Case {
            name: "ignore rule matched for exit codes",
            rules: Some(vec![in_codes(Action::Ignore, &[1, 2, 3])]),
            pod: failed("mypod").exit("", 2, t(0)),
            want_message: None,
            want_counted: false,
            want_action: Some(Action::Ignore),
            want_rule: Some(0),
        },
        Case {
            name: "ignore rule matched on negative exit codes - needed for Windows support",
            rules: Some(vec![in_codes(Action::Ignore, &[-1073741676, -1073741510])]),
            pod: failed("mypod").exit("", -1073741510, t(0)),
            want_message: None,
            want_counted: false,
            want_action: Some(Action::Ignore),
            want_rule: Some(0),
        },
        Case {
            name: "FailJob rule matched for exit codes",
            rules: Some(vec![in_codes(Action::FailJob, &[1, 2, 3])]),
            pod: failed("mypod").exit("main-container", 2, t(0)),
            want_message: Some(
                "Container main-container for pod default/mypod failed with exit code 2 matching FailJob rule at index 0",
            ),
            want_counted: true,
            want_action: Some(Action::FailJob),
            want_rule: Some(0),
        },
        Case {
            name: "successful containers are skipped by the rules",
            rules: Some(vec![not_in_codes(Action::FailJob, &[111])]),
            pod: failed("mypod")
                .init_exit("init-container", 0, t(0))
                .exit("main-container", 111, t(0))
                .exit("suppport-container", 0, t(0)),
            want_message: None,
            want_counted: true,
            want_action: None,
            want_rule: None,
        },
        Case {
            name: "FailIndex rule matched for exit codes",
            rules: Some(vec![in_codes(Action::FailIndex, &[1, 2, 3])]),
            pod: failed("mypod").exit("", 2, t(0)),
            want_message: None,
            want_counted: true,
            want_action: Some(Action::FailIndex),
            want_rule: Some(0),
        },
        Case {
            name: "pod failure policy with NotIn operator and value 0",
            rules: Some(vec![not_in_codes(Action::FailJob, &[0])]),
            pod: failed("mypod").exit("main-container", 1, t(0)).exit(
                "suppport-container",
                0,
                t(0),
            ),
            want_message: Some(
                "Container main-container for pod default/mypod failed with exit code 1 matching FailJob rule at index 0",
            ),
            want_counted: true,
            want_action: Some(Action::FailJob),
            want_rule: Some(0),
        },
        Case {
            name: "second jobfail rule matched for exit codes",
            rules: Some(vec![
                in_codes(Action::Count, &[1, 2, 3]),
                in_codes(Action::FailJob, &[4, 5, 6]),
            ]),
            pod: failed("mypod").exit("main-container", 6, t(0)),
            want_message: Some(
                "Container main-container for pod default/mypod failed with exit code 6 matching FailJob rule at index 1",
            ),
            want_counted: true,
            want_action: Some(Action::FailJob),
            want_rule: Some(1),
        },
        Case {
            name: "count rule matched for exit codes",
            rules: Some(vec![in_codes(Action::Count, &[1, 2, 3])]),
            pod: running_container(failed("mypod"), "foo").exit("bar", 2, t(0)),
            want_message: None,
            want_counted: true,
            want_action: Some(Action::Count),
            want_rule: Some(0),
        },
        Case {
            name: "FailIndex rule matched for pod conditions",
            rules: Some(vec![on_condition(
                Action::FailIndex,
                DISRUPTION,
                ConditionStatus::True,
            )]),
            pod: failed("mypod").condition(DISRUPTION, t(0)),
            want_message: None,
            want_counted: true,
            want_action: Some(Action::FailIndex),
            want_rule: Some(0),
        },
        Case {
            name: "ignore rule matched for pod conditions",
            rules: Some(vec![on_condition(
                Action::Ignore,
                DISRUPTION,
                ConditionStatus::True,
            )]),
            pod: failed("mypod").condition(DISRUPTION, t(0)),
            want_message: None,
            want_counted: false,
            want_action: Some(Action::Ignore),
            want_rule: Some(0),
        },
        Case {
            name: "ignore rule matches by the status=False",
            rules: Some(vec![on_condition(
                Action::Ignore,
                DISRUPTION,
                ConditionStatus::False,
            )]),
            pod: with_condition(failed("mypod"), DISRUPTION, ConditionStatus::False),
            want_message: None,
            want_counted: false,
            want_action: Some(Action::Ignore),
            want_rule: Some(0),
        },
        Case {
            name: "ignore rule matches by the status=Unknown",
            rules: Some(vec![on_condition(
                Action::Ignore,
                DISRUPTION,
                ConditionStatus::Unknown,
            )]),
            pod: with_condition(failed("mypod"), DISRUPTION, ConditionStatus::Unknown),
            want_message: None,
            want_counted: false,
            want_action: Some(Action::Ignore),
            want_rule: Some(0),
        },
        Case {
            name: "ignore rule does not match when status for pattern is False, but actual True",
            rules: Some(vec![on_condition(
                Action::Ignore,
                DISRUPTION,
                ConditionStatus::False,
            )]),
            pod: failed("mypod").condition(DISRUPTION, t(0)),
            want_message: None,
            want_counted: true,
            want_action: None,
            want_rule: None,
        },
        Case {
            name: "ignore rule does not match when status for pattern is True, but actual False",
            rules: Some(vec![on_condition(
                Action::Ignore,
                DISRUPTION,
                ConditionStatus::True,
            )]),
            pod: with_condition(failed("mypod"), DISRUPTION, ConditionStatus::False),
            want_message: None,
            want_counted: true,
            want_action: None,
            want_rule: None,
        },
        Case {
            name: "default - do not match condition with status=False",
            rules: Some(vec![on_condition(
                Action::Ignore,
                DISRUPTION,
                ConditionStatus::True,
            )]),
            pod: with_condition(failed("mypod"), DISRUPTION, ConditionStatus::False),
            want_message: None,
            want_counted: true,
            want_action: None,
            want_rule: None,
        },
        Case {
            name: "job fail rule matched for pod conditions",
            rules: Some(vec![on_condition(
                Action::FailJob,
                DISRUPTION,
                ConditionStatus::True,
            )]),
            pod: failed("mypod").condition(DISRUPTION, t(0)),
            want_message: Some(
                "Pod default/mypod has condition DisruptionTarget matching FailJob rule at index 0",
            ),
            want_counted: true,
            want_action: Some(Action::FailJob),
            want_rule: Some(0),
        },
        Case {
            name: "count rule matched for pod conditions",
            rules: Some(vec![on_condition(
                Action::Count,
                DISRUPTION,
                ConditionStatus::True,
            )]),
            pod: failed("mypod").condition(DISRUPTION, t(0)),
            want_message: None,
            want_counted: true,
            want_action: Some(Action::Count),
            want_rule: Some(0),
        },
        Case {
            // Upstream's name says "no rule matched", but its first rule (NotIn {8}) matches 32.
            name: "no rule matched",
            rules: Some(vec![
                not_in_codes(Action::Count, &[8]),
                in_codes(Action::Ignore, &[1, 2, 3]),
                not_in_codes(Action::FailJob, &[5, 6, 7]),
                on_condition(
                    Action::Count,
                    "ResourceLimitExceeded",
                    ConditionStatus::True,
                ),
                on_condition(Action::Ignore, DISRUPTION, ConditionStatus::True),
            ]),
            pod: failed("mypod").exit("", 32, t(0)),
            want_message: None,
            want_counted: true,
            want_action: Some(Action::Count),
            want_rule: Some(0),
        },
    ];
    check(cases);
}

// Beyond upstream's table: container order, container names and exit-code-only rules.
#[test]
fn matching_details() {
    let cases = vec![
        Case {
            name: "init container matches when no regular one does (upstream sync test)",
            rules: Some(vec![
                in_codes(Action::Ignore, &[1, 2, 3]),
                in_codes(Action::FailJob, &[5, 6, 7]),
            ]),
            pod: failed("mypod-0")
                .init_exit("init-container", 5, t(0))
                .exit("main", 143, t(0)),
            want_message: Some(
                "Container init-container for pod default/mypod-0 failed with exit code 5 matching FailJob rule at index 1",
            ),
            want_counted: true,
            want_action: Some(Action::FailJob),
            want_rule: Some(1),
        },
        Case {
            name: "regular container is reported before an init container",
            rules: Some(vec![in_codes(Action::FailJob, &[5, 6])]),
            pod: failed("p").init_exit("init", 5, t(0)).exit("main", 6, t(0)),
            want_message: Some(
                "Container main for pod default/p failed with exit code 6 matching FailJob rule at index 0",
            ),
            want_counted: true,
            want_action: Some(Action::FailJob),
            want_rule: Some(0),
        },
        Case {
            name: "containerName restricts the match",
            rules: Some(vec![in_container(
                in_codes(Action::FailJob, &[5, 42]),
                "main-container",
            )]),
            pod: failed("p")
                .exit("other", 5, t(0))
                .exit("main-container", 42, t(0)),
            want_message: Some(
                "Container main-container for pod default/p failed with exit code 42 matching FailJob rule at index 0",
            ),
            want_counted: true,
            want_action: Some(Action::FailJob),
            want_rule: Some(0),
        },
        Case {
            name: "containerName of a container whose code is not listed gives no match",
            rules: Some(vec![in_container(
                in_codes(Action::FailJob, &[5]),
                "main-container",
            )]),
            pod: failed("p")
                .exit("other", 5, t(0))
                .exit("main-container", 42, t(0)),
            want_message: None,
            want_counted: true,
            want_action: None,
            want_rule: None,
        },
        Case {
            name: "an exit-code rule never consults conditions",
            rules: Some(vec![PodFailurePolicyRule {
                on_pod_conditions: vec![OnPodConditionsPattern {
                    condition_type: DISRUPTION.into(),
                    status: ConditionStatus::True,
                }],
                ..in_codes(Action::Ignore, &[9])
            }]),
            pod: failed("p")
                .exit("main", 1, t(0))
                .condition(DISRUPTION, t(0)),
            want_message: None,
            want_counted: true,
            want_action: None,
            want_rule: None,
        },
        Case {
            name: "In with 0 never matches a successful container",
            rules: Some(vec![in_codes(Action::FailJob, &[0])]),
            pod: failed("p").exit("main", 0, t(0)),
            want_message: None,
            want_counted: true,
            want_action: None,
            want_rule: None,
        },
        Case {
            name: "empty rules and an empty pod",
            rules: Some(vec![]),
            pod: failed("p"),
            want_message: None,
            want_counted: true,
            want_action: None,
            want_rule: None,
        },
        Case {
            name: "a rule with neither requirement matches nothing",
            rules: Some(vec![PodFailurePolicyRule {
                action: Action::FailJob,
                on_exit_codes: None,
                on_pod_conditions: vec![],
            }]),
            pod: failed("p")
                .exit("main", 1, t(0))
                .condition(DISRUPTION, t(0)),
            want_message: None,
            want_counted: true,
            want_action: None,
            want_rule: None,
        },
        Case {
            name: "the first matching pod condition in pod order is reported",
            rules: Some(vec![PodFailurePolicyRule {
                action: Action::FailJob,
                on_exit_codes: None,
                on_pod_conditions: vec![
                    OnPodConditionsPattern {
                        condition_type: DISRUPTION.into(),
                        status: ConditionStatus::True,
                    },
                    OnPodConditionsPattern {
                        condition_type: "ConfigIssue".into(),
                        status: ConditionStatus::True,
                    },
                ],
            }]),
            pod: failed("p")
                .condition("ConfigIssue", t(0))
                .condition(DISRUPTION, t(0)),
            want_message: Some(
                "Pod default/p has condition ConfigIssue matching FailJob rule at index 0",
            ),
            want_counted: true,
            want_action: Some(Action::FailJob),
            want_rule: Some(0),
        },
        Case {
            name: "extreme exit codes",
            rules: Some(vec![not_in_codes(Action::FailJob, &[i32::MAX])]),
            pod: failed("p")
                .exit("main", i32::MAX, t(0))
                .exit("side", i32::MIN, t(0)),
            want_message: Some(
                "Container side for pod default/p failed with exit code -2147483648 matching FailJob rule at index 0",
            ),
            want_counted: true,
            want_action: Some(Action::FailJob),
            want_rule: Some(0),
        },
    ];
    check(cases);
}

#[test]
fn matched_on_names_the_container_and_its_kind() {
    let policy = PodFailurePolicy {
        rules: vec![in_codes(Action::Count, &[3])],
    };
    let p = failed("p")
        .exit("main", 0, t(0))
        .init_exit("setup", 3, t(0));
    let got = match_pod_failure_policy(Some(&policy), "ns", &p);
    assert_eq!(
        got.matched_on,
        Some(MatchedOn::ExitCode {
            container: "setup".into(),
            exit_code: 3,
            init_container: true
        })
    );
}
