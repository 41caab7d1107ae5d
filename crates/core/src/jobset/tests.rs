//! Tests of the JobSet failure policy, named after the upstream cases they port
//! (pkg/controllers/failure_policy_test.go, jobset_controller_test.go) where there is one.

use super::*;
use crate::fixtures::AfterAsks;

const HOUR: i64 = 3600;
/// A fixed "now": 2024-01-01T12:00:00Z.
const NOW_SECS: i64 = 1_704_110_400;

fn now() -> Time {
    Time::from_unix_secs(NOW_SECS).unwrap_or_default()
}

fn ago(hours: i64) -> Option<Time> {
    Time::from_unix_secs(NOW_SECS - hours * HOUR)
}

fn job(rj: &str, index: i32) -> ChildJob {
    ChildJob {
        name: format!("js-{rj}-{index}"),
        uid: format!("uid-{rj}-{index}"),
        replicated_job: rj.to_string(),
        job_index: index,
        restart_attempt: 0,
        job_restart_attempt: Some(0),
        ..ChildJob::default()
    }
}

fn failed(mut j: ChildJob, reason: &str, message: &str, at: Option<Time>) -> ChildJob {
    j.conditions.push(ChildJobCondition {
        condition_type: "Failed".into(),
        status: "True".into(),
        reason: reason.into(),
        message: message.into(),
        last_transition_time: at,
    });
    j
}

fn rule(name: &str, action: FailurePolicyAction) -> FailurePolicyRule {
    FailurePolicyRule {
        name: name.into(),
        action,
        ..FailurePolicyRule::default()
    }
}

fn with_reasons(mut r: FailurePolicyRule, reasons: &[&str]) -> FailurePolicyRule {
    r.on_job_failure_reasons = reasons.iter().map(|s| s.to_string()).collect();
    r
}

fn with_targets(mut r: FailurePolicyRule, targets: &[&str]) -> FailurePolicyRule {
    r.target_replicated_jobs = targets.iter().map(|s| s.to_string()).collect();
    r
}

fn with_patterns(mut r: FailurePolicyRule, patterns: &[&str]) -> FailurePolicyRule {
    r.on_job_failure_message_patterns = patterns.iter().map(|p| MessagePattern::new(p)).collect();
    r
}

fn jobset(rjs: &[(&str, i32)], policy: Option<FailurePolicy>) -> JobSet {
    JobSet {
        name: "js".into(),
        namespace: "default".into(),
        uid: "js-uid".into(),
        spec: JobSetSpec {
            replicated_jobs: rjs
                .iter()
                .map(|(n, r)| ReplicatedJob {
                    name: n.to_string(),
                    replicas: *r,
                })
                .collect(),
            failure_policy: policy,
            suspend: false,
        },
        status: JobSetStatus::default(),
    }
}

fn policy(max_restarts: i32, rules: Vec<FailurePolicyRule>) -> Option<FailurePolicy> {
    Some(FailurePolicy {
        max_restarts,
        restart_strategy: RestartStrategy::Recreate,
        rules,
    })
}

fn decide(js: JobSet, jobs: Vec<ChildJob>) -> JobSetPlan {
    decide_jobset(&JobSetSnapshot {
        job_set: js,
        jobs,
        now: now(),
    })
}

fn new_status(plan: &JobSetPlan) -> Option<&JobSetStatus> {
    plan.actions.iter().find_map(|a| match a {
        JobSetAction::UpdateStatus(s) => Some(s.as_ref()),
        _ => None,
    })
}

fn events(plan: &JobSetPlan) -> Vec<(&'static str, String, String)> {
    plan.actions
        .iter()
        .filter_map(|a| match a {
            JobSetAction::RecordEvent(e) => {
                Some((e.event_type.as_str(), e.reason.clone(), e.message.clone()))
            }
            _ => None,
        })
        .collect()
}

fn condition<'a>(status: &'a JobSetStatus, t: &str) -> Option<&'a Condition> {
    status.conditions.iter().find(|c| c.condition_type == t)
}

// ---- findFirstFailedJob ----

#[test]
fn first_failed_job_earliest_first() {
    // Reference case 1: job1 failed 3h ago, job2 5h ago -> job2.
    let jobs = [
        failed(job("rj", 0), "BackoffLimitExceeded", "", ago(3)),
        failed(job("rj", 1), "BackoffLimitExceeded", "", ago(5)),
    ];
    assert_eq!(first_failed_job(jobs.iter()), Some(1));
}

#[test]
fn first_failed_job_without_failed_condition_is_none() {
    // Reference case 2: only the Failed=True condition counts.
    let mut a = job("rj", 0);
    a.conditions.push(ChildJobCondition {
        condition_type: "Failed".into(),
        status: "False".into(),
        ..ChildJobCondition::default()
    });
    let jobs = [a, job("rj", 1)];
    assert_eq!(first_failed_job(jobs.iter()), None);
    assert_eq!(first_failed_job([].iter()), None);
}

#[test]
fn first_failed_job_tie_goes_to_first_listed() {
    let jobs = [
        failed(job("rj", 0), "", "", ago(2)),
        failed(job("rj", 1), "", "", ago(2)),
    ];
    assert_eq!(first_failed_job(jobs.iter()), Some(0));
}

// ---- ruleIsApplicable ----

