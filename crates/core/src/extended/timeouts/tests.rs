use std::sync::Arc;
use std::time::Duration;

use super::*;
use crate::extended::rules::{DocumentRule, match_document};
use crate::fixtures::{PodExt, indexed_job, job, pod, snapshot, t};
use crate::model::{
    AttemptDeadline, ExtendedAction, JobConditionType, PendingTimeout, PodCondition,
    PodFailureDetails, ReadyTimeout,
};
use crate::sync::decide;

/// A document with the timeouts given (seconds), each with action Count.
fn policy(pending: Option<i64>, ready: Option<i64>, attempt: Option<i64>) -> ExtendedFailurePolicy {
    ExtendedFailurePolicy {
        pending_timeout: pending.map(|seconds| PendingTimeout {
            seconds,
            reasons: vec!["ImagePullBackOff".into()],
            action: ExtendedAction::Count,
        }),
        ready_timeout: ready.map(|seconds| ReadyTimeout {
            seconds,
            action: ExtendedAction::Count,
        }),
        attempt_deadline: attempt.map(|seconds| AttemptDeadline {
            seconds,
            action: ExtendedAction::Count,
        }),
        ..ExtendedFailurePolicy::default()
    }
}

fn with(mut j: Job, p: ExtendedFailurePolicy) -> Job {
    j.extended_failure_policy = Some(Arc::new(p));
    j
}

/// A pod created at t(0) that started at `start`, Pending waiting in
/// ImagePullBackOff when `stuck`, else Running; never Ready.
fn started(name: &str, start: Option<i64>, stuck: bool) -> Pod {
    let mut p = pod(name);
    if stuck {
        p.phase = PodPhase::Pending;
    }
    p.failure_details = Some(Box::new(PodFailureDetails {
        start_time: start.map(t),
        waiting_reasons: if stuck {
            vec![(Arc::from("main"), "ImagePullBackOff".to_string())]
        } else {
            vec![]
        },
        ..PodFailureDetails::default()
    }));
    p
}

fn ready(mut p: Pod, at: i64) -> Pod {
    p.conditions.push(PodCondition {
        condition_type: "Ready".into(),
        status: ConditionStatus::True,
        last_transition_time: Some(t(at)),
    });
    p
}

#[test]
fn the_first_deadline_passed_fails_the_pod_ties_in_document_order() {
    // (name, policy (pending, ready, attempt), pod, now, want)
    let cases: Vec<(&str, ExtendedFailurePolicy, Pod, i64, Option<Due>)> = vec![
        (
            "nothing in force",
            policy(None, None, None),
            started("p", Some(0), true),
            1000,
            None,
        ),
        (
            "only pending, as before",
            policy(Some(300), None, None),
            started("p", Some(0), true),
            299,
            Some(Due::Waits(Timeout::Pending, t(300))),
        ),
        (
            "ready before attempt",
            policy(None, Some(100), Some(200)),
            started("p", Some(10), false),
            500,
            Some(Due::Fails(Timeout::Ready, t(110))),
        ),
        (
            "attempt before ready",
            policy(None, Some(300), Some(200)),
            started("p", Some(10), false),
            500,
            Some(Due::Fails(Timeout::Attempt, t(210))),
        ),
        (
            "a ready pod only meets its attempt deadline",
            policy(None, Some(100), Some(200)),
            ready(started("p", Some(10), false), 50),
            500,
            Some(Due::Fails(Timeout::Attempt, t(210))),
        ),
        (
            "tie: pending, then ready, then attempt",
            policy(Some(100), Some(100), Some(100)),
            started("p", Some(0), true),
            100,
            Some(Due::Fails(Timeout::Pending, t(100))),
        ),
        (
            "tie: ready before attempt",
            policy(None, Some(100), Some(100)),
            started("p", Some(0), false),
            100,
            Some(Due::Fails(Timeout::Ready, t(100))),
        ),
        (
            "one passed and one not: the passed one",
            policy(Some(1000), Some(100), None),
            started("p", Some(0), true),
            150,
            Some(Due::Fails(Timeout::Ready, t(100))),
        ),
        (
            "none passed: the earliest",
            policy(Some(1000), Some(500), Some(400)),
            started("p", Some(0), true),
            150,
            Some(Due::Waits(Timeout::Attempt, t(400))),
        ),
        (
            "no start time: only pending can apply",
            policy(Some(300), Some(100), Some(100)),
            started("p", None, true),
            200,
            Some(Due::Waits(Timeout::Pending, t(300))),
        ),
    ];
    for (name, p, pod, now, want) in cases {
        assert_eq!(due(&p, &pod, t(now)), want, "{name}");
    }
}

