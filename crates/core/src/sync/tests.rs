//! Scenario tests of one sync, many of them upstream's own cases (named after them).

use super::*;
use crate::fixtures::*;
use crate::model::*;
use std::sync::Arc;

fn finalizer_removals(plan: &Plan) -> Vec<&str> {
    plan.actions
        .iter()
        .filter_map(|a| match a {
            Action::RemoveFinalizers(r) => Some(r),
            _ => None,
        })
        .flatten()
        .map(|r| r.name.as_str())
        .collect()
}

fn condition_types(status: &JobStatus) -> Vec<(JobConditionType, String)> {
    status
        .conditions
        .iter()
        .map(|c| (c.condition_type.clone(), c.reason.clone()))
        .collect()
}

fn events(plan: &Plan) -> Vec<&str> {
    plan.actions
        .iter()
        .filter_map(|a| match a {
            Action::RecordEvent(e) => Some(e.reason.as_str()),
            _ => None,
        })
        .collect()
}

#[test]
fn new_job_creates_parallelism_pods_and_sets_start_time() {
    let mut job = job();
    job.spec.parallelism = 2;
    job.spec.completions = Some(5);
    let plan = decide(&snapshot(job, vec![], t(100)));
    let created = creations(&plan);
    assert_eq!(created.len(), 2);
    assert!(created.iter().all(|c| c.generate_name == "job-"
        && c.finalizers == vec![JOB_TRACKING_FINALIZER.to_string()]
        && c.owner.uid == "job-uid"));
    let status = last_status(&plan);
    assert_eq!(status.active, 2);
    assert_eq!(status.ready, Some(0));
    assert_eq!(status.terminating, Some(0));
    assert_eq!(status.start_time, Some(t(100)));
    assert_eq!(status.uncounted_terminated_pods, Some(Default::default()));
    assert_eq!(plan.requeue_after, None);
}

#[test]
fn job_managed_by_another_controller_gets_an_empty_plan() {
    let mut job = job();
    job.spec.managed_by = Some("example.com/other".into());
    let plan = decide(&snapshot(job.clone(), vec![], t(1)));
    assert!(plan.actions.is_empty());
    let mut s = snapshot(job, vec![], t(1));
    s.controller_name = "example.com/other".into();
    assert!(
        !decide(&s).actions.is_empty(),
        "the named controller decides it"
    );
}

#[test]
fn upstream_indexed_job_some_running_and_completed_pods() {
    let mut job = indexed_job(20, 8);
    job.status.start_time = Some(t(0));
    let mut pods = vec![
        pod("p0").index(0),
        pod("p3").index(3).phase(PodPhase::Pending),
    ];
    for i in [2, 4, 5, 7, 8, 9] {
        pods.push(pod(&format!("s{i}")).index(i).phase(PodPhase::Succeeded));
    }
    let plan = decide(&snapshot(job, pods, t(10)));
    let created: Vec<i32> = creations(&plan)
        .iter()
        .filter_map(|c| c.completion_index)
        .collect();
    assert_eq!(created, vec![1, 6, 10, 11, 12, 13]);
    let status = last_status(&plan);
    assert_eq!(status.active, 8);
    assert_eq!(status.succeeded, 6);
    assert_eq!(status.completed_indexes, "2,4,5,7-9");
    assert_eq!(finalizer_removals(&plan).len(), 6);
    let c1 = creations(&plan)[0];
    assert_eq!(c1.generate_name, "job-1-");
    assert_eq!(c1.hostname, "job-1");
    assert_eq!(c1.labels[COMPLETION_INDEX_KEY], "1");
    assert_eq!(c1.annotations[COMPLETION_INDEX_KEY], "1");
    assert_eq!(c1.env[0].name, "JOB_COMPLETION_INDEX");
}

