//! Table tests of explanations: each pod failure policy action, per-index
//! limits, maxFailedIndexes, success policy, excess and duplicate pods,
//! suspend, backoff, deadline, managedBy and finished Jobs; and the bound on
//! an explanation's size.

use super::*;
use crate::fixtures::*;
use crate::model::*;
use crate::sync::{decide, decide_explained};
use crate::text::MAX_EXPLANATION_ENTRIES;

/// Decides both ways: the explanation never changes the plan.
fn explained(snapshot: &Snapshot) -> (Plan, JobExplanation) {
    let (plan, explanation) = decide_explained(snapshot);
    assert_eq!(plan, decide(snapshot), "explaining changed the plan");
    (plan, explanation)
}

fn group<'a>(e: &'a JobExplanation, pod: &str) -> &'a PodGroup {
    e.pods
        .iter()
        .find(|g| g.pods.iter().any(|p| p == pod))
        .unwrap_or_else(|| panic!("no group names {pod}: {:#?}", e.pods))
}

fn reasons(e: &JobExplanation) -> Vec<(&'static str, usize)> {
    e.action_reasons
        .iter()
        .map(|r| (r.reason, r.pods))
        .collect()
}

fn condition_rule(action: PodFailurePolicyAction, condition: &str) -> PodFailurePolicyRule {
    PodFailurePolicyRule {
        action,
        on_exit_codes: None,
        on_pod_conditions: vec![OnPodConditionsPattern {
            condition_type: condition.into(),
            status: ConditionStatus::True,
        }],
    }
}

/// KEP-3329's example: FailJob on exit code 42, Ignore on DisruptionTarget, Count on 1.
fn policy_job() -> Job {
    let mut job = job();
    job.spec.parallelism = 3;
    job.spec.completions = Some(3);
    job.status.start_time = Some(t(0));
    job.spec.pod_failure_policy = Some(PodFailurePolicy {
        rules: vec![
            exit_rule(PodFailurePolicyAction::FailJob, vec![42]),
            condition_rule(PodFailurePolicyAction::Ignore, "DisruptionTarget"),
            exit_rule(PodFailurePolicyAction::Count, vec![1]),
        ],
    });
    job
}

#[test]
fn fail_job_rule_names_the_rule_the_exit_code_and_the_coming_failed_condition() {
    let pods = vec![
        pod("fails").phase(PodPhase::Failed).exit("main", 42, t(5)),
        pod("runs"),
    ];
    let (plan, e) = explained(&snapshot(policy_job(), pods, t(10)));
    let g = group(&e, "fails");
    assert_eq!(g.verdict, Verdict::FailsJob);
    assert_eq!(g.rule, Some((0, PodFailurePolicyAction::FailJob)));
    assert_eq!(g.matched, "exit code 42 of container \"main\" (In [42])");
    assert!(g.detail.contains("fails the Job"), "{}", g.detail);
    assert_eq!(group(&e, "runs").verdict, Verdict::Running);
    // The running pod is deleted because the Job is finishing.
    assert!(
        reasons(&e).contains(&("JobFinishing", 1)),
        "{:?}",
        reasons(&e)
    );
    let c = e.coming_condition.as_ref().expect("a coming condition");
    assert_eq!(c.interim, Some(JobConditionType::FailureTarget));
    assert_eq!(c.terminal, JobConditionType::Failed);
    assert_eq!(c.reason, "PodFailurePolicy");
    assert!(!c.terminal_now);
    assert!(c.waits_for.contains("1 terminating pod"), "{}", c.waits_for);
    assert!(e.summary.contains("FailureTarget"), "{}", e.summary);
    assert!(e.summary.contains("Failed once"), "{}", e.summary);
    // Every action has a reason, in plan order.
    let explained_actions: Vec<usize> = e.action_reasons.iter().map(|r| r.action).collect();
    let mut unique = explained_actions.clone();
    unique.dedup();
    assert_eq!(unique, (0..plan.actions.len()).collect::<Vec<_>>());
}

