//! Which pods to create and which to delete (upstream's manageJob).
//!
//! A sync either deletes or creates, never both, and at most 500 of either.
//! `manage_job` reads the facts it needs and returns its decision; the sync
//! folds that into the plan and the pod counts.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::extended::backoff_schedule::{BackoffSchedule, index_backoff};
use crate::extended::node_avoidance;
use crate::index_set::IndexSet;
use crate::indexed::{
    in_completion_index_order, new_index_failure_counts, pod_generate_name_with_index,
};
use crate::model::{
    BackoffRecord, COMPLETION_INDEX_ENV, COMPLETION_INDEX_KEY, INDEX_FAILURE_COUNT_KEY,
    INDEX_IGNORED_FAILURE_COUNT_KEY, JOB_API_VERSION, JOB_KIND, JOB_TRACKING_FINALIZER, Job,
    OwnerRef, Pod,
};
use crate::plan::{EnvVarFromField, PodCreation, PodDeletion, PodRef};
use crate::pod_order::cmp_active_pods;
use crate::sync_pod::SyncPod;
use crate::time::Time;

/// Most pods created or deleted in one sync.
pub const MAX_POD_CREATE_DELETE_PER_SYNC: usize = 500;

/// The facts of one sync that manageJob reads; it changes none of them.
pub(crate) struct ManageFacts<'a> {
    /// The Job being synced.
    pub job: &'a Job,
    /// The snapshot's time.
    pub now: Time,
    /// The Job's pods after adoption and release.
    pub pods: &'a [SyncPod<'a>],
    /// The pods among them that are neither finished nor being deleted.
    pub active_pods: &'a [&'a Pod],
    /// Succeeded pods (NonIndexed) or indexes (Indexed), counted or not.
    pub succeeded: i32,
    /// The completion indexes of the active pods (Indexed Jobs only).
    pub active_indexes: &'a IndexSet,
    /// Succeeded indexes (Indexed Jobs only).
    pub succeeded_indexes: &'a IndexSet,
    /// Failed indexes, when per-index backoff limits are in use.
    pub failed_indexes: Option<&'a IndexSet>,
    /// Per index, the failed pod kept until its replacement exists.
    pub delayed: &'a BTreeMap<i32, SyncPod<'a>>,
    /// The pod-failure backoff record including this sync's newly finished pods.
    pub backoff: &'a BackoffRecord,
}

/// What manageJob decided: one kind of change at most, so a sync never both
/// creates and deletes.
#[derive(Debug, Default, PartialEq)]
pub(crate) enum ManageDecision {
    /// The Job has the active pods it wants.
    #[default]
    Nothing,
    /// Create these pods.
    Create(Vec<PodCreation>),
    /// Delete these pods; each loses its finalizer first, so it is never counted.
    Delete(Vec<PodDeletion>),
    /// Pods are missing, but a pod-failure backoff holds their creation back this long.
    WaitForBackoff(Duration),
}

/// The numbers behind a manage decision, for its explanation: plain copies,
/// gathered whether or not anyone asks (they cost nothing).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct ManageWhy {
    /// The Job is suspended: every active pod goes.
    pub suspended: bool,
    /// Active pods the Job wants.
    pub want_active: i32,
    /// Active pods it has.
    pub active: i32,
    /// Terminating pods that hold their place (podReplacementPolicy Failed).
    pub terminating: i32,
    /// Of the deletions, pods with a duplicate or out-of-range completion index.
    pub index_conflicts: usize,
    /// The backoff that holds creation back, when it does.
    pub backoff: Option<BackoffHold>,
}

/// A pod-failure backoff holding back pod creation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BackoffHold {
    /// The failures the delay counts.
    pub failures: i32,
    /// When the last of them happened.
    pub last_failure: Time,
    /// The whole delay after them.
    pub delay: Duration,
    /// The index whose replacement waits (per-index backoff); `None` for the Job's.
    pub index: Option<i32>,
}

/// Decides which pods to create or delete to bring the Job towards the
/// number of active pods it wants.
#[cfg(test)]
pub(crate) fn manage_job(facts: &ManageFacts<'_>) -> ManageDecision {
    manage_job_why(facts).0
}

