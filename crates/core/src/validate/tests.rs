//! The validation rules in upstream's table style: each case a Job and the exact messages.

use super::*;
use crate::fixtures::{indexed_job, job};
use crate::model::{PodFailurePolicyRule, SelectorRequirement};

/// A case: its name, a change to `fixtures::job()`, and every message expected, in order.
type Case = (&'static str, fn(&mut Job), &'static [&'static str]);

/// Runs `mutate` on a fresh `fixtures::job()` and returns the violations.
fn messages(mutate: fn(&mut Job)) -> Vec<Violation> {
    let mut j = job();
    mutate(&mut j);
    validate_job(&j)
}

/// Asserts, case by case, the exact field path and full message of every violation, in order.
fn check(cases: &[Case]) {
    for (name, mutate, want) in cases {
        let got = messages(*mutate);
        let got_messages: Vec<String> = got.iter().map(Violation::to_string).collect();
        assert_eq!(got_messages, *want, "case {name:?}");
        for (violation, expected) in got.iter().zip(want.iter()) {
            let expected_field = expected.split_once(": ").map_or(*expected, |(f, _)| f);
            assert_eq!(violation.field, expected_field, "case {name:?}");
        }
    }
}

fn exit_codes(
    action: PodFailurePolicyAction,
    op: ExitCodeOperator,
    values: &[i32],
) -> PodFailurePolicyRule {
    PodFailurePolicyRule {
        action,
        on_exit_codes: Some(OnExitCodes {
            container_name: None,
            operator: op,
            values: values.to_vec(),
        }),
        on_pod_conditions: vec![],
    }
}

fn on_condition(
    action: PodFailurePolicyAction,
    condition_type: &str,
    status: ConditionStatus,
) -> PodFailurePolicyRule {
    PodFailurePolicyRule {
        action,
        on_exit_codes: None,
        on_pod_conditions: vec![OnPodConditionsPattern {
            condition_type: condition_type.into(),
            status,
        }],
    }
}

/// Sets a pod failure policy, with the replacement policy the API defaults alongside it.
fn with_policy(j: &mut Job, rules: Vec<PodFailurePolicyRule>) {
    j.spec.pod_failure_policy = Some(PodFailurePolicy { rules });
    j.spec.pod_replacement_policy = PodReplacementPolicy::Failed;
}

fn with_success(j: &mut Job, rules: &[(Option<&str>, Option<i32>)]) {
    let rules = rules
        .iter()
        .map(|(indexes, count)| SuccessPolicyRule {
            succeeded_indexes: indexes.map(str::to_string),
            succeeded_count: *count,
        })
        .collect();
    j.spec.success_policy = Some(SuccessPolicy { rules });
}

/// A manual selector `a=b` with the given template labels.
fn manual(j: &mut Job, labels: &[(&str, &str)]) {
    j.spec.manual_selector = true;
    j.spec.selector = LabelSelector::default();
    j.spec.selector.match_labels.insert("a".into(), "b".into());
    j.spec.template.labels = labels
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
}

/// Renames the Job and keeps its generated labels consistent with the new name.
fn rename(j: &mut Job, name: &str) {
    j.name = name.into();
    for key in [LEGACY_JOB_NAME_LABEL, JOB_NAME_LABEL] {
        j.spec.template.labels.insert(key.into(), name.into());
    }
}

fn indexed(j: &mut Job, completions: i32, parallelism: i32) {
    *j = indexed_job(completions, parallelism);
}

#[test]
fn fixtures_are_valid() {
    assert_eq!(validate_job(&job()), vec![]);
    assert_eq!(validate_job(&indexed_job(5, 2)), vec![]);
    assert_eq!(validate_job(&indexed_job(1, 1)), vec![]);
    assert_eq!(validate_job(&indexed_job(100_000, 100_000)), vec![]);
}

#[test]
fn valid_jobs_from_upstream() {
    let cases: &[Case] = &[
        (
            "valid success policy",
            |j| {
                indexed(j, 10, 1);
                j.spec.template.restart_policy = RestartPolicy::Never;
                with_success(j, &[(Some("0,2,4"), Some(1)), (Some("1,3,5-9"), None)]);
            },
            &[],
        ),
        (
            "negative exit codes for Windows",
            |j| {
                with_policy(
                    j,
                    vec![exit_codes(
                        PodFailurePolicyAction::FailJob,
                        ExitCodeOperator::NotIn,
                        &[-1073741819, -1073741676, -1073741510],
                    )],
                );
            },
            &[],
        ),
        (
            "valid pod failure policy",
            |j| {
                j.spec.template.containers = vec!["ctr".into()];
                j.spec.template.init_containers = vec!["def".into()];
                let mut count = exit_codes(
                    PodFailurePolicyAction::Count,
                    ExitCodeOperator::In,
                    &[1, 2, 3],
                );
                if let Some(req) = count.on_exit_codes.as_mut() {
                    req.container_name = Some("ctr".into());
                }
                let mut ignore =
                    exit_codes(PodFailurePolicyAction::Ignore, ExitCodeOperator::In, &[4]);
                if let Some(req) = ignore.on_exit_codes.as_mut() {
                    req.container_name = Some("def".into());
                }
                with_policy(
                    j,
                    vec![
                        on_condition(
                            PodFailurePolicyAction::Ignore,
                            "DisruptionTarget",
                            ConditionStatus::True,
                        ),
                        on_condition(
                            PodFailurePolicyAction::FailJob,
                            "CustomConditionType",
                            ConditionStatus::False,
                        ),
                        count,
                        ignore,
                        exit_codes(
                            PodFailurePolicyAction::FailJob,
                            ExitCodeOperator::NotIn,
                            &[5, 6, 7],
                        ),
                    ],
                );
            },
            &[],
        ),
        (
            "FailIndex with backoffLimitPerIndex",
            |j| {
                indexed(j, 2, 1);
                j.spec.backoff_limit_per_index = Some(1);
                with_policy(
                    j,
                    vec![exit_codes(
                        PodFailurePolicyAction::FailIndex,
                        ExitCodeOperator::In,
                        &[10],
                    )],
                );
            },
            &[],
        ),
        ("manual selector", |j| manual(j, &[("a", "b")]), &[]),
        (
            "manual selector ignores generated labels and uid",
            |j| {
                manual(j, &[("a", "b")]);
                j.uid.clear();
            },
            &[],
        ),
        (
            "replacement TerminatingOrFailed",
            |j| {
                j.spec.pod_replacement_policy = PodReplacementPolicy::TerminatingOrFailed;
            },
            &[],
        ),
        (
            "replacement Failed",
            |j| j.spec.pod_replacement_policy = PodReplacementPolicy::Failed,
            &[],
        ),
        (
            "restartPolicy OnFailure",
            |j| j.spec.template.restart_policy = RestartPolicy::OnFailure,
            &[],
        ),
        (
            "Indexed with parallelism 100000",
            |j| indexed(j, 2, 100_000),
            &[],
        ),
        (
            "high completions with per-index limits at the limits",
            |j| {
                indexed(j, 100_000, 100_000);
                j.spec.max_failed_indexes = Some(100_000);
                j.spec.backoff_limit_per_index = Some(1);
            },
            &[],
        ),
        (
            "unlimited completions with per-index limits",
            |j| {
                indexed(j, 1_000_000_000, 10_000);
                j.spec.max_failed_indexes = Some(10_000);
                j.spec.backoff_limit_per_index = Some(1);
            },
            &[],
        ),
        (
            "managedBy",
            |j| j.spec.managed_by = Some("example.com/foo".into()),
            &[],
        ),
        (
            "managedBy of the built-in controller",
            |j| {
                j.spec.managed_by = Some(BUILT_IN.into());
            },
            &[],
        ),
        ("empty pod failure policy", |j| with_policy(j, vec![]), &[]),
        (
            "selector expressions",
            |j| {
                j.spec.selector.match_expressions = vec![
                    SelectorRequirement {
                        key: "job-name".into(),
                        operator: SelectorOperator::In,
                        values: vec!["job".into()],
                    },
                    SelectorRequirement {
                        key: "other".into(),
                        operator: SelectorOperator::DoesNotExist,
                        values: vec![],
                    },
                    SelectorRequirement {
                        key: "controller-uid".into(),
                        operator: SelectorOperator::Exists,
                        values: vec![],
                    },
                    SelectorRequirement {
                        key: "x".into(),
                        operator: SelectorOperator::NotIn,
                        values: vec!["y".into()],
                    },
                ];
            },
            &[],
        ),
        (
            "succeededIndexes with an adjacent interval",
            |j| {
                indexed(j, 10, 1);
                with_success(j, &[(Some("1-3,4"), Some(4))]);
            },
            &[],
        ),
    ];
    check(cases);
}

const BUILT_IN: &str = crate::model::BUILT_IN_CONTROLLER;

#[test]
fn spec_numbers_and_modes() {
    let cases: &[Case] = &[
        (
            "negative parallelism",
            |j| j.spec.parallelism = -1,
            &["spec.parallelism: Invalid value: -1: must be greater than or equal to 0"],
        ),
        (
            "i32::MIN parallelism",
            |j| j.spec.parallelism = i32::MIN,
            &["spec.parallelism: Invalid value: -2147483648: must be greater than or equal to 0"],
        ),
        (
            "negative completions",
            |j| j.spec.completions = Some(-1),
            &["spec.completions: Invalid value: -1: must be greater than or equal to 0"],
        ),
        (
            "negative activeDeadlineSeconds",
            |j| j.spec.active_deadline_seconds = Some(i64::MIN),
            &[
                "spec.activeDeadlineSeconds: Invalid value: -9223372036854775808: must be greater than or equal to 0",
            ],
        ),
        (
            "negative backoffLimit",
            |j| j.spec.backoff_limit = -1,
            &["spec.backoffLimit: Invalid value: -1: must be greater than or equal to 0"],
        ),
        (
            "negative ttlSecondsAfterFinished",
            |j| j.spec.ttl_seconds_after_finished = Some(-1),
            &[
                "spec.ttlSecondsAfterFinished: Invalid value: -1: must be greater than or equal to 0",
            ],
        ),
        (
            "backoffLimitPerIndex on NonIndexed",
            |j| j.spec.backoff_limit_per_index = Some(1),
            &["spec.backoffLimitPerIndex: Invalid value: 1: requires indexed completion mode"],
        ),
        (
            "maxFailedIndexes on NonIndexed",
            |j| {
                j.spec.backoff_limit_per_index = Some(1);
                j.spec.max_failed_indexes = Some(1);
            },
            &[
                "spec.backoffLimitPerIndex: Invalid value: 1: requires indexed completion mode",
                "spec.maxFailedIndexes: Invalid value: 1: requires indexed completion mode",
            ],
        ),
        (
            "negative backoffLimitPerIndex",
            |j| {
                indexed(j, 5, 1);
                j.spec.backoff_limit_per_index = Some(-1);
            },
            &["spec.backoffLimitPerIndex: Invalid value: -1: must be greater than or equal to 0"],
        ),
        (
            "maxFailedIndexes above completions",
            |j| {
                indexed(j, 10, 1);
                j.spec.backoff_limit_per_index = Some(1);
                j.spec.max_failed_indexes = Some(11);
            },
            &[
                "spec.maxFailedIndexes: Invalid value: 11: must be less than or equal to completions",
            ],
        ),
        (
            "high completions need maxFailedIndexes",
            |j| {
                indexed(j, 100_001, 1);
                j.spec.backoff_limit_per_index = Some(1);
            },
            &[
                "spec.maxFailedIndexes: Required value: must be specified when completions is above 100000",
            ],
        ),
        (
            "high completions cap parallelism",
            |j| {
                indexed(j, 100_001, 50_000);
                j.spec.backoff_limit_per_index = Some(1);
                j.spec.max_failed_indexes = Some(1);
            },
            &[
                "spec.parallelism: Invalid value: 50000: must be less than or equal to 10000 when completions are above 100000 and used with backoff limit per index",
            ],
        ),
        (
            "maxFailedIndexes above both limits",
            |j| {
                indexed(j, 100_001, 1);
                j.spec.backoff_limit_per_index = Some(1);
                j.spec.max_failed_indexes = Some(100_001);
            },
            &[
                "spec.maxFailedIndexes: Invalid value: 100001: must be less than or equal to 100000",
                "spec.maxFailedIndexes: Invalid value: 100001: must be less than or equal to 10000 when completions are above 100000 and used with backoff limit per index",
            ],
        ),
        (
            "maxFailedIndexes above the high-completions limit",
            |j| {
                indexed(j, 100_001, 1);
                j.spec.backoff_limit_per_index = Some(1);
                j.spec.max_failed_indexes = Some(50_000);
            },
            &[
                "spec.maxFailedIndexes: Invalid value: 50000: must be less than or equal to 10000 when completions are above 100000 and used with backoff limit per index",
            ],
        ),
        (
            "high completions without per-index limits are not capped",
            |j| {
                indexed(j, 1_000_000, 100_000);
            },
            &[],
        ),
        (
            "negative maxFailedIndexes",
            |j| {
                indexed(j, 5, 1);
                j.spec.backoff_limit_per_index = Some(1);
                j.spec.max_failed_indexes = Some(-1);
            },
            &["spec.maxFailedIndexes: Invalid value: -1: must be greater than or equal to 0"],
        ),
        (
            "maxFailedIndexes without backoffLimitPerIndex",
            |j| {
                indexed(j, 5, 1);
                j.spec.max_failed_indexes = Some(1);
            },
            &["spec.backoffLimitPerIndex: Required value: when maxFailedIndexes is specified"],
        ),
        (
            "Indexed without completions",
            |j| {
                indexed(j, 5, 1);
                j.spec.completions = None;
            },
            &["spec.completions: Required value: when completion mode is Indexed"],
        ),
        (
            "Indexed parallelism above 100000",
            |j| indexed(j, 2, 100_001),
            &[
                "spec.parallelism: Invalid value: 100001: must be less than or equal to 100000 when completion mode is Indexed",
            ],
        ),
        (
            "Indexed with i32::MIN completions",
            |j| indexed(j, i32::MIN, 1),
            &["spec.completions: Invalid value: -2147483648: must be greater than or equal to 0"],
        ),
        (
            "unknown completion mode",
            |j| j.spec.completion_mode = CompletionMode::Unknown("Sparse".into()),
            &[
                r#"spec.completionMode: Unsupported value: "Sparse": supported values: "NonIndexed", "Indexed""#,
            ],
        ),
        (
            "unknown completion mode skips the NonIndexed checks",
            |j| {
                j.spec.completion_mode = CompletionMode::Unknown(String::new());
                j.spec.backoff_limit_per_index = Some(1);
            },
            &[
                r#"spec.completionMode: Unsupported value: "": supported values: "NonIndexed", "Indexed""#,
            ],
        ),
        (
            "managedBy too long",
            |j| j.spec.managed_by = Some(format!("example.com/{}", "x".repeat(60))),
            &["spec.managedBy: Too long: may not be more than 63 bytes"],
        ),
        (
            "managedBy not a path",
            |j| j.spec.managed_by = Some("invalid custom controller name".into()),
            &[
                r#"spec.managedBy: Invalid value: "invalid custom controller name": must be a domain-prefixed path (such as "acme.io/foo")"#,
            ],
        ),
        (
            "managedBy empty",
            |j| j.spec.managed_by = Some(String::new()),
            &["spec.managedBy: Required value"],
        ),
        (
            "managedBy with a bad host and path",
            |j| j.spec.managed_by = Some("Example.com/a b".into()),
            &[
                r#"spec.managedBy: Invalid value: "Example.com": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"#,
                r#"spec.managedBy: Invalid value: "a b": Invalid path (regex used for validation is '[A-Za-z0-9/\-._~%!$&'()*+,;=:]+')"#,
            ],
        ),
        (
            "unknown pod replacement policy",
            |j| j.spec.pod_replacement_policy = PodReplacementPolicy::Unknown(String::new()),
            &[
                r#"spec.podReplacementPolicy: Unsupported value: "": supported values: "Failed", "TerminatingOrFailed""#,
            ],
        ),
        (
            "TerminatingOrFailed with a pod failure policy",
            |j| {
                with_policy(
                    j,
                    vec![on_condition(
                        PodFailurePolicyAction::Ignore,
                        "DisruptionTarget",
                        ConditionStatus::True,
                    )],
                );
                j.spec.pod_replacement_policy = PodReplacementPolicy::TerminatingOrFailed;
            },
            &[
                r#"spec.podReplacementPolicy: Unsupported value: "TerminatingOrFailed": supported values: "Failed""#,
            ],
        ),
        (
            "unknown replacement with a pod failure policy",
            |j| {
                with_policy(j, vec![]);
                j.spec.pod_replacement_policy = PodReplacementPolicy::Unknown("Never".into());
            },
            &[
                r#"spec.podReplacementPolicy: Unsupported value: "Never": supported values: "Failed""#,
            ],
        ),
    ];
    check(cases);
}

#[test]
fn restart_policy_and_template() {
    let cases: &[Case] = &[
        (
            "OnFailure with a pod failure policy",
            |j| {
                j.spec.template.restart_policy = RestartPolicy::OnFailure;
                with_policy(j, vec![]);
            },
            &[
                r#"spec.template.spec.restartPolicy: Invalid value: "OnFailure": only "Never" is supported when podFailurePolicy is specified"#,
            ],
        ),
        (
            "Always",
            |j| j.spec.template.restart_policy = RestartPolicy::Always,
            &[
                r#"spec.template.spec.restartPolicy: Required value: valid values: "OnFailure", "Never""#,
            ],
        ),
        (
            "empty restart policy fails the pod and the Job checks",
            |j| {
                j.spec.template.restart_policy = RestartPolicy::Other(String::new());
            },
            &[
                "spec.template.spec.restartPolicy: Required value",
                r#"spec.template.spec.restartPolicy: Required value: valid values: "OnFailure", "Never""#,
            ],
        ),
        (
            "unknown restart policy fails the pod and the Job checks",
            |j| {
                j.spec.template.restart_policy = RestartPolicy::Other("Invalid".into());
            },
            &[
                r#"spec.template.spec.restartPolicy: Unsupported value: "Invalid": supported values: "Always", "OnFailure", "Never""#,
                r#"spec.template.spec.restartPolicy: Unsupported value: "Invalid": supported values: "OnFailure", "Never""#,
            ],
        ),
        (
            "no containers",
            |j| j.spec.template.containers.clear(),
            &["spec.template.spec.containers: Required value"],
        ),
        (
            "bad and duplicate container names",
            |j| {
                j.spec.template.containers =
                    vec!["main".into(), "Main".into(), "main".into(), String::new()];
                j.spec.template.init_containers = vec!["main".into(), "init".into(), "init".into()];
            },
            &[
                r#"spec.template.spec.containers[1].name: Invalid value: "Main": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"#,
                r#"spec.template.spec.containers[2].name: Duplicate value: "main""#,
                "spec.template.spec.containers[3].name: Required value",
                r#"spec.template.spec.initContainers[0].name: Duplicate value: "main""#,
                r#"spec.template.spec.initContainers[2].name: Duplicate value: "init""#,
            ],
        ),
        (
            "container name with dots",
            |j| j.spec.template.containers = vec!["a.b".into()],
            &[
                r#"spec.template.spec.containers[0].name: Invalid value: "a.b": must not contain dots"#,
            ],
        ),
        (
            "invalid template label",
            |j| manual(j, &[("a", "b"), ("bad key", "-v")]),
            &[
                r#"spec.template.metadata.labels: Invalid value: "bad key": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"#,
                r#"spec.template.metadata.labels: Invalid value: "-v": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"#,
            ],
        ),
    ];
    check(cases);
}

#[test]
fn metadata_and_selectors() {
    let cases: &[Case] = &[
        (
            "template labels do not match a manual selector",
            |j| manual(j, &[("y", "z")]),
            &[
                r#"spec.template.metadata.labels: Invalid value: {"y":"z"}: `selector` does not match template `labels`"#,
            ],
        ),
        (
            "template labels with a foreign uid",
            |j| manual(j, &[("controller-uid", "4d5e6f")]),
            &[
                r#"spec.template.metadata.labels: Invalid value: {"controller-uid":"4d5e6f"}: `selector` does not match template `labels`"#,
            ],
        ),
        (
            "no template labels",
            |j| manual(j, &[]),
            &[
                "spec.template.metadata.labels: Invalid value: null: `selector` does not match template `labels`",
            ],
        ),
        (
            "missing legacy uid label",
            |j| {
                j.spec.template.labels.remove("controller-uid");
            },
            &["spec.template.metadata.labels[controller-uid]: Required value: must be 'job-uid'"],
        ),
        (
            "missing legacy name label",
            |j| {
                j.spec.template.labels.remove("job-name");
            },
            &["spec.template.metadata.labels[job-name]: Required value: must be 'job'"],
        ),
        (
            "missing prefixed uid label",
            |j| {
                j.spec.template.labels.remove(CONTROLLER_UID_LABEL);
            },
            &[
                "spec.template.metadata.labels[batch.kubernetes.io/controller-uid]: Required value: must be 'job-uid'",
                r#"spec.template.metadata.labels: Invalid value: {"batch.kubernetes.io/job-name":"job","controller-uid":"job-uid","job-name":"job"}: `selector` does not match template `labels`"#,
            ],
        ),
        (
            "wrong prefixed name label",
            |j| {
                j.spec
                    .template
                    .labels
                    .insert(JOB_NAME_LABEL.into(), "other".into());
            },
            &[
                r#"spec.template.metadata.labels[batch.kubernetes.io/job-name]: Invalid value: {"batch.kubernetes.io/controller-uid":"job-uid","batch.kubernetes.io/job-name":"other","controller-uid":"job-uid","job-name":"job"}: must be 'job'"#,
            ],
        ),
        (
            "missing uid",
            |j| j.uid.clear(),
            &[
                "metadata.uid: Required value",
                r#"spec.template.metadata.labels[controller-uid]: Invalid value: {"batch.kubernetes.io/controller-uid":"job-uid","batch.kubernetes.io/job-name":"job","controller-uid":"job-uid","job-name":"job"}: must be ''"#,
                r#"spec.template.metadata.labels[batch.kubernetes.io/controller-uid]: Invalid value: {"batch.kubernetes.io/controller-uid":"job-uid","batch.kubernetes.io/job-name":"job","controller-uid":"job-uid","job-name":"job"}: must be ''"#,
                r#"spec.selector: Invalid value: {"matchLabels":{"batch.kubernetes.io/controller-uid":"job-uid"}}: `selector` not auto-generated"#,
            ],
        ),
        (
            "selector not generated",
            |j| {
                j.spec.selector = LabelSelector::default();
                j.spec.selector.match_labels.insert("a".into(), "b".into());
            },
            &[
                r#"spec.selector: Invalid value: {"matchLabels":{"a":"b"}}: `selector` not auto-generated"#,
                r#"spec.template.metadata.labels: Invalid value: {"batch.kubernetes.io/controller-uid":"job-uid","batch.kubernetes.io/job-name":"job","controller-uid":"job-uid","job-name":"job"}: `selector` does not match template `labels`"#,
            ],
        ),
        (
            "expression selector not generated",
            |j| {
                j.spec.selector = LabelSelector::default();
                j.spec.selector.match_expressions = vec![
                    SelectorRequirement {
                        key: "a".into(),
                        operator: SelectorOperator::In,
                        values: vec!["b".into(), "c".into()],
                    },
                    SelectorRequirement {
                        key: "job-name".into(),
                        operator: SelectorOperator::Exists,
                        values: vec![],
                    },
                ];
            },
            &[
                r#"spec.selector: Invalid value: {"matchExpressions":[{"key":"a","operator":"In","values":["b","c"]},{"key":"job-name","operator":"Exists"}]}: `selector` not auto-generated"#,
                r#"spec.template.metadata.labels: Invalid value: {"batch.kubernetes.io/controller-uid":"job-uid","batch.kubernetes.io/job-name":"job","controller-uid":"job-uid","job-name":"job"}: `selector` does not match template `labels`"#,
            ],
        ),
        (
            "invalid selector value",
            |j| {
                j.spec.selector.match_expressions = vec![SelectorRequirement {
                    key: "a".into(),
                    operator: SelectorOperator::NotIn,
                    values: vec!["b".into(), "<c>".into()],
                }];
            },
            &[
                r#"spec.selector.matchExpressions[0].values[1]: Invalid value: "<c>": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"#,
            ],
        ),
        (
            "invalid selector requirements skip the matching checks",
            |j| {
                j.spec.selector.match_expressions = vec![
                    SelectorRequirement {
                        key: "a".into(),
                        operator: SelectorOperator::In,
                        values: vec![],
                    },
                    SelectorRequirement {
                        key: "b".into(),
                        operator: SelectorOperator::Exists,
                        values: vec!["x".into()],
                    },
                    SelectorRequirement {
                        key: "c/d/e".into(),
                        operator: SelectorOperator::Unknown("Has".into()),
                        values: vec![],
                    },
                ];
            },
            &[
                "spec.selector.matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn'",
                "spec.selector.matchExpressions[1].values: Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
                r#"spec.selector.matchExpressions[2].operator: Invalid value: "Has": not a valid selector operator"#,
                r#"spec.selector.matchExpressions[2].key: Invalid value: "c/d/e": a valid label key must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"#,
            ],
        ),
        (
            "invalid matchLabels key",
            |j| {
                j.spec.manual_selector = true;
                j.spec.selector.match_labels.insert("/x".into(), "y".into());
            },
            &[r#"spec.selector.matchLabels: Invalid value: "/x": prefix part must be non-empty"#],
        ),
        (
            "empty name",
            |j| {
                manual(j, &[("a", "b")]);
                j.name.clear();
            },
            &["metadata.name: Required value: name or generateName is required"],
        ),
        (
            "name not a subdomain",
            |j| {
                manual(j, &[("a", "b")]);
                j.name = "My_Job".into();
            },
            &[
                r#"metadata.name: Invalid value: "My_Job": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"#,
            ],
        ),
        (
            "empty namespace",
            |j| j.namespace.clear(),
            &["metadata.namespace: Required value"],
        ),
        (
            "namespace with dots",
            |j| j.namespace = "a.b".into(),
            &[r#"metadata.namespace: Invalid value: "a.b": must not contain dots"#],
        ),
        (
            "Indexed name with dots",
            |j| {
                indexed(j, 5, 1);
                rename(j, "my.job");
            },
            &[
                r#"metadata.name: Invalid value: "my.job": will not able to create pod with invalid DNS label: my.job-4"#,
            ],
        ),
        (
            "Indexed hostname too long",
            |j| {
                indexed(j, 1000, 1);
                j.spec.manual_selector = true;
                j.name = "a".repeat(60);
            },
            &[
                r#"metadata.name: Invalid value: "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa": will not able to create pod with invalid DNS label: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa-999"#,
            ],
        ),
        (
            "NonIndexed name with dots is fine",
            |j| rename(j, "my.job"),
            &[],
        ),
        (
            "Indexed with zero completions skips the hostname check",
            |j| {
                indexed(j, 0, 1);
                rename(j, "my.job");
            },
            &[],
        ),
    ];
    check(cases);
}

#[test]
fn pod_failure_policy() {
    use ExitCodeOperator::{In, NotIn};
    use PodFailurePolicyAction::{Count, FailIndex, FailJob, Ignore};
    let cases: &[Case] = &[
        (
            "neither requirement",
            |j| {
                with_policy(
                    j,
                    vec![PodFailurePolicyRule {
                        action: FailJob,
                        on_exit_codes: None,
                        on_pod_conditions: vec![],
                    }],
                )
            },
            &[
                "spec.podFailurePolicy.rules[0]: Invalid value: specifying one of OnExitCodes and OnPodConditions is required",
            ],
        ),
        (
            "both requirements",
            |j| {
                let mut rule = exit_codes(FailJob, In, &[1, 2, 3]);
                if let Some(req) = rule.on_exit_codes.as_mut() {
                    req.container_name = Some("main".into());
                }
                rule.on_pod_conditions = vec![OnPodConditionsPattern {
                    condition_type: "DisruptionTarget".into(),
                    status: ConditionStatus::True,
                }];
                with_policy(j, vec![rule]);
            },
            &[
                "spec.podFailurePolicy.rules[0]: Invalid value: specifying both OnExitCodes and OnPodConditions is not supported",
            ],
        ),
        (
            "duplicate exit code",
            |j| with_policy(j, vec![exit_codes(FailJob, In, &[11, 11])]),
            &["spec.podFailurePolicy.rules[0].onExitCodes.values[1]: Duplicate value: 11"],
        ),
        (
            "repeated duplicates",
            |j| with_policy(j, vec![exit_codes(FailJob, In, &[12, 13, 13, 13])]),
            &[
                "spec.podFailurePolicy.rules[0].onExitCodes.values[2]: Duplicate value: 13",
                "spec.podFailurePolicy.rules[0].onExitCodes.values[3]: Duplicate value: 13",
            ],
        ),
        (
            "too many exit codes",
            |j| {
                let values: Vec<i32> = (0..=255).collect();
                with_policy(j, vec![exit_codes(FailJob, In, &values)]);
            },
            &[
                "spec.podFailurePolicy.rules[0].onExitCodes.values: Too many: 256: must have at most 255 items",
                "spec.podFailurePolicy.rules[0].onExitCodes.values[0]: Invalid value: 0: must not be 0 for the In operator",
            ],
        ),
        (
            "too many rules",
            |j| {
                let rules = (1..=21).map(|i| exit_codes(FailJob, In, &[i])).collect();
                with_policy(j, rules);
            },
            &["spec.podFailurePolicy.rules: Too many: 21: must have at most 20 items"],
        ),
        (
            "too many condition patterns",
            |j| {
                let patterns = (0..21)
                    .map(|i| OnPodConditionsPattern {
                        condition_type: format!("CustomType_{i}"),
                        status: ConditionStatus::True,
                    })
                    .collect();
                with_policy(
                    j,
                    vec![PodFailurePolicyRule {
                        action: FailJob,
                        on_exit_codes: None,
                        on_pod_conditions: patterns,
                    }],
                );
            },
            &[
                "spec.podFailurePolicy.rules[0].onPodConditions: Too many: 21: must have at most 20 items",
            ],
        ),
        (
            "unordered exit codes",
            |j| with_policy(j, vec![exit_codes(FailJob, In, &[19, 11])]),
            &[
                "spec.podFailurePolicy.rules[0].onExitCodes.values: Invalid value: [19,11]: must be ordered",
            ],
        ),
        (
            "no exit codes",
            |j| with_policy(j, vec![exit_codes(FailJob, In, &[])]),
            &[
                "spec.podFailurePolicy.rules[0].onExitCodes.values: Invalid value: []: at least one value is required",
            ],
        ),
        (
            "empty action",
            |j| {
                with_policy(
                    j,
                    vec![exit_codes(
                        PodFailurePolicyAction::Unknown(String::new()),
                        In,
                        &[1, 2, 3],
                    )],
                )
            },
            &[
                r#"spec.podFailurePolicy.rules[0].action: Required value: valid values: ["Count" "FailIndex" "FailJob" "Ignore"]"#,
            ],
        ),
        (
            "empty operator",
            |j| {
                with_policy(
                    j,
                    vec![exit_codes(
                        FailJob,
                        ExitCodeOperator::Unknown(String::new()),
                        &[1, 2, 3],
                    )],
                )
            },
            &[
                r#"spec.podFailurePolicy.rules[0].onExitCodes.operator: Required value: valid values: ["In" "NotIn"]"#,
            ],
        ),
        (
            "zero with In, also unordered",
            |j| with_policy(j, vec![exit_codes(Ignore, In, &[1, 0, 2])]),
            &[
                "spec.podFailurePolicy.rules[0].onExitCodes.values[1]: Invalid value: 0: must not be 0 for the In operator",
                "spec.podFailurePolicy.rules[0].onExitCodes.values: Invalid value: [1,0,2]: must be ordered",
            ],
        ),
        (
            "zero with NotIn is fine",
            |j| with_policy(j, vec![exit_codes(Count, NotIn, &[0])]),
            &[],
        ),
        (
            "unknown container",
            |j| {
                let mut first = exit_codes(Ignore, In, &[1, 2, 3]);
                let mut second = exit_codes(FailJob, In, &[5, 6, 7]);
                if let Some(req) = first.on_exit_codes.as_mut() {
                    req.container_name = Some("main".into());
                }
                if let Some(req) = second.on_exit_codes.as_mut() {
                    req.container_name = Some("xyz".into());
                }
                with_policy(j, vec![first, second]);
            },
            &[
                r#"spec.podFailurePolicy.rules[1].onExitCodes.containerName: Invalid value: "xyz": must be one of the container or initContainer names in the pod template"#,
            ],
        ),
        (
            "unknown action",
            |j| {
                with_policy(
                    j,
                    vec![exit_codes(
                        PodFailurePolicyAction::Unknown("UnknownAction".into()),
                        In,
                        &[1, 2, 3],
                    )],
                )
            },
            &[
                r#"spec.podFailurePolicy.rules[0].action: Unsupported value: "UnknownAction": supported values: "Count", "FailIndex", "FailJob", "Ignore""#,
            ],
        ),
        (
            "unknown operator",
            |j| {
                with_policy(
                    j,
                    vec![exit_codes(
                        Ignore,
                        ExitCodeOperator::Unknown("UnknownOperator".into()),
                        &[1, 2, 3],
                    )],
                )
            },
            &[
                r#"spec.podFailurePolicy.rules[0].onExitCodes.operator: Unsupported value: "UnknownOperator": supported values: "In", "NotIn""#,
            ],
        ),
        (
            "FailIndex without backoffLimitPerIndex",
            |j| {
                indexed(j, 2, 1);
                with_policy(j, vec![exit_codes(FailIndex, In, &[10])]);
            },
            &[
                r#"spec.podFailurePolicy.rules[0].action: Invalid value: "FailIndex": requires the backoffLimitPerIndex to be set"#,
            ],
        ),
        (
            "empty status",
            |j| {
                with_policy(
                    j,
                    vec![on_condition(
                        Ignore,
                        "DisruptionTarget",
                        ConditionStatus::Other(String::new()),
                    )],
                )
            },
            &[
                r#"spec.podFailurePolicy.rules[0].onPodConditions[0].status: Required value: valid values: ["False" "True" "Unknown"]"#,
            ],
        ),
        (
            "unknown status",
            |j| {
                with_policy(
                    j,
                    vec![on_condition(
                        Ignore,
                        "DisruptionTarget",
                        ConditionStatus::Other("UnknownStatus".into()),
                    )],
                )
            },
            &[
                r#"spec.podFailurePolicy.rules[0].onPodConditions[0].status: Unsupported value: "UnknownStatus": supported values: "False", "True", "Unknown""#,
            ],
        ),
        (
            "empty condition type",
            |j| with_policy(j, vec![on_condition(Ignore, "", ConditionStatus::True)]),
            &[
                r#"spec.podFailurePolicy.rules[0].onPodConditions[0].type: Invalid value: "": name part must be non-empty"#,
                r#"spec.podFailurePolicy.rules[0].onPodConditions[0].type: Invalid value: "": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"#,
            ],
        ),
        (
            "invalid condition type",
            |j| {
                with_policy(
                    j,
                    vec![on_condition(
                        Ignore,
                        "Invalid Condition Type",
                        ConditionStatus::True,
                    )],
                )
            },
            &[
                r#"spec.podFailurePolicy.rules[0].onPodConditions[0].type: Invalid value: "Invalid Condition Type": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"#,
            ],
        ),
        (
            "prefixed condition type",
            |j| {
                with_policy(
                    j,
                    vec![on_condition(
                        Ignore,
                        "example.com/Ready",
                        ConditionStatus::True,
                    )],
                )
            },
            &[],
        ),
        (
            "condition type with a bad prefix",
            |j| {
                with_policy(
                    j,
                    vec![on_condition(
                        Ignore,
                        "Example.com/Ready",
                        ConditionStatus::True,
                    )],
                )
            },
            &[
                r#"spec.podFailurePolicy.rules[0].onPodConditions[0].type: Invalid value: "Example.com/Ready": prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"#,
            ],
        ),
    ];
    check(cases);
}

#[test]
fn success_policy() {
    let cases: &[Case] = &[
        (
            "NonIndexed",
            |j| with_success(j, &[]),
            &[
                r#"spec.successPolicy: Invalid value: {"Rules":[]}: requires indexed completion mode"#,
            ],
        ),
        (
            "NonIndexed with rules",
            |j| with_success(j, &[(Some("0"), None), (None, Some(1))]),
            &[
                r#"spec.successPolicy: Invalid value: {"Rules":[{"SucceededIndexes":"0","SucceededCount":null},{"SucceededIndexes":null,"SucceededCount":1}]}: requires indexed completion mode"#,
            ],
        ),
        (
            "no rules",
            |j| {
                indexed(j, 5, 1);
                with_success(j, &[]);
            },
            &[
                "spec.successPolicy.rules: Required value: at least one rules must be specified when the successPolicy is specified",
            ],
        ),
        (
            "empty rule",
            |j| {
                indexed(j, 5, 1);
                with_success(j, &[(None, None)]);
            },
            &[
                "spec.successPolicy.rules[0]: Required value: at least one of succeededCount or succeededIndexes must be specified",
            ],
        ),
        (
            "bad indexes",
            |j| {
                indexed(j, 5, 1);
                with_success(j, &[(Some("invalid-format"), None)]);
            },
            &[
                r#"spec.successPolicy.rules[0].succeededIndexes: Invalid value: "invalid-format": error parsing succeededIndexes: cannot convert string to integer for index: "invalid""#,
            ],
        ),
        (
            "bad indexes count as zero",
            |j| {
                indexed(j, 5, 1);
                with_success(j, &[(Some("3-1"), Some(1))]);
            },
            &[
                r#"spec.successPolicy.rules[0].succeededIndexes: Invalid value: "3-1": error parsing succeededIndexes: non-increasing order, previous: 3, current: 1"#,
                "spec.successPolicy.rules[0].succeededCount: Invalid value: 1: must be less than or equal to 0 (the number of indexes in the specified succeededIndexes field)",
            ],
        ),
        (
            "negative count",
            |j| {
                indexed(j, 5, 1);
                with_success(j, &[(None, Some(-1))]);
            },
            &[
                "spec.successPolicy.rules[0].succeededCount: Invalid value: -1: must be greater than or equal to 0",
            ],
        ),
        (
            "count above completions",
            |j| {
                indexed(j, 5, 1);
                with_success(j, &[(None, Some(6))]);
            },
            &[
                "spec.successPolicy.rules[0].succeededCount: Invalid value: 6: must be less than or equal to 5 (the number of specified completions)",
            ],
        ),
        (
            "count above the named indexes",
            |j| {
                indexed(j, 5, 1);
                with_success(j, &[(Some("0-2"), Some(4))]);
            },
            &[
                "spec.successPolicy.rules[0].succeededCount: Invalid value: 4: must be less than or equal to 3 (the number of indexes in the specified succeededIndexes field)",
            ],
        ),
        (
            "too many rules",
            |j| {
                indexed(j, 5, 1);
                let rules = vec![(None, Some(5)); 21];
                with_success(j, &rules);
            },
            &["spec.successPolicy.rules: Too many: 21: must have at most 20 items"],
        ),
        (
            "Indexed without completions does not panic",
            |j| {
                indexed(j, 5, 1);
                j.spec.completions = None;
                with_success(j, &[(Some("0"), Some(9))]);
            },
            &["spec.completions: Required value: when completion mode is Indexed"],
        ),
        (
            "empty indexes name no index",
            |j| {
                indexed(j, 5, 1);
                with_success(j, &[(Some(""), Some(1))]);
            },
            &[
                "spec.successPolicy.rules[0].succeededCount: Invalid value: 1: must be less than or equal to 0 (the number of indexes in the specified succeededIndexes field)",
            ],
        ),
    ];
    check(cases);
}

#[test]
fn succeeded_indexes_too_long() {
    let mut j = indexed_job(5, 1);
    let text = "1".repeat(MAX_SUCCEEDED_INDEXES_LENGTH + 1);
    with_success(&mut j, &[(Some(&text), None)]);
    let got: Vec<String> = validate_job(&j).iter().map(Violation::to_string).collect();
    let quoted = format!("\"{text}\"");
    assert_eq!(got, vec![
        "spec.successPolicy.rules[0].succeededIndexes: Too long: may not be more than 65536 bytes".to_string(),
        // Upstream repeats the 64 KiB value twice; the message keeps a bounded prefix of each.
        format!(
            "spec.successPolicy.rules[0].succeededIndexes: Invalid value: {}: {}",
            truncated(&quoted, MAX_VIOLATION_VALUE_BYTES),
            truncated(
                &format!("error parsing succeededIndexes: cannot convert string to integer for index: {quoted}"),
                MAX_VIOLATION_DETAIL_BYTES
            )
        ),
    ]);
}

#[test]
fn strict_index_format() {
    let cases: &[(&str, i32, Result<i64, &str>)] = &[
        ("", 6, Ok(0)),
        ("1", 6, Ok(1)),
        ("1-3", 6, Ok(3)),
        ("0,1-3,5,7-10", 12, Ok(9)),
        ("1-3,4", 6, Ok(4)),
        ("+1", 6, Ok(1)),
        ("007", 8, Ok(1)),
        ("0-2147483646", i32::MAX, Ok(2_147_483_647)),
        (
            "0,1-3, 5",
            6,
            Err(r#"cannot convert string to integer for index: " 5""#),
        ),
        ("0,1-3,5", 5, Err(r#"too large index: "5""#)),
        (
            "1-3,0,5",
            6,
            Err("non-increasing order, previous: 3, current: 0"),
        ),
        (
            "0,0,5",
            6,
            Err("non-increasing order, previous: 0, current: 0"),
        ),
        (
            "0,1-1,5",
            6,
            Err("non-increasing order, previous: 1, current: 1"),
        ),
        (
            "-1,0",
            6,
            Err(r#"cannot convert string to integer for index: """#),
        ),
        (
            "0,1-",
            6,
            Err(r#"cannot convert string to integer for index: """#),
        ),
        (
            "0,1--3",
            6,
            Err(
                r#"the fragment "1--3" violates the requirement that an index interval can have at most two parts separated by '-'"#,
            ),
        ),
        (
            "0,,1,3",
            6,
            Err(r#"cannot convert string to integer for index: """#),
        ),
        (
            "1,",
            6,
            Err(r#"cannot convert string to integer for index: """#),
        ),
        ("0", 0, Err(r#"too large index: "0""#)),
        ("0", -5, Err(r#"too large index: "0""#)),
        ("1-9", 5, Err(r#"too large index: "9""#)),
        (
            "9223372036854775807",
            i32::MAX,
            Err(r#"too large index: "9223372036854775807""#),
        ),
        (
            "9223372036854775808",
            i32::MAX,
            Err(r#"cannot convert string to integer for index: "9223372036854775808""#),
        ),
        (
            "a\u{7}\"",
            6,
            Err(r#"cannot convert string to integer for index: "a\a\"""#),
        ),
    ];
    for (text, completions, want) in cases {
        let got = IndexSet::parse_strict(text, *completions)
            .map(|set| i64::try_from(set.total()).unwrap_or(i64::MAX))
            .map_err(|e| e.to_string());
        assert_eq!(
            got,
            want.map_err(str::to_string),
            "{text:?} with completions {completions}"
        );
    }
}

#[test]
fn violation_kinds_and_reasons() {
    let v = too_many("spec.podFailurePolicy.rules", 21, 20);
    assert_eq!(v.kind.reason(), "FieldValueTooMany");
    assert_eq!(
        v.description(),
        "spec.podFailurePolicy.rules: Too many: 21: must have at most 20 items"
    );
    assert_eq!(too_many("x", 2, 1).detail, "must have at most 1 item");
    assert_eq!(too_long("x", 1).detail, "may not be more than 1 byte");
    assert_eq!(required("x", "").to_string(), "x: Required value");
}

#[test]
fn truncated_keeps_short_text_and_marks_a_cut_on_a_char_boundary() {
    assert!(matches!(
        truncated("short", 10),
        std::borrow::Cow::Borrowed("short")
    ));
    // "é" is two bytes: a cut inside it must step back, never split it.
    let long = "é".repeat(500);
    let cut = truncated(&long, 100);
    assert!(cut.len() <= 100, "{} bytes", cut.len());
    assert!(cut.ends_with("…[truncated from 1000 bytes]"), "{cut}");
    assert!(cut.starts_with("éé"));
    // A limit below the mark's length still holds, without the mark.
    assert_eq!(truncated(&long, 5), "éé");
}

#[test]
fn a_uid_longer_than_128_bytes_is_too_long() {
    let mut j = job();
    j.uid = "u".repeat(129);
    j.spec.manual_selector = true;
    let got: Vec<String> = validate_job(&j).iter().map(Violation::to_string).collect();
    assert!(
        got.contains(&"metadata.uid: Too long: may not be more than 128 bytes".to_string()),
        "{got:?}"
    );
    j.uid = "u".repeat(128);
    assert!(
        validate_job(&j).iter().all(|v| v.field != "metadata.uid"),
        "128 bytes is allowed"
    );
}

#[test]
fn a_ten_megabyte_value_prints_a_bounded_violation() {
    let huge = "a".repeat(10 << 20);
    let v = Violation {
        severity: Severity::Rejected,
        field: format!("metadata.labels[{huge}]"),
        kind: ViolationKind::Invalid,
        value: Some(format!("{huge:?}")),
        detail: huge.clone(),
    };
    let line = v.to_string();
    let most = MAX_VIOLATION_VALUE_BYTES * 2 + MAX_VIOLATION_DETAIL_BYTES + 64;
    assert!(line.len() <= most, "{} bytes", line.len());
    assert!(line.starts_with("metadata.labels[aaa"));
    assert!(line.contains(": Invalid value: \"aaa"));
    assert_eq!(line.matches("[truncated from").count(), 3, "{line}");
    assert_eq!(v.description(), line);
}

/// Values a newer API server may write and upstream's sync handles are tolerated at
/// sync; everything else, an empty value of the same fields included, is rejected.
/// A case of severities: its name, how it breaks the Job, the severity of each violation.
type SeverityCase = (&'static str, fn(&mut Job), &'static [Severity]);

#[test]
fn version_skew_violations_are_tolerated_at_sync_and_nothing_else() {
    let cases: &[SeverityCase] = &[
        (
            "unknown completion mode",
            |j| j.spec.completion_mode = CompletionMode::Unknown("Sparse".into()),
            &[Severity::ToleratedAtSync],
        ),
        (
            "unknown action",
            |j| {
                let rule = exit_codes(
                    PodFailurePolicyAction::Unknown("Retry".into()),
                    ExitCodeOperator::In,
                    &[1],
                );
                with_policy(j, vec![rule]);
            },
            &[Severity::ToleratedAtSync],
        ),
        (
            "unknown operator",
            |j| {
                let rule = exit_codes(
                    PodFailurePolicyAction::Ignore,
                    ExitCodeOperator::Unknown("Above".into()),
                    &[1],
                );
                with_policy(j, vec![rule]);
            },
            &[Severity::ToleratedAtSync],
        ),
        (
            "empty action",
            |j| {
                let rule = exit_codes(
                    PodFailurePolicyAction::Unknown(String::new()),
                    ExitCodeOperator::In,
                    &[1],
                );
                with_policy(j, vec![rule]);
            },
            &[Severity::Rejected],
        ),
        (
            "unknown pod replacement policy",
            |j| j.spec.pod_replacement_policy = PodReplacementPolicy::Unknown("Never".into()),
            &[Severity::Rejected],
        ),
    ];
    for (name, mutate, want) in cases {
        let got: Vec<Severity> = messages(*mutate).iter().map(|v| v.severity).collect();
        assert_eq!(got, *want, "case {name:?}");
    }
}