/// A rule listing one condition type with two statuses matched the pod's True
/// condition; the explanation used to print the status of the first pattern of
/// that type (False), now the status of the condition that matched.
#[test]
fn a_condition_is_explained_with_the_status_that_matched() {
    let mut job = policy_job();
    job.spec.pod_failure_policy = Some(PodFailurePolicy {
        rules: vec![PodFailurePolicyRule {
            action: PodFailurePolicyAction::Ignore,
            on_exit_codes: None,
            on_pod_conditions: [ConditionStatus::False, ConditionStatus::True]
                .into_iter()
                .map(|status| OnPodConditionsPattern {
                    condition_type: "DisruptionTarget".into(),
                    status,
                })
                .collect(),
        }],
    });
    let pods = vec![
        pod("drained")
            .phase(PodPhase::Failed)
            .condition("DisruptionTarget", t(5)),
    ];
    let (_, e) = explained(&snapshot(job, pods, t(10)));
    let drained = group(&e, "drained");
    assert_eq!(drained.rule, Some((0, PodFailurePolicyAction::Ignore)));
    assert_eq!(drained.matched, "condition DisruptionTarget=True");
}

#[test]
fn ignore_count_and_unmatched_failures_each_get_their_verdict() {
    let pods = vec![
        pod("drained")
            .phase(PodPhase::Failed)
            .exit("main", 137, t(5))
            .condition("DisruptionTarget", t(5)),
        pod("counted").phase(PodPhase::Failed).exit("main", 1, t(5)),
        pod("unmatched")
            .phase(PodPhase::Failed)
            .exit("main", 9, t(5)),
    ];
    let (_, e) = explained(&snapshot(policy_job(), pods, t(10)));
    let drained = group(&e, "drained");
    assert_eq!(drained.verdict, Verdict::FailedIgnored);
    assert_eq!(drained.rule, Some((1, PodFailurePolicyAction::Ignore)));
    assert_eq!(drained.matched, "condition DisruptionTarget=True");
    let counted = group(&e, "counted");
    assert_eq!(counted.verdict, Verdict::FailedCounted);
    assert_eq!(counted.rule, Some((2, PodFailurePolicyAction::Count)));
    let unmatched = group(&e, "unmatched");
    assert_eq!(unmatched.verdict, Verdict::FailedCounted);
    assert_eq!(unmatched.rule, None);
    assert!(
        unmatched
            .detail
            .contains("no pod failure policy rule matched"),
        "{}",
        unmatched.detail
    );
    assert!(
        unmatched.detail.contains("newly finished"),
        "{}",
        unmatched.detail
    );
}

/// KEP-3850 with a FailIndex rule and an index past its backoffLimitPerIndex.
fn per_index_job() -> Job {
    let mut job = indexed_job(4, 4);
    job.spec.backoff_limit = i32::MAX;
    job.spec.backoff_limit_per_index = Some(1);
    job.status.start_time = Some(t(0));
    job.status.failed_indexes = Some(String::new());
    job.spec.pod_failure_policy = Some(PodFailurePolicy {
        rules: vec![exit_rule(PodFailurePolicyAction::FailIndex, vec![3])],
    });
    job
}

#[test]
fn fail_index_and_backoff_limit_per_index_fail_their_index() {
    let pods = vec![
        pod("i0")
            .index(0)
            .phase(PodPhase::Failed)
            .exit("main", 3, t(5)),
        pod("i1")
            .index(1)
            .phase(PodPhase::Failed)
            .failure_counts(1, 0)
            .exit("main", 1, t(5)),
        pod("i2").index(2),
        pod("i3").index(3).phase(PodPhase::Succeeded),
    ];
    let (_, e) = explained(&snapshot(per_index_job(), pods, t(10)));
    let i0 = group(&e, "i0");
    assert_eq!(i0.verdict, Verdict::FailsIndex);
    assert_eq!(i0.rule, Some((0, PodFailurePolicyAction::FailIndex)));
    let i1 = group(&e, "i1");
    assert_eq!(i1.verdict, Verdict::FailsIndex);
    assert_eq!(i1.rule, None);
    assert!(
        i1.detail
            .contains("already failed backoffLimitPerIndex (1) time(s)"),
        "{}",
        i1.detail
    );
    assert_eq!(
        i1.indexes.as_ref().map(|i| i.text.as_str()),
        Some("1"),
        "{i1:?}"
    );
    let failed = e.failed_indexes.as_ref().expect("failed indexes");
    assert_eq!((failed.text.as_str(), failed.count), ("0,1", 2));
    let completed = e.completed_indexes.as_ref().expect("completed indexes");
    assert_eq!((completed.text.as_str(), completed.count), ("3", 1));
}

