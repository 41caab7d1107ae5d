//! Scenario tests of one sync of a Job carrying an extended failure policy
//! document (through `sync::decide`, as `sync/tests.rs` does): the document's
//! actions have exactly the effects of upstream's, its rules come before
//! `spec.podFailurePolicy`, names give reasons, retry limits run out at
//! maxRetries + 1; and a Job without a document decides as before.

use std::sync::Arc;

use super::super::test_docs::*;
use crate::extended::RULE_MATCH_COUNTS_ANNOTATION;
use crate::fixtures::*;
use crate::model::ExtendedAction::{Count, FailIndex, FailJob, Ignore};
use crate::model::*;
use crate::model::{ExtendedFailurePolicy, PendingTimeout};
use crate::plan::{FailurePolicyActionCounts, Plan};
use crate::sync::decide;

fn deleted(plan: &Plan) -> Vec<&str> {
    deletions(plan)
        .iter()
        .map(|d| d.pod.name.as_str())
        .collect()
}

/// The True condition of this type in the plan's last status, as (reason, message).
fn condition(plan: &Plan, ty: JobConditionType) -> Option<(String, String)> {
    last_status(plan)
        .conditions
        .iter()
        .find(|c| c.condition_type == ty && c.status == ConditionStatus::True)
        .map(|c| (c.reason.clone(), c.message.clone()))
}

fn actions(fail_job: u32, fail_index: u32, ignore: u32, count: u32) -> FailurePolicyActionCounts {
    FailurePolicyActionCounts {
        fail_job,
        fail_index,
        ignore,
        count,
    }
}

/// A started NonIndexed Job: parallelism 2, completions 4, carrying `doc`.
fn doc_job(doc: Arc<ExtendedFailurePolicy>) -> Job {
    let mut job = with_document(job(), doc);
    job.spec.parallelism = 2;
    job.spec.completions = Some(4);
    job.status.start_time = Some(t(0));
    job
}

#[test]
fn a_named_fail_job_rule_gives_its_reason_to_failure_target_then_failed() {
    let doc = document(vec![rule(FailJob).named("oom").exit_in(&[(137, 137)])]);
    let pods = vec![failed_with("bad", 137, 5), pod("run")];
    let plan = decide(&snapshot(doc_job(doc.clone()), pods, t(10)));
    assert_eq!(
        condition(&plan, JobConditionType::FailureTarget),
        Some((
            "PodFailurePolicy_oom".into(),
            "Container main for pod default/bad failed with exit code 137 matching FailJob rule \"oom\"".into()
        ))
    );
    assert_eq!(deleted(&plan), vec!["run"]);
    assert_eq!(plan.failure_policy_actions, actions(1, 0, 0, 0));
    // Once the pods are gone, Failed takes the interim condition's reason.
    let mut job = doc_job(doc);
    job.status.conditions = last_status(&plan).conditions.clone();
    job.status.failed = 1;
    let gone = vec![failed_with("bad", 137, 5).without_finalizer()];
    let plan = decide(&snapshot(job, gone, t(20)));
    let (reason, _) = condition(&plan, JobConditionType::Failed).expect("Failed");
    assert_eq!(reason, "PodFailurePolicy_oom");
}

#[test]
fn an_unnamed_document_rule_keeps_upstreams_reason() {
    let doc = document(vec![
        rule(Count).exit_in(&[(1, 1)]),
        rule(FailJob).exit_in(&[(128, 255)]),
    ]);
    let plan = decide(&snapshot(
        doc_job(doc),
        vec![failed_with("bad", 139, 5)],
        t(10),
    ));
    assert_eq!(
        condition(&plan, JobConditionType::FailureTarget),
        Some((
            "PodFailurePolicy".into(),
            "Container main for pod default/bad failed with exit code 139 matching FailJob rule at index 1 of the failure policy document".into()
        ))
    );
}