#[test]
fn upstream_indexed_job_with_indexes_outside_of_range() {
    let mut job = indexed_job(5, 5);
    job.status.start_time = Some(t(0));
    let pods = vec![
        pod("p0").index(0).phase(PodPhase::Succeeded),
        pod("p5").index(5),
        pod("p6").index(6).phase(PodPhase::Succeeded),
        pod("p7").index(7).phase(PodPhase::Pending),
        pod("p8").index(8).phase(PodPhase::Failed),
    ];
    let plan = decide(&snapshot(job, pods, t(10)));
    let deleted: Vec<&str> = deletions(&plan)
        .iter()
        .map(|d| d.pod.name.as_str())
        .collect();
    assert_eq!(deleted, vec!["p5", "p7"]);
    assert!(
        creations(&plan).is_empty(),
        "a sync never deletes and creates"
    );
    let status = last_status(&plan);
    assert_eq!((status.succeeded, status.failed, status.active), (1, 0, 0));
    assert_eq!(status.completed_indexes, "0");
    // Upstream's "5 finalizer patches": two ride on the scale-down deletions.
    assert_eq!(finalizer_removals(&plan), vec!["p0", "p6", "p8"]);
    assert!(deletions(&plan).iter().all(|d| d.remove_finalizer_first));
}

#[test]
fn upstream_work_queue_job_finishing_creates_nothing() {
    let mut job = job();
    job.spec.completions = None;
    job.spec.parallelism = 2;
    job.status.start_time = Some(t(0));
    let pods = vec![pod("run"), pod("done").phase(PodPhase::Succeeded)];
    let plan = decide(&snapshot(job, pods, t(10)));
    assert!(creations(&plan).is_empty());
    let status = last_status(&plan);
    assert_eq!((status.active, status.succeeded), (1, 1));
    assert!(status.conditions.is_empty());
}

#[test]
fn upstream_work_queue_job_all_finished_despite_one_failure() {
    let mut job = job();
    job.spec.completions = None;
    job.spec.parallelism = 2;
    job.status.start_time = Some(t(0));
    let pods = vec![
        pod("ok").phase(PodPhase::Succeeded),
        pod("bad").phase(PodPhase::Failed),
    ];
    let plan = decide(&snapshot(job, pods, t(10)));
    let status = last_status(&plan);
    assert_eq!((status.succeeded, status.failed), (1, 1));
    assert_eq!(
        condition_types(status),
        vec![
            (
                JobConditionType::SuccessCriteriaMet,
                "CompletionsReached".into()
            ),
            (JobConditionType::Complete, "CompletionsReached".into()),
        ]
    );
    assert_eq!(status.completion_time, Some(t(10)));
    assert_eq!(events(&plan), vec!["Completed"]);
    assert_eq!(
        statuses(&plan).len(),
        2,
        "uncounted first, then counted and finished"
    );
}

#[test]
fn upstream_suspending_a_job_with_satisfied_expectations() {
    let mut job = job();
    job.spec.parallelism = 2;
    job.spec.completions = Some(4);
    job.spec.suspend = true;
    job.status.start_time = Some(t(0));
    job.status.active = 2;
    let plan = decide(&snapshot(job, vec![pod("a"), pod("b")], t(10)));
    let deleted = deletions(&plan);
    assert_eq!(deleted.len(), 2);
    assert!(deleted.iter().all(|d| d.remove_finalizer_first));
    let status = last_status(&plan);
    assert_eq!(
        (status.active, status.failed, status.terminating),
        (0, 0, Some(2))
    );
    assert_eq!(
        condition_types(status),
        vec![(JobConditionType::Suspended, "JobSuspended".into())]
    );
    assert_eq!(
        status.start_time, None,
        "MutableSchedulingDirectivesForSuspendedJobs clears it"
    );
    assert_eq!(events(&plan), vec!["Suspended"]);
}

#[test]
fn resuming_flips_the_suspended_condition_and_resets_start_time() {
    let mut job = job();
    job.status.start_time = Some(t(0));
    job.status.conditions.push(new_condition(
        JobConditionType::Suspended,
        ConditionStatus::True,
        "JobSuspended",
        "Job suspended",
        t(0),
    ));
    let plan = decide(&snapshot(job, vec![], t(50)));
    let status = last_status(&plan);
    assert_eq!(status.conditions[0].status, ConditionStatus::False);
    assert_eq!(status.conditions[0].reason, "JobResumed");
    assert_eq!(status.start_time, Some(t(50)));
    assert_eq!(events(&plan), vec!["Resumed"]);
}