#[test]
fn rule_applicability_targets_times_reasons() {
    // The nine {target all/match/no match} x {reasons all/match/no match} combinations.
    let j = failed(job("rj-2", 0), "BackoffLimitExceeded", "boom", ago(1));
    let f = j.failure_condition().cloned().unwrap_or_default();
    let targets: [(&[&str], bool); 3] = [(&[], true), (&["rj-2"], true), (&["rj-1"], false)];
    let reasons: [(&[&str], bool); 3] = [
        (&[], true),
        (&["PodFailurePolicy", "BackoffLimitExceeded"], true),
        (&["PodFailurePolicy"], false),
    ];
    for (t, t_ok) in targets {
        for (r, r_ok) in reasons {
            let ru = with_targets(
                with_reasons(rule("r", FailurePolicyAction::FailJobSet), r),
                t,
            );
            let v = rule_verdict(&ru, &j, &f);
            assert_eq!(
                v.applies(),
                t_ok && r_ok,
                "targets {t:?} reasons {r:?}: {v}"
            );
        }
    }
}

#[test]
fn rule_not_targeting_parent_replicated_job_does_not_apply() {
    // Reference case 3.
    let j = failed(job("rj-2", 0), "BackoffLimitExceeded", "", ago(1));
    let f = j.failure_condition().cloned().unwrap_or_default();
    let r = with_targets(
        with_reasons(
            rule("r", FailurePolicyAction::FailJobSet),
            &["BackoffLimitExceeded"],
        ),
        &["rj-1"],
    );
    assert_eq!(
        rule_verdict(&r, &j, &f),
        RuleVerdict::NotTargeted("rj-2".into())
    );
}

#[test]
fn reason_and_pattern_are_combined_with_and() {
    // Reference case 4.
    let j = failed(
        job("rj", 0),
        "BackoffLimitExceeded",
        "job failed due to something else",
        ago(1),
    );
    let f = j.failure_condition().cloned().unwrap_or_default();
    let r = with_patterns(
        with_reasons(
            rule("r", FailurePolicyAction::FailJobSet),
            &["BackoffLimitExceeded"],
        ),
        &[".*bug.*"],
    );
    assert_eq!(rule_verdict(&r, &j, &f), RuleVerdict::MessageNotMatched);
    let both = with_patterns(r.clone(), &[".*else$"]);
    assert!(rule_verdict(&both, &j, &f).applies());
}

#[test]
fn pattern_only_rules() {
    // Reference case 5 and its non-matching twin.
    let j = failed(job("rj", 0), "", "job failed because of a bug", ago(1));
    let f = j.failure_condition().cloned().unwrap_or_default();
    let r = with_patterns(
        rule("r", FailurePolicyAction::FailJobSet),
        &["^job failed because.*"],
    );
    assert!(rule_verdict(&r, &j, &f).applies());
    let r = with_patterns(rule("r", FailurePolicyAction::FailJobSet), &["^bug"]);
    assert_eq!(rule_verdict(&r, &j, &f), RuleVerdict::MessageNotMatched);
}

#[test]
fn patterns_are_unanchored_and_any_of_them_matches() {
    // Reference case 14: "some message" occurs in the message.
    let j = failed(
        job("rj", 0),
        "PodFailurePolicy",
        "this is some message with critical error",
        ago(1),
    );
    let f = j.failure_condition().cloned().unwrap_or_default();
    let r = with_patterns(
        rule("r", FailurePolicyAction::FailJobSet),
        &["nothing", "some message"],
    );
    assert!(rule_verdict(&r, &j, &f).applies());
}

#[test]
fn invalid_pattern_never_matches() {
    let p = MessagePattern::new("(unclosed");
    assert!(!p.is_valid());
    assert!(!p.is_match("(unclosed"));
    let j = failed(job("rj", 0), "", "(unclosed", ago(1));
    let f = j.failure_condition().cloned().unwrap_or_default();
    let r = with_patterns(rule("r", FailurePolicyAction::FailJobSet), &["(unclosed"]);
    assert_eq!(rule_verdict(&r, &j, &f), RuleVerdict::MessageNotMatched);
}

#[test]
fn empty_reason_list_matches_empty_reason_but_missing_label_never_matches() {
    let mut j = failed(job("rj", 0), "", "", ago(1));
    let f = j.failure_condition().cloned().unwrap_or_default();
    let r = rule("r", FailurePolicyAction::FailJobSet);
    assert!(rule_verdict(&r, &j, &f).applies());
    j.replicated_job.clear();
    assert_eq!(rule_verdict(&r, &j, &f), RuleVerdict::NoReplicatedJob);
}

// ---- findFirstFailedPolicyRuleAndJob ----

#[test]
fn one_rule_matching_both_picks_the_earlier_failure() {
    // Reference case 6: the second listed Job failed 12h ago, the first 6h ago.
    let a = failed(job("rj", 0), "BackoffLimitExceeded", "", ago(6));
    let b = failed(job("rj", 1), "BackoffLimitExceeded", "", ago(12));
    let rules = [rule("r0", FailurePolicyAction::FailJobSet)];
    let mut ev = Capped::default();
    assert_eq!(
        first_matching_rule_and_job(&rules, &[&a, &b], &mut ev),
        Some((0, 1))
    );
    assert_eq!(ev.len(), 2);
}

#[test]
fn first_rule_matching_none_second_matching_both() {
    // Reference case 7.
    let a = failed(job("rj", 0), "BackoffLimitExceeded", "", ago(6));
    let b = failed(job("rj", 1), "BackoffLimitExceeded", "", ago(12));
    let rules = [
        with_targets(rule("r0", FailurePolicyAction::FailJobSet), &["nope"]),
        rule("r1", FailurePolicyAction::RestartJobSet),
    ];
    let mut ev = Capped::default();
    assert_eq!(
        first_matching_rule_and_job(&rules, &[&a, &b], &mut ev),
        Some((1, 1))
    );
}

