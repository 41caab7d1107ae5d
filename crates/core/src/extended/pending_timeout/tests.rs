use super::*;
use crate::extended::timeouts::{Timeouts as PendingTimeouts, pod_timeouts};
use crate::fixtures::{PodExt, job, pod, snapshot, t};
use crate::model::{ConditionStatus, JobCondition, JobConditionType};
use crate::model::{ExtendedAction, ExtendedFailurePolicy, PodFailureDetails};
use crate::plan::Action;
use crate::sync::decide;
use std::sync::Arc;

fn settings(seconds: i64, reasons: &[&str]) -> PendingTimeout {
    PendingTimeout {
        seconds,
        reasons: reasons.iter().map(|r| r.to_string()).collect(),
        action: ExtendedAction::Count,
    }
}

fn defaults(seconds: i64) -> PendingTimeout {
    settings(
        seconds,
        &[
            "ImagePullBackOff",
            "ErrImagePull",
            "CreateContainerConfigError",
            "InvalidImageName",
        ],
    )
}

/// A Pending pod created at `created`, its containers waiting in `waiting`.
fn pending(name: &str, created: i64, waiting: &[(&str, &str)]) -> Pod {
    let mut p = pod(name).phase(PodPhase::Pending);
    p.creation_timestamp = Some(t(created));
    p.failure_details = Some(Box::new(PodFailureDetails {
        waiting_reasons: waiting
            .iter()
            .map(|(c, r)| (Arc::from(*c), r.to_string()))
            .collect(),
        ..PodFailureDetails::default()
    }));
    p
}

fn details(p: &mut Pod) -> &mut PodFailureDetails {
    p.failure_details.get_or_insert_with(Box::default)
}

/// (name, settings, pod, want (reason, container, since)).
type StuckCase<'a> = (
    &'a str,
    &'a PendingTimeout,
    Pod,
    Option<(&'a str, Option<&'a str>, i64)>,
);

#[test]
fn stuck_reads_the_listed_reasons_and_the_right_start() {
    let s = defaults(300);
    let mut scheduled = pending("p", 10, &[("main", "ImagePullBackOff")]);
    details(&mut scheduled).scheduled_at = Some(t(50));
    let mut unschedulable = pending("p", 10, &[]);
    details(&mut unschedulable).unschedulable = true;
    let mut no_times = pending("p", 10, &[("main", "ErrImagePull")]);
    no_times.creation_timestamp = None;
    let mut no_details = pending("p", 10, &[]);
    no_details.failure_details = None;
    let with_unschedulable = settings(60, &["Unschedulable", "ErrImagePull"]);
    // (name, settings, pod, want (reason, container, since))
    let cases: Vec<StuckCase<'_>> = vec![
        (
            "ImagePullBackOff",
            &s,
            pending("p", 10, &[("main", "ImagePullBackOff")]),
            Some(("ImagePullBackOff", Some("main"), 10)),
        ),
        (
            "ErrImagePull",
            &s,
            pending("p", 10, &[("main", "ErrImagePull")]),
            Some(("ErrImagePull", Some("main"), 10)),
        ),
        (
            "CreateContainerConfigError",
            &s,
            pending("p", 10, &[("main", "CreateContainerConfigError")]),
            Some(("CreateContainerConfigError", Some("main"), 10)),
        ),
        (
            "InvalidImageName",
            &s,
            pending("p", 10, &[("main", "InvalidImageName")]),
            Some(("InvalidImageName", Some("main"), 10)),
        ),
        (
            "an unlisted reason is not stuck",
            &s,
            pending("p", 10, &[("main", "ContainerCreating")]),
            None,
        ),
        (
            "the first listed reason among the containers, init ones included",
            &s,
            pending(
                "p",
                10,
                &[
                    ("init-fetch", "PodInitializing"),
                    ("init-pull", "ErrImagePull"),
                ],
            ),
            Some(("ErrImagePull", Some("init-pull"), 10)),
        ),
        (
            "measured from scheduling when scheduled",
            &s,
            scheduled,
            Some(("ImagePullBackOff", Some("main"), 50)),
        ),
        (
            "Unschedulable only when listed",
            &s,
            unschedulable.clone(),
            None,
        ),
        (
            "Unschedulable, listed",
            &with_unschedulable,
            unschedulable,
            Some(("Unschedulable", None, 10)),
        ),
        ("no time: never stuck", &s, no_times, None),
        ("no details: never stuck", &s, no_details, None),
        (
            "a running pod is not stuck",
            &s,
            pending("p", 10, &[("main", "ImagePullBackOff")]).phase(PodPhase::Running),
            None,
        ),
        (
            "a pod being deleted is not stuck",
            &s,
            pending("p", 10, &[("main", "ImagePullBackOff")]).deleted(t(20), None),
            None,
        ),
        (
            "a failed pod is not stuck",
            &s,
            pending("p", 10, &[("main", "ImagePullBackOff")]).phase(PodPhase::Failed),
            None,
        ),
    ];
    for (name, settings, p, want) in cases {
        let got = stuck(settings, &p).map(|s| (s.reason, s.container, s.since));
        assert_eq!(got, want.map(|(r, c, since)| (r, c, t(since))), "{name}");
    }
}