#[test]
fn document_rules_come_before_spec_pod_failure_policy() {
    let doc = document(vec![rule(Ignore).named("drain").exit_in(&[(137, 137)])]);
    let mut job = doc_job(doc);
    job.spec.pod_failure_policy = Some(PodFailurePolicy {
        rules: vec![exit_rule(PodFailurePolicyAction::FailJob, vec![137, 42])],
    });
    // 137: the document's Ignore wins over the spec's FailJob; not counted.
    let plan = decide(&snapshot(
        job.clone(),
        vec![failed_with("ignored", 137, 5)],
        t(100),
    ));
    assert_eq!(condition(&plan, JobConditionType::FailureTarget), None);
    assert_eq!(last_status(&plan).failed, 0);
    assert_eq!(plan.failure_policy_actions, actions(0, 0, 1, 0));
    // 42: no document rule holds, so the spec's rule decides, in upstream's words.
    let plan = decide(&snapshot(job, vec![failed_with("bad", 42, 5)], t(100)));
    assert_eq!(
        condition(&plan, JobConditionType::FailureTarget),
        Some((
            "PodFailurePolicy".into(),
            "Container main for pod default/bad failed with exit code 42 matching FailJob rule at index 0".into()
        ))
    );
}

#[test]
fn a_document_count_counts_towards_backoff_limit() {
    let doc = document(vec![rule(Count).pod_reasons(&["UnexpectedAdmissionError"])]);
    let mut job = doc_job(doc);
    job.spec.backoff_limit = 0;
    let pods = vec![
        pod("bad")
            .phase(PodPhase::Failed)
            .pod_reason("UnexpectedAdmissionError"),
    ];
    let plan = decide(&snapshot(job, pods, t(10)));
    let (reason, _) = condition(&plan, JobConditionType::FailureTarget).expect("failing");
    assert_eq!(reason, "BackoffLimitExceeded");
    assert_eq!(plan.failure_policy_actions, actions(0, 0, 0, 1));
}

#[test]
fn a_document_fail_index_fails_the_index_and_ignore_is_not_counted() {
    let doc = document(vec![
        rule(FailIndex).container_reasons(Some("main"), &["ContainerCannotRun"]),
        rule(Ignore).on_condition("DisruptionTarget", ConditionStatus::True),
    ]);
    let mut job = with_document(indexed_job(3, 3), doc);
    job.spec.backoff_limit = i32::MAX;
    job.spec.backoff_limit_per_index = Some(2);
    job.status.start_time = Some(t(0));
    job.status.failed_indexes = Some(String::new());
    let pods = vec![
        pod("i0")
            .index(0)
            .phase(PodPhase::Failed)
            .exit("main", 128, t(5))
            .termination("main", false, "ContainerCannotRun", ""),
        pod("i1")
            .index(1)
            .phase(PodPhase::Failed)
            .exit("main", 143, t(5))
            .condition("DisruptionTarget", t(5)),
        pod("i2").index(2),
    ];
    let plan = decide(&snapshot(job, pods, t(100)));
    let status = last_status(&plan);
    assert_eq!(status.failed_indexes.as_deref(), Some("0"));
    assert_eq!(
        status.failed, 1,
        "the FailIndex failure counts, the ignored one does not"
    );
    // As upstream's: the failed index's pod is recorded now; the ignored pod
    // keeps its finalizer (and is recorded) once its replacement exists.
    assert_eq!(plan.failure_policy_actions, actions(0, 1, 0, 0));
    // Index 1's replacement carries the ignored failure, as upstream's Ignore does.
    let created = creations(&plan);
    assert_eq!(created.len(), 1);
    assert_eq!(created[0].completion_index, Some(1));
    assert_eq!(created[0].annotations[INDEX_FAILURE_COUNT_KEY], "0");
    assert_eq!(created[0].annotations[INDEX_IGNORED_FAILURE_COUNT_KEY], "1");
}

/// "oom": Count on 137, at most 2 retries, then `then`.
fn oom_doc(then: crate::model::ExtendedAction) -> Arc<ExtendedFailurePolicy> {
    document(vec![
        rule(Count)
            .named("oom")
            .exit_in(&[(137, 137)])
            .max_retries(2, then),
    ])
}