#[test]
fn one_failed_job_three_rules_matches_only_the_third() {
    // Reference case 8.
    let a = failed(job("rj", 0), "DeadlineExceeded", "", ago(1));
    let rules = [
        with_reasons(
            rule("r0", FailurePolicyAction::FailJobSet),
            &["BackoffLimitExceeded"],
        ),
        with_reasons(
            rule("r1", FailurePolicyAction::FailJobSet),
            &["PodFailurePolicy"],
        ),
        with_reasons(
            rule("r2", FailurePolicyAction::RestartJobSet),
            &["DeadlineExceeded"],
        ),
    ];
    let mut ev = Capped::default();
    assert_eq!(
        first_matching_rule_and_job(&rules, &[&a], &mut ev),
        Some((2, 0))
    );
    assert_eq!(
        ev.iter().map(|e| e.verdict.applies()).collect::<Vec<_>>(),
        [false, false, true]
    );
}

#[test]
fn rule_order_beats_failure_time() {
    // Rule 0 matching a late failure wins over rule 1 matching an earlier one.
    let late = failed(job("a", 0), "PodFailurePolicy", "", ago(1));
    let early = failed(job("b", 0), "BackoffLimitExceeded", "", ago(9));
    let rules = [
        with_reasons(
            rule("r0", FailurePolicyAction::FailJobSet),
            &["PodFailurePolicy"],
        ),
        rule("r1", FailurePolicyAction::RestartJobSet),
    ];
    let mut ev = Capped::default();
    assert_eq!(
        first_matching_rule_and_job(&rules, &[&early, &late], &mut ev),
        Some((0, 1))
    );
    assert!(
        ev.iter().all(|e| e.rule_index == 0),
        "rule 1 is never evaluated"
    );
}

#[test]
fn no_rules_or_no_failed_jobs_match_nothing() {
    let a = failed(job("rj", 0), "", "", ago(1));
    let mut ev = Capped::default();
    assert_eq!(first_matching_rule_and_job(&[], &[&a], &mut ev), None);
    let rules = [rule("r0", FailurePolicyAction::FailJobSet)];
    assert_eq!(first_matching_rule_and_job(&rules, &[], &mut ev), None);
    assert!(ev.is_empty());
}

// ---- applying actions (TestApplyFailurePolicyRuleAction) ----

#[test]
fn restart_jobset_with_rule_sets_failure_policy_reason() {
    // Reference case 9: max 5, restarts 1/1, rule "Rule1" -> 2/2 and RestartingJobSet=True.
    let mut js = jobset(
        &[("rj", 1)],
        policy(5, vec![rule("Rule1", FailurePolicyAction::RestartJobSet)]),
    );
    js.status.restarts = 1;
    js.status.restarts_count_towards_max = 1;
    let mut j = failed(job("rj", 0), "BackoffLimitExceeded", "", ago(1));
    j.restart_attempt = 1;
    let plan = decide(js, vec![j]);
    let s = new_status(&plan).cloned().unwrap_or_default();
    assert_eq!((s.restarts, s.restarts_count_towards_max), (2, 2));
    let c = condition(&s, CONDITION_RESTARTING)
        .cloned()
        .unwrap_or_default();
    assert_eq!(
        (c.status.as_str(), c.reason.as_str()),
        ("True", "FailurePolicy_Rule1")
    );
    let msg = "applying RestartJobSet failure policy action (first failed job: js-rj-0)";
    assert_eq!(c.message, msg);
    assert_eq!(c.last_transition_time, Some(now()));
    assert_eq!(
        events(&plan),
        [
            (
                "Warning",
                "FailurePolicy_Rule1".to_string(),
                msg.to_string()
            ),
            (
                "Warning",
                REASON_RESTART_JOBSET_ACTION.to_string(),
                msg.to_string()
            ),
        ]
    );
    assert!(
        plan.jobs_to_create.is_empty(),
        "nothing is created in the restarting reconcile"
    );
    assert_eq!(s.terminal_state, "");
}

#[test]
fn restart_jobset_at_max_fails_the_jobset() {
    // Reference case 10: max 2, restarts 2/2 -> ReachedMaxRestarts, counters unchanged.
    let mut js = jobset(
        &[("rj", 1)],
        policy(2, vec![rule("r", FailurePolicyAction::RestartJobSet)]),
    );
    js.status.restarts = 2;
    js.status.restarts_count_towards_max = 2;
    let mut j = failed(job("rj", 0), "BackoffLimitExceeded", "", ago(1));
    j.restart_attempt = 2;
    let plan = decide(js, vec![j]);
    let s = new_status(&plan).cloned().unwrap_or_default();
    assert_eq!((s.restarts, s.restarts_count_towards_max), (2, 2));
    let c = condition(&s, CONDITION_FAILED).cloned().unwrap_or_default();
    assert_eq!(c.reason, REASON_REACHED_MAX_RESTARTS);
    assert_eq!(
        c.message,
        "jobset failed due to reaching max number of restarts (first failed job: js-rj-0)"
    );
    assert_eq!(s.terminal_state, "Failed");
    assert_eq!(events(&plan).len(), 1);
}