fn fail_pods(plan: &crate::plan::Plan) -> Vec<(&str, &str)> {
    crate::fixtures::pod_failures(plan)
        .into_iter()
        .map(|f| (f.pod.name.as_str(), f.condition_type.as_str()))
        .collect()
}

#[test]
fn a_sync_fails_each_pod_once_and_requeues_at_the_earliest_deadline() {
    let mut j = with(job(), policy(Some(300), Some(100), Some(1000)));
    j.spec.parallelism = 4;
    j.spec.completions = Some(4);
    let pods = vec![
        started("slow-start", Some(0), false),
        ready(started("long-run", Some(0), false), 20),
        started("stuck", Some(0), true),
        ready(started("young", Some(900), false), 910),
    ];
    let plan = decide(&snapshot(j.clone(), pods.clone(), t(1000)));
    assert_eq!(
        fail_pods(&plan),
        vec![
            ("long-run", ATTEMPT_DEADLINE_CONDITION),
            ("slow-start", READY_TIMEOUT_CONDITION),
            ("stuck", READY_TIMEOUT_CONDITION),
        ]
    );
    // The young pod reaches its attempt deadline at t(1900).
    assert_eq!(plan.requeue_after, Some(Duration::from_secs(900)));
    // Before any deadline: nothing fails; the earliest deadline (t(100)) is the requeue.
    let plan = decide(&snapshot(j, pods, t(40)));
    assert_eq!(fail_pods(&plan), vec![]);
    assert_eq!(plan.requeue_after, Some(Duration::from_secs(60)));
}

#[test]
fn nothing_fails_while_suspended_deleted_finishing_or_finished() {
    let pods = vec![started("p", Some(0), false)];
    let base = with(job(), policy(None, Some(100), Some(100)));
    assert_eq!(
        fail_pods(&decide(&snapshot(base.clone(), pods.clone(), t(400)))).len(),
        1
    );
    let mut suspended = base.clone();
    suspended.spec.suspend = true;
    let mut deleting = base.clone();
    deleting.being_deleted = true;
    let mut finishing = base.clone();
    finishing.status.failed = 7;
    let mut finished = base.clone();
    finished.status.conditions.push(crate::model::JobCondition {
        condition_type: JobConditionType::Failed,
        status: ConditionStatus::True,
        last_probe_time: None,
        last_transition_time: Some(t(300)),
        reason: "BackoffLimitExceeded".into(),
        message: String::new(),
    });
    for j in [suspended, deleting, finishing, finished] {
        let plan = decide(&snapshot(j, pods.clone(), t(400)));
        assert_eq!(fail_pods(&plan), vec![], "{:?}", plan.actions);
    }
}

#[test]
fn without_a_document_started_pods_are_never_failed() {
    let p = started("p", Some(0), false);
    let mut bare = p.clone();
    bare.failure_details = None;
    let with_details = decide(&snapshot(job(), vec![p], t(100_000)));
    let without = decide(&snapshot(job(), vec![bare], t(100_000)));
    assert_eq!(with_details, without);
    assert_eq!(fail_pods(&with_details), vec![]);
}

/// A pod a timeout failed at `failed`: phase Failed with the timeout's condition.
fn timed_out(name: &str, condition: &str, failed: i64) -> Pod {
    started(name, Some(0), false)
        .phase(PodPhase::Failed)
        .condition(condition, t(failed))
}