#[test]
fn non_indexed_retry_limit_runs_out_at_max_retries_plus_one() {
    let mut job = doc_job(oom_doc(FailJob));
    job.spec.backoff_limit = 10;
    // Two matches: within the limit, counted; the replacements carry the count.
    let two = vec![failed_with("a", 137, 10), failed_with("b", 137, 20)];
    let plan = decide(&snapshot(job.clone(), two.clone(), t(1000)));
    assert_eq!(condition(&plan, JobConditionType::FailureTarget), None);
    assert_eq!(plan.failure_policy_actions, actions(0, 0, 0, 2));
    let created = creations(&plan);
    assert_eq!(created.len(), 2);
    for c in &created {
        assert_eq!(c.annotations[RULE_MATCH_COUNTS_ANNOTATION], "oom=2");
    }
    // The third match fails the Job with the rule's reason.
    let mut three = two;
    three.push(failed_with("c", 137, 30));
    let plan = decide(&snapshot(job, three, t(1000)));
    assert_eq!(
        condition(&plan, JobConditionType::FailureTarget),
        Some((
            "PodFailurePolicy_oom".into(),
            "Container main for pod default/c failed with exit code 137 matching rule \"oom\" for the 3rd time in the Job: its 2 retries are used up".into()
        ))
    );
    assert_eq!(plan.failure_policy_actions, actions(1, 0, 0, 2));
}

#[test]
fn indexed_retry_limit_runs_out_per_index() {
    let mut job = with_document(indexed_job(3, 3), oom_doc(FailIndex));
    job.spec.backoff_limit = i32::MAX;
    job.spec.backoff_limit_per_index = Some(10);
    job.status.start_time = Some(t(0));
    job.status.failed_indexes = Some(String::new());
    job.status.failed = 2;
    let pods = vec![
        // Index 0: two matches counted earlier (finalizers gone), the third now.
        failed_with("i0-a", 137, 10).index(0).without_finalizer(),
        failed_with("i0-b", 137, 20)
            .index(0)
            .carried(&[("oom", 1)])
            .without_finalizer(),
        failed_with("i0-c", 137, 30).index(0).carried(&[("oom", 2)]),
        // Index 1: its first match.
        failed_with("i1-a", 137, 30).index(1),
        pod("i2").index(2),
    ];
    let plan = decide(&snapshot(job, pods, t(1000)));
    let status = last_status(&plan);
    assert_eq!(status.failed_indexes.as_deref(), Some("0"));
    // Index 1's pod is recorded once its replacement exists (upstream's delayed removal).
    assert_eq!(plan.failure_policy_actions, actions(0, 1, 0, 0));
    let created = creations(&plan);
    assert_eq!(created.len(), 1, "index 0 failed, index 2 runs");
    assert_eq!(created[0].completion_index, Some(1));
    assert_eq!(
        created[0].annotations[RULE_MATCH_COUNTS_ANNOTATION],
        "oom=1"
    );
    assert_eq!(created[0].annotations[INDEX_FAILURE_COUNT_KEY], "1");
}

#[test]
fn carried_counts_bound_the_ordinal_when_earlier_pods_were_deleted() {
    let job = doc_job(oom_doc(FailJob));
    // The two earlier failures are gone from the snapshot; the pod that
    // replaced them carries their count.
    let pods = vec![failed_with("c", 137, 30).carried(&[("oom", 2)]), pod("run")];
    let plan = decide(&snapshot(job.clone(), pods, t(1000)));
    let (reason, message) =
        condition(&plan, JobConditionType::FailureTarget).expect("the limit is used up");
    assert_eq!(reason, "PodFailurePolicy_oom");
    assert!(message.contains("for the 3rd time"), "{message}");
    // One carried match and one new: within the limit; the new pods carry 2.
    let pods = vec![failed_with("b", 137, 20).carried(&[("oom", 1)]), pod("run")];
    let plan = decide(&snapshot(job, pods, t(1000)));
    assert_eq!(condition(&plan, JobConditionType::FailureTarget), None);
    let created = creations(&plan);
    assert_eq!(created.len(), 1);
    assert_eq!(
        created[0].annotations[RULE_MATCH_COUNTS_ANNOTATION],
        "oom=2"
    );
}