fn with_policy(mut j: Job, s: PendingTimeout) -> Job {
    j.extended_failure_policy = Some(Arc::new(ExtendedFailurePolicy {
        pending_timeout: Some(s),
        ..ExtendedFailurePolicy::default()
    }));
    j
}

fn timeouts(j: &Job, pods: &[Pod], now: Time, finishing: bool) -> PendingTimeouts {
    pod_timeouts(j, pods, now, finishing)
}

fn names(out: &PendingTimeouts) -> Vec<&str> {
    out.failures.iter().map(|f| f.pod.name.as_str()).collect()
}

#[test]
fn pods_fail_exactly_at_the_deadline_and_requeue_before() {
    let j = with_policy(job(), defaults(300));
    let pods = [
        pending("b", 0, &[("main", "ErrImagePull")]),
        pending("a", 0, &[("main", "ImagePullBackOff")]),
        pending("later", 100, &[("main", "ImagePullBackOff")]),
        pending("fine", 0, &[("main", "ContainerCreating")]),
    ];
    let just_before = Time::from_unix_nanos(t(300).unix_nanos() - 1);
    let out = timeouts(&j, &pods, just_before, false);
    assert_eq!(names(&out), Vec::<&str>::new());
    assert_eq!(out.requeue, Some(Duration::from_nanos(1)));

    let out = timeouts(&j, &pods, t(300), false);
    assert_eq!(names(&out), vec!["a", "b"], "sorted by name");
    assert_eq!(
        out.requeue,
        Some(Duration::from_secs(100)),
        "when 'later' times out"
    );
    let a = &out.failures[0];
    assert_eq!(a.condition_type, PENDING_TIMEOUT_CONDITION);
    assert_eq!(a.reason, "ImagePullBackOff");
    assert_eq!(
        a.message,
        "Pod was pending in ImagePullBackOff (container \"main\") for 5m, reaching the pending timeout of 5m"
    );
    let out = timeouts(&j, &pods, t(1000), false);
    assert_eq!(names(&out), vec!["a", "b", "later"]);
    assert_eq!(out.requeue, None);
}

#[test]
fn nothing_fails_while_finishing_suspended_deleted_or_finished() {
    let pods = [pending("a", 0, &[("main", "ImagePullBackOff")])];
    let base = with_policy(job(), defaults(10));
    assert_eq!(names(&timeouts(&base, &pods, t(100), false)), vec!["a"]);
    assert_eq!(
        timeouts(&base, &pods, t(100), true),
        PendingTimeouts::default()
    );
    let mut suspended = base.clone();
    suspended.spec.suspend = true;
    assert_eq!(
        timeouts(&suspended, &pods, t(5), false),
        PendingTimeouts::default()
    );
    let mut deleting = base.clone();
    deleting.being_deleted = true;
    assert_eq!(
        timeouts(&deleting, &pods, t(100), false),
        PendingTimeouts::default()
    );
    let mut finished = base.clone();
    finished.status.conditions.push(JobCondition {
        condition_type: JobConditionType::Failed,
        status: ConditionStatus::True,
        reason: "BackoffLimitExceeded".into(),
        message: String::new(),
        last_probe_time: None,
        last_transition_time: None,
    });
    assert_eq!(
        timeouts(&finished, &pods, t(100), false),
        PendingTimeouts::default()
    );
    // No document (or none with a pendingTimeout): nothing.
    assert_eq!(
        timeouts(&job(), &pods, t(100), false),
        PendingTimeouts::default()
    );
}

#[test]
fn messages_are_bounded() {
    let long = "X".repeat(10_000);
    let pods = [pending("a", 0, &[(long.as_str(), long.as_str())])];
    let j = with_policy(job(), settings(1, &[long.as_str()]));
    let out = timeouts(&j, &pods, t(100), false);
    assert_eq!(out.failures.len(), 1);
    assert!(out.failures[0].reason.len() < 200);
    assert!(out.failures[0].message.len() < 600);
}