#[test]
fn per_index_backoff_says_which_index_waits_and_until_when() {
    let mut job = per_index_job();
    job.spec.backoff_limit_per_index = Some(3);
    let pods = vec![
        pod("i0")
            .index(0)
            .phase(PodPhase::Failed)
            .failure_counts(1, 0)
            .exit("main", 1, t(5)),
        pod("i1").index(1),
        pod("i2").index(2),
        pod("i3").index(3),
    ];
    let (plan, e) = explained(&snapshot(job, pods, t(10)));
    assert!(plan.requeue_after.is_some());
    let b = e.backoff.expect("a backoff wait");
    // Two failures of index 0 (one before, this one): 20 s after t(5).
    assert_eq!(b.index, Some(0));
    assert_eq!(b.failures, 2);
    assert_eq!(b.delay, Duration::from_secs(20));
    assert_eq!(b.until, t(25));
    let kept = &group(&e, "i0").detail;
    assert!(kept.contains("keeps its finalizer"), "{kept}");
    assert!(e.requeue_reason.contains("index 0"), "{}", e.requeue_reason);
}

#[test]
fn max_failed_indexes_exceeded_is_the_coming_condition() {
    let mut job = per_index_job();
    job.spec.pod_failure_policy = None;
    job.spec.backoff_limit_per_index = Some(0);
    job.spec.max_failed_indexes = Some(0);
    let pods = vec![
        pod("i0")
            .index(0)
            .phase(PodPhase::Failed)
            .exit("main", 1, t(5)),
        pod("i1").index(1),
    ];
    let (_, e) = explained(&snapshot(job, pods, t(10)));
    assert_eq!(group(&e, "i0").verdict, Verdict::FailsIndex);
    let c = e.coming_condition.clone().expect("coming condition");
    assert_eq!(c.reason, "MaxFailedIndexesExceeded");
    assert_eq!(c.terminal, JobConditionType::Failed);
}

#[test]
fn success_policy_met_leads_to_complete_and_deletes_the_rest() {
    let mut job = indexed_job(3, 3);
    job.status.start_time = Some(t(0));
    job.spec.success_policy = Some(SuccessPolicy {
        rules: vec![SuccessPolicyRule {
            succeeded_indexes: Some("0".into()),
            succeeded_count: None,
        }],
    });
    let pods = vec![
        pod("leader").index(0).phase(PodPhase::Succeeded),
        pod("w1").index(1),
        pod("w2").index(2),
    ];
    let (_, e) = explained(&snapshot(job, pods, t(10)));
    assert_eq!(group(&e, "leader").verdict, Verdict::Succeeded);
    let c = e.coming_condition.clone().expect("coming condition");
    assert_eq!(c.interim, Some(JobConditionType::SuccessCriteriaMet));
    assert_eq!(c.terminal, JobConditionType::Complete);
    assert_eq!(c.reason, "SuccessPolicy");
    assert!(
        reasons(&e).contains(&("JobFinishing", 2)),
        "{:?}",
        reasons(&e)
    );
}

#[test]
fn excess_pods_are_deleted_with_the_numbers_behind_it() {
    let mut job = job();
    job.status.start_time = Some(t(0));
    let pods = vec![pod("a"), pod("b"), pod("c")];
    let (_, e) = explained(&snapshot(job, pods, t(10)));
    let r = e
        .action_reasons
        .iter()
        .find(|r| r.reason == "ExcessPods")
        .expect("excess reason");
    assert_eq!(r.pods, 2);
    assert!(
        r.message.contains("wants 1 active pod(s) and has 3"),
        "{}",
        r.message
    );
}

#[test]
fn duplicate_indexes_are_told_apart_from_excess() {
    let mut job = indexed_job(2, 2);
    job.status.start_time = Some(t(0));
    let pods = vec![pod("a").index(0), pod("b").index(0), pod("c").index(1)];
    let (_, e) = explained(&snapshot(job, pods, t(10)));
    assert_eq!(reasons(&e)[0], ("DuplicateIndex", 1), "{:?}", reasons(&e));
    assert!(!reasons(&e).iter().any(|(r, _)| *r == "ExcessPods"));
}

#[test]
fn creations_say_what_is_missing() {
    let (_, e) = explained(&snapshot(job(), vec![], t(10)));
    let r = &e.action_reasons[0];
    assert_eq!(r.reason, "MissingPods");
    assert!(r.message.contains("wants 1 active pod(s)"), "{}", r.message);
    let (_, e) = explained(&snapshot(indexed_job(5, 2), vec![], t(10)));
    let r = &e.action_reasons[0];
    assert_eq!(r.reason, "PendingIndexes");
    assert!(
        r.message.starts_with("indexes 0,1 each have no active pod"),
        "{}",
        r.message
    );
}