/// [`manage_job`], with the numbers behind the decision.
pub(crate) fn manage_job_why(facts: &ManageFacts<'_>) -> (ManageDecision, ManageWhy) {
    let job = facts.job;
    let mut why = ManageWhy {
        active: i32::try_from(facts.active_pods.len()).unwrap_or(i32::MAX),
        ..ManageWhy::default()
    };
    if job.spec.suspend {
        why.suspended = true;
        let (all, _) =
            active_pods_for_removal_counted(job, facts.active_pods, facts.active_pods.len());
        return (delete(&all), why);
    }

    // Counts beyond i32 cannot come from a valid snapshot.
    let active = i32::try_from(facts.active_pods.len()).unwrap_or(i32::MAX);
    let want_active = match job.spec.completions {
        None if facts.succeeded > 0 => active,
        None => job.spec.parallelism,
        Some(completions) => completions
            .saturating_sub(facts.succeeded)
            .min(job.spec.parallelism)
            .max(0),
    };

    why.want_active = want_active;
    let rm_at_least = usize::try_from(active.saturating_sub(want_active)).unwrap_or(0);
    let (mut to_delete, conflicts) =
        active_pods_for_removal_counted(job, facts.active_pods, rm_at_least);
    to_delete.truncate(MAX_POD_CREATE_DELETE_PER_SYNC);
    if !to_delete.is_empty() {
        why.index_conflicts = conflicts.min(to_delete.len());
        return (delete(&to_delete), why);
    }

    // Terminating pods hold their place only when they are replaced once failed.
    let terminating = if job.spec.only_replace_failed_pods() {
        let n = facts.pods.iter().filter(|p| p.is_terminating()).count();
        i32::try_from(n).unwrap_or(i32::MAX)
    } else {
        0
    };
    why.terminating = terminating;
    let diff = want_active
        .saturating_sub(terminating)
        .saturating_sub(active);
    if diff <= 0 {
        return (ManageDecision::Nothing, why);
    }
    if !job.spec.uses_backoff_limit_per_index() {
        let schedule = BackoffSchedule::for_job(job);
        let remaining = schedule.remaining(facts.backoff, facts.now);
        if !remaining.is_zero() {
            let failures = facts.backoff.failures_after_last_success;
            why.backoff = Some(BackoffHold {
                failures,
                last_failure: facts.backoff.last_failure_time.unwrap_or(facts.now),
                delay: schedule.delay(failures, None),
                index: None,
            });
            return (ManageDecision::WaitForBackoff(remaining), why);
        }
    }
    let diff = usize::try_from(diff)
        .unwrap_or(0)
        .min(MAX_POD_CREATE_DELETE_PER_SYNC);

    let mut creations: Vec<PodCreation> = if job.spec.is_indexed() {
        let mut indexes = first_pending_indexes(facts, diff);
        if job.spec.uses_backoff_limit_per_index() {
            let (now_ready, wait, waiting) = indexes_ready_to_create(facts, &indexes);
            if now_ready.is_empty() && !wait.is_zero() {
                why.backoff = waiting.and_then(|ix| {
                    let pod = facts.delayed.get(&ix)?;
                    let b = index_backoff(job, Some(pod), ix, facts.now);
                    Some(BackoffHold {
                        failures: b.failures,
                        last_failure: b.last_failure,
                        delay: b.delay,
                        index: Some(ix),
                    })
                });
                return (ManageDecision::WaitForBackoff(wait), why);
            }
            indexes = now_ready;
        }
        indexes
            .iter()
            .map(|&ix| indexed_pod_creation(facts, ix))
            .collect()
    } else {
        (0..diff)
            .map(|_| base_pod_creation(job, format!("{}-", job.name)))
            .collect()
    };
    if creations.is_empty() {
        return (ManageDecision::Nothing, why);
    }
    node_avoidance::avoid_failed_nodes(job, facts.pods, &mut creations);
    crate::extended::retry_limits::annotate_creations(job, facts.pods, &mut creations);
    (ManageDecision::Create(creations), why)
}

/// Deleting `pods` after removing their finalizer, so they are never counted.
fn delete(pods: &[&Pod]) -> ManageDecision {
    if pods.is_empty() {
        return ManageDecision::Nothing;
    }
    ManageDecision::Delete(pod_deletions(pods, true))
}

/// Upstream's firstPendingIndexes: the first `n` indexes below completions that
/// no active pod, success, failure (or, when only failed pods are replaced,
/// terminating pod) covers.
fn first_pending_indexes(facts: &ManageFacts<'_>, n: usize) -> Vec<i32> {
    let completions = facts.job.spec.completions.unwrap_or(0);
    let mut covered = facts.succeeded_indexes.union(facts.active_indexes);
    if facts.job.spec.only_replace_failed_pods() {
        let terminating = facts.pods.iter().filter(|p| p.is_terminating());
        covered = covered.union(&IndexSet::from_indexes(
            terminating.filter_map(|p| p.completion_index),
        ));
    }
    if let Some(failed) = facts.failed_indexes {
        covered = covered.union(failed);
    }
    covered.first_missing(n, completions)
}

/// The indexes whose per-index backoff has expired; when none has, the
/// shortest wait and the index it is for.
fn indexes_ready_to_create(
    facts: &ManageFacts<'_>,
    indexes: &[i32],
) -> (Vec<i32>, Duration, Option<i32>) {
    let mut ready = Vec::new();
    let mut shortest: Option<Duration> = None;
    let mut waiting = None;
    for &ix in indexes {
        let remaining = index_backoff(facts.job, facts.delayed.get(&ix), ix, facts.now).remaining;
        if remaining.is_zero() {
            ready.push(ix);
        } else if shortest.is_none_or(|s| remaining < s) {
            shortest = Some(remaining);
            waiting = Some(ix);
        }
    }
    if !ready.is_empty() {
        return (ready, Duration::ZERO, None);
    }
    (ready, shortest.unwrap_or_default(), waiting)
}