#[test]
fn restart_jobset_and_ignore_max_restarts_does_not_count() {
    // Reference case 11 (with a rule, so the reason names it).
    let mut js = jobset(
        &[("rj", 1)],
        policy(
            1,
            vec![rule(
                "ign",
                FailurePolicyAction::RestartJobSetAndIgnoreMaxRestarts,
            )],
        ),
    );
    js.status.restarts = 1;
    js.status.restarts_count_towards_max = 1;
    let mut j = failed(job("rj", 0), "PodFailurePolicy", "", ago(1));
    j.restart_attempt = 1;
    let plan = decide(js, vec![j]);
    let s = new_status(&plan).cloned().unwrap_or_default();
    assert_eq!((s.restarts, s.restarts_count_towards_max), (2, 1));
    assert_eq!(
        condition(&s, CONDITION_RESTARTING).map(|c| c.reason.as_str()),
        Some("FailurePolicy_ign")
    );
    assert_eq!(
        events(&plan)[1].1,
        REASON_RESTART_JOBSET_IGNORE_ACTION.to_string()
    );
}

#[test]
fn default_action_uses_default_failure_policy_reason() {
    let js = jobset(
        &[("rj", 2)],
        policy(
            3,
            vec![with_reasons(
                rule("r", FailurePolicyAction::FailJobSet),
                &["PodFailurePolicy"],
            )],
        ),
    );
    let plan = decide(
        js,
        vec![
            failed(job("rj", 0), "BackoffLimitExceeded", "", ago(1)),
            failed(job("rj", 1), "BackoffLimitExceeded", "", ago(2)),
        ],
    );
    let s = new_status(&plan).cloned().unwrap_or_default();
    assert_eq!((s.restarts, s.restarts_count_towards_max), (1, 1));
    let c = condition(&s, CONDITION_RESTARTING)
        .cloned()
        .unwrap_or_default();
    assert_eq!(c.reason, REASON_DEFAULT_FAILURE_POLICY);
    assert!(c.message.ends_with("(first failed job: js-rj-1)"));
    let d = plan.explanation.decision.clone();
    assert_eq!(d.map(|d| d.rule), Some(None));
}

#[test]
fn combined_budget_blocks_a_global_restart() {
    // Reference case 12: max 2, global counted 1, jobRestartsCountTowardsMax [1] -> fail.
    let mut js = jobset(
        &[("rj", 1)],
        policy(2, vec![rule("r", FailurePolicyAction::RestartJobSet)]),
    );
    js.status.restarts = 1;
    js.status.restarts_count_towards_max = 1;
    js.status.replicated_jobs_status = vec![ReplicatedJobStatus {
        name: "rj".into(),
        job_restarts: vec![1],
        job_restarts_count_towards_max: vec![1],
        ..ReplicatedJobStatus::default()
    }];
    let mut j = failed(job("rj", 0), "BackoffLimitExceeded", "", ago(1));
    j.restart_attempt = 1;
    j.job_restart_attempt = Some(1);
    let plan = decide(js, vec![j]);
    let s = new_status(&plan).cloned().unwrap_or_default();
    assert_eq!(
        condition(&s, CONDITION_FAILED).map(|c| c.reason.as_str()),
        Some(REASON_REACHED_MAX_RESTARTS)
    );
    assert_eq!(s.restarts, 1);
}

#[test]
fn restart_job_and_ignore_max_restarts_bumps_only_job_restarts() {
    // Reference case 13: max 1, jobRestarts [1], counted [0] -> [2], [0], no condition.
    let mut js = jobset(
        &[("rj", 1)],
        policy(
            1,
            vec![rule(
                "r",
                FailurePolicyAction::RestartJobAndIgnoreMaxRestarts,
            )],
        ),
    );
    js.status.replicated_jobs_status = vec![ReplicatedJobStatus {
        name: "rj".into(),
        job_restarts: vec![1],
        job_restarts_count_towards_max: vec![0],
        ..ReplicatedJobStatus::default()
    }];
    let mut j = failed(job("rj", 0), "", "", ago(1));
    j.job_restart_attempt = Some(1);
    let plan = decide(js, vec![j]);
    let s = new_status(&plan).cloned().unwrap_or_default();
    let rs = &s.replicated_jobs_status[0];
    assert_eq!(rs.job_restarts, [2]);
    assert_eq!(rs.job_restarts_count_towards_max, [0]);
    assert!(s.conditions.is_empty());
    assert_eq!(
        events(&plan),
        [(
            "Warning",
            REASON_RESTART_JOB_IGNORE_ACTION.to_string(),
            "applying RestartJobAndIgnoreMaxRestarts failure policy action (first failed job: js-rj-0)"
                .to_string()
        )]
    );
}

#[test]
fn restart_job_creates_arrays_lazily() {
    // Counted per-Job restarts create both arrays with `replicas` zeros; ignoring ones only one.
    let js = jobset(
        &[("rj", 3)],
        policy(5, vec![rule("r", FailurePolicyAction::RestartJob)]),
    );
    let plan = decide(js.clone(), vec![failed(job("rj", 2), "", "", ago(1))]);
    let s = new_status(&plan).cloned().unwrap_or_default();
    assert_eq!(s.replicated_jobs_status[0].job_restarts, [0, 0, 1]);
    assert_eq!(
        s.replicated_jobs_status[0].job_restarts_count_towards_max,
        [0, 0, 1]
    );
    assert_eq!((s.restarts, s.restarts_count_towards_max), (0, 0));

    let mut js2 = js;
    js2.spec.failure_policy = policy(
        5,
        vec![rule(
            "r",
            FailurePolicyAction::RestartJobAndIgnoreMaxRestarts,
        )],
    );
    let plan = decide(js2, vec![failed(job("rj", 1), "", "", ago(1))]);
    let s = new_status(&plan).cloned().unwrap_or_default();
    assert_eq!(s.replicated_jobs_status[0].job_restarts, [0, 1, 0]);
    assert!(
        s.replicated_jobs_status[0]
            .job_restarts_count_towards_max
            .is_empty()
    );
}