#[test]
fn upstream_too_few_active_pods_and_active_backoff() {
    let mut job = job();
    job.status.start_time = Some(t(0));
    let mut s = snapshot(job, vec![], t(100));
    s.state.backoff = BackoffRecord {
        failures_after_last_success: 1,
        last_failure_time: Some(t(100)),
    };
    let plan = decide(&s);
    assert!(creations(&plan).is_empty());
    assert_eq!(plan.requeue_after, Some(Duration::from_secs(10)));
    assert_eq!(plan.state, s.state, "nothing was flushed, the record stays");
}

#[test]
fn backoff_limit_exceeded_writes_failure_target_then_failed() {
    let mut job = job();
    job.spec.backoff_limit = 0;
    job.status.start_time = Some(t(0));
    let pods = vec![pod("bad").phase(PodPhase::Failed).exit("main", 1, t(5))];
    let plan = decide(&snapshot(job, pods, t(10)));
    let status = last_status(&plan);
    assert_eq!(status.failed, 1);
    assert_eq!(
        condition_types(status),
        vec![
            (
                JobConditionType::FailureTarget,
                "BackoffLimitExceeded".into()
            ),
            (JobConditionType::Failed, "BackoffLimitExceeded".into()),
        ]
    );
    assert_eq!(events(&plan), vec!["BackoffLimitExceeded"]);
    assert_eq!(plan.state.backoff.failures_after_last_success, 1);
}

#[test]
fn upstream_active_deadline_seconds_bigger_than_single_pod_execution() {
    let mut job = job();
    job.spec.completions = Some(2);
    job.spec.active_deadline_seconds = Some(10);
    job.status.start_time = Some(t(0));
    let pods = vec![pod("run"), pod("done").phase(PodPhase::Succeeded)];
    let plan = decide(&snapshot(job, pods, t(15)));
    assert_eq!(deletions(&plan).len(), 1);
    assert!(!deletions(&plan)[0].remove_finalizer_first);
    let status = last_status(&plan);
    assert_eq!(
        condition_types(status),
        vec![(JobConditionType::FailureTarget, "DeadlineExceeded".into())]
    );
    assert_eq!(status.terminating, Some(1));
    assert_eq!(
        (status.succeeded, status.failed),
        (1, 1),
        "a failing Job counts its deleted running pod as failed at once"
    );
    assert_eq!(finalizer_removals(&plan), vec!["done", "run"]);
}

#[test]
fn active_deadline_requeues_for_the_remaining_time() {
    let mut job = job();
    job.spec.active_deadline_seconds = Some(100);
    job.status.start_time = Some(t(0));
    let plan = decide(&snapshot(job, vec![pod("run")], t(30)));
    assert_eq!(plan.requeue_after, Some(Duration::from_secs(70)));
}

#[test]
fn upstream_activedeadlineseconds_with_backofflimit_reach() {
    let mut job = job();
    job.spec.backoff_limit = 0;
    job.spec.active_deadline_seconds = Some(1);
    job.status.start_time = Some(t(0));
    let plan = decide(&snapshot(
        job,
        vec![pod("bad").phase(PodPhase::Failed)],
        t(10),
    ));
    assert_eq!(
        last_status(&plan).conditions[0].reason,
        "BackoffLimitExceeded"
    );
}

#[test]
fn upstream_terminating_or_failed_counts_a_deleted_running_pod_as_failed() {
    let mut job = job();
    job.spec.completions = None;
    job.spec.parallelism = 1;
    job.status.start_time = Some(t(0));
    let pods = vec![
        pod("run"),
        pod("failed").phase(PodPhase::Failed),
        pod("deleting").deleted(t(5), Some(30)),
    ];
    let plan = decide(&snapshot(job, pods, t(10)));
    let status = last_status(&plan);
    assert_eq!(status.failed, 2);
    assert_eq!(status.active, 1);
    assert_eq!(status.terminating, Some(1));
    assert_eq!(finalizer_removals(&plan).len(), 2);
}

