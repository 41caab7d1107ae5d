//! Finalizer tracking's rules as a table of named cases, in the style of
//! upstream's TestTrackJobStatusAndRemoveFinalizers: the facts of one sync and
//! the status being written in, the ordered actions out.

use super::*;
use crate::fixtures::*;
use crate::indexed::{failed_indexes, pods_with_delayed_deletion, succeeded_indexes};
use crate::model::*;

/// One action of the decision, reduced to what the rules are about.
#[derive(Debug, PartialEq)]
enum Step {
    /// The first status write, recording newly finished pods (the sync saves
    /// its new backoff record with it).
    Flush(Written),
    /// A later status write.
    Status(Written),
    /// Finalizer removals, by pod name.
    RemoveFinalizers(Vec<String>),
    /// An event, by reason.
    Event(String),
}

/// The parts of a written status tracking decides.
#[derive(Debug, Default, PartialEq)]
struct Written {
    uncounted_succeeded: Vec<String>,
    uncounted_failed: Vec<String>,
    succeeded: i32,
    failed: i32,
    completed_indexes: String,
    failed_indexes: Option<String>,
    /// Condition types, in order.
    conditions: Vec<String>,
}

/// The UIDs of fixture pods, whose UID is `<name>-uid`.
fn uids(names: &[&str]) -> Vec<String> {
    names.iter().map(|n| format!("{n}-uid")).collect()
}

fn strings(names: &[&str]) -> Vec<String> {
    names.iter().map(|n| n.to_string()).collect()
}

/// A written status with nothing recorded, counted or finished.
fn w() -> Written {
    Written::default()
}

impl Written {
    fn uncounted(mut self, succeeded: &[&str], failed: &[&str]) -> Self {
        self.uncounted_succeeded = uids(succeeded);
        self.uncounted_failed = uids(failed);
        self
    }
    fn counted(mut self, succeeded: i32, failed: i32) -> Self {
        self.succeeded = succeeded;
        self.failed = failed;
        self
    }
    fn completed(mut self, indexes: &str) -> Self {
        self.completed_indexes = indexes.into();
        self
    }
    fn failed_indexes(mut self, indexes: &str) -> Self {
        self.failed_indexes = Some(indexes.into());
        self
    }
    fn conditions(mut self, types: &[&str]) -> Self {
        self.conditions = strings(types);
        self
    }
}

fn remove(names: &[&str]) -> Step {
    Step::RemoveFinalizers(strings(names))
}

fn event(reason: &str) -> Step {
    Step::Event(reason.into())
}

/// One named case: the Job (its status is the one before the sync), its pods,
/// the finished condition the sync decided, and the wanted actions.
struct Case {
    name: &'static str,
    job: Job,
    pods: Vec<Pod>,
    /// Names of pods whose finalizer removal is issued but not yet observed.
    pending: Vec<&'static str>,
    finished: Option<JobCondition>,
    /// Whether the status already needs a write (the pod counts changed).
    needs_flush: bool,
    want: Vec<Step>,
}

fn case(name: &'static str, job: Job, pods: Vec<Pod>, want: Vec<Step>) -> Case {
    Case {
        name,
        job,
        pods,
        pending: vec![],
        finished: None,
        needs_flush: false,
        want,
    }
}