#[test]
fn suspended_jobs_delete_their_pods_uncounted() {
    let mut job = job();
    job.spec.suspend = true;
    job.status.start_time = Some(t(0));
    let (_, e) = explained(&snapshot(job, vec![pod("a")], t(10)));
    assert!(
        reasons(&e).contains(&("JobSuspended", 1)),
        "{:?}",
        reasons(&e)
    );
    assert!(
        e.summary.starts_with("The Job is suspended"),
        "{}",
        e.summary
    );
}

#[test]
fn job_backoff_says_until_when_and_after_which_failure() {
    let mut job = job();
    job.status.start_time = Some(t(0));
    let mut s = snapshot(job, vec![], t(105));
    s.state.backoff = BackoffRecord {
        failures_after_last_success: 2,
        last_failure_time: Some(t(100)),
    };
    let (plan, e) = explained(&s);
    assert_eq!(plan.requeue_after, Some(Duration::from_secs(15)));
    let b = e.backoff.expect("backoff");
    assert_eq!(
        (b.until, b.delay, b.failures, b.index),
        (t(120), Duration::from_secs(20), 2, None)
    );
    assert_eq!(
        e.requeue_reason,
        "the pod-failure backoff ends then: 20s after the 2nd failure"
    );
}

#[test]
fn an_active_deadline_ahead_is_the_coming_condition() {
    let mut job = job();
    job.status.start_time = Some(t(0));
    job.spec.active_deadline_seconds = Some(100);
    let (_, e) = explained(&snapshot(job, vec![pod("a")], t(10)));
    let c = e.coming_condition.expect("deadline");
    assert_eq!(
        (c.reason.as_str(), c.at),
        ("DeadlineExceeded", Some(t(100)))
    );
    assert_eq!(e.requeue_reason, "the active deadline passes then");
}

#[test]
fn managed_by_another_controller_names_the_field_to_send() {
    let mut job = job();
    job.spec.managed_by = Some("example.com/other".into());
    let (plan, e) = explained(&snapshot(job, vec![pod("a")], t(1)));
    assert!(plan.actions.is_empty());
    let n = e.not_managed.expect("not managed");
    assert_eq!(n.managed_by, "example.com/other");
    assert_eq!(n.controller_name, crate::model::BUILT_IN_CONTROLLER);
    assert!(n.message.contains("controller_name"), "{}", n.message);
    assert!(e.summary.contains("example.com/other"), "{}", e.summary);
}

#[test]
fn finished_jobs_say_only_finalizers_are_left() {
    let mut job = job();
    job.status.conditions.push(crate::conditions::new_condition(
        JobConditionType::Complete,
        ConditionStatus::True,
        "CompletionsReached",
        "done",
        t(1),
    ));
    let pods = vec![pod("a").phase(PodPhase::Succeeded)];
    let (_, e) = explained(&snapshot(job, pods, t(5)));
    assert!(e.summary.contains("has finished Complete"), "{}", e.summary);
    assert_eq!(reasons(&e), vec![("JobFinished", 1)]);
}

#[test]
fn orphans_released_and_foreign_pods_are_told_apart() {
    let mut job = job();
    job.status.start_time = Some(t(0));
    let mut orphan = pod("orphan");
    orphan.controller = None;
    orphan.owners_name_job = false;
    let mut released = pod("released");
    released.labels = Default::default();
    let mut foreign = pod("foreign");
    foreign.controller = Some(std::sync::Arc::new(OwnerRef {
        uid: "other".into(),
        ..job_owner()
    }));
    let (_, e) = explained(&snapshot(job, vec![orphan, released, foreign], t(5)));
    assert!(group(&e, "orphan").adopted);
    assert_eq!(group(&e, "released").verdict, Verdict::Released);
    assert_eq!(group(&e, "foreign").verdict, Verdict::NotClaimed);
    assert!(
        reasons(&e).contains(&("OrphansMatch", 1)),
        "{:?}",
        reasons(&e)
    );
    assert!(
        reasons(&e).contains(&("SelectorMismatch", 1)),
        "{:?}",
        reasons(&e)
    );
}