#[test]
fn the_failed_pod_takes_its_implicit_rule_and_finishes_at_the_condition() {
    let mut p = policy(None, Some(100), Some(200));
    p.ready_timeout = Some(ReadyTimeout {
        seconds: 100,
        action: ExtendedAction::Ignore,
    });
    p.attempt_deadline = Some(AttemptDeadline {
        seconds: 200,
        action: ExtendedAction::FailJob,
    });
    let ready_pod = timed_out("r", READY_TIMEOUT_CONDITION, 100);
    let attempt_pod = timed_out("a", ATTEMPT_DEADLINE_CONDITION, 200);
    let r = match_document(&p, &ready_pod).map(|m| (m.rule, m.action));
    let a = match_document(&p, &attempt_pod).map(|m| (m.rule, m.action));
    assert_eq!(
        r,
        Some((
            DocumentRule::Timeout(Timeout::Ready),
            ExtendedAction::Ignore
        ))
    );
    assert_eq!(
        a,
        Some((
            DocumentRule::Timeout(Timeout::Attempt),
            ExtendedAction::FailJob
        ))
    );
    assert_eq!(failed_at(&p, &attempt_pod), Some(t(200)));
    // A timeout the document does not have is no rule (the condition is the user's then).
    let only_ready = policy(None, Some(100), None);
    assert_eq!(match_document(&only_ready, &attempt_pod), None);
    assert_eq!(failed_at(&only_ready, &attempt_pod), None);
    // FailJob gives the implicit rule's named reason.
    assert_eq!(
        crate::extended::rules::fail_job_reason(&p, DocumentRule::Timeout(Timeout::Attempt)),
        "PodFailurePolicy_AttemptDeadline"
    );
    let j = with(job(), p);
    let plan = decide(&snapshot(j, vec![attempt_pod], t(200)));
    let status = crate::fixtures::last_status(&plan);
    assert!(
        status
            .conditions
            .iter()
            .any(|c| c.reason == "PodFailurePolicy_AttemptDeadline"),
        "{:?}",
        status.conditions
    );
}

#[test]
fn fail_index_for_a_timed_out_pod_fails_its_index() {
    let mut p = policy(None, None, Some(200));
    p.attempt_deadline = Some(AttemptDeadline {
        seconds: 200,
        action: ExtendedAction::FailIndex,
    });
    let mut j = with(indexed_job(2, 2), p);
    j.spec.backoff_limit_per_index = Some(3);
    j.status.start_time = Some(t(0));
    let pods = vec![
        started("a", Some(0), false).index(0),
        timed_out("b", ATTEMPT_DEADLINE_CONDITION, 200).index(1),
    ];
    let plan = decide(&snapshot(j, pods, t(150)));
    let status = crate::fixtures::last_status(&plan);
    assert_eq!(
        status.failed_indexes.as_deref(),
        Some("1"),
        "{:?}",
        plan.actions
    );
}

#[test]
fn explanations_name_the_implicit_rule_and_the_requeue() {
    let j = with(job(), policy(None, Some(100), None));
    let pods = vec![started("p", Some(0), false)];
    let (reason, message) = describe(
        &j,
        t(200),
        &pods,
        &pod_timeouts(&j, &pods, t(200), false).failures,
    );
    assert_eq!(reason, "ReadyTimeout");
    assert!(
        message.contains("readyTimeout (1m40s): p (NotReady)"),
        "{message}"
    );
    assert_eq!(
        next_timeout(&j, &pods, t(40)),
        Some((Duration::from_secs(60), Timeout::Ready))
    );
}

#[test]
fn a_sync_explanation_names_each_timeout_and_its_requeue() {
    let mut j = with(job(), policy(None, Some(100), Some(1000)));
    j.spec.parallelism = 3;
    j.spec.completions = Some(3);
    // "unready" passed its ready timeout; "long" (Ready) its attempt deadline;
    // "young" (not Ready) reaches its ready timeout 30 s from now.
    let pods = vec![
        started("unready", Some(0), false),
        ready(started("long", Some(0), false), 10),
        started("young", Some(1000), false),
    ];
    let (plan, e) = crate::sync::decide_explained(&snapshot(j, pods, t(1070)));
    let reasons: Vec<(&str, &str)> = e
        .action_reasons
        .iter()
        .map(|r| (r.reason, r.message.as_str()))
        .filter(|(r, _)| *r == "PodTimeouts")
        .collect();
    assert_eq!(
        reasons,
        [(
            "PodTimeouts",
            "pods not Ready within the extended policy's readyTimeout (1m40s): unready (NotReady); \
             marked Failed, then deleted; pods running past the extended policy's attemptDeadline \
             (16m40s): long (DeadlineExceeded); marked Failed, then deleted"
        )],
        "{plan:?}"
    );
    assert_eq!(plan.requeue_after, Some(Duration::from_secs(30)));
    assert_eq!(
        e.requeue_reason,
        "a pod not yet Ready reaches the extended policy's readyTimeout then"
    );
}
