use super::*;
use job_decider_core::fixtures;
use job_decider_core::validate::Violation;

const HEAD: &str = "apiVersion: job-decider.dev/v1alpha1\nkind: FailurePolicy\n";
const A: &str = "metadata.annotations[job-decider.dev/failure-policy]";

fn job() -> Job {
    let mut job = fixtures::job();
    job.spec.template.init_containers = vec!["setup".into()];
    job
}

fn per_index_job() -> Job {
    let mut job = job();
    job.spec.backoff_limit_per_index = Some(1);
    job
}

fn run(text: &str, job: &Job) -> (Option<ExtendedFailurePolicy>, Vec<Violation>) {
    let mut errs = Violations::default();
    let policy = parse(text, A, job, &mut errs);
    (policy, errs.into_vec())
}

fn ok(body: &str) -> ExtendedFailurePolicy {
    match run(&format!("{HEAD}{body}"), &per_index_job()) {
        (Some(p), v) if v.is_empty() => p,
        (_, v) => panic!("{body}: {v:?}"),
    }
}

/// The violations' (field, kind) of a document body (after apiVersion and kind).
fn bad_with(body: &str, job: &Job) -> Vec<(String, ViolationKind)> {
    let (policy, v) = run(&format!("{HEAD}{body}"), job);
    assert!(policy.is_none(), "{body}: accepted");
    assert!(!v.is_empty(), "{body}: no violation");
    v.into_iter().map(|v| (v.field, v.kind)).collect()
}

fn bad(body: &str) -> Vec<(String, ViolationKind)> {
    bad_with(body, &per_index_job())
}

fn fields(body: &str) -> Vec<String> {
    bad(body).into_iter().map(|(f, _)| f).collect()
}

fn rule(body: &str) -> String {
    format!("rules:\n- {body}\n")
}

#[test]
fn a_minimal_document_is_empty_policy() {
    assert_eq!(ok(""), ExtendedFailurePolicy::default());
}

#[test]
fn json_is_read_as_yaml() {
    let json = r#"{"apiVersion":"job-decider.dev/v1alpha1","kind":"FailurePolicy",
        "rules":[{"name":"oom","action":"FailJob","onContainerReasons":{"values":["OOMKilled"]}}]}"#;
    let (policy, v) = run(json, &job());
    assert!(v.is_empty(), "{v:?}");
    let policy = policy.unwrap_or_default();
    assert_eq!(policy.rules.len(), 1);
    assert_eq!(policy.rules[0].name.as_deref(), Some("oom"));
}

#[test]
fn api_version_and_kind_are_required_and_exact() {
    for (text, field, kind) in [
        (
            "kind: FailurePolicy\n",
            "apiVersion",
            ViolationKind::Required,
        ),
        (
            "apiVersion: job-decider.dev/v1alpha1\n",
            "kind",
            ViolationKind::Required,
        ),
        (
            "apiVersion: job-decider.dev/v1\nkind: FailurePolicy\n",
            "apiVersion",
            ViolationKind::NotSupported,
        ),
        (
            "apiVersion: job-decider.dev/v1alpha1\nkind: Policy\n",
            "kind",
            ViolationKind::NotSupported,
        ),
    ] {
        let (policy, v) = run(text, &job());
        assert!(policy.is_none());
        assert_eq!(v.len(), 1, "{text}: {v:?}");
        assert_eq!(v[0].field, format!("{A}.{field}"));
        assert_eq!(v[0].kind, kind);
    }
}

