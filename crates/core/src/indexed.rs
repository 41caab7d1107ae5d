//! Indexed Jobs: completed and failed indexes, per-index failure counts, the
//! failed pod kept per index until its replacement exists, and pod identity
//! (generateName, hostname, index annotations and env).

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::ops::Deref;

use crate::backoff::finished_time_for;
use crate::index_set::IndexSet;
use crate::model::{Job, Pod, PodFailurePolicyAction, PodPhase};
use crate::pod_failure_policy::counts_failure;
use crate::sync_pod::SyncPod;

/// Longest generateName prefix the API server accepts before adding 5 random characters.
pub const MAX_GENERATE_NAME_PREFIX: usize = 58;

/// The pod's completion index when it is valid for this Job (below `completions`).
pub fn valid_index(job: &Job, pod: &Pod) -> Option<i32> {
    let completions = job.spec.completions.unwrap_or(0);
    pod.completion_index.filter(|ix| *ix < completions)
}

/// The completed indexes before this sync (parsed leniently from the status)
/// and after it (plus the succeeded pods that still carry the finalizer).
pub fn succeeded_indexes(job: &Job, pods: &[impl Deref<Target = Pod>]) -> (IndexSet, IndexSet) {
    let completions = job.spec.completions.unwrap_or(0);
    let previous = IndexSet::parse_lenient(&job.status.completed_indexes, completions);
    let new = pods.iter().filter_map(|p| {
        (p.phase == PodPhase::Succeeded && p.has_tracking_finalizer)
            .then(|| valid_index(job, p))
            .flatten()
    });
    let all = previous.union(&IndexSet::from_indexes(new));
    (previous, all)
}

/// Whether this failed pod fails its index: a FailIndex rule matched, or the
/// failure counts and the index already had `backoffLimitPerIndex` failures.
pub fn is_index_failed(job: &Job, pod: &Pod) -> bool {
    index_failed(job, &SyncPod::new(job, pod))
}

/// [`is_index_failed`], reading the pod's policy match from the sync.
pub(crate) fn index_failed(job: &Job, pod: &SyncPod<'_>) -> bool {
    if !pod.failed {
        return false;
    }
    let action = pod.policy_action(job);
    if action == Some(&PodFailurePolicyAction::FailIndex) {
        return true;
    }
    let limit = job.spec.backoff_limit_per_index.unwrap_or(i32::MAX);
    counts_failure(action) && pod.index_failure_count >= limit
}

/// The failed indexes: those in the status plus those failed by pods that still carry the finalizer.
pub(crate) fn failed_indexes(job: &Job, pods: &[SyncPod<'_>]) -> IndexSet {
    let completions = job.spec.completions.unwrap_or(0);
    let previous = job
        .status
        .failed_indexes
        .as_deref()
        .map(|s| IndexSet::parse_lenient(s, completions))
        .unwrap_or_default();
    let new = pods.iter().filter_map(|p| {
        (p.has_tracking_finalizer && index_failed(job, p))
            .then(|| valid_index(job, p))
            .flatten()
    });
    previous.union(&IndexSet::from_indexes(new))
}

/// Per index, the failed pod whose finalizer stays until a replacement exists:
/// the one with the highest absolute failure count, and among those the latest
/// to finish. Indexes that succeeded, failed or have an active pod (`active_indexes`) have none.
pub(crate) fn pods_with_delayed_deletion<'a>(
    job: &Job,
    pods: &[SyncPod<'a>],
    active_indexes: &IndexSet,
    succeeded: &IndexSet,
    failed: &IndexSet,
    finalizer_removals_pending: &std::collections::BTreeSet<String>,
) -> BTreeMap<i32, SyncPod<'a>> {
    let mut kept: BTreeMap<i32, SyncPod<'a>> = BTreeMap::new();
    for pod in pods {
        if !pod.has_tracking_finalizer || finalizer_removals_pending.contains(&pod.uid) {
            continue;
        }
        let Some(ix) = valid_index(job, pod) else {
            continue;
        };
        if !pod.failed
            || succeeded.contains(ix)
            || failed.contains(ix)
            || active_indexes.contains(ix)
        {
            continue;
        }
        let replace = match kept.get(&ix) {
            None => true,
            Some(current) => {
                absolute_failure_count(current) <= absolute_failure_count(pod)
                    && finished_time_for(job, pod) >= finished_time_for(job, current)
            }
        };
        if replace {
            kept.insert(ix, *pod);
        }
    }
    kept
}

/// Counted plus ignored failures recorded on the pod, summed in int32 as
/// upstream does: annotations near i32::MAX wrap to negative.
fn absolute_failure_count(pod: &Pod) -> i32 {
    pod.index_failure_count
        .wrapping_add(pod.index_ignored_failure_count)
}

/// The failure-count annotations for the pod replacing `replaced` (counted, ignored).
pub(crate) fn new_index_failure_counts(job: &Job, replaced: Option<&SyncPod<'_>>) -> (i32, i32) {
    let Some(pod) = replaced else { return (0, 0) };
    let (mut counted, mut ignored) = (pod.index_failure_count, pod.index_ignored_failure_count);
    let counts = counts_failure(pod.policy_action(job));
    // Go's int32 increment: an ignored count at i32::MAX wraps to negative,
    // and a negative count is then not written.
    if counts {
        counted = counted.wrapping_add(1);
    } else {
        ignored = ignored.wrapping_add(1);
    }
    (counted, ignored)
}

/// `<job name>-<index>-`, with the job name cut so the prefix fits the API's limit.
pub fn pod_generate_name_with_index(job_name: &str, index: i32) -> String {
    let suffix = format!("-{index}-");
    let prefix = format!("{job_name}{suffix}");
    if prefix.len() <= MAX_GENERATE_NAME_PREFIX {
        return prefix;
    }
    let mut cut = MAX_GENERATE_NAME_PREFIX.saturating_sub(suffix.len());
    // Names are DNS labels (ASCII); stay on a char boundary all the same.
    while !job_name.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}{suffix}", &job_name[..cut])
}

/// Sorts pods by completion index, unknown (None) first, keeping the input order of equals.
pub fn sort_by_completion_index(pods: &mut [impl Deref<Target = Pod>]) {
    pods.sort_by_key(|p| completion_index_order(p));
}

/// The pods in completion index order, as [`sort_by_completion_index`] leaves
/// them; borrowed when they already are (the common case), copied otherwise.
pub fn in_completion_index_order<P: Deref<Target = Pod> + Clone>(pods: &[P]) -> Cow<'_, [P]> {
    if pods.is_sorted_by_key(|p| completion_index_order(p)) {
        return Cow::Borrowed(pods);
    }
    let mut sorted = pods.to_vec();
    sort_by_completion_index(&mut sorted);
    Cow::Owned(sorted)
}

/// The sort key of completion index order: unknown (None) before index 0.
fn completion_index_order(pod: &Pod) -> i64 {
    pod.completion_index.map_or(-1, i64::from)
}

#[cfg(test)]
mod tests;
