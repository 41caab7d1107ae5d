//! A Job with completions = 2^31-1 and parallelism = 10^4 decides in memory
//! proportional to its pods and the intervals of its index sets, not to its
//! completions: measured with a counting global allocator (bytes, not time).
//!
//! One test per binary, so no other test allocates while it measures.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]
// The counting allocator is the one unsafe thing here.
#![allow(unsafe_code)]

#[path = "it/generators/mod.rs"]
mod generators;

mod counting_alloc;

use generators::{base_job, running_pod, snapshot, t};
use job_decider_core::index_set::IndexSet;
use job_decider_core::model::*;
use job_decider_core::plan::{Action, Plan};
use job_decider_core::sync::decide;
use job_decider_core::validate::validate_job;

#[global_allocator]
static ALLOCATOR: counting_alloc::Counting = counting_alloc::Counting;

const NOW: i64 = 100_000;
const PARALLELISM: i32 = 10_000;

/// The widest Job the API allows: Indexed, completions 2^31-1, parallelism
/// 10^4, per-index limits (which above 10^5 completions need maxFailedIndexes <= 10^4).
fn huge_job() -> Job {
    let mut job = base_job();
    job.spec.completion_mode = CompletionMode::Indexed;
    job.spec.completions = Some(i32::MAX);
    job.spec.parallelism = PARALLELISM;
    job.spec.backoff_limit = i32::MAX;
    job.spec.backoff_limit_per_index = Some(1);
    job.spec.max_failed_indexes = Some(10_000);
    assert_eq!(validate_job(&job), vec![]);
    job
}

/// The written statuses' index sets, as interval counts.
fn written_intervals(plan: &Plan) -> Vec<(usize, usize)> {
    plan.actions
        .iter()
        .filter_map(|a| match a {
            Action::UpdateStatus(st) => Some(st),
            _ => None,
        })
        .map(|st| {
            let completed = IndexSet::parse_lenient(&st.completed_indexes, i32::MAX);
            let failed =
                IndexSet::parse_lenient(st.failed_indexes.as_deref().unwrap_or(""), i32::MAX);
            (completed.intervals().len(), failed.intervals().len())
        })
        .collect()
}

fn creations(plan: &Plan) -> usize {
    plan.actions
        .iter()
        .map(|a| match a {
            Action::CreatePods(c) => c.len(),
            _ => 0,
        })
        .sum()
}

#[test]
fn two_to_the_31_completions_cost_pods_and_intervals_not_indexes() {
    // No pods yet: the first 500 of 2^31-1 pending indexes, from an empty status.
    let s = snapshot(huge_job(), vec![], t(NOW));
    let (plan, peak) = counting_alloc::measured(|| decide(&s));
    assert_eq!(creations(&plan), 500, "creations are capped per sync");
    let created: Vec<i32> = plan
        .actions
        .iter()
        .flat_map(|a| match a {
            Action::CreatePods(c) => c.iter().filter_map(|c| c.completion_index).collect(),
            _ => vec![],
        })
        .collect();
    assert_eq!(created, (0..500).collect::<Vec<_>>());
    // 500 pod creations of a few hundred bytes each; a bitmap of the indexes alone would be 256 MiB.
    eprintln!("empty Job: {peak} bytes at peak");
    assert!(peak < 2 << 20, "empty job: {peak} bytes at peak");

    // A Job well under way: huge completed ranges with holes, a few failed
    // indexes, 10^4 running pods, 200 new successes and 50 new failures.
    let mut job = huge_job();
    job.status.completed_indexes = "0-999999,1100000-1999999,3000000-2147483000".into();
    job.status.succeeded = 1_000_000 + 900_000 + (2_147_483_000 - 3_000_000 + 1);
    job.status.failed_indexes = Some("1000000-1000004,1000100".into());
    job.status.uncounted_terminated_pods = Some(UncountedTerminatedPods::default());
    let mut pods = Vec::new();
    for i in 0..10_000 {
        let ix = 2_000_000 + i;
        let mut p = running_pod(&format!("run-{i}"), &format!("uid-run-{i}"), t(NOW - 500));
        p.completion_index = Some(ix);
        pods.push(p);
    }
    for i in 0..200 {
        let mut p = running_pod(&format!("ok-{i}"), &format!("uid-ok-{i}"), t(NOW - 900));
        p.completion_index = Some(1_000_200 + 2 * i);
        p.phase = PodPhase::Succeeded;
        pods.push(p);
    }
    for i in 0..50 {
        let mut p = running_pod(&format!("bad-{i}"), &format!("uid-bad-{i}"), t(NOW - 900));
        p.completion_index = Some(1_050_000 + i);
        p.index_failure_count = 1;
        p.phase = PodPhase::Failed;
        pods.push(p);
    }
    let pod_count = pods.len();
    let s = snapshot(job, pods, t(NOW));
    let (plan, peak) = counting_alloc::measured(|| decide(&s));
    // At parallelism already: nothing to create or delete.
    assert_eq!(creations(&plan), 0);
    assert!(
        !plan
            .actions
            .iter()
            .any(|a| matches!(a, Action::DeletePods(_)))
    );
    // Each written set has at most its intervals plus one per newly finished pod.
    let writes = written_intervals(&plan);
    assert!(
        !writes.is_empty(),
        "the new successes and failures are written"
    );
    for (completed, failed) in writes {
        assert!(completed <= 3 + 200, "{completed} completed intervals");
        assert!(failed <= 2 + 50, "{failed} failed intervals");
    }
    eprintln!("{pod_count} pods: {peak} bytes at peak");
    // Proportional to the pods (a few KiB each at most), not to 2^31 indexes.
    assert!(
        peak < pod_count * 4096,
        "{peak} bytes at peak for {pod_count} pods"
    );
}