#[test]
fn restart_job_over_budget_fails() {
    let mut js = jobset(
        &[("rj", 2)],
        policy(1, vec![rule("r", FailurePolicyAction::RestartJob)]),
    );
    js.status.replicated_jobs_status = vec![ReplicatedJobStatus {
        name: "rj".into(),
        job_restarts: vec![1, 0],
        job_restarts_count_towards_max: vec![1, 0],
        ..ReplicatedJobStatus::default()
    }];
    let plan = decide(js, vec![failed(job("rj", 1), "", "", ago(1))]);
    let s = new_status(&plan).cloned().unwrap_or_default();
    assert_eq!(
        condition(&s, CONDITION_FAILED).map(|c| c.reason.as_str()),
        Some(REASON_REACHED_MAX_RESTARTS)
    );
    assert_eq!(s.replicated_jobs_status[0].job_restarts, [1, 0]);
}

#[test]
fn fail_jobset_action() {
    let mut js = jobset(
        &[("rj", 1)],
        policy(10, vec![rule("r", FailurePolicyAction::FailJobSet)]),
    );
    js.status.conditions.push(Condition {
        condition_type: CONDITION_RESTARTING.into(),
        status: "True".into(),
        last_transition_time: ago(2),
        reason: "FailurePolicy_x".into(),
        message: "m".into(),
        ..Condition::default()
    });
    let plan = decide(
        js,
        vec![failed(job("rj", 0), "PodFailurePolicy", "", ago(1))],
    );
    let s = new_status(&plan).cloned().unwrap_or_default();
    let msg = "applying FailJobSet failure policy action (first failed job: js-rj-0)";
    assert_eq!(
        events(&plan),
        [
            (
                "Warning",
                REASON_FAIL_JOBSET_ACTION.to_string(),
                msg.to_string()
            ),
            (
                "Normal",
                REASON_JOBSET_FAILED.to_string(),
                "jobset failed".to_string()
            ),
        ]
    );
    let r = condition(&s, CONDITION_RESTARTING)
        .cloned()
        .unwrap_or_default();
    assert_eq!(
        (r.status.as_str(), r.last_transition_time),
        ("False", Some(now()))
    );
    assert_eq!(s.terminal_state, "Failed");
}

#[test]
fn no_policy_fails_on_first_failed_job() {
    let js = jobset(&[("rj", 2)], None);
    let plan = decide(
        js,
        vec![
            failed(job("rj", 0), "BackoffLimitExceeded", "", ago(1)),
            failed(job("rj", 1), "BackoffLimitExceeded", "", ago(3)),
        ],
    );
    let s = new_status(&plan).cloned().unwrap_or_default();
    let c = condition(&s, CONDITION_FAILED).cloned().unwrap_or_default();
    assert_eq!(c.reason, REASON_FAILED_JOBS);
    assert_eq!(
        c.message,
        "jobset failed due to one or more job failures (first failed job: js-rj-1)"
    );
    // RestartingJobSet never existed, so no False condition is added.
    assert!(condition(&s, CONDITION_RESTARTING).is_none());
}

#[test]
fn empty_policy_fails_with_reached_max_restarts() {
    let js = jobset(&[("rj", 1)], policy(0, vec![]));
    let plan = decide(js, vec![failed(job("rj", 0), "", "", ago(1))]);
    let s = new_status(&plan).cloned().unwrap_or_default();
    assert_eq!(
        condition(&s, CONDITION_FAILED).map(|c| c.reason.as_str()),
        Some(REASON_REACHED_MAX_RESTARTS)
    );
}

// ---- conditions (updateCondition) ----

#[test]
fn update_condition_rules() {
    let t0 = ago(5);
    let mut conds = vec![Condition {
        condition_type: "RestartingJobSet".into(),
        status: "True".into(),
        last_transition_time: t0,
        reason: "A".into(),
        message: "m".into(),
        ..Condition::default()
    }];
    // Same everything: no change.
    assert!(!update_condition(
        &mut conds,
        "RestartingJobSet",
        "True",
        "A",
        "m",
        now()
    ));
    // Same status, new reason/message: replaced, time kept.
    assert!(update_condition(
        &mut conds,
        "RestartingJobSet",
        "True",
        "B",
        "n",
        now()
    ));
    assert_eq!(
        (conds[0].reason.as_str(), conds[0].last_transition_time),
        ("B", t0)
    );
    // New status: new time.
    assert!(update_condition(
        &mut conds,
        "RestartingJobSet",
        "False",
        "C",
        "o",
        now()
    ));
    assert_eq!(conds[0].last_transition_time, Some(now()));
    // Missing and False: not added. Missing and True: added.
    assert!(!update_condition(
        &mut conds,
        "Failed",
        "False",
        "x",
        "y",
        now()
    ));
    assert_eq!(conds.len(), 1);
    assert!(update_condition(
        &mut conds,
        "Failed",
        "True",
        "x",
        "y",
        now()
    ));
    assert_eq!(conds.len(), 2);
}

#[test]
fn condition_times_are_truncated_to_seconds() {
    let mut conds = Vec::new();
    let t = Time::from_unix_nanos(now().unix_nanos() + 123_456_789);
    assert!(update_condition(&mut conds, "Failed", "True", "r", "m", t));
    assert_eq!(conds[0].last_transition_time, Some(now()));
}

