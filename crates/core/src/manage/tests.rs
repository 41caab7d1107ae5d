//! manageJob's rules as a table of named cases, in the style of upstream's
//! TestControllerSyncJob: the facts of one sync in, the decision out.
//!
//! Slow-start batching (1, 2, 4, … creations at a time) is not here: the core
//! decides every creation of a sync at once and the applier batches them.

use super::*;
use crate::fixtures::*;
use crate::model::*;

/// What a case expects manage_job to decide, reduced to what the rule is about.
#[derive(Debug, PartialEq)]
enum Want {
    Nothing,
    /// The completion index of each created pod (`None` for NonIndexed Jobs).
    Create(Vec<Option<i32>>),
    /// The names of the deleted pods.
    Delete(Vec<String>),
    Wait(Duration),
}

fn create(n: usize) -> Want {
    Want::Create(vec![None; n])
}

fn create_indexes(indexes: &[i32]) -> Want {
    Want::Create(indexes.iter().copied().map(Some).collect())
}

fn delete(names: &[&str]) -> Want {
    Want::Delete(names.iter().map(|n| n.to_string()).collect())
}

fn wait(secs: u64) -> Want {
    Want::Wait(Duration::from_secs(secs))
}

/// One named case: the facts manage reads (owned), and the wanted decision.
struct Case {
    name: &'static str,
    job: Job,
    pods: Vec<Pod>,
    now: Time,
    /// Succeeded pods (NonIndexed) or indexes (Indexed), as the sync counted them.
    succeeded: i32,
    succeeded_indexes: Vec<i32>,
    failed_indexes: Option<Vec<i32>>,
    /// Names of the failed pods kept for their index's replacement.
    delayed: Vec<&'static str>,
    backoff: BackoffRecord,
    want: Want,
}

/// A case with no successes, failures or backoff, at t(1000).
fn case(name: &'static str, job: Job, pods: Vec<Pod>, want: Want) -> Case {
    Case {
        name,
        job,
        pods,
        now: t(1000),
        succeeded: 0,
        succeeded_indexes: vec![],
        failed_indexes: None,
        delayed: vec![],
        backoff: BackoffRecord::default(),
        want,
    }
}

/// Lends the case's facts as the sync would (active pods are the pods'
/// active ones) and reduces the decision to a [`Want`].
fn run(c: &Case) -> (Want, ManageDecision) {
    let pods: Vec<SyncPod> = c.pods.iter().map(|p| SyncPod::new(&c.job, p)).collect();
    let active_pods: Vec<&Pod> = c.pods.iter().filter(|p| p.is_active()).collect();
    let succeeded_indexes = IndexSet::from_indexes(c.succeeded_indexes.iter().copied());
    let failed_indexes = c
        .failed_indexes
        .as_ref()
        .map(|ix| IndexSet::from_indexes(ix.iter().copied()));
    let delayed: BTreeMap<i32, SyncPod> = pods
        .iter()
        .filter(|p| c.delayed.contains(&p.name.as_str()))
        .filter_map(|p| Some((p.completion_index?, *p)))
        .collect();
    let active_indexes =
        IndexSet::from_indexes(active_pods.iter().filter_map(|p| p.completion_index));
    let facts = ManageFacts {
        job: &c.job,
        now: c.now,
        pods: &pods,
        active_pods: &active_pods,
        succeeded: c.succeeded,
        active_indexes: &active_indexes,
        succeeded_indexes: &succeeded_indexes,
        failed_indexes: failed_indexes.as_ref(),
        delayed: &delayed,
        backoff: &c.backoff,
    };
    let decision = manage_job(&facts);
    let got = match &decision {
        ManageDecision::Nothing => Want::Nothing,
        ManageDecision::Create(c) => Want::Create(c.iter().map(|c| c.completion_index).collect()),
        ManageDecision::Delete(d) => Want::Delete(d.iter().map(|d| d.pod.name.clone()).collect()),
        ManageDecision::WaitForBackoff(w) => Want::Wait(*w),
    };
    (got, decision)
}

fn job_with(parallelism: i32, completions: Option<i32>) -> Job {
    let mut j = job();
    j.spec.parallelism = parallelism;
    j.spec.completions = completions;
    j
}

fn suspended(mut j: Job) -> Job {
    j.spec.suspend = true;
    j
}