fn fail_job_policy() -> PodFailurePolicy {
    PodFailurePolicy {
        rules: vec![exit_rule(PodFailurePolicyAction::FailJob, vec![42])],
    }
}

#[test]
fn kep_3329_story_1_fail_job_on_exit_code_fails_at_once() {
    let mut job = job();
    job.spec.parallelism = 2;
    job.spec.completions = Some(2);
    job.spec.pod_failure_policy = Some(fail_job_policy());
    job.spec.pod_replacement_policy = PodReplacementPolicy::Failed;
    job.status.start_time = Some(t(0));
    let pods = vec![
        pod("bad").phase(PodPhase::Failed).exit("main", 42, t(5)),
        pod("run"),
    ];
    let plan = decide(&snapshot(job, pods, t(10)));
    assert_eq!(deletions(&plan).len(), 1);
    let status = last_status(&plan);
    assert_eq!(
        status.conditions[0].condition_type,
        JobConditionType::FailureTarget
    );
    assert_eq!(
        status.conditions[0].message,
        "Container main for pod default/bad failed with exit code 42 matching FailJob rule at index 0"
    );
    assert_eq!(
        status.conditions.len(),
        1,
        "Failed waits for the deleted pod"
    );
}

#[test]
fn upstream_terminating_pod_not_considered_failed_with_a_pod_failure_policy() {
    let mut job = job();
    job.spec.backoff_limit = 0;
    job.spec.pod_failure_policy = Some(fail_job_policy());
    job.spec.pod_replacement_policy = PodReplacementPolicy::Failed;
    job.status.start_time = Some(t(0));
    job.status.terminating = Some(1);
    job.status.ready = Some(0);
    let pods = vec![pod("going").deleted(t(5), None).phase(PodPhase::Pending)];
    let plan = decide(&snapshot(job, pods, t(10)));
    assert!(creations(&plan).is_empty());
    assert!(
        plan.actions.is_empty(),
        "nothing changes: {:?}",
        plan.actions
    );
}

#[test]
fn kep_3850_failed_pod_keeps_finalizer_until_replaced() {
    let mut job = indexed_job(2, 2);
    job.spec.backoff_limit = i32::MAX;
    job.spec.backoff_limit_per_index = Some(1);
    job.status.start_time = Some(t(0));
    job.status.failed_indexes = Some(String::new());
    let pods = vec![
        pod("i0").index(0),
        pod("i1")
            .index(1)
            .phase(PodPhase::Failed)
            .failure_counts(0, 0)
            .exit("main", 1, t(5)),
    ];
    // At t(10) the per-index backoff (10 s from t(5)) has not expired.
    let plan = decide(&snapshot(job.clone(), pods.clone(), t(10)));
    assert!(creations(&plan).is_empty());
    assert!(
        finalizer_removals(&plan).is_empty(),
        "the failure count lives on this pod"
    );
    assert_eq!(plan.requeue_after, Some(Duration::from_secs(5)));
    // Once it has, the replacement carries failure-count 1.
    let plan = decide(&snapshot(job, pods, t(20)));
    let created = creations(&plan);
    assert_eq!(created.len(), 1);
    assert_eq!(created[0].annotations[INDEX_FAILURE_COUNT_KEY], "1");
    assert!(
        finalizer_removals(&plan).is_empty(),
        "removed once the replacement is observed"
    );
}

#[test]
fn finished_job_only_loses_leftover_finalizers() {
    let mut job = job();
    job.status.conditions.push(new_condition(
        JobConditionType::Complete,
        ConditionStatus::True,
        "CompletionsReached",
        "",
        t(1),
    ));
    let pods = vec![
        pod("left").phase(PodPhase::Succeeded),
        pod("clean").without_finalizer(),
    ];
    let plan = decide(&snapshot(job, pods, t(10)));
    assert_eq!(finalizer_removals(&plan), vec!["left"]);
    assert_eq!(plan.actions.len(), 1);
}