#[test]
fn all_ready_sets_restarting_false_jobs_ready() {
    let mut js = jobset(&[("rj", 2)], policy(1, vec![]));
    js.status.restarts = 1;
    js.status.conditions.push(Condition {
        condition_type: CONDITION_RESTARTING.into(),
        status: "True".into(),
        last_transition_time: ago(1),
        reason: "FailurePolicy_Rule1".into(),
        message: "m".into(),
        ..Condition::default()
    });
    let mut a = job("rj", 0);
    a.restart_attempt = 1;
    a.ready = true;
    let mut b = job("rj", 1);
    b.restart_attempt = 1;
    b.conditions.push(ChildJobCondition {
        condition_type: "Complete".into(),
        status: "True".into(),
        ..ChildJobCondition::default()
    });
    let plan = decide(js, vec![a, b]);
    let s = new_status(&plan).cloned().unwrap_or_default();
    let c = condition(&s, CONDITION_RESTARTING)
        .cloned()
        .unwrap_or_default();
    assert_eq!(
        (c.status.as_str(), c.reason.as_str()),
        ("False", REASON_JOBS_READY)
    );
    assert_eq!(s.replicated_jobs_status[0].ready, 1);
    assert_eq!(s.replicated_jobs_status[0].succeeded, 1);
    assert_eq!(
        events(&plan),
        [(
            "Normal",
            REASON_JOBS_READY.to_string(),
            "all jobs are ready".to_string()
        )]
    );
}

// ---- grouping, deletion, creation ----

#[test]
fn failure_target_only_is_active() {
    let mut j = job("rj", 0);
    j.conditions.push(ChildJobCondition {
        condition_type: "FailureTarget".into(),
        status: "True".into(),
        ..ChildJobCondition::default()
    });
    let plan = decide(jobset(&[("rj", 1)], None), vec![j]);
    assert_eq!(plan.explanation.active_jobs.items, ["js-rj-0"]);
    assert!(plan.explanation.decision.is_none());
}

#[test]
fn previous_attempts_are_deleted_and_block_their_names() {
    // After a restart to attempt 1: all attempt-0 Jobs (failed or not) are previous.
    let mut js = jobset(&[("rj", 2)], policy(3, vec![]));
    js.status.restarts = 1;
    js.status.restarts_count_towards_max = 1;
    let mut gone = failed(job("rj", 1), "", "", ago(1));
    gone.deletion_pending = true;
    let plan = decide(js, vec![job("rj", 0), gone]);
    assert_eq!(
        plan.actions.first(),
        Some(&JobSetAction::DeleteJobs(vec![JobRef {
            name: "js-rj-0".into(),
            uid: "uid-rj-0".into()
        }]))
    );
    assert!(plan.jobs_to_create.is_empty());
    assert!(
        plan.explanation.decision.is_none(),
        "previous failures are not acted on"
    );
}

#[test]
fn recreate_vs_blocking_recreate() {
    // Reference bonus case 16: 4 Jobs, 3 previous gone, 1 left.
    let mut js = jobset(&[("rj", 4)], policy(3, vec![]));
    js.status.restarts = 1;
    js.status.restarts_count_towards_max = 1;
    let mut left = job("rj", 3);
    left.deletion_pending = true;
    let plan = decide(js.clone(), vec![left.clone()]);
    let names: Vec<_> = plan
        .jobs_to_create
        .iter()
        .map(|j| j.name.as_str())
        .collect();
    assert_eq!(names, ["js-rj-0", "js-rj-1", "js-rj-2"]);
    let labels = &plan.jobs_to_create[0].labels;
    assert!(labels.contains(&(RESTART_ATTEMPT_KEY.to_string(), "1".to_string())));
    assert!(labels.contains(&(JOB_RESTART_ATTEMPT_KEY.to_string(), "0".to_string())));

    if let Some(p) = js.spec.failure_policy.as_mut() {
        p.restart_strategy = RestartStrategy::BlockingRecreate;
    }
    let plan = decide(js.clone(), vec![left]);
    assert!(plan.jobs_to_create.is_empty());
    let plan = decide(js, vec![]);
    assert_eq!(plan.jobs_to_create.len(), 4);
}

#[test]
fn job_restart_attempt_makes_a_single_job_previous() {
    let mut js = jobset(&[("rj", 2)], policy(3, vec![]));
    js.status.replicated_jobs_status = vec![ReplicatedJobStatus {
        name: "rj".into(),
        job_restarts: vec![0, 1],
        job_restarts_count_towards_max: vec![0, 1],
        ..ReplicatedJobStatus::default()
    }];
    let old = failed(job("rj", 1), "", "", ago(1));
    let plan = decide(js.clone(), vec![job("rj", 0), old]);
    assert_eq!(plan.explanation.previous_jobs.items, ["js-rj-1"]);
    assert!(matches!(plan.actions.first(), Some(JobSetAction::DeleteJobs(d)) if d.len() == 1));
    // Once gone, it is recreated with job-restart-attempt 1.
    let plan = decide(js, vec![job("rj", 0)]);
    assert_eq!(plan.jobs_to_create.len(), 1);
    assert!(
        plan.jobs_to_create[0]
            .labels
            .contains(&(JOB_RESTART_ATTEMPT_KEY.to_string(), "1".to_string()))
    );
}

#[test]
fn missing_job_restart_attempt_label_is_not_previous() {
    let mut js = jobset(&[("rj", 1)], policy(3, vec![]));
    js.status.replicated_jobs_status = vec![ReplicatedJobStatus {
        name: "rj".into(),
        job_restarts: vec![2],
        ..ReplicatedJobStatus::default()
    }];
    let mut j = job("rj", 0);
    j.job_restart_attempt = None;
    let plan = decide(js, vec![j]);
    assert_eq!(plan.explanation.active_jobs.items, ["js-rj-0"]);
}