/// What every created pod gets beyond the template: the tracking finalizer
/// (unless the template has it) and the controller reference.
fn base_pod_creation(job: &Job, generate_name: String) -> PodCreation {
    let template_has_finalizer = job
        .spec
        .template
        .finalizers
        .iter()
        .any(|f| f == JOB_TRACKING_FINALIZER);
    PodCreation {
        generate_name,
        labels: BTreeMap::new(),
        annotations: BTreeMap::new(),
        finalizers: if template_has_finalizer {
            Vec::new()
        } else {
            vec![JOB_TRACKING_FINALIZER.to_string()]
        },
        hostname: String::new(),
        env: Vec::new(),
        completion_index: None,
        owner: OwnerRef {
            api_version: JOB_API_VERSION.into(),
            kind: JOB_KIND.into(),
            name: job.name.clone(),
            uid: job.uid.clone(),
        },
        avoid_nodes: None,
    }
}

/// An Indexed pod: its index as annotation and label, hostname, env and, with
/// per-index limits, the failure counts carried over from the pod it replaces.
fn indexed_pod_creation(facts: &ManageFacts<'_>, index: i32) -> PodCreation {
    let job = facts.job;
    let mut creation = base_pod_creation(job, pod_generate_name_with_index(&job.name, index));
    creation
        .annotations
        .insert(COMPLETION_INDEX_KEY.into(), index.to_string());
    creation
        .labels
        .insert(COMPLETION_INDEX_KEY.into(), index.to_string());
    creation.hostname = format!("{}-{index}", job.name);
    if !job.spec.template.completion_index_env_everywhere {
        creation.env.push(EnvVarFromField {
            name: COMPLETION_INDEX_ENV.into(),
            field_path: format!("metadata.labels['{COMPLETION_INDEX_KEY}']"),
        });
    }
    creation.completion_index = Some(index);
    if job.spec.uses_backoff_limit_per_index() {
        let (counted, ignored) = new_index_failure_counts(job, facts.delayed.get(&index));
        creation
            .annotations
            .insert(INDEX_FAILURE_COUNT_KEY.into(), counted.to_string());
        if ignored > 0 {
            creation
                .annotations
                .insert(INDEX_IGNORED_FAILURE_COUNT_KEY.into(), ignored.to_string());
        }
    }
    creation
}

/// Deletions of `pods`, sorted by name. With `finalizer_first`, each pod that
/// carries the tracking finalizer loses it before the delete, so it is never
/// counted (scale-down, suspend); without, it keeps it and is counted.
pub(crate) fn pod_deletions(pods: &[&Pod], finalizer_first: bool) -> Vec<PodDeletion> {
    let mut deletions: Vec<PodDeletion> = pods
        .iter()
        .map(|p| PodDeletion {
            pod: PodRef::from(*p),
            remove_finalizer_first: finalizer_first && p.has_tracking_finalizer,
            ready: p.is_ready(),
        })
        .collect();
    deletions.sort_by(|a, b| a.pod.cmp(&b.pod));
    deletions
}

/// Upstream's activePodsForRemoval: for Indexed Jobs every pod with an unknown
/// or out-of-range index and all but the most valuable pod of a repeated index;
/// then, up to `rm_at_least`, the least valuable of the rest.
pub fn active_pods_for_removal<'a>(
    job: &Job,
    pods: &[&'a Pod],
    rm_at_least: usize,
) -> Vec<&'a Pod> {
    active_pods_for_removal_counted(job, pods, rm_at_least).0
}

/// [`active_pods_for_removal`], with how many of the pods (the first ones)
/// go for a duplicate or out-of-range completion index rather than in excess.
fn active_pods_for_removal_counted<'a>(
    job: &Job,
    pods: &[&'a Pod],
    rm_at_least: usize,
) -> (Vec<&'a Pod>, usize) {
    let mut rm: Vec<&'a Pod> = Vec::new();
    // The pods left to choose from; for a NonIndexed Job all of them, copied only when needed.
    let mut left: Option<Vec<&'a Pod>> = None;
    if job.spec.is_indexed() {
        let completions = job.spec.completions.unwrap_or(0);
        let sorted = in_completion_index_order(pods);
        let mut kept = Vec::with_capacity(sorted.len());
        let mut group_by_value = Vec::new();
        for group in sorted.chunk_by(|a, b| a.completion_index == b.completion_index) {
            match group[0].completion_index {
                Some(ix) if ix < completions => {
                    group_by_value.clear();
                    group_by_value.extend_from_slice(group);
                    group_by_value.sort_by(|a, b| cmp_active_pods(a, b));
                    if let Some((most_valuable, rest)) = group_by_value.split_last() {
                        rm.extend_from_slice(rest);
                        kept.push(*most_valuable);
                    }
                }
                _ => rm.extend_from_slice(group),
            }
        }
        left = Some(kept);
    }
    let conflicts = rm.len();
    if rm.len() < rm_at_least {
        let mut left = left.unwrap_or_else(|| pods.to_vec());
        left.sort_by(|a, b| cmp_active_pods(a, b));
        let more = (rm_at_least - rm.len()).min(left.len());
        rm.extend_from_slice(&left[..more]);
    }
    (rm, conflicts)
}

#[cfg(test)]
mod tests;