fn fail_pods(plan: &crate::plan::Plan) -> Vec<(usize, Vec<&str>)> {
    plan.actions
        .iter()
        .enumerate()
        .filter_map(|(i, a)| match a {
            Action::FailPods(f) => Some((i, f.iter().map(|f| f.pod.name.as_str()).collect())),
            _ => None,
        })
        .collect()
}

#[test]
fn sync_fails_stuck_pods_after_adoption_and_before_the_rest() {
    let mut orphan = pod("orphan");
    orphan.controller = None;
    orphan.owners_name_job = false;
    orphan.has_tracking_finalizer = false;
    let mut j = with_policy(job(), defaults(300));
    j.spec.parallelism = 3;
    j.spec.completions = Some(3);
    let pods = vec![
        orphan,
        pending("stuck", 0, &[("main", "ImagePullBackOff")]),
        pending("young", 200, &[("main", "ErrImagePull")]),
    ];
    let plan = decide(&snapshot(j, pods, t(300)));
    assert!(
        matches!(plan.actions[0], Action::AdoptPods(_)),
        "{:?}",
        plan.actions
    );
    assert_eq!(fail_pods(&plan), vec![(1, vec!["stuck"])]);
    // The stuck pod still counts as active: the Job has its 3 pods, creates none.
    assert!(
        !plan
            .actions
            .iter()
            .any(|a| matches!(a, Action::CreatePods(_))),
        "{:?}",
        plan.actions
    );
    assert_eq!(plan.requeue_after, Some(Duration::from_secs(200)));
}

#[test]
fn sync_requeue_is_the_earlier_of_the_timeout_and_other_requeues() {
    let pods = vec![pending("stuck", 0, &[("main", "ImagePullBackOff")])];
    // (activeDeadlineSeconds, want requeue at t(100)): the timeout is 200 s away.
    for (ads, want) in [(None, 200), (Some(1000), 200), (Some(150), 50)] {
        let mut j = with_policy(job(), defaults(300));
        j.spec.active_deadline_seconds = ads;
        j.status.start_time = Some(t(0));
        let plan = decide(&snapshot(j, pods.clone(), t(100)));
        assert_eq!(
            plan.requeue_after,
            Some(Duration::from_secs(want)),
            "{ads:?}"
        );
    }
}

#[test]
fn sync_does_not_fail_pods_when_suspended_deleted_or_finishing() {
    let pods = vec![pending("stuck", 0, &[("main", "ImagePullBackOff")])];
    let base = with_policy(job(), defaults(300));
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
    for j in [suspended, deleting, finishing] {
        let plan = decide(&snapshot(j, pods.clone(), t(400)));
        assert_eq!(fail_pods(&plan), vec![], "{:?}", plan.actions);
        assert_eq!(plan.requeue_after, None, "{:?}", plan.actions);
    }
}

#[test]
fn sync_without_a_document_ignores_the_details() {
    let stuck = pending("stuck", 0, &[("main", "ImagePullBackOff")]);
    let mut bare = stuck.clone();
    bare.failure_details = None;
    let with = decide(&snapshot(job(), vec![stuck], t(400)));
    let without = decide(&snapshot(job(), vec![bare], t(400)));
    assert_eq!(with, without);
    assert_eq!(fail_pods(&with), vec![]);
}

#[test]
fn explanation_names_the_failed_pods_and_the_timeout_requeue() {
    let pods = vec![
        pending("stuck", 0, &[("main", "ImagePullBackOff")]),
        pending("young", 200, &[("main", "ErrImagePull")]),
    ];
    let j = with_policy(job(), defaults(300));
    let mut j = j;
    j.spec.parallelism = 2;
    j.spec.completions = Some(2);
    let (plan, e) = crate::sync::decide_explained(&snapshot(j, pods, t(330)));
    let reason = e
        .action_reasons
        .iter()
        .find(|r| r.reason == "PendingTimeout")
        .map(|r| r.message.clone());
    assert_eq!(
        reason.as_deref(),
        Some(
            "pods stuck in Pending past the extended policy's pendingTimeout (5m): \
             stuck (ImagePullBackOff for 5m30s); marked Failed, then deleted"
        ),
        "{plan:?}"
    );
    assert_eq!(plan.requeue_after, Some(Duration::from_secs(170)));
    assert_eq!(
        e.requeue_reason,
        "a pod stuck in Pending reaches the extended policy's pendingTimeout then"
    );
}