#[test]
fn finished_jobset_deletes_active_jobs_only() {
    let mut js = jobset(&[("rj", 3)], None);
    js.status.conditions.push(Condition {
        condition_type: CONDITION_FAILED.into(),
        status: "True".into(),
        reason: REASON_FAILED_JOBS.into(),
        ..Condition::default()
    });
    js.status.terminal_state = "Failed".into();
    let f = failed(job("rj", 0), "", "", ago(1));
    let plan = decide(js, vec![f, job("rj", 1)]);
    assert_eq!(
        plan.actions.first(),
        Some(&JobSetAction::DeleteJobs(vec![JobRef {
            name: "js-rj-1".into(),
            uid: "uid-rj-1".into()
        }]))
    );
    assert!(plan.jobs_to_create.is_empty());
    assert!(events(&plan).is_empty());
}

#[test]
fn same_snapshot_same_plan() {
    let js = jobset(
        &[("a", 2), ("b", 1)],
        policy(2, vec![rule("r", FailurePolicyAction::RestartJob)]),
    );
    let jobs = vec![
        failed(job("a", 1), "BackoffLimitExceeded", "x", ago(2)),
        failed(job("b", 0), "BackoffLimitExceeded", "y", ago(1)),
    ];
    assert_eq!(decide(js.clone(), jobs.clone()), decide(js, jobs));
}

#[test]
fn action_names_parse_with_kep_alias() {
    assert_eq!(
        FailurePolicyAction::parse("RecreateJob"),
        Some(FailurePolicyAction::RestartJob)
    );
    for a in [
        FailurePolicyAction::FailJobSet,
        FailurePolicyAction::RestartJobSet,
        FailurePolicyAction::RestartJobSetAndIgnoreMaxRestarts,
        FailurePolicyAction::RestartJob,
        FailurePolicyAction::RestartJobAndIgnoreMaxRestarts,
    ] {
        assert_eq!(FailurePolicyAction::parse(a.as_str()), Some(a));
    }
    assert_eq!(FailurePolicyAction::parse("FailJob"), None);
}

// Bounded work and output: a plan changes at most MAX_JOB_CHANGES_PER_PLAN Jobs each way and
// says when more follow; an explanation keeps MAX_EXPLANATION_ENTRIES entries per list.

fn deleted_names(plan: &JobSetPlan) -> Vec<&str> {
    plan.actions
        .iter()
        .filter_map(|a| match a {
            JobSetAction::DeleteJobs(jobs) => Some(jobs.iter().map(|j| j.name.as_str())),
            _ => None,
        })
        .flatten()
        .collect()
}

#[test]
fn a_million_replicas_create_the_first_500_and_requeue() {
    let plan = decide(jobset(&[("rj", 1_000_000)], None), vec![]);
    assert_eq!(plan.jobs_to_create.len(), MAX_JOB_CHANGES_PER_PLAN);
    assert!(plan.requeue);
    let indexes: Vec<i32> = plan.jobs_to_create.iter().map(|j| j.job_index).collect();
    assert_eq!(
        indexes,
        (0..500).collect::<Vec<_>>(),
        "the first missing, in order"
    );
    assert!(
        plan.explanation.summary.contains("decide again"),
        "{}",
        plan.explanation.summary
    );
}

#[test]
fn exactly_the_cap_missing_needs_no_requeue_one_more_does() {
    // 200 of 700 exist: 500 missing fit one plan.
    let existing: Vec<ChildJob> = (0..200).map(|i| job("rj", i)).collect();
    let plan = decide(jobset(&[("rj", 700)], None), existing.clone());
    assert_eq!(plan.jobs_to_create.len(), 500);
    assert!(!plan.requeue);
    assert_eq!(plan.jobs_to_create.first().map(|j| j.job_index), Some(200));
    assert!(!plan.explanation.summary.contains("decide again"));
    // 501 missing, across two replicatedJobs in spec order: the cap cuts inside the second.
    let plan = decide(jobset(&[("rj", 700), ("b", 1)], None), existing);
    assert_eq!(plan.jobs_to_create.len(), 500);
    assert!(plan.requeue);
    assert!(plan.jobs_to_create.iter().all(|j| j.replicated_job == "rj"));
}

#[test]
fn previous_attempt_deletions_stop_at_the_cap() {
    let mut js = jobset(&[("rj", 1200)], policy(3, vec![]));
    js.status.restarts = 1;
    js.status.restarts_count_towards_max = 1;
    let jobs: Vec<ChildJob> = (0..1200).map(|i| job("rj", i)).collect();
    let plan = decide(js, jobs);
    let deleted = deleted_names(&plan);
    assert_eq!(deleted.len(), MAX_JOB_CHANGES_PER_PLAN);
    assert_eq!(deleted.first(), Some(&"js-rj-0"));
    assert!(plan.requeue);
    // Their names stay taken, so nothing is created while they exist.
    assert!(plan.jobs_to_create.is_empty());
    let e = &plan.explanation;
    assert_eq!(e.previous_jobs.len(), MAX_EXPLANATION_ENTRIES);
    assert_eq!(e.previous_jobs.omitted, 1200 - MAX_EXPLANATION_ENTRIES);
}