#[test]
fn an_ignore_rule_with_a_limit_ignores_until_it_runs_out() {
    let doc = document(vec![
        rule(Ignore)
            .named("drain")
            .on_condition("DisruptionTarget", ConditionStatus::True)
            .max_retries(1, FailJob),
    ]);
    let job = doc_job(doc);
    let disrupted = |name: &str, at: i64| {
        pod(name)
            .phase(PodPhase::Failed)
            .condition("DisruptionTarget", t(at))
            .exit("main", 143, t(at))
    };
    let plan = decide(&snapshot(job.clone(), vec![disrupted("a", 10)], t(1000)));
    assert_eq!(last_status(&plan).failed, 0);
    assert_eq!(plan.failure_policy_actions, actions(0, 0, 1, 0));
    let plan = decide(&snapshot(
        job,
        vec![disrupted("a", 10), disrupted("b", 20)],
        t(1000),
    ));
    let (reason, _) = condition(&plan, JobConditionType::FailureTarget).expect("failing");
    assert_eq!(reason, "PodFailurePolicy_drain");
    assert_eq!(plan.failure_policy_actions, actions(1, 0, 1, 0));
    assert_eq!(last_status(&plan).failed, 1, "the exhausted match counts");
}

#[test]
fn a_pod_failed_for_its_pending_timeout_takes_the_pending_timeout_action() {
    let doc = |action| {
        Arc::new(ExtendedFailurePolicy {
            pending_timeout: Some(PendingTimeout {
                seconds: 300,
                reasons: vec!["ImagePullBackOff".into()],
                action,
            }),
            ..ExtendedFailurePolicy::default()
        })
    };
    let stuck = || {
        pod("stuck")
            .phase(PodPhase::Failed)
            .pending_timed_out()
            .pod_reason("ImagePullBackOff")
    };
    let plan = decide(&snapshot(doc_job(doc(FailJob)), vec![stuck()], t(400)));
    let (reason, message) = condition(&plan, JobConditionType::FailureTarget).expect("failing");
    assert_eq!(reason, "PodFailurePolicy_PendingTimeout");
    assert_eq!(
        message,
        "Pod default/stuck has condition job-decider.dev/PendingTimeout matching FailJob rule \"PendingTimeout\""
    );
    let plan = decide(&snapshot(doc_job(doc(Count)), vec![stuck()], t(400)));
    assert_eq!(condition(&plan, JobConditionType::FailureTarget), None);
    assert_eq!(plan.failure_policy_actions, actions(0, 0, 0, 1));
    assert_eq!(last_status(&plan).failed, 1);
}

/// Snapshots covering each upstream path a failed pod takes.
fn upstream_scenarios() -> Vec<Snapshot> {
    let mut policy_job = job();
    policy_job.spec.parallelism = 3;
    policy_job.spec.completions = Some(3);
    policy_job.status.start_time = Some(t(0));
    policy_job.spec.pod_failure_policy = Some(PodFailurePolicy {
        rules: vec![
            exit_rule(PodFailurePolicyAction::Ignore, vec![1]),
            exit_rule(PodFailurePolicyAction::Count, vec![2]),
            exit_rule(PodFailurePolicyAction::FailJob, vec![42]),
        ],
    });
    let mut per_index = indexed_job(3, 3);
    per_index.spec.backoff_limit = i32::MAX;
    per_index.spec.backoff_limit_per_index = Some(1);
    per_index.spec.pod_failure_policy = Some(PodFailurePolicy {
        rules: vec![exit_rule(PodFailurePolicyAction::FailIndex, vec![3])],
    });
    per_index.status.start_time = Some(t(0));
    let details = |p: Pod| {
        p.pod_reason("Evicted")
            .pod_message("CUDA error")
            .termination("main", false, "OOMKilled", "oom")
            .carried(&[("oom", 7)])
    };
    vec![
        snapshot(
            policy_job.clone(),
            vec![
                details(failed_with("ignored", 1, 5)),
                details(failed_with("counted", 2, 6)),
                details(pod("running")),
            ],
            t(10),
        ),
        snapshot(
            policy_job,
            vec![details(failed_with("fails", 42, 5)), pod("running")],
            t(10),
        ),
        snapshot(
            per_index,
            vec![
                details(failed_with("i0", 3, 5).index(0)),
                details(failed_with("i1", 9, 5).index(1)),
                details(pod("i2").index(2)),
            ],
            t(100),
        ),
        snapshot(
            job(),
            vec![details(failed_with("plain", 137, 5)), details(pod("run"))],
            t(7),
        ),
    ]
}