#[test]
fn describe_names_pods_reasons_and_waits() {
    let j = with_policy(job(), defaults(300));
    let pods: Vec<Pod> = (0..7)
        .map(|i| pending(&format!("p{i}"), 0, &[("main", "ErrImagePull")]))
        .collect();
    let out = timeouts(&j, &pods, t(400), false);
    let text = describe(&j, t(400), &pods, &out.failures);
    assert_eq!(
        text,
        "pods stuck in Pending past the extended policy's pendingTimeout (5m): \
         p0 (ErrImagePull for 6m40s), p1 (ErrImagePull for 6m40s), p2 (ErrImagePull for 6m40s), \
         p3 (ErrImagePull for 6m40s), p4 (ErrImagePull for 6m40s) and 2 more; marked Failed, then deleted"
    );
    assert_eq!(
        next_timeout(&j, &pods, t(100)),
        Some(Duration::from_secs(200))
    );
}

/// A pod the pending timeout failed at `failed` (created at t(0)): phase Failed,
/// Ready=False since its kubelet first reported it (t(6)), the timeout's
/// condition, and a deletion with the default 30 s grace, as the shim leaves it.
fn timed_out(name: &str, failed: i64) -> Pod {
    let mut p = pending(name, 0, &[("main", "ImagePullBackOff")]).phase(PodPhase::Failed);
    p.conditions.push(crate::model::PodCondition {
        condition_type: "Ready".into(),
        status: ConditionStatus::False,
        last_transition_time: Some(t(6)),
    });
    p.condition(PENDING_TIMEOUT_CONDITION, t(failed))
        .deleted(t(failed + 30), Some(30))
}

#[test]
fn a_pending_timeout_replacement_skipped_the_pod_failure_backoff() {
    // Defect 10 (issue 25): the failed pod's finish time was read as its Ready=False
    // transition (when it was first reported, minutes before the timeout), so the
    // backoff after it had already run out and the replacement came at once.
    let mut j = with_policy(job(), defaults(300));
    j.spec.parallelism = 3;
    j.spec.completions = Some(3);
    j.status.start_time = Some(t(0));
    let pods = vec![pod("a"), pod("b"), timed_out("stuck", 306)];
    let plan = decide(&snapshot(j.clone(), pods.clone(), t(306)));
    assert!(
        crate::fixtures::creations(&plan).is_empty(),
        "the replacement waits out the backoff: {:?}",
        plan.actions
    );
    assert_eq!(plan.requeue_after, Some(Duration::from_secs(10)));
    assert_eq!(plan.state.backoff.last_failure_time, Some(t(306)));
    // Once the 10 s have passed (the failure counted, the pod gone), it is created.
    j.status = crate::fixtures::last_status(&plan).clone();
    assert_eq!(j.status.failed, 1);
    let mut later = snapshot(j, pods[..2].to_vec(), t(316));
    later.state = plan.state.clone();
    let plan = decide(&later);
    assert_eq!(
        crate::fixtures::creations(&plan).len(),
        1,
        "{:?}",
        plan.actions
    );
}

#[test]
fn a_pending_timeout_replacement_skipped_the_per_index_backoff() {
    // Defect 10 (issue 25), backoffLimitPerIndex: the index's own backoff after
    // a timed-out pod starts when it was failed too.
    let mut j = with_policy(crate::fixtures::indexed_job(2, 2), defaults(300));
    j.spec.backoff_limit_per_index = Some(3);
    j.status.start_time = Some(t(0));
    let pods = vec![pod("a").index(0), timed_out("stuck", 306).index(1)];
    let plan = decide(&snapshot(j, pods, t(306)));
    assert!(
        crate::fixtures::creations(&plan).is_empty(),
        "index 1 waits out its backoff: {:?}",
        plan.actions
    );
    assert_eq!(plan.requeue_after, Some(Duration::from_secs(10)));
}

#[test]
fn without_the_policy_a_timed_out_pod_finishes_by_upstreams_rule() {
    // Upstream never reads job-decider's condition: a Job without a pending timeout
    // in force (say the policy was taken off) takes the Ready=False transition, so
    // its backoff is upstream's whatever the pod carries.
    let mut j = job();
    j.spec.parallelism = 3;
    j.spec.completions = Some(3);
    j.status.start_time = Some(t(0));
    let stuck = timed_out("stuck", 306);
    assert_eq!(crate::backoff::finished_time_for(&j, &stuck), t(6));
    assert_eq!(
        crate::backoff::finished_time_for(&with_policy(j.clone(), defaults(300)), &stuck),
        t(306)
    );
    let plan = decide(&snapshot(j, vec![pod("a"), pod("b"), stuck], t(306)));
    assert_eq!(plan.state.backoff.last_failure_time, Some(t(6)));
}