#[test]
fn an_explanation_of_a_huge_job_stays_bounded() {
    let mut job = indexed_job(100_000, 100_000);
    job.status.start_time = Some(t(0));
    job.spec.pod_failure_policy = Some(PodFailurePolicy {
        rules: vec![PodFailurePolicyRule {
            action: PodFailurePolicyAction::Count,
            on_exit_codes: Some(OnExitCodes {
                container_name: None,
                operator: ExitCodeOperator::NotIn,
                values: vec![0],
            }),
            on_pod_conditions: vec![],
        }],
    });
    // Every other index running, the rest failed with 300 distinct exit codes.
    let pods: Vec<Pod> = (0..100_000)
        .map(|i| {
            let p = pod(&format!("p{i}")).index(i);
            if i % 2 == 0 {
                p
            } else {
                p.phase(PodPhase::Failed).exit("main", 1 + i % 300, t(5))
            }
        })
        .collect();
    let (_, e) = explained(&snapshot(job, pods, t(10)));
    assert_eq!(e.pods.len(), MAX_EXPLANATION_ENTRIES);
    assert!(e.pods.omitted > 0);
    let running = group(&e, "p0");
    assert_eq!(running.count, 50_000);
    assert_eq!(running.pods.len(), MAX_PODS_PER_GROUP);
    assert_eq!(running.pods.omitted, 50_000 - MAX_PODS_PER_GROUP);
    let indexes = running.indexes.as_ref().expect("indexes");
    assert_eq!(indexes.count, 50_000);
    assert_eq!(indexes.intervals_omitted, 50_000 - MAX_INDEX_INTERVALS);
    // Rendered, the whole explanation is a few tens of KiB for 100,000 pods.
    let size = format!("{e:?}").len();
    assert!(size < 200_000, "{size} bytes");
}

#[test]
fn reaching_completions_is_the_coming_complete_condition() {
    let mut job = job();
    job.status.start_time = Some(t(0));
    let pods = vec![pod("done").phase(PodPhase::Succeeded)];
    let (_, e) = explained(&snapshot(job, pods, t(10)));
    let c = e.coming_condition.as_ref().expect("coming condition");
    assert_eq!(c.terminal, JobConditionType::Complete);
    assert_eq!(c.reason, "CompletionsReached");
    assert!(c.terminal_now, "{c:?}");
    assert_eq!(
        e.summary,
        "The Job is Complete now (reason CompletionsReached)."
    );
    assert!(
        reasons(&e).contains(&("JobFinished", 0)),
        "{:?}",
        reasons(&e)
    );
}

// The extended failure policy document: the pod verdict names the document's
// rule and what it matched, and a used-up retry limit.

use crate::extended::rules::test_docs::*;
use crate::model::ExtendedAction;

/// A started NonIndexed Job (parallelism 3, completions 3) carrying `rules`.
fn document_job(rules: Vec<crate::model::ExtendedRule>) -> Job {
    let mut job = with_document(job(), document(rules));
    job.spec.parallelism = 3;
    job.spec.completions = Some(3);
    job.status.start_time = Some(t(0));
    job
}

#[test]
fn a_document_rule_verdict_names_the_rule_and_every_matcher() {
    let job = document_job(vec![
        rule(ExtendedAction::Count).exit_in(&[(1, 1)]),
        rule(ExtendedAction::FailJob)
            .named("oom")
            .exit_in(&[(42, 42), (128, 255)])
            .container_reasons(Some("main"), &["OOMKilled"]),
    ]);
    let pods = vec![
        pod("oom")
            .phase(PodPhase::Failed)
            .exit("main", 137, t(5))
            .termination("main", false, "OOMKilled", ""),
        pod("counted").phase(PodPhase::Failed).exit("main", 1, t(4)),
        pod("unmatched")
            .phase(PodPhase::Failed)
            .exit("main", 2, t(3)),
    ];
    let (_, e) = explained(&snapshot(job, pods, t(10)));
    let g = group(&e, "oom");
    assert_eq!(g.verdict, Verdict::FailsJob);
    assert_eq!(g.rule, None, "rule indexes are spec.podFailurePolicy's");
    assert_eq!(g.extended_rule.as_deref(), Some("oom"));
    assert_eq!(
        g.matched,
        "exit code 137 of container \"main\" (In 42, 128-255) and termination reason \"OOMKilled\" of container \"main\""
    );
    assert!(
        g.detail
            .starts_with("failure policy document rule \"oom\" (FailJob) matched exit code 137"),
        "{}",
        g.detail
    );
    assert!(g.detail.contains("fails the Job"), "{}", g.detail);
    let g = group(&e, "counted");
    assert_eq!(g.verdict, Verdict::FailedCounted);
    assert_eq!(g.extended_rule.as_deref(), Some("rules[0]"));
    assert!(
        g.detail.starts_with(
            "rule at index 0 of the failure policy document (Count) matched exit code 1"
        ),
        "{}",
        g.detail
    );
    let g = group(&e, "unmatched");
    assert_eq!(g.extended_rule, None);
    assert!(
        g.detail
            .contains("no rule of the failure policy document or spec.podFailurePolicy matched"),
        "{}",
        g.detail
    );
    let c = e.coming_condition.as_ref().expect("a coming condition");
    assert_eq!(c.reason, "PodFailurePolicy_oom");
    assert!(
        c.message.contains("matching FailJob rule \"oom\""),
        "{}",
        c.message
    );
}

