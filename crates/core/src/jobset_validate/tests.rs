use super::*;
use crate::jobset::{
    FailurePolicyAction, FailurePolicyRule, JobSetSpec, MessagePattern, ReplicatedJob,
    RestartStrategy,
};

fn js(rules: Vec<FailurePolicyRule>) -> JobSet {
    JobSet {
        name: "js".into(),
        spec: JobSetSpec {
            replicated_jobs: vec![ReplicatedJob {
                name: "rj".into(),
                replicas: 1,
            }],
            failure_policy: Some(FailurePolicy {
                max_restarts: 1,
                restart_strategy: RestartStrategy::Recreate,
                rules,
            }),
            suspend: false,
        },
        ..JobSet::default()
    }
}

fn named(name: &str) -> FailurePolicyRule {
    FailurePolicyRule {
        name: name.into(),
        action: FailurePolicyAction::FailJobSet,
        ..FailurePolicyRule::default()
    }
}

fn messages(v: &[Violation]) -> Vec<String> {
    v.iter().map(|v| v.to_string()).collect()
}

#[test]
fn rule_name_regex_compiles() {
    assert!(RULE_NAME_RE.is_some());
}

#[test]
fn valid_names_pass() {
    for n in ["a", "ruleWithAName", "r_leader", "a,b:c_", "A1"] {
        assert!(validate_jobset(&js(vec![named(n)])).is_empty(), "{n}");
    }
}

#[test]
fn in_place_restart_is_forbidden_with_the_gate_off_by_default() {
    // ValidateCreate (jobset_webhook.go, v0.12.0): the InPlaceRestart gate defaults to off.
    let mut j = js(vec![named("1bad")]);
    if let Some(p) = j.spec.failure_policy.as_mut() {
        p.restart_strategy = RestartStrategy::InPlaceRestart;
    }
    let v = validate_jobset(&j);
    assert_eq!(v.len(), 2);
    assert_eq!(
        v[0].to_string(),
        "spec.failurePolicy.restartStrategy: Forbidden: InPlaceRestart restart strategy \
         cannot be set when InPlaceRestart feature gate is disabled"
    );
}

#[test]
fn no_policy_is_valid() {
    let mut j = js(vec![]);
    j.spec.failure_policy = None;
    assert!(validate_jobset(&j).is_empty());
}

#[test]
fn empty_names_are_defaulted_by_index_before_validation() {
    let mut p = FailurePolicy {
        rules: vec![named("ruleWithAName"), named("")],
        ..FailurePolicy::default()
    };
    default_rule_names(&mut p);
    assert_eq!(p.rules[1].name, "failurePolicyRule1");
    assert!(validate_jobset(&js(vec![named(""), named("")])).is_empty());
}

#[test]
fn defaulted_name_can_collide_with_a_given_one() {
    let v = validate_jobset(&js(vec![named(""), named("failurePolicyRule0")]));
    assert_eq!(
        messages(&v),
        [
            "spec.failurePolicy.rules[1].name: Duplicate value: rule names are not unique, \
          rules with indices [0 1] all have the same name 'failurePolicyRule0'"
        ]
    );
}

#[test]
fn name_starting_with_digit_or_ending_with_comma_or_hyphenated() {
    for n in ["1rule", "rule,", "r-leader"] {
        let v = validate_jobset(&js(vec![named(n)]));
        assert_eq!(
            messages(&v),
            [format!(
                "spec.failurePolicy.rules[0].name: Invalid value: invalid failure policy \
                 rule name '{n}', a failure policy rule name must start with an alphabetic \
                 character, optionally followed by a string of alphanumeric characters or \
                 '_,:', and must end with an alphanumeric character or '_'"
            )]
        );
    }
}

#[test]
fn name_longer_than_128() {
    let long = "a".repeat(129);
    let v = validate_jobset(&js(vec![named(&long)]));
    assert_eq!(
        messages(&v),
        [
            "spec.failurePolicy.rules[0].name: Too long: invalid failure policy rule name of \
          length 129, the rule name must be at least 1 characters long and at most 128 \
          characters long"
        ]
    );
    assert!(validate_jobset(&js(vec![named(&"a".repeat(128))])).is_empty());
}