#[test]
fn orphan_matching_the_selector_is_adopted_and_counted() {
    let mut job = job();
    job.status.start_time = Some(t(0));
    let mut orphan = pod("orphan").phase(PodPhase::Succeeded).without_finalizer();
    orphan.controller = None;
    orphan.owners_name_job = false;
    let plan = decide(&snapshot(job, vec![orphan], t(10)));
    assert!(matches!(&plan.actions[0], Action::AdoptPods(p) if p[0].name == "orphan"));
    assert_eq!(finalizer_removals(&plan), vec!["orphan"]);
    assert_eq!(last_status(&plan).succeeded, 1);
}

#[test]
fn too_many_finished_pods_are_recorded_500_at_a_time() {
    let mut job = job();
    job.spec.completions = Some(600);
    job.spec.parallelism = 600;
    job.status.start_time = Some(t(0));
    let pods: Vec<Pod> = (0..600)
        .map(|i| pod(&format!("p{i:03}")).phase(PodPhase::Succeeded))
        .collect();
    let plan = decide(&snapshot(job, pods, t(10)));
    let first = statuses(&plan)[0];
    assert_eq!(
        first
            .uncounted_terminated_pods
            .as_ref()
            .map(|u| u.succeeded.len()),
        Some(500)
    );
    assert_eq!(finalizer_removals(&plan).len(), 500);
    let last = last_status(&plan);
    assert_eq!(last.succeeded, 500);
    assert_eq!(
        condition_types(last),
        vec![(
            JobConditionType::SuccessCriteriaMet,
            "CompletionsReached".into()
        )],
        "Complete waits until the last 100 are counted"
    );
}

#[test]
fn finished_job_keeps_the_finalizer_of_an_owned_pod_that_no_longer_matches() {
    let mut job = job();
    job.status.conditions.push(new_condition(
        JobConditionType::Failed,
        ConditionStatus::True,
        "BackoffLimitExceeded",
        "",
        t(1),
    ));
    let mut strayed = pod("strayed").phase(PodPhase::Failed);
    strayed.labels.clear();
    let deleting = {
        let mut p = pod("deleting").phase(PodPhase::Failed).deleted(t(5), None);
        p.labels.clear();
        p
    };
    let plan = decide(&snapshot(job, vec![strayed, deleting], t(10)));
    // Upstream's orphan cleanup visits selector matches and pods being deleted only.
    assert_eq!(finalizer_removals(&plan), vec!["deleting"]);
}

#[test]
fn active_deadline_requeue_is_exact_even_below_a_second() {
    let mut job = job();
    job.spec.active_deadline_seconds = Some(10);
    job.status.start_time = Some(t(0));
    let now = Time::from_unix_nanos(9_250_000_000);
    let plan = decide(&snapshot(job, vec![pod("run")], now));
    assert_eq!(plan.requeue_after, Some(Duration::from_millis(750)));
}

/// An owner reference of `kind` named `name` with `uid` (apiVersion batch/v1 unless kind says otherwise).
fn owner(api_version: &str, kind: &str, name: &str, uid: &str) -> OwnerRef {
    OwnerRef {
        api_version: api_version.into(),
        kind: kind.into(),
        name: name.into(),
        uid: uid.into(),
    }
}

/// A pod with this controller and these other owner references' uids.
fn pod_owned_by(name: &str, controller: Option<OwnerRef>, others: &[&str]) -> Pod {
    let mut p = pod(name);
    p.owners_name_job = controller.iter().any(|c| c.uid == JOB_UID) || others.contains(&JOB_UID);
    p.controller = controller.map(Arc::new);
    p
}