/// Lends the case's facts as the sync gathers them and reduces the decision to steps.
fn run(c: &Case) -> (Vec<Step>, TrackingDecision) {
    let job = &c.job;
    let pods: Vec<SyncPod> = c.pods.iter().map(|p| SyncPod::new(job, p)).collect();
    let active = pods.iter().filter(|p| p.is_active());
    let count = |n: usize| i32::try_from(n).unwrap_or(i32::MAX);
    let mut status = working_status(job);
    status.active = count(active.clone().count());
    status.ready = Some(count(active.filter(|p| p.is_ready()).count()));
    status.terminating = Some(count(pods.iter().filter(|p| p.is_terminating()).count()));
    let uncounted = job
        .status
        .uncounted_terminated_pods
        .clone()
        .unwrap_or_default();
    let initially_succeeded: BTreeSet<&str> =
        uncounted.succeeded.iter().map(String::as_str).collect();
    let initially_failed: BTreeSet<&str> = uncounted.failed.iter().map(String::as_str).collect();
    let pending: BTreeSet<String> = uids(&c.pending).into_iter().collect();
    let (prev_succeeded, succeeded) = if job.spec.is_indexed() {
        succeeded_indexes(job, &pods)
    } else {
        (IndexSet::new(), IndexSet::new())
    };
    let failed = job
        .spec
        .uses_backoff_limit_per_index()
        .then(|| failed_indexes(job, &pods));
    let active_pods: Vec<&Pod> = c.pods.iter().filter(|p| p.is_active()).collect();
    let delayed = match &failed {
        Some(failed) => {
            let active_indexes =
                IndexSet::from_indexes(active_pods.iter().filter_map(|p| p.completion_index));
            pods_with_delayed_deletion(job, &pods, &active_indexes, &succeeded, failed, &pending)
        }
        None => BTreeMap::new(),
    };
    let facts = TrackingFacts {
        job,
        now: t(1000),
        pods: &pods,
        finalizer_removals_pending: &pending,
        initially_uncounted_succeeded: &initially_succeeded,
        initially_uncounted_failed: &initially_failed,
        prev_succeeded_indexes: &prev_succeeded,
        succeeded_indexes: &succeeded,
        failed_indexes: failed.as_ref(),
        delayed: &delayed,
        finished_condition: c.finished.as_ref(),
    };
    let decision = track_status_and_remove_finalizers(&facts, status, c.needs_flush);
    let steps = decision
        .actions
        .iter()
        .enumerate()
        .map(|(i, action)| match action {
            Action::UpdateStatus(s) => {
                let written = written(s);
                if i == 0 && decision.flushed {
                    Step::Flush(written)
                } else {
                    Step::Status(written)
                }
            }
            Action::RemoveFinalizers(refs) => {
                Step::RemoveFinalizers(refs.iter().map(|r| r.name.clone()).collect())
            }
            Action::RecordEvent(e) => Step::Event(e.reason.clone()),
            other => panic!("tracking decided {other:?}"),
        })
        .collect();
    (steps, decision)
}

fn written(status: &JobStatus) -> Written {
    let uncounted = status.uncounted_terminated_pods.clone().unwrap_or_default();
    Written {
        uncounted_succeeded: uncounted.succeeded,
        uncounted_failed: uncounted.failed,
        succeeded: status.succeeded,
        failed: status.failed,
        completed_indexes: status.completed_indexes.clone(),
        failed_indexes: status.failed_indexes.clone(),
        conditions: status
            .conditions
            .iter()
            .map(|c| format!("{:?}", c.condition_type))
            .collect(),
    }
}

fn with_completions(completions: i32) -> Job {
    let mut j = job();
    j.spec.completions = Some(completions);
    j
}

/// The Job's status before the sync lists these pods as uncounted.
fn recorded(mut j: Job, succeeded: &[&str], failed: &[&str]) -> Job {
    j.status.uncounted_terminated_pods = Some(UncountedTerminatedPods {
        succeeded: uids(succeeded),
        failed: uids(failed),
    });
    j
}

fn with_conditions(mut j: Job, conditions: &[JobCondition]) -> Job {
    j.status.conditions = conditions.to_vec();
    j
}

fn per_index_limit(mut j: Job) -> Job {
    j.spec.backoff_limit_per_index = Some(1);
    j
}

fn being_deleted(mut j: Job) -> Job {
    j.being_deleted = true;
    j
}

fn condition(condition_type: JobConditionType, reason: &str) -> JobCondition {
    new_condition(
        condition_type,
        ConditionStatus::True,
        reason,
        "message",
        t(500),
    )
}

fn failure_target() -> Option<JobCondition> {
    Some(condition(
        JobConditionType::FailureTarget,
        "BackoffLimitExceeded",
    ))
}

fn success_criteria_met() -> Option<JobCondition> {
    Some(condition(
        JobConditionType::SuccessCriteriaMet,
        "CompletionsReached",
    ))
}

fn succeeded(name: &str) -> Pod {
    pod(name).phase(PodPhase::Succeeded)
}

fn failed(name: &str) -> Pod {
    pod(name).phase(PodPhase::Failed).exit("main", 1, t(100))
}

/// A pod being deleted, still Running.
fn terminating(name: &str) -> Pod {
    pod(name).deleted(t(900), Some(30))
}