#[test]
fn duplicate_names_list_all_indices() {
    let v = validate_jobset(&js(vec![named("x"), named("y"), named("x"), named("x")]));
    assert_eq!(
        messages(&v),
        [
            "spec.failurePolicy.rules[2].name: Duplicate value: rule names are not unique, \
          rules with indices [0 2 3] all have the same name 'x'"
        ]
    );
}

#[test]
fn unknown_reason_and_target() {
    let mut r = named("r");
    r.on_job_failure_reasons = vec!["PodFailurePolicy".into(), "Evicted".into()];
    r.target_replicated_jobs = vec!["rj".into(), "nope".into()];
    let v = validate_jobset(&js(vec![r]));
    assert_eq!(
        messages(&v),
        [
            "spec.failurePolicy.rules[0].targetReplicatedJobs[1]: Invalid value: invalid \
             replicatedJob name 'nope' in failure policy does not appear in \
             .spec.ReplicatedJobs",
            "spec.failurePolicy.rules[0].onJobFailureReasons[1]: Unsupported value: invalid \
             job failure reason 'Evicted' in failure policy is not a recognized job failure \
             reason",
        ]
    );
}

#[test]
fn invalid_message_pattern_is_rejected() {
    let mut r = named("r");
    r.on_job_failure_message_patterns = vec![
        MessagePattern::new("ok.*"),
        MessagePattern::new("(unclosed"),
    ];
    let v = validate_jobset(&js(vec![r]));
    assert_eq!(v.len(), 1);
    assert_eq!(
        v[0].field,
        "spec.failurePolicy.rules[0].onJobFailureMessagePatterns[1]"
    );
    assert_eq!(v[0].value.as_deref(), Some("\"(unclosed\""));
    assert_eq!(
        v[0].detail,
        "must be a valid RE2 regular expression: unclosed group"
    );
}

#[test]
fn repetition_past_re2s_limit_is_rejected_and_never_matches() {
    let mut r = named("r");
    let pattern = MessagePattern::new("x{1001}");
    assert!(!pattern.is_match(&"x".repeat(2000)));
    assert!(!pattern.refused_by_limits());
    r.on_job_failure_message_patterns = vec![pattern];
    let v = validate_jobset(&js(vec![r]));
    assert_eq!(v.len(), 1);
    assert!(
        v[0].detail
            .starts_with("must be a valid RE2 regular expression: invalid repeat count 1001")
    );
}

#[test]
fn a_pattern_past_the_dfa_limits_says_it_is_valid_re2() {
    let mut r = named("r");
    let pattern = MessagePattern::new("a(?s:.){200}b");
    assert!(pattern.refused_by_limits());
    r.on_job_failure_message_patterns = vec![pattern];
    let v = validate_jobset(&js(vec![r]));
    assert_eq!(v.len(), 1);
    assert!(
        v[0].detail
            .starts_with("valid RE2, but refused by this service's pattern limits"),
        "{}",
        v[0].detail
    );
}

#[test]
fn restart_job_caps_replicas_at_1024() {
    let mut r = named("r");
    r.action = FailurePolicyAction::RestartJob;
    let mut j = js(vec![r]);
    j.spec.replicated_jobs[0].replicas = 1025;
    assert_eq!(
        messages(&validate_jobset(&j)),
        [
            "spec.replicatedJobs[0].replicas: Invalid value: JobSet cannot have a failure \
          policy rule with RestartJob or RestartJobAndIgnoreMaxRestarts action and a \
          replicated job with replicas > 1024"
        ]
    );
    j.spec.replicated_jobs[0].replicas = 1024;
    assert!(validate_jobset(&j).is_empty());
    // RestartJobSet has no cap.
    if let Some(p) = j.spec.failure_policy.as_mut() {
        p.rules[0].action = FailurePolicyAction::RestartJobSet;
    }
    j.spec.replicated_jobs[0].replicas = 5000;
    assert!(validate_jobset(&j).is_empty());
}