#[test]
fn every_feature_with_every_field() {
    let p = ok(r#"
rules:
- name: oom
  action: Count
  onExitCodes:
    containerName: main
    operator: In
    values: [42, 3]
    ranges: ["128-130", "131-135"]
    signals: [SIGKILL, SIGSEGV]
  onPodConditions:
  - {type: DisruptionTarget}
  - {type: Custom, status: "False"}
  onPodReasons: [UnexpectedAdmissionError]
  onContainerReasons: {containerName: setup, values: [OOMKilled, Error]}
  onMessage: {pattern: "CUDA error"}
  maxRetries: 2
  whenRetriesExhausted: FailIndex
backoff:
  baseSeconds: 5
  maxSeconds: 100
  factor: 3
  jitterPercent: 20
  afterIgnoredFailure: Immediate
pendingTimeout:
  seconds: 300
  reasons: [Unschedulable, ErrImagePull]
  action: FailIndex
nodeAvoidance:
  mode: Preferred
  maxNodes: 7
"#);
    let r = &p.rules[0];
    assert_eq!(r.name.as_deref(), Some("oom"));
    assert_eq!(r.action, ExtendedAction::Count);
    let codes = r.on_exit_codes.clone().unwrap_or_else(|| panic!("codes"));
    assert_eq!(codes.container_name.as_deref(), Some("main"));
    assert_eq!(codes.operator, ExitCodeOperator::In);
    // 3, 42, 128-135 (ranges merged), 137 (SIGKILL), 139 (SIGSEGV).
    assert_eq!(
        codes.codes,
        vec![(3, 3), (42, 42), (128, 135), (137, 137), (139, 139)]
    );
    assert_eq!(
        r.on_pod_conditions,
        vec![
            ConditionMatcher {
                condition_type: "DisruptionTarget".into(),
                status: ConditionStatus::True
            },
            ConditionMatcher {
                condition_type: "Custom".into(),
                status: ConditionStatus::False
            },
        ]
    );
    assert_eq!(r.on_pod_reasons, vec!["UnexpectedAdmissionError"]);
    let reasons = r.on_container_reasons.clone().unwrap_or_else(|| panic!());
    assert_eq!(reasons.container_name.as_deref(), Some("setup"));
    assert_eq!(reasons.reasons, vec!["OOMKilled", "Error"]);
    let msg = r.on_message.clone().unwrap_or_else(|| panic!());
    assert!(msg.is_match("got a CUDA error here"));
    assert_eq!(msg.source(), "CUDA error");
    assert_eq!(
        r.retry_limit,
        Some(RetryLimit {
            max_retries: 2,
            then: ExtendedAction::FailIndex
        })
    );
    assert_eq!(
        p.backoff,
        Some(BackoffSettings {
            base_seconds: 5,
            max_seconds: 100,
            factor: 3,
            jitter_percent: 20,
            after_ignored_failure: IgnoredFailureDelay::Immediate,
        })
    );
    assert_eq!(
        p.pending_timeout,
        Some(PendingTimeout {
            seconds: 300,
            reasons: vec!["Unschedulable".into(), "ErrImagePull".into()],
            action: ExtendedAction::FailIndex,
        })
    );
    assert_eq!(
        p.node_avoidance,
        Some(NodeAvoidance {
            mode: NodeAvoidanceMode::Preferred,
            max_nodes: 7
        })
    );
}

#[test]
fn defaults() {
    let p = ok(
        "rules:\n- {name: r, action: Ignore, onPodReasons: [X], maxRetries: 1}\nbackoff: {}\npendingTimeout: {seconds: 60}\nnodeAvoidance: {}\n",
    );
    assert_eq!(p.rules[0].name.as_deref(), Some("r"));
    assert_eq!(
        p.rules[0].retry_limit,
        Some(RetryLimit {
            max_retries: 1,
            then: ExtendedAction::FailJob
        })
    );
    assert_eq!(
        p.backoff,
        Some(BackoffSettings {
            base_seconds: 10,
            max_seconds: 600,
            factor: 2,
            jitter_percent: 0,
            after_ignored_failure: IgnoredFailureDelay::Delay,
        })
    );
    assert_eq!(
        p.pending_timeout,
        Some(PendingTimeout {
            seconds: 60,
            reasons: DEFAULT_PENDING_REASONS
                .iter()
                .map(|r| r.to_string())
                .collect(),
            action: ExtendedAction::Count,
        })
    );
    assert_eq!(
        p.node_avoidance,
        Some(NodeAvoidance {
            mode: NodeAvoidanceMode::Required,
            max_nodes: 5
        })
    );
    // Unnamed, no limit; a condition's status defaults to True.
    let p = ok(&rule("{action: Count, onPodConditions: [{type: X}]}"));
    assert_eq!(p.rules[0].name, None);
    assert_eq!(p.rules[0].retry_limit, None);
    assert_eq!(
        p.rules[0].on_pod_conditions[0].status,
        ConditionStatus::True
    );
    // A base above 600 and no max: the max is the base.
    let p = ok("backoff: {baseSeconds: 900}\n");
    assert_eq!(p.backoff.map(|b| b.max_seconds), Some(900));
}

#[test]
fn signals_are_128_plus_their_number() {
    assert_eq!(signal_exit_code("SIGHUP"), Some(129));
    assert_eq!(signal_exit_code("SIGKILL"), Some(137));
    assert_eq!(signal_exit_code("SIGSEGV"), Some(139));
    assert_eq!(signal_exit_code("SIGTERM"), Some(143));
    assert_eq!(signal_exit_code("SIGSYS"), Some(159));
    assert_eq!(signal_exit_code("KILL"), None);
    assert_eq!(
        fields(&rule(
            "{action: Count, onExitCodes: {operator: In, signals: [SIGKILL, SIGFOO]}}"
        )),
        vec![format!("{A}.rules[0].onExitCodes.signals[1]")]
    );
}

#[test]
fn unknown_fields_are_named_at_every_level() {
    let cases = [
        ("spec: {}\n", "spec"),
        (
            &rule("{action: Count, onExitCode: {}}") as &str,
            "rules[0].onExitCode",
        ),
        (
            &rule("{action: Count, onExitCodes: {operator: In, values: [1], value: 2}}"),
            "rules[0].onExitCodes.value",
        ),
        (
            &rule("{action: Count, onPodConditions: [{type: X, reason: Y}]}"),
            "rules[0].onPodConditions[0].reason",
        ),
        (
            &rule("{action: Count, onContainerReasons: {values: [A], container: main}}"),
            "rules[0].onContainerReasons.container",
        ),
        (
            &rule("{action: Count, onMessage: {pattern: x, flags: i}}"),
            "rules[0].onMessage.flags",
        ),
        ("backoff: {base: 1}\n", "backoff.base"),
        (
            "pendingTimeout: {seconds: 1, timeout: 2}\n",
            "pendingTimeout.timeout",
        ),
        ("nodeAvoidance: {max: 2}\n", "nodeAvoidance.max"),
    ];
    for (body, field) in cases {
        let (f, kind) = bad(body).remove(0);
        assert_eq!(f, format!("{A}.{field}"), "{body}");
        assert_eq!(kind, ViolationKind::Forbidden);
    }
    let (_, v) = run(&format!("{HEAD}spec: {{}}\n"), &job());
    assert!(v[0].description().contains("unknown field"), "{}", v[0]);
}

#[test]
fn limits() {
    let many =
        |n: usize, item: &dyn Fn(usize) -> String| (0..n).map(item).collect::<Vec<_>>().join(", ");
    let rules21 = format!(
        "rules: [{}]\n",
        many(21, &|_| "{action: Count, onPodReasons: [X]}".to_string())
    );
    let cases: Vec<(String, &str, ViolationKind)> = vec![
        (rules21, "rules", ViolationKind::TooMany),
        (
            rule(&format!(
                "{{action: Count, onPodReasons: [{}]}}",
                many(21, &|i| format!("R{i}"))
            )),
            "rules[0].onPodReasons",
            ViolationKind::TooMany,
        ),
        (
            rule(&format!(
                "{{action: Count, onExitCodes: {{operator: In, values: [{}]}}}}",
                many(256, &|i| (i + 1).to_string())
            )),
            "rules[0].onExitCodes.values",
            ViolationKind::TooMany,
        ),
        (
            rule(&format!(
                "{{name: {}, action: Count, onPodReasons: [X]}}",
                "a".repeat(112)
            )),
            "rules[0].name",
            ViolationKind::TooLong,
        ),
        (
            rule(&format!(
                "{{action: Count, onMessage: {{pattern: \"{}\"}}}}",
                "a".repeat(1025)
            )),
            "rules[0].onMessage.pattern",
            ViolationKind::TooLong,
        ),
        (
            rule("{name: r, action: Count, onPodReasons: [X], maxRetries: 1001}"),
            "rules[0].maxRetries",
            ViolationKind::Invalid,
        ),
        (
            rule("{name: r, action: Count, onPodReasons: [X], maxRetries: -1}"),
            "rules[0].maxRetries",
            ViolationKind::Invalid,
        ),
        (
            "backoff: {baseSeconds: 0}\n".into(),
            "backoff.baseSeconds",
            ViolationKind::Invalid,
        ),
        (
            "backoff: {baseSeconds: 86401}\n".into(),
            "backoff.baseSeconds",
            ViolationKind::Invalid,
        ),
        (
            "backoff: {baseSeconds: 20, maxSeconds: 19}\n".into(),
            "backoff.maxSeconds",
            ViolationKind::Invalid,
        ),
        (
            "backoff: {maxSeconds: 86401}\n".into(),
            "backoff.maxSeconds",
            ViolationKind::Invalid,
        ),
        (
            "backoff: {factor: 0}\n".into(),
            "backoff.factor",
            ViolationKind::Invalid,
        ),
        (
            "backoff: {factor: 11}\n".into(),
            "backoff.factor",
            ViolationKind::Invalid,
        ),
        (
            "backoff: {factor: 1.5}\n".into(),
            "backoff.factor",
            ViolationKind::Invalid,
        ),
        (
            "backoff: {jitterPercent: 101}\n".into(),
            "backoff.jitterPercent",
            ViolationKind::Invalid,
        ),
        (
            "backoff: {jitterPercent: -1}\n".into(),
            "backoff.jitterPercent",
            ViolationKind::Invalid,
        ),
        (
            "backoff: {afterIgnoredFailure: Never}\n".into(),
            "backoff.afterIgnoredFailure",
            ViolationKind::NotSupported,
        ),
        (
            "pendingTimeout: {}\n".into(),
            "pendingTimeout.seconds",
            ViolationKind::Required,
        ),
        (
            "pendingTimeout: {seconds: 0}\n".into(),
            "pendingTimeout.seconds",
            ViolationKind::Invalid,
        ),
        (
            "pendingTimeout: {seconds: 604801}\n".into(),
            "pendingTimeout.seconds",
            ViolationKind::Invalid,
        ),
        (
            "pendingTimeout: {seconds: \"300\"}\n".into(),
            "pendingTimeout.seconds",
            ViolationKind::Invalid,
        ),
        (
            "pendingTimeout: {seconds: 1, reasons: []}\n".into(),
            "pendingTimeout.reasons",
            ViolationKind::Required,
        ),
        (
            "pendingTimeout: {seconds: 1, reasons: [A, A]}\n".into(),
            "pendingTimeout.reasons[1]",
            ViolationKind::Duplicate,
        ),
        (
            "pendingTimeout: {seconds: 1, action: Retry}\n".into(),
            "pendingTimeout.action",
            ViolationKind::NotSupported,
        ),
        (
            "nodeAvoidance: {maxNodes: 0}\n".into(),
            "nodeAvoidance.maxNodes",
            ViolationKind::Invalid,
        ),
        (
            "nodeAvoidance: {maxNodes: 51}\n".into(),
            "nodeAvoidance.maxNodes",
            ViolationKind::Invalid,
        ),
        (
            "nodeAvoidance: {mode: Soft}\n".into(),
            "nodeAvoidance.mode",
            ViolationKind::NotSupported,
        ),
        (
            "terminatingTimeout: {onNodes: Unhealthy}\n".into(),
            "terminatingTimeout.seconds",
            ViolationKind::Required,
        ),
        (
            "terminatingTimeout: {seconds: 604801}\n".into(),
            "terminatingTimeout.seconds",
            ViolationKind::Invalid,
        ),
        (
            "terminatingTimeout: {seconds: 1, onNodes: Lost}\n".into(),
            "terminatingTimeout.onNodes",
            ViolationKind::NotSupported,
        ),
        (
            "terminatingTimeout: {seconds: 1, forceDelete: \"yes\"}\n".into(),
            "terminatingTimeout.forceDelete",
            ViolationKind::Invalid,
        ),
        (
            "terminatingTimeout: {seconds: 1, grace: 0}\n".into(),
            "terminatingTimeout.grace",
            ViolationKind::Forbidden,
        ),
        ("backoff: 3\n".into(), "backoff", ViolationKind::Invalid),
        ("rules: {}\n".into(), "rules", ViolationKind::Invalid),
        ("rules: []\n".into(), "rules", ViolationKind::Required),
    ];
    for (body, field, kind) in cases {
        let got = bad(&body);
        assert_eq!(got, vec![(format!("{A}.{field}"), kind)], "{body}");
    }
    // The limits themselves are allowed.
    ok("backoff: {baseSeconds: 86400, maxSeconds: 86400, factor: 10, jitterPercent: 100}\n");
    ok("backoff: {baseSeconds: 1, factor: 1, jitterPercent: 0}\n");
    ok("pendingTimeout: {seconds: 604800}\nnodeAvoidance: {maxNodes: 50}\n");
    ok("terminatingTimeout: {seconds: 604800}\n");
    ok(&rule(
        "{name: r, action: Count, onPodReasons: [X], maxRetries: 1000}",
    ));
    ok(&rule(
        "{name: r, action: Count, onPodReasons: [X], maxRetries: 0}",
    ));
    ok(&rule(&format!(
        "{{name: {}, action: Count, onPodReasons: [X]}}",
        "a".repeat(111)
    )));
}

#[test]
fn rules_are_checked_field_by_field() {
    let cases: Vec<(String, &str, ViolationKind)> = vec![
        (rule("{onPodReasons: [X]}"), "rules[0].action", ViolationKind::Required),
        (rule("{action: Retry, onPodReasons: [X]}"), "rules[0].action", ViolationKind::NotSupported),
        (rule("{action: Count}"), "rules[0]", ViolationKind::Required),
        (rule("{name: a-b, action: Count, onPodReasons: [X]}"), "rules[0].name", ViolationKind::Invalid),
        (rule("{name: \"\", action: Count, onPodReasons: [X]}"), "rules[0].name", ViolationKind::Required),
        (
            rule("{name: PendingTimeout, action: Count, onPodReasons: [X]}"),
            "rules[0].name",
            ViolationKind::Invalid,
        ),
        (
            "rules:\n- {name: a, action: Count, onPodReasons: [X]}\n- {name: a, action: Count, onPodReasons: [Y]}\n".into(),
            "rules[1].name",
            ViolationKind::Duplicate,
        ),
        (rule("{action: Count, onPodReasons: [X], maxRetries: 1}"), "rules[0].name", ViolationKind::Required),
        (
            rule("{name: r, action: FailJob, onPodReasons: [X], maxRetries: 1}"),
            "rules[0].maxRetries",
            ViolationKind::Invalid,
        ),
        (
            rule("{name: r, action: Count, onPodReasons: [X], whenRetriesExhausted: FailJob}"),
            "rules[0].whenRetriesExhausted",
            ViolationKind::Forbidden,
        ),
        (
            rule("{name: r, action: Count, onPodReasons: [X], maxRetries: 1, whenRetriesExhausted: Count}"),
            "rules[0].whenRetriesExhausted",
            ViolationKind::NotSupported,
        ),
        (
            rule("{action: Count, onExitCodes: {values: [1]}}"),
            "rules[0].onExitCodes.operator",
            ViolationKind::Required,
        ),
        (
            rule("{action: Count, onExitCodes: {operator: Is, values: [1]}}"),
            "rules[0].onExitCodes.operator",
            ViolationKind::NotSupported,
        ),
        (
            rule("{action: Count, onExitCodes: {operator: In}}"),
            "rules[0].onExitCodes.values",
            ViolationKind::Required,
        ),
        (
            rule("{action: Count, onExitCodes: {operator: In, values: [0]}}"),
            "rules[0].onExitCodes.values[0]",
            ViolationKind::Invalid,
        ),
        (
            rule("{action: Count, onExitCodes: {operator: In, values: [1, 1]}}"),
            "rules[0].onExitCodes.values[1]",
            ViolationKind::Duplicate,
        ),
        (
            rule("{action: Count, onExitCodes: {operator: In, values: [x]}}"),
            "rules[0].onExitCodes.values[0]",
            ViolationKind::Invalid,
        ),
        (
            rule("{action: Count, onExitCodes: {operator: In, ranges: [\"0-5\"]}}"),
            "rules[0].onExitCodes.ranges[0]",
            ViolationKind::Invalid,
        ),
        (
            rule("{action: Count, onExitCodes: {operator: NotIn, ranges: [\"5-4\"]}}"),
            "rules[0].onExitCodes.ranges[0]",
            ViolationKind::Invalid,
        ),
        (
            rule("{action: Count, onExitCodes: {operator: NotIn, ranges: [\"1-256\"]}}"),
            "rules[0].onExitCodes.ranges[0]",
            ViolationKind::Invalid,
        ),
        (
            rule("{action: Count, onExitCodes: {operator: NotIn, ranges: [\"1\"]}}"),
            "rules[0].onExitCodes.ranges[0]",
            ViolationKind::Invalid,
        ),
        (
            rule("{action: Count, onExitCodes: {operator: NotIn, ranges: [7]}}"),
            "rules[0].onExitCodes.ranges[0]",
            ViolationKind::Invalid,
        ),
        (
            rule("{action: Count, onExitCodes: {containerName: other, operator: In, values: [1]}}"),
            "rules[0].onExitCodes.containerName",
            ViolationKind::Invalid,
        ),
        (
            rule("{action: Count, onPodConditions: []}"),
            "rules[0].onPodConditions",
            ViolationKind::Required,
        ),
        (
            rule("{action: Count, onPodConditions: [{status: \"True\"}]}"),
            "rules[0].onPodConditions[0].type",
            ViolationKind::Required,
        ),
        (
            rule("{action: Count, onPodConditions: [{type: X, status: true}]}"),
            "rules[0].onPodConditions[0].status",
            ViolationKind::Invalid,
        ),
        (
            rule("{action: Count, onPodConditions: [{type: X, status: Maybe}]}"),
            "rules[0].onPodConditions[0].status",
            ViolationKind::NotSupported,
        ),
        (
            rule("{action: Count, onPodReasons: [\"\"]}"),
            "rules[0].onPodReasons[0]",
            ViolationKind::Required,
        ),
        (
            rule("{action: Count, onContainerReasons: {containerName: main}}"),
            "rules[0].onContainerReasons.values",
            ViolationKind::Required,
        ),
        (
            rule("{action: Count, onContainerReasons: {containerName: nope, values: [A]}}"),
            "rules[0].onContainerReasons.containerName",
            ViolationKind::Invalid,
        ),
        (rule("{action: Count, onMessage: {}}"), "rules[0].onMessage.pattern", ViolationKind::Required),
        (
            rule("{action: Count, onMessage: {pattern: \"(\"}}"),
            "rules[0].onMessage.pattern",
            ViolationKind::Invalid,
        ),
        // Within the length limit, but compiles past the size limit.
        (
            rule("{action: Count, onMessage: {pattern: \"\\\\w{1000}\\\\w{1000}\"}}"),
            "rules[0].onMessage.pattern",
            ViolationKind::Invalid,
        ),
        (rule("Count"), "rules[0]", ViolationKind::Invalid),
    ];
    for (body, field, kind) in cases {
        let got = bad(&body);
        assert_eq!(got, vec![(format!("{A}.{field}"), kind)], "{body}");
    }
    // Every violation of a document is reported, in document order.
    assert_eq!(
        fields(
            "rules:\n- {action: X, onPodReasons: [A]}\n- {action: Count, onPodReasons: [B], extra: 1}\nbackoff: {factor: 0}\n"
        ),
        vec![
            format!("{A}.rules[0].action"),
            format!("{A}.rules[1].extra"),
            format!("{A}.backoff.factor"),
        ]
    );
}

#[test]
fn cross_checks_with_the_job() {
    // FailIndex needs backoffLimitPerIndex, wherever it is written.
    for (body, field) in [
        (
            rule("{action: FailIndex, onPodReasons: [X]}"),
            "rules[0].action",
        ),
        (
            rule(
                "{name: r, action: Count, onPodReasons: [X], maxRetries: 1, whenRetriesExhausted: FailIndex}",
            ),
            "rules[0].whenRetriesExhausted",
        ),
        (
            "pendingTimeout: {seconds: 1, action: FailIndex}\n".into(),
            "pendingTimeout.action",
        ),
        (
            "terminatingTimeout: {seconds: 1, action: FailIndex}\n".into(),
            "terminatingTimeout.action",
        ),
    ] {
        assert_eq!(
            bad_with(&body, &job()),
            vec![(format!("{A}.{field}"), ViolationKind::Invalid)],
            "{body}"
        );
        ok(&body);
    }
    // Rules need restartPolicy Never; the other parts do not.
    let mut on_failure = job();
    on_failure.spec.template.restart_policy = RestartPolicy::OnFailure;
    assert_eq!(
        bad_with(&rule("{action: Count, onPodReasons: [X]}"), &on_failure),
        vec![(format!("{A}.rules"), ViolationKind::Forbidden)]
    );
    let (policy, v) = run(
        &format!("{HEAD}backoff: {{}}\npendingTimeout: {{seconds: 5}}\nnodeAvoidance: {{}}\n"),
        &on_failure,
    );
    assert!(v.is_empty() && policy.is_some(), "{v:?}");
}

#[test]
fn bad_yaml_is_reported_at_the_document_with_its_position() {
    let (policy, v) = run(&format!("{HEAD}rules: [\n  - a: b\n"), &job());
    assert!(policy.is_none());
    assert_eq!(v.len(), 1, "{v:?}");
    assert_eq!(v[0].field, A);
    assert!(v[0].detail.contains("line "), "{}", v[0].detail);
    assert!(v[0].detail.contains("column "), "{}", v[0].detail);
    for text in ["", "  \n", "- a\n", "just text", "null"] {
        let (policy, v) = run(text, &job());
        assert!(policy.is_none(), "{text:?}");
        assert_eq!(v.len(), 1, "{text:?}: {v:?}");
        assert_eq!(v[0].field, A, "{text:?}");
    }
    // A duplicated key is a syntax error, not a silent choice of one value.
    let (policy, v) = run(&format!("{HEAD}kind: FailurePolicy\n"), &job());
    assert!(policy.is_none() && v.len() == 1, "{v:?}");
}

#[test]
fn a_document_over_32_kib_is_rejected_unread() {
    let text = format!("{HEAD}#{}\n", "x".repeat(MAX_DOCUMENT_BYTES));
    let (policy, v) = run(&text, &job());
    assert!(policy.is_none());
    assert_eq!(v.len(), 1);
    assert_eq!(
        (v[0].field.as_str(), v[0].kind),
        (A, ViolationKind::TooLong)
    );
    // Just under the limit is read.
    let pad = MAX_DOCUMENT_BYTES - HEAD.len() - 2;
    let (policy, v) = run(&format!("{HEAD}#{}\n", "x".repeat(pad)), &job());
    assert!(policy.is_some(), "{v:?}");
}

#[test]
fn echoed_values_and_messages_are_bounded() {
    let long = "A".repeat(10_000);
    let (_, v) = run(
        &format!("{HEAD}kind2: x\nbackoff: {{afterIgnoredFailure: {long}}}\n"),
        &job(),
    );
    assert_eq!(v.len(), 2, "{v:?}");
    for v in &v {
        assert!(v.value.as_ref().is_none_or(|s| s.len() <= 1024), "{v:?}");
        assert!(v.description().len() <= 2048, "{}", v.description().len());
    }
    let key = "k".repeat(10_000);
    let (_, v) = run(&format!("{HEAD}{key}: 1\n"), &job());
    assert!(v[0].field.len() <= 512, "{}", v[0].field.len());
}

#[test]
fn both_sources() {
    let doc = format!("{HEAD}backoff: {{factor: 3}}\n");
    let other = format!("{HEAD}backoff: {{factor: 4}}\n");
    let job = job();
    let from = |annotation: Option<&str>, field: &str| {
        let mut errs = Violations::default();
        let p = from_sources(annotation, field, &job, &mut errs);
        (p, errs.fields())
    };
    // Neither: no document, no error.
    assert_eq!(from(None, ""), (None, vec![]));
    let (p, e) = from(Some(&doc), "");
    assert!(p.is_some() && e.is_empty());
    let (p, e) = from(None, &doc);
    assert!(p.is_some() && e.is_empty());
    // Both, the same document (even written differently): fine.
    let json = r#"{"apiVersion": "job-decider.dev/v1alpha1", "kind": "FailurePolicy", "backoff": {"factor": 3}}"#;
    let (p, e) = from(Some(&doc), json);
    assert!(p.is_some() && e.is_empty(), "{e:?}");
    // Both, unequal: an error at the request's field.
    assert_eq!(
        from(Some(&doc), &other),
        (None, vec!["failurePolicy".to_string()])
    );
    // Each source's errors name their own path.
    let (p, e) = from(Some(&format!("{HEAD}x: 1\n")), &format!("{HEAD}y: 1\n"));
    assert!(p.is_none());
    assert_eq!(e, vec![format!("{A}.x"), "failurePolicy.y".to_string()]);
    let (_, e) = from(
        None,
        &format!(
            "{HEAD}rules:\n- {{action: Count, onExitCodes: {{operator: In, ranges: [\"0-1\"]}}}}\n"
        ),
    );
    assert_eq!(
        e,
        vec!["failurePolicy.rules[0].onExitCodes.ranges[0]".to_string()]
    );
    // An empty annotation is an error, not "no document".
    let (p, e) = from(Some(""), "");
    assert!(p.is_none());
    assert_eq!(e, vec![A.to_string()]);
}

/// Every document in the reference (docs/failure-policy.md) is valid as written.
#[test]
fn the_reference_examples_are_valid() {
    let reference = include_str!("../../../../../docs/failure-policy.md");
    let mut checked = 0;
    for block in reference.split("```yaml\n").skip(1) {
        let Some((yaml, _)) = block.split_once("```") else {
            continue;
        };
        // The Job manifest shows where the annotation goes; it is no document.
        if yaml.contains("kind: Job") {
            continue;
        }
        let text = if yaml.contains("apiVersion:") {
            yaml.to_string()
        } else {
            format!("{HEAD}{yaml}")
        };
        let (policy, v) = run(&text, &per_index_job());
        assert!(policy.is_some() && v.is_empty(), "{yaml}\n{v:?}");
        checked += 1;
    }
    assert!(checked >= 9, "{checked} examples");
}

/// The violations the reference shows are the ones given.
#[test]
fn the_reference_error_example_is_what_validation_says() {
    let text = format!(
        "{HEAD}rules:\n- {{action: Count, onExitCode: {{}}, onPodReasons: [X]}}\n- {{action: Count, onPodReasons: [Y]}}\n\
         - {{action: Count, onExitCodes: {{operator: In, ranges: [\"0-255\"]}}}}\nbackoff: {{factor: 11}}\n"
    );
    let (_, v) = run(&text, &per_index_job());
    let reference = include_str!("../../../../../docs/failure-policy.md");
    let lines: Vec<String> = v.iter().map(|v| v.description()).collect();
    assert_eq!(lines.len(), 3, "{lines:?}");
    for line in &lines[1..] {
        assert!(reference.contains(line.as_str()), "{line}");
    }
    let first = lines[0].split("known fields").next().unwrap_or_default();
    assert!(reference.contains(first), "{first}");
}

/// Hostile documents within the size limit: deep nesting and alias
/// expansion ("billion laughs") are errors, not a crash or a blow-up.
#[test]
fn hostile_yaml_is_an_error_not_a_crash() {
    let deep = format!(
        "{HEAD}rules: {}{}\n",
        "[".repeat(10_000),
        "]".repeat(10_000)
    );
    let mut laughs = format!("{HEAD}a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
    for i in 1..10 {
        let prev = format!("*a{}", i - 1);
        laughs.push_str(&format!(
            "a{i}: &a{i} [{}]\n",
            [prev.as_str(); 10].join(", ")
        ));
    }
    for text in [deep, laughs] {
        assert!(text.len() <= MAX_DOCUMENT_BYTES, "{}", text.len());
        let (policy, v) = run(&text, &job());
        assert!(policy.is_none());
        assert_eq!(v.len(), 1, "{v:?}");
        assert_eq!(v[0].field, A);
    }
}

/// The document's echoed values were quoted with Rust's `{:?}` (`"\u{1}"`), where every
/// other violation quotes as Go's `%q` (`"\x01"`) through `core::go_text`.
#[test]
fn echoed_values_were_quoted_as_rust_not_go() {
    let values = |body: &str| -> Vec<String> {
        let (_, v) = run(&format!("{HEAD}{body}"), &per_index_job());
        let mut values: Vec<String> = v.into_iter().filter_map(|v| v.value).collect();
        values.dedup();
        values
    };
    // A rule name repeated, a signal that is not one, and a value of the wrong type.
    let twice = "rules:\n- {name: \"a\\x01\", action: Ignore, onExitCodes: {operator: In, values: [1]}}\n\
                 - {name: \"a\\x01\", action: Ignore, onExitCodes: {operator: In, values: [2]}}\n";
    assert_eq!(values(twice), ["\"a\\x01\""]);
    let signal = rule("action: Ignore\n  onExitCodes: {operator: In, signals: [\"SIG\\x7f\"]}");
    assert_eq!(values(&signal), ["\"SIG\\x7f\""]);
    let typed = rule("action: Ignore\n  onExitCodes: {operator: In, values: [\"\\x01\"]}");
    assert_eq!(values(&typed), ["\"\\x01\""]);
}

/// The document reads its enum values as the core spells them (`ExtendedAction::as_str`,
/// `api_names`), and a value it does not know lists them in one order.
#[test]
fn enum_values_are_the_cores_spellings() {
    for &action in ExtendedAction::ALL {
        let p = ok(&rule(&format!(
            "{{action: {}, onPodReasons: [X]}}",
            action.as_str()
        )));
        assert_eq!(p.rules[0].action, action);
    }
    let (_, v) = run(
        &format!("{HEAD}{}", rule("{action: Retry, onPodReasons: [X]}")),
        &per_index_job(),
    );
    assert_eq!(
        v.iter().map(|v| v.description()).collect::<Vec<_>>(),
        [format!(
            "{A}.rules[0].action: Unsupported value: \"Retry\": supported values: \
             \"FailJob\", \"FailIndex\", \"Ignore\", \"Count\""
        )]
    );
    // The closed enums of the settings list their names in the table's order.
    let (_, v) = run(
        &format!("{HEAD}backoff: {{afterIgnoredFailure: Later}}\nnodeAvoidance: {{mode: Never}}\n"),
        &per_index_job(),
    );
    assert_eq!(
        v.iter().map(|v| v.description()).collect::<Vec<_>>(),
        [
            format!(
                "{A}.backoff.afterIgnoredFailure: Unsupported value: \"Later\": supported values: \
                 \"Delay\", \"Immediate\""
            ),
            format!(
                "{A}.nodeAvoidance.mode: Unsupported value: \"Never\": supported values: \
                 \"Required\", \"Preferred\""
            ),
        ]
    );
    let status = ok(&rule(
        "{action: Ignore, onPodConditions: [{type: Ready, status: \"False\"}]}",
    ));
    assert_eq!(
        status.rules[0].on_pod_conditions[0].status,
        ConditionStatus::False
    );
}

/// `terminatingTimeout`'s defaults (any node, Count, no force delete) and
/// every field read; its implicit rule's name is reserved like PendingTimeout's.
#[test]
fn terminating_timeout_defaults_and_reserved_name() {
    let p = ok("terminatingTimeout: {seconds: 300}\n");
    assert_eq!(
        p.terminating_timeout,
        Some(TerminatingTimeout {
            seconds: 300,
            on_nodes: TerminatingNodes::Any,
            action: ExtendedAction::Count,
            force_delete: false,
        })
    );
    let p = ok(
        "terminatingTimeout: {seconds: 5, onNodes: Unhealthy, action: Ignore, forceDelete: true}\n",
    );
    assert_eq!(
        p.terminating_timeout,
        Some(TerminatingTimeout {
            seconds: 5,
            on_nodes: TerminatingNodes::Unhealthy,
            action: ExtendedAction::Ignore,
            force_delete: true,
        })
    );
    assert_eq!(
        bad(&rule(
            "{name: TerminatingTimeout, action: Count, onPodReasons: [X]}"
        )),
        vec![(format!("{A}.rules[0].name"), ViolationKind::Invalid)]
    );
}
#[test]
fn failure_message_is_upstream_unless_detailed_and_strict() {
    assert_eq!(ok("").failure_message, FailureMessage::Upstream);
    assert_eq!(
        ok("failureMessage: Upstream\n").failure_message,
        FailureMessage::Upstream
    );
    assert_eq!(
        ok("failureMessage: Detailed\n").failure_message,
        FailureMessage::Detailed
    );
    // Spelled as the document's other enums: the lower-case word of the issue is refused.
    let (_, v) = run(&format!("{HEAD}failureMessage: detailed\n"), &job());
    assert_eq!(
        v.iter().map(|v| v.description()).collect::<Vec<_>>(),
        [format!(
            "{A}.failureMessage: Unsupported value: \"detailed\": supported values: \
             \"Upstream\", \"Detailed\""
        )]
    );
    assert_eq!(
        bad("failureMessage: {mode: Detailed}\n"),
        [("failureMessage".to_string(), ViolationKind::Invalid)]
            .map(|(f, k)| (format!("{A}.{f}"), k))
    );
    assert_eq!(
        fields("failureMessage: true\n"),
        [format!("{A}.failureMessage")]
    );
}

/// KEP-4443: a name is valid when the reason it gives, `PodFailurePolicy_{name}`,
/// is a valid condition reason of at most 128 characters; names are unique, and
/// a name that is a rule's index may only be that rule's own.
#[test]
fn rule_names_follow_kep_4443() {
    let named = |name: &str| {
        rule(&format!(
            "{{name: {name:?}, action: Count, onPodReasons: [X]}}"
        ))
    };
    // Any character of a condition reason, the first one included: digits, '_' and ':'.
    for name in [
        "oom",
        "1abc",
        "ExitCode2",
        "_x",
        "a:b",
        "gpu:xid_79",
        "0",
        &"a".repeat(111),
    ] {
        let p = ok(&named(name));
        assert_eq!(p.rules[0].name.as_deref(), Some(name), "{name}");
    }
    let cases: Vec<(String, ViolationKind, &str)> = vec![
        // PodFailurePolicy_ (17) + 112 = 129 characters.
        (
            named(&"a".repeat(112)),
            ViolationKind::TooLong,
            "may have at most 111 bytes",
        ),
        (
            named("a:"),
            ViolationKind::Invalid,
            "end with a letter, a digit or '_'",
        ),
        (
            named("a-b"),
            ViolationKind::Invalid,
            "letters, digits, '_' and ':'",
        ),
        (
            named("a b"),
            ViolationKind::Invalid,
            "letters, digits, '_' and ':'",
        ),
        // A reason may hold ',', but the rule-match-counts annotation separates names with it.
        (
            named("a,b"),
            ViolationKind::Invalid,
            "letters, digits, '_' and ':'",
        ),
    ];
    for (body, kind, detail) in cases {
        let (_, v) = run(&format!("{HEAD}{body}"), &per_index_job());
        assert_eq!(v.len(), 1, "{body}: {v:?}");
        assert_eq!(
            (v[0].field.as_str(), &v[0].kind),
            (format!("{A}.rules[0].name").as_str(), &kind),
            "{body}"
        );
        assert!(
            v[0].description().contains(detail),
            "{body}: {}",
            v[0].description()
        );
    }
    // "1" names rule 0 with the reason an unnamed rules[1] has under the KEP.
    let two = |first: &str, second: &str| {
        format!(
            "rules:\n- {{name: {first:?}, action: Count, onPodReasons: [X]}}\n\
             - {{name: {second:?}, action: Count, onPodReasons: [Y]}}\n"
        )
    };
    let (_, v) = run(&format!("{HEAD}{}", two("1", "b")), &per_index_job());
    assert_eq!(
        v.iter().map(|v| v.description()).collect::<Vec<_>>(),
        [format!(
            "{A}.rules[0].name: Invalid value: \"1\": is the index of rules[1]; a name that is an \
             index may only be the rule's own (KEP-4443)"
        )]
    );
    ok(&two("0", "1"));
    ok(&two("a", "7"));
    // Unique, as the KEP asks (and as before).
    assert_eq!(
        bad(&two("a", "a")),
        [(format!("{A}.rules[1].name"), ViolationKind::Duplicate)]
    );
}

#[test]
fn attempt_deadline_and_ready_timeout_are_read_and_checked() {
    let p =
        ok("attemptDeadline: {seconds: 3600, action: FailIndex}\nreadyTimeout: {seconds: 600}\n");
    assert_eq!(
        p.attempt_deadline,
        Some(AttemptDeadline {
            seconds: 3600,
            action: ExtendedAction::FailIndex,
        })
    );
    assert_eq!(
        p.ready_timeout,
        Some(ReadyTimeout {
            seconds: 600,
            action: ExtendedAction::Count,
        })
    );
    // The limits themselves are allowed.
    ok("attemptDeadline: {seconds: 2592000}\nreadyTimeout: {seconds: 604800, action: Ignore}\n");
    ok("attemptDeadline: {seconds: 1, action: FailJob}\nreadyTimeout: {seconds: 1}\n");
    let cases: Vec<(&str, &str, ViolationKind)> = vec![
        (
            "attemptDeadline: {}\n",
            "attemptDeadline.seconds",
            ViolationKind::Required,
        ),
        (
            "attemptDeadline: {seconds: 0}\n",
            "attemptDeadline.seconds",
            ViolationKind::Invalid,
        ),
        (
            "attemptDeadline: {seconds: 2592001}\n",
            "attemptDeadline.seconds",
            ViolationKind::Invalid,
        ),
        (
            "attemptDeadline: {seconds: \"60\"}\n",
            "attemptDeadline.seconds",
            ViolationKind::Invalid,
        ),
        (
            "attemptDeadline: {seconds: 1.5}\n",
            "attemptDeadline.seconds",
            ViolationKind::Invalid,
        ),
        (
            "attemptDeadline: {seconds: 1, action: Retry}\n",
            "attemptDeadline.action",
            ViolationKind::NotSupported,
        ),
        (
            "attemptDeadline: {seconds: 1, after: 2}\n",
            "attemptDeadline.after",
            ViolationKind::Forbidden,
        ),
        (
            "attemptDeadline: 60\n",
            "attemptDeadline",
            ViolationKind::Invalid,
        ),
        (
            "readyTimeout: {}\n",
            "readyTimeout.seconds",
            ViolationKind::Required,
        ),
        (
            "readyTimeout: {seconds: 0}\n",
            "readyTimeout.seconds",
            ViolationKind::Invalid,
        ),
        (
            "readyTimeout: {seconds: 604801}\n",
            "readyTimeout.seconds",
            ViolationKind::Invalid,
        ),
        (
            "readyTimeout: {seconds: 1, action: count}\n",
            "readyTimeout.action",
            ViolationKind::NotSupported,
        ),
    ];
    for (body, field, kind) in cases {
        let got = bad(body);
        assert_eq!(got.len(), 1, "{body}: {got:?}");
        assert_eq!(got[0].0, format!("{A}.{field}"), "{body}");
        assert_eq!(got[0].1, kind, "{body}");
    }
    // FailIndex needs backoffLimitPerIndex; other restart policies are fine.
    for field in ["attemptDeadline", "readyTimeout"] {
        assert_eq!(
            bad_with(
                &format!("{field}: {{seconds: 5, action: FailIndex}}\n"),
                &job()
            ),
            vec![(format!("{A}.{field}.action"), ViolationKind::Invalid)]
        );
    }
    let mut on_failure = job();
    on_failure.spec.template.restart_policy = RestartPolicy::OnFailure;
    let (policy, v) = run(
        &format!("{HEAD}attemptDeadline: {{seconds: 5}}\nreadyTimeout: {{seconds: 5}}\n"),
        &on_failure,
    );
    assert!(v.is_empty() && policy.is_some(), "{v:?}");
    // The implicit rules' names are reserved.
    for name in ["ReadyTimeout", "AttemptDeadline"] {
        let got = bad(&rule(&format!(
            "{{name: {name}, action: Count, onPodReasons: [X]}}"
        )));
        assert_eq!(
            got,
            vec![(format!("{A}.rules[0].name"), ViolationKind::Invalid)],
            "{name}"
        );
    }
}