fn replace_only_failed(mut j: Job) -> Job {
    j.spec.pod_replacement_policy = PodReplacementPolicy::Failed;
    j
}

fn per_index_limit(mut j: Job) -> Job {
    j.spec.backoff_limit_per_index = Some(1);
    j
}

/// A pod being deleted (still Running) since t(900).
fn terminating(name: &str) -> Pod {
    pod(name).deleted(t(900), Some(30))
}

/// A failed pod whose container exited at `at`.
fn failed_at(name: &str, at: Time) -> Pod {
    pod(name).phase(PodPhase::Failed).exit("main", 1, at)
}

/// `n` running pods p000, p001, … created at t(0), t(1), …
fn many_running(n: usize) -> Vec<Pod> {
    (0..n)
        .map(|i| {
            let name = format!("p{i:03}");
            let uid = format!("{name}-uid");
            running_pod(&name, &uid, t(i64::try_from(i).unwrap_or(i64::MAX)))
        })
        .collect()
}

#[test]
fn manage_job_rules() {
    let cases = vec![
        // Creations towards the wanted number of active pods.
        case(
            "a new Job creates parallelism pods",
            job_with(2, Some(5)),
            vec![],
            create(2),
        ),
        case(
            "missing pods are created beside the active ones",
            job_with(3, Some(5)),
            vec![pod("a")],
            create(2),
        ),
        Case {
            succeeded: 4,
            ..case(
                "only what completions still need is created",
                job_with(3, Some(5)),
                vec![],
                create(1),
            )
        },
        case(
            "a Job with its active pods does nothing",
            job_with(2, Some(5)),
            vec![pod("a"), pod("b")],
            Want::Nothing,
        ),
        case(
            "a work queue without a success creates parallelism pods",
            job_with(2, None),
            vec![],
            create(2),
        ),
        Case {
            succeeded: 1,
            ..case(
                "a work queue with a success creates nothing more",
                job_with(3, None),
                vec![pod("a")],
                Want::Nothing,
            )
        },
        case(
            "at most 500 creations per sync",
            job_with(600, Some(600)),
            vec![],
            create(MAX_POD_CREATE_DELETE_PER_SYNC),
        ),
        // Deletions.
        Case {
            succeeded: 2,
            ..case(
                "over parallelism the least valuable pods are deleted",
                job_with(3, Some(3)),
                vec![
                    pod("ready").condition("Ready", t(10)),
                    pod("running"),
                    pod("pending").phase(PodPhase::Pending),
                ],
                delete(&["pending", "running"]),
            )
        },
        case(
            "at most 500 deletions per sync, the newest first",
            job_with(1, Some(1)),
            many_running(600),
            Want::Delete((100..600).map(|i| format!("p{i:03}")).collect()),
        ),
        case(
            "suspend deletes every active pod",
            suspended(job_with(3, Some(3))),
            vec![
                pod("a"),
                pod("b").phase(PodPhase::Pending).without_finalizer(),
                pod("done").phase(PodPhase::Succeeded),
            ],
            delete(&["a", "b"]),
        ),
        case(
            "a suspended Job without active pods does nothing",
            suspended(job_with(3, Some(3))),
            vec![pod("done").phase(PodPhase::Succeeded)],
            Want::Nothing,
        ),
        // Indexed Jobs.
        Case {
            succeeded: 1,
            succeeded_indexes: vec![1],
            ..case(
                "indexed: the first missing indexes are created",
                indexed_job(5, 3),
                vec![pod("a").index(0)],
                create_indexes(&[2, 3]),
            )
        },
        Case {
            failed_indexes: Some(vec![0]),
            ..case(
                "indexed: a failed index is not created again",
                per_index_limit(indexed_job(3, 2)),
                vec![],
                create_indexes(&[1, 2]),
            )
        },
        case(
            "indexed: duplicate and out-of-range indexes are deleted, never created beside",
            indexed_job(3, 3),
            vec![
                pod("a").index(0).condition("Ready", t(10)),
                pod("b").index(0),
                pod("c").index(5),
            ],
            delete(&["b", "c"]),
        ),
        // podReplacementPolicy.
        case(
            "TerminatingOrFailed replaces a terminating pod at once",
            job_with(2, Some(2)),
            vec![pod("a"), terminating("t")],
            create(1),
        ),
        case(
            "Failed waits for a terminating pod to fail",
            replace_only_failed(job_with(2, Some(2))),
            vec![pod("a"), terminating("t")],
            Want::Nothing,
        ),
        case(
            "indexed, TerminatingOrFailed: the terminating pod's index is created again",
            indexed_job(3, 3),
            vec![pod("a").index(0), terminating("t").index(1)],
            create_indexes(&[1, 2]),
        ),
        case(
            "indexed, Failed: the terminating pod's index waits",
            replace_only_failed(indexed_job(3, 3)),
            vec![pod("a").index(0), terminating("t").index(1)],
            create_indexes(&[2]),
        ),
        // Pod-failure backoff.
        Case {
            backoff: BackoffRecord {
                failures_after_last_success: 1,
                last_failure_time: Some(t(996)),
            },
            ..case(
                "a pending backoff delays creation",
                job_with(1, Some(1)),
                vec![],
                wait(6),
            )
        },
        Case {
            backoff: BackoffRecord {
                failures_after_last_success: 2,
                last_failure_time: Some(t(900)),
            },
            ..case(
                "an expired backoff lets creation go ahead",
                job_with(1, Some(1)),
                vec![],
                create(1),
            )
        },
        Case {
            backoff: BackoffRecord {
                failures_after_last_success: 1,
                last_failure_time: Some(t(996)),
            },
            ..case(
                "a backoff never delays deletions",
                job_with(1, Some(2)),
                vec![pod("a"), pod("b").phase(PodPhase::Pending)],
                delete(&["b"]),
            )
        },
        Case {
            delayed: vec!["f1"],
            ..case(
                "per index: the failed index waits for its own backoff",
                per_index_limit(indexed_job(2, 2)),
                vec![pod("a").index(0), failed_at("f1", t(997)).index(1)],
                wait(7),
            )
        },
        Case {
            delayed: vec!["f1"],
            backoff: BackoffRecord {
                failures_after_last_success: 1,
                last_failure_time: Some(t(996)),
            },
            ..case(
                "per index: a ready index is created while another waits, whatever the Job-wide record",
                per_index_limit(indexed_job(3, 3)),
                vec![pod("a").index(0), failed_at("f1", t(997)).index(1)],
                create_indexes(&[2]),
            )
        },
        Case {
            delayed: vec!["f1"],
            ..case(
                "per index: the replacement comes once the backoff expired",
                per_index_limit(indexed_job(2, 2)),
                vec![pod("a").index(0), failed_at("f1", t(900)).index(1)],
                create_indexes(&[1]),
            )
        },
    ];
    for c in &cases {
        let (got, decision) = run(c);
        assert_eq!(got, c.want, "case {:?}", c.name);
        // Deleted pods lose their finalizer first so they are never counted.
        if let ManageDecision::Delete(deletions) = &decision {
            for d in deletions {
                let pod = c.pods.iter().find(|p| p.name == d.pod.name);
                let has_finalizer = pod.is_some_and(|p| p.has_tracking_finalizer);
                assert_eq!(
                    d.remove_finalizer_first, has_finalizer,
                    "case {:?}, pod {}",
                    c.name, d.pod.name
                );
            }
        }
    }
}

#[test]
fn manage_job_replacement_carries_the_index_failure_counts() {
    let c = Case {
        delayed: vec!["f1"],
        ..case(
            "replacement of a twice-failed index",
            per_index_limit(indexed_job(2, 2)),
            vec![
                pod("a").index(0),
                failed_at("f1", t(100)).index(1).failure_counts(1, 2),
            ],
            create_indexes(&[1]),
        )
    };
    let (got, decision) = run(&c);
    assert_eq!(got, c.want);
    let ManageDecision::Create(creations) = decision else {
        panic!("expected creations, got {decision:?}");
    };
    let annotations = &creations[0].annotations;
    assert_eq!(
        annotations.get(INDEX_FAILURE_COUNT_KEY).map(String::as_str),
        Some("2")
    );
    assert_eq!(
        annotations
            .get(INDEX_IGNORED_FAILURE_COUNT_KEY)
            .map(String::as_str),
        Some("2")
    );
    assert_eq!(creations[0].hostname, "job-1");
    assert_eq!(creations[0].generate_name, "job-1-");
}