#[test]
fn track_status_and_remove_finalizers_rules() {
    let many_failed: Vec<String> = (0..=MAX_UNCOUNTED_PODS)
        .map(|i| format!("f{i:03}"))
        .collect();
    let first_500: Vec<&str> = many_failed[..MAX_UNCOUNTED_PODS]
        .iter()
        .map(String::as_str)
        .collect();
    let cases = vec![
        // Recorded, then finalizer removed, then counted.
        case(
            "a succeeded pod is recorded, loses its finalizer, then is counted",
            with_completions(2),
            vec![succeeded("s"), pod("r")],
            vec![
                Step::Flush(w().uncounted(&["s"], &[])),
                remove(&["s"]),
                Step::Status(w().counted(1, 0)),
            ],
        ),
        case(
            "a failed pod is recorded, loses its finalizer, then is counted",
            job(),
            vec![failed("f")],
            vec![
                Step::Flush(w().uncounted(&[], &["f"])),
                remove(&["f"]),
                Step::Status(w().counted(0, 1)),
            ],
        ),
        case(
            "a pod an earlier sync recorded loses its finalizer without being recorded again",
            recorded(with_completions(2), &["s"], &[]),
            vec![succeeded("s")],
            vec![remove(&["s"]), Step::Status(w().counted(1, 0))],
        ),
        Case {
            pending: vec!["f"],
            ..case(
                "a recorded pod whose finalizer removal is pending is counted, not removed again",
                recorded(job(), &[], &["f"]),
                vec![failed("f")],
                vec![Step::Flush(w().counted(0, 1))],
            )
        },
        case(
            "a recorded pod that is gone is counted",
            recorded(with_completions(2), &["gone"], &[]),
            vec![],
            vec![Step::Flush(w().counted(1, 0))],
        ),
        case(
            "a running pod keeps its finalizer and nothing is written",
            job(),
            vec![pod("r")],
            vec![],
        ),
        Case {
            needs_flush: true,
            ..case(
                "changed pod counts are written even with nothing to record",
                job(),
                vec![pod("r")],
                vec![Step::Flush(w())],
            )
        },
        case(
            "a pod without the finalizer is neither recorded nor removed",
            job(),
            vec![failed("f").without_finalizer()],
            vec![],
        ),
        case(
            "a Job being deleted frees its running pods without counting them",
            being_deleted(job()),
            vec![pod("r")],
            vec![remove(&["r"])],
        ),
        // Finishing: the interim condition first, the terminal one once nothing is left.
        Case {
            finished: failure_target(),
            ..case(
                "FailureTarget: Failed waits while a pod is terminating",
                job(),
                vec![failed("f"), terminating("t")],
                vec![
                    Step::Flush(
                        w().uncounted(&[], &["f", "t"])
                            .conditions(&["FailureTarget"]),
                    ),
                    remove(&["f", "t"]),
                    Step::Status(w().counted(0, 2).conditions(&["FailureTarget"])),
                ],
            )
        },
        Case {
            finished: failure_target(),
            ..case(
                "FailureTarget: a failing Job records its running pods as failed",
                job(),
                vec![pod("r"), failed("f")],
                vec![
                    Step::Flush(
                        w().uncounted(&[], &["r", "f"])
                            .conditions(&["FailureTarget"]),
                    ),
                    remove(&["f", "r"]),
                    Step::Status(w().counted(0, 2).conditions(&["FailureTarget", "Failed"])),
                    event("BackoffLimitExceeded"),
                ],
            )
        },
        Case {
            finished: failure_target(),
            ..case(
                "FailureTarget: Failed and its event once the failures are counted",
                job(),
                vec![failed("f")],
                vec![
                    Step::Flush(w().uncounted(&[], &["f"]).conditions(&["FailureTarget"])),
                    remove(&["f"]),
                    Step::Status(w().counted(0, 1).conditions(&["FailureTarget", "Failed"])),
                    event("BackoffLimitExceeded"),
                ],
            )
        },
        Case {
            finished: Some(condition(JobConditionType::Failed, "BackoffLimitExceeded")),
            ..case(
                "an earlier FailureTarget ends as Failed without being written again",
                with_conditions(
                    job(),
                    &[condition(
                        JobConditionType::FailureTarget,
                        "BackoffLimitExceeded",
                    )],
                ),
                vec![],
                vec![
                    Step::Status(w().conditions(&["FailureTarget", "Failed"])),
                    event("BackoffLimitExceeded"),
                ],
            )
        },
        Case {
            finished: success_criteria_met(),
            ..case(
                "SuccessCriteriaMet: Complete and its event once the successes are counted",
                with_completions(2),
                vec![succeeded("s1"), succeeded("s2")],
                vec![
                    Step::Flush(
                        w().uncounted(&["s1", "s2"], &[])
                            .conditions(&["SuccessCriteriaMet"]),
                    ),
                    remove(&["s1", "s2"]),
                    Step::Status(
                        w().counted(2, 0)
                            .conditions(&["SuccessCriteriaMet", "Complete"]),
                    ),
                    event("Completed"),
                ],
            )
        },
        Case {
            finished: success_criteria_met(),
            ..case(
                "SuccessCriteriaMet: more successes than completions warn before Completed",
                with_completions(1),
                vec![succeeded("s1"), succeeded("s2")],
                vec![
                    Step::Flush(
                        w().uncounted(&["s1", "s2"], &[])
                            .conditions(&["SuccessCriteriaMet"]),
                    ),
                    remove(&["s1", "s2"]),
                    Step::Status(
                        w().counted(2, 0)
                            .conditions(&["SuccessCriteriaMet", "Complete"]),
                    ),
                    event("TooManySucceededPods"),
                    event("Completed"),
                ],
            )
        },
        Case {
            finished: success_criteria_met(),
            ..case(
                "SuccessCriteriaMet already written is not written twice",
                with_conditions(
                    with_completions(1),
                    &[condition(
                        JobConditionType::SuccessCriteriaMet,
                        "CompletionsReached",
                    )],
                ),
                vec![],
                vec![
                    Step::Status(w().conditions(&["SuccessCriteriaMet", "Complete"])),
                    event("Completed"),
                ],
            )
        },
        Case {
            finished: failure_target(),
            ..case(
                "at most 500 pods recorded per write; the terminal condition waits for the rest",
                job(),
                many_failed.iter().map(|n| failed(n)).collect(),
                vec![
                    Step::Flush(
                        w().uncounted(&[], &first_500)
                            .conditions(&["FailureTarget"]),
                    ),
                    remove(&first_500),
                    Step::Status(w().counted(0, 500).conditions(&["FailureTarget"])),
                ],
            )
        },
        // Indexed Jobs.
        case(
            "indexed: a succeeded index goes into completedIndexes, not the uncounted list",
            indexed_job(3, 3),
            vec![pod("r").index(0), succeeded("s").index(1)],
            vec![
                Step::Flush(w().counted(1, 0).completed("1")),
                remove(&["s"]),
            ],
        ),
        case(
            "indexed: a pod with an out-of-range index loses its finalizer uncounted",
            indexed_job(3, 3),
            vec![failed("f").index(7)],
            vec![remove(&["f"])],
        ),
        case(
            "per index: the failed pod kept for its replacement keeps its finalizer",
            per_index_limit(indexed_job(2, 2)),
            vec![pod("a").index(0), failed("f").index(1)],
            vec![Step::Flush(w().failed_indexes(""))],
        ),
        case(
            "per index: a pod that failed its index is recorded and freed",
            per_index_limit(indexed_job(2, 2)),
            vec![pod("a").index(0), failed("f").index(1).failure_counts(1, 0)],
            vec![
                Step::Flush(w().uncounted(&[], &["f"]).failed_indexes("1")),
                remove(&["f"]),
                Step::Status(w().counted(0, 1).failed_indexes("1")),
            ],
        ),
    ];
    for c in &cases {
        let (got, _) = run(c);
        assert_eq!(got, c.want, "case {:?}", c.name);
    }
}

#[test]
fn track_status_and_remove_finalizers_counts_policy_actions_and_skips_ignored_failures() {
    let rule = |action, code| exit_rule(action, vec![code]);
    let mut j = job();
    j.spec.pod_failure_policy = Some(PodFailurePolicy {
        rules: vec![
            rule(PodFailurePolicyAction::Ignore, 1),
            rule(PodFailurePolicyAction::Count, 2),
        ],
    });
    let c = case(
        "an ignored failure loses its finalizer uncounted; a counted one is recorded",
        j,
        vec![
            failed("ignored"),
            pod("counted")
                .phase(PodPhase::Failed)
                .exit("main", 2, t(100)),
        ],
        vec![
            Step::Flush(w().uncounted(&[], &["counted"])),
            remove(&["counted", "ignored"]),
            Step::Status(w().counted(0, 1)),
        ],
    );
    let (got, decision) = run(&c);
    assert_eq!(got, c.want, "case {:?}", c.name);
    assert_eq!(
        decision.policy_actions,
        FailurePolicyActionCounts {
            ignore: 1,
            count: 1,
            ..FailurePolicyActionCounts::default()
        }
    );
}