#[test]
fn without_a_document_pod_details_change_nothing() {
    for s in upstream_scenarios() {
        let mut bare = s.clone();
        for p in &mut bare.pods {
            p.failure_details = None;
        }
        let plan = decide(&s);
        assert_eq!(plan, decide(&bare), "{:?}", s.pods);
        for c in creations(&plan) {
            assert!(!c.annotations.contains_key(RULE_MATCH_COUNTS_ANNOTATION));
        }
    }
}

#[test]
fn a_document_whose_rules_never_hold_decides_as_no_document() {
    let never = document(vec![
        rule(FailJob).exit_in(&[(200, 200)]),
        rule(FailJob)
            .named("limited")
            .pod_reasons(&["NeverThis"])
            .max_retries(1, FailJob),
    ]);
    for s in upstream_scenarios() {
        for doc in [document(vec![]), never.clone()] {
            let mut with = s.clone();
            with.job.extended_failure_policy = Some(doc);
            assert_eq!(decide(&with), decide(&s), "{:?}", s.pods);
        }
    }
}

#[test]
fn a_document_ignore_is_an_ignored_failure_for_after_ignored_failure() {
    use crate::model::{BackoffSettings, IgnoredFailureDelay};
    for (after, creates) in [
        (IgnoredFailureDelay::Delay, false),
        (IgnoredFailureDelay::Immediate, true),
    ] {
        let mut doc = (*document(vec![rule(Ignore).named("drain").exit_in(&[(143, 143)])])).clone();
        doc.backoff = Some(BackoffSettings {
            base_seconds: 10,
            max_seconds: 600,
            factor: 2,
            jitter_percent: 0,
            after_ignored_failure: after,
        });
        let mut job = with_document(job(), Arc::new(doc));
        job.status.start_time = Some(t(0));
        let plan = decide(&snapshot(job, vec![failed_with("drained", 143, 5)], t(6)));
        assert_eq!(plan.failure_policy_actions, actions(0, 0, 1, 0));
        assert_eq!(!creations(&plan).is_empty(), creates, "{after:?}");
        assert_eq!(plan.requeue_after.is_some(), !creates, "{after:?}");
    }
}

#[test]
fn a_replacement_carries_both_the_rule_counts_and_the_failed_nodes() {
    use crate::extended::FAILED_NODES_ANNOTATION;
    use crate::model::{NodeAvoidance, NodeAvoidanceMode};
    let mut doc = (*oom_doc(FailJob)).clone();
    doc.node_avoidance = Some(NodeAvoidance {
        mode: NodeAvoidanceMode::Required,
        max_nodes: 5,
    });
    let mut job = with_document(job(), Arc::new(doc));
    job.status.start_time = Some(t(0));
    let mut failed = failed_with("a", 137, 5);
    failed.failure_details.get_or_insert_default().node_name = "node-1".into();
    let plan = decide(&snapshot(job, vec![failed], t(1000)));
    let created = creations(&plan);
    assert_eq!(created.len(), 1);
    assert_eq!(
        created[0].annotations[RULE_MATCH_COUNTS_ANNOTATION],
        "oom=1"
    );
    assert_eq!(created[0].annotations[FAILED_NODES_ANNOTATION], "node-1");
}