#[test]
fn a_used_up_retry_limit_is_explained() {
    let job = document_job(vec![
        rule(ExtendedAction::Count)
            .named("oom")
            .exit_in(&[(137, 137)])
            .max_retries(2, ExtendedAction::FailJob),
    ]);
    let failed = |name: &str, at: i64| pod(name).phase(PodPhase::Failed).exit("main", 137, t(at));
    let pods = vec![failed("first", 1), failed("second", 2), failed("third", 3)];
    let (_, e) = explained(&snapshot(job, pods, t(10)));
    let g = group(&e, "first");
    assert_eq!(g.verdict, Verdict::FailedCounted);
    assert!(
        g.detail.contains("match 1 of maxRetries 2 in the Job"),
        "{}",
        g.detail
    );
    assert!(
        group(&e, "second")
            .detail
            .contains("match 2 of maxRetries 2")
    );
    let g = group(&e, "third");
    assert_eq!(g.verdict, Verdict::FailsJob);
    assert_eq!(g.extended_rule.as_deref(), Some("oom"));
    assert!(
        g.detail.contains(
            "for the 3rd time in the Job: its maxRetries (2) are used up, so whenRetriesExhausted (FailJob) applies"
        ),
        "{}",
        g.detail
    );
    let c = e.coming_condition.as_ref().expect("a coming condition");
    assert_eq!(c.reason, "PodFailurePolicy_oom");
    assert!(
        c.message.contains("its 2 retries are used up"),
        "{}",
        c.message
    );
}

#[test]
fn a_pod_failed_for_its_pending_timeout_is_explained() {
    let mut job = document_job(vec![]);
    let mut doc = (**job.extended_failure_policy.as_ref().expect("a document")).clone();
    doc.pending_timeout = Some(crate::model::PendingTimeout {
        seconds: 300,
        reasons: vec!["ImagePullBackOff".into()],
        action: ExtendedAction::Ignore,
    });
    job.extended_failure_policy = Some(std::sync::Arc::new(doc));
    let pods = vec![pod("stuck").phase(PodPhase::Failed).pending_timed_out()];
    let (_, e) = explained(&snapshot(job, pods, t(400)));
    let g = group(&e, "stuck");
    assert_eq!(g.verdict, Verdict::FailedIgnored);
    assert_eq!(g.extended_rule.as_deref(), Some("PendingTimeout"));
    assert!(
        g.matched
            .starts_with("condition job-decider.dev/PendingTimeout=True"),
        "{}",
        g.matched
    );
    assert!(
        g.detail.starts_with(
            "the failure policy document's pendingTimeout (rule \"PendingTimeout\") (Ignore) matched"
        ),
        "{}",
        g.detail
    );
}

#[test]
fn document_rule_explanations_stay_bounded() {
    let huge = "R".repeat(100_000);
    let job = document_job(vec![
        rule(ExtendedAction::Count)
            .named(&"n".repeat(63))
            .pod_reasons(&[&huge])
            .container_reasons(None, &[&huge])
            .message(&"x?".repeat(100)),
    ]);
    let pods: Vec<Pod> = (0..300)
        .map(|i| {
            pod(&format!("p{i}-{}", "q".repeat(200)))
                .phase(PodPhase::Failed)
                .pod_reason(&huge)
                .pod_message(&huge)
                .termination(&"c".repeat(1000), false, &huge, &huge)
        })
        .collect();
    let (_, e) = explained(&snapshot(job, pods, t(10)));
    assert!(e.pods.len() <= MAX_EXPLANATION_ENTRIES);
    for g in e.pods.iter() {
        assert!(g.matched.len() <= MAX_TEXT_BYTES, "{}", g.matched.len());
        assert!(g.detail.len() <= MAX_MESSAGE_BYTES, "{}", g.detail.len());
        assert!(g.pods.len() <= MAX_PODS_PER_GROUP);
    }
    let g = group(&e, &format!("p0-{}", "q".repeat(200)));
    assert_eq!(g.count, 300, "one group: the same rule and the same match");
}