#[test]
fn a_finished_jobset_deletes_at_most_the_cap_of_active_jobs() {
    let mut js = jobset(&[("rj", 600)], None);
    js.status.conditions.push(Condition {
        condition_type: CONDITION_FAILED.into(),
        status: "True".into(),
        ..Condition::default()
    });
    let plan = decide(js, (0..600).map(|i| job("rj", i)).collect());
    assert_eq!(deleted_names(&plan).len(), MAX_JOB_CHANGES_PER_PLAN);
    assert!(plan.requeue);
    let plan = decide(
        {
            let mut js = jobset(&[("rj", 2)], None);
            js.status.conditions.push(Condition {
                condition_type: CONDITION_FAILED.into(),
                status: "True".into(),
                ..Condition::default()
            });
            js
        },
        vec![job("rj", 0)],
    );
    assert_eq!(deleted_names(&plan), ["js-rj-0"]);
    assert!(!plan.requeue);
}

#[test]
fn evaluations_keep_the_first_hundred_and_count_the_rest() {
    // 300 rules, none matching, against 10 failed Jobs: 3000 evaluations, 100 kept.
    let rules: Vec<FailurePolicyRule> = (0..300)
        .map(|i| {
            with_reasons(
                rule(&format!("r{i}"), FailurePolicyAction::FailJobSet),
                &["X"],
            )
        })
        .collect();
    let jobs: Vec<ChildJob> = (0..10)
        .map(|i| failed(job("rj", i), "BackoffLimitExceeded", "", ago(1)))
        .collect();
    let plan = decide(jobset(&[("rj", 10)], policy(0, rules)), jobs);
    let e = &plan.explanation;
    assert_eq!(e.evaluations.len(), MAX_EXPLANATION_ENTRIES);
    assert_eq!(e.evaluations.omitted, 3000 - MAX_EXPLANATION_ENTRIES);
    assert_eq!(e.failed_jobs.len(), 10);
    assert_eq!(e.failed_jobs.omitted, 0);
    // The default action still ran on the earliest failure, as without the cap.
    assert!(e.decision.is_some());
}

#[test]
fn explanation_text_from_the_request_is_cut() {
    let reason = "R".repeat(100_000);
    let rules = vec![with_reasons(
        rule("r0", FailurePolicyAction::FailJobSet),
        &["Other"],
    )];
    let plan = decide(
        jobset(&[("rj", 1)], policy(0, rules)),
        vec![failed(job("rj", 0), &reason, "", ago(1))],
    );
    let ev = plan.explanation.evaluations.first().cloned();
    let Some(RuleVerdict::ReasonNotListed(r)) = ev.map(|e| e.verdict) else {
        panic!("expected a reason mismatch");
    };
    assert!(r.len() <= MAX_EXPLANATION_TEXT_BYTES, "{} bytes", r.len());
    assert!(r.contains("[truncated from 100000 bytes]"));
    assert!(plan.explanation.summary.len() <= MAX_EXPLANATION_SUMMARY_BYTES);
}

// ---- cancellation (issue 22, item 1) ----

/// 1,000 failed Jobs under two rules of patterns none matches: every rule searches every
/// message, which is where a large JobSet decision spends its time.
fn many_failed_jobs() -> JobSetSnapshot {
    let rules = vec![
        with_patterns(
            rule("first", FailurePolicyAction::FailJobSet),
            &["needle 0"],
        ),
        with_patterns(
            rule("second", FailurePolicyAction::FailJobSet),
            &["needle 1"],
        ),
    ];
    JobSetSnapshot {
        job_set: jobset(&[("rj", 1_000)], policy(3, rules)),
        jobs: (0..1_000)
            .map(|i| failed(job("rj", i), "BackoffLimitExceeded", "haystack", ago(1)))
            .collect(),
        now: now(),
    }
}

#[test]
fn a_jobset_decision_asks_between_jobs_and_rule_evaluations_and_stops_when_told() {
    let snap = many_failed_jobs();
    let never = AfterAsks::new(usize::MAX);
    assert_eq!(decide_jobset_until(&snap, &never), Ok(decide_jobset(&snap)));
    // Grouping, tallying and both rules' evaluations each ask once per Job.
    assert!(
        never.asked() >= 4 * 1_000,
        "asked {} times for 1,000 failed Jobs under two rules",
        never.asked()
    );
    // Told to stop during the second rule's matching: no plan, no further questions,
    // and no message searched after the answer.
    let stop_at = 3 * 1_000 + 500;
    let half = AfterAsks::new(stop_at);
    let scanned = crate::message_pattern::bytes_scanned();
    assert_eq!(
        decide_jobset_until(&snap, &half),
        Err(crate::cancel::Cancelled)
    );
    assert_eq!(half.asked(), stop_at + 1);
    let per_message = u64::try_from("haystack".len()).unwrap_or(0);
    assert_eq!(
        crate::message_pattern::bytes_scanned() - scanned,
        (1_000 + 500) * per_message,
        "the first rule's 1,000 messages and 500 of the second's"
    );
    // Already stopped: nothing is grouped.
    let stopped = AfterAsks::new(0);
    assert_eq!(
        decide_jobset_until(&snap, &stopped),
        Err(crate::cancel::Cancelled)
    );
    assert_eq!(stopped.asked(), 1);
}

#[test]
fn a_jobset_creation_walk_asks_between_indexes() {
    // Nothing failed: the decision walks the replicas to find Jobs to create.
    let snap = JobSetSnapshot {
        job_set: jobset(&[("rj", 100)], None),
        jobs: Vec::new(),
        now: now(),
    };
    let never = AfterAsks::new(usize::MAX);
    let plan = decide_jobset_until(&snap, &never);
    assert_eq!(plan.as_ref().map(|p| p.jobs_to_create.len()), Ok(100));
    assert!(never.asked() >= 100, "asked {}", never.asked());
    let asked = never.asked();
    assert_eq!(
        decide_jobset_until(&snap, &AfterAsks::new(asked - 1)),
        Err(crate::cancel::Cancelled)
    );
}