/// The claim step, case by case, as upstream's getPodsForJob and
/// ClaimPods decide: which pods are the Job's, which are adopted or
/// released, and which adopted orphans count as carrying the finalizer.
#[test]
fn claim_pods_follows_upstreams_get_pods_for_job() {
    struct Case {
        name: &'static str,
        pod: Pod,
        job_being_deleted: bool,
        /// (pod name, counts as carrying the finalizer) of the claimed pods.
        want_claimed: Vec<(&'static str, bool)>,
        want_adopted: Vec<&'static str>,
        want_released: Vec<&'static str>,
    }
    let this_job = job_owner();
    let mut unmatched = pod_owned_by("unmatched", Some(this_job.clone()), &[]);
    unmatched.labels.clear();
    let mut unmatched_orphan = pod_owned_by("unmatched-orphan", None, &[]);
    unmatched_orphan.labels.clear();
    let cases = vec![
        Case {
            name: "owned and matching: claimed as it is",
            pod: pod_owned_by("owned", Some(this_job.clone()), &[]).without_finalizer(),
            job_being_deleted: false,
            want_claimed: vec![("owned", false)],
            want_adopted: vec![],
            want_released: vec![],
        },
        Case {
            name: "owned, with other non-controller owners: claimed",
            pod: pod_owned_by("owned", Some(this_job.clone()), &["rs-uid", "cm-uid"]),
            job_being_deleted: false,
            want_claimed: vec![("owned", true)],
            want_adopted: vec![],
            want_released: vec![],
        },
        Case {
            name: "owned but no longer matching: released",
            pod: unmatched.clone(),
            job_being_deleted: false,
            want_claimed: vec![],
            want_adopted: vec![],
            want_released: vec!["unmatched"],
        },
        Case {
            name: "owned, not matching, Job being deleted: neither claimed nor released",
            pod: unmatched,
            job_being_deleted: true,
            want_claimed: vec![],
            want_adopted: vec![],
            want_released: vec![],
        },
        Case {
            name: "controller reference with the Job's uid under another apiVersion: claimed",
            pod: pod_owned_by("v2", Some(owner("batch/v2", "Job", JOB_NAME, JOB_UID)), &[]),
            job_being_deleted: false,
            want_claimed: vec![("v2", true)],
            want_adopted: vec![],
            want_released: vec![],
        },
        Case {
            name: "controller reference with the Job's uid under another kind: not listed",
            pod: pod_owned_by(
                "rs",
                Some(owner("apps/v1", "ReplicaSet", JOB_NAME, JOB_UID)),
                &[],
            ),
            job_being_deleted: false,
            want_claimed: vec![],
            want_adopted: vec![],
            want_released: vec![],
        },
        Case {
            name: "controller reference with the Job's uid under another name: not listed",
            pod: pod_owned_by(
                "renamed",
                Some(owner("batch/v1", "Job", "other-name", JOB_UID)),
                &[],
            ),
            job_being_deleted: false,
            want_claimed: vec![],
            want_adopted: vec![],
            want_released: vec![],
        },
        Case {
            name: "orphan without owners: adopted, counts as carrying the finalizer",
            pod: pod_owned_by("orphan", None, &[]).without_finalizer(),
            job_being_deleted: false,
            want_claimed: vec![("orphan", true)],
            want_adopted: vec!["orphan"],
            want_released: vec![],
        },
        Case {
            name: "orphan owned (not as controller) by others: adopted, counts as carrying the finalizer",
            pod: pod_owned_by("orphan", None, &["rs-uid"]).without_finalizer(),
            job_being_deleted: false,
            want_claimed: vec![("orphan", true)],
            want_adopted: vec!["orphan"],
            want_released: vec![],
        },
        Case {
            name: "orphan naming the Job (not as controller), no finalizer: adopted as it is",
            pod: pod_owned_by("named", None, &[JOB_UID]).without_finalizer(),
            job_being_deleted: false,
            want_claimed: vec![("named", false)],
            want_adopted: vec!["named"],
            want_released: vec![],
        },
        Case {
            name: "orphan naming the Job (not as controller), with the finalizer: adopted, tracked",
            pod: pod_owned_by("named", None, &["rs-uid", JOB_UID]),
            job_being_deleted: false,
            want_claimed: vec![("named", true)],
            want_adopted: vec!["named"],
            want_released: vec![],
        },
        Case {
            name: "orphan not matching the selector: ignored",
            pod: unmatched_orphan,
            job_being_deleted: false,
            want_claimed: vec![],
            want_adopted: vec![],
            want_released: vec![],
        },
        Case {
            name: "orphan being deleted: ignored",
            pod: pod_owned_by("deleting", None, &[]).deleted(t(1), Some(30)),
            job_being_deleted: false,
            want_claimed: vec![],
            want_adopted: vec![],
            want_released: vec![],
        },
        Case {
            name: "orphan, Job being deleted: ignored",
            pod: pod_owned_by("orphan", None, &[]),
            job_being_deleted: true,
            want_claimed: vec![],
            want_adopted: vec![],
            want_released: vec![],
        },
    ];
    for case in cases {
        let mut job = job();
        job.being_deleted = case.job_being_deleted;
        let pods = [case.pod];
        let claim = claim_pods(&job, &pods, &Never).expect("never interrupted");
        let actions = claim.actions;
        let got_claimed: Vec<(&str, bool)> = claim
            .owned
            .iter()
            .map(|p| p.pod())
            .chain(claim.adopted.iter().map(|p| p.as_ref()))
            .map(|p| (p.name.as_str(), p.has_tracking_finalizer))
            .collect();
        assert_eq!(got_claimed, case.want_claimed, "{}: claimed", case.name);
        let refs = |want_adopt: bool| -> Vec<&str> {
            actions
                .iter()
                .filter_map(|a| match (a, want_adopt) {
                    (Action::AdoptPods(r), true) | (Action::ReleasePods(r), false) => Some(r),
                    _ => None,
                })
                .flatten()
                .map(|r| r.name.as_str())
                .collect()
        };
        assert_eq!(refs(true), case.want_adopted, "{}: adopted", case.name);
        assert_eq!(refs(false), case.want_released, "{}: released", case.name);
    }
}

/// Regression (issue 11, parity edge 1): a Failed orphan that already names
/// the Job in a non-controller owner reference and has no finalizer was
/// counted at once (failed one higher, a finalizer removal, a backoff record);
/// upstream adopts it and leaves it uncounted in that sync.
#[test]
fn regression_failed_orphan_naming_the_job_is_adopted_uncounted() {
    let mut job = job();
    job.status.start_time = Some(t(0));
    job.status.active = 1;
    job.status.ready = Some(0);
    job.status.terminating = Some(0);
    let orphan = pod_owned_by("named", None, &[JOB_UID])
        .phase(PodPhase::Failed)
        .exit("main", 1, t(5))
        .without_finalizer();
    let plan = decide(&snapshot(job, vec![pod("run"), orphan], t(10)));
    assert!(
        matches!(&plan.actions[0], Action::AdoptPods(p) if p.len() == 1 && p[0].name == "named"),
        "adopted: {:?}",
        plan.actions
    );
    assert!(finalizer_removals(&plan).is_empty(), "{:?}", plan.actions);
    assert!(statuses(&plan).iter().all(|s| s.failed == 0));
    assert_eq!(
        plan.state.backoff.failures_after_last_success, 0,
        "no failure recorded"
    );
}

/// The finished-Job cleanup leaves a pod whose controller reference carries
/// the Job's uid under another kind alone, as upstream's orphan worker does,
/// and cleans one naming the uid under another Job name (the worker cannot
/// resolve it, so treats it as orphaned).
#[test]
fn finished_job_cleanup_checks_the_controllers_kind() {
    let mut job = job();
    job.status.conditions.push(new_condition(
        JobConditionType::Complete,
        ConditionStatus::True,
        "CompletionsReached",
        "",
        t(1),
    ));
    let pods = vec![
        pod_owned_by(
            "rs",
            Some(owner("apps/v1", "ReplicaSet", JOB_NAME, JOB_UID)),
            &[],
        )
        .phase(PodPhase::Succeeded),
        pod_owned_by("v2", Some(owner("batch/v2", "Job", JOB_NAME, JOB_UID)), &[])
            .phase(PodPhase::Succeeded),
        pod_owned_by("renamed", Some(owner("batch/v1", "Job", "x", JOB_UID)), &[])
            .phase(PodPhase::Succeeded),
        pod_owned_by("orphan", None, &[JOB_UID]).phase(PodPhase::Succeeded),
    ];
    let plan = decide(&snapshot(job, pods, t(10)));
    assert_eq!(finalizer_removals(&plan), vec!["orphan", "renamed"]);
}
