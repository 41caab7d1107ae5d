//! Finalizer tracking (KEP-2307): finished pods go into
//! `uncountedTerminatedPods`, then lose their finalizer, then move into the
//! counters — in that order, so a pod is never lost or counted twice however
//! the plan is cut short. Upstream's trackJobStatusAndRemoveFinalizers.
//!
//! `track_status_and_remove_finalizers` reads the facts it needs and returns
//! the actions it decided; the sync appends them to the plan.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet, HashSet};

use crate::conditions::{ensure_condition, new_condition};
use crate::index_set::IndexSet;
use crate::indexed::{in_completion_index_order, valid_index};
use crate::model::{
    ConditionStatus, Job, JobCondition, JobConditionType, JobStatus, Pod, PodFailurePolicyAction,
    PodPhase,
};
use crate::plan::{Action, Event, EventType, FailurePolicyActionCounts, PodRef};
use crate::pod_failure_policy::counts_failure;
use crate::sync_pod::SyncPod;
use crate::time::Time;

/// Most finished pods recorded in `uncountedTerminatedPods` by one status write.
pub const MAX_UNCOUNTED_PODS: usize = 500;

/// The facts of one sync that tracking reads; it changes none of them.
pub(crate) struct TrackingFacts<'a> {
    /// The Job being synced.
    pub job: &'a Job,
    /// The snapshot's time.
    pub now: Time,
    /// The Job's pods after adoption and release.
    pub pods: &'a [SyncPod<'a>],
    /// UIDs of pods whose finalizer removal is issued but not yet observed.
    pub finalizer_removals_pending: &'a BTreeSet<String>,
    /// Succeeded UIDs in the Job's `uncountedTerminatedPods` before this sync.
    pub initially_uncounted_succeeded: &'a BTreeSet<&'a str>,
    /// Failed UIDs in the Job's `uncountedTerminatedPods` before this sync.
    pub initially_uncounted_failed: &'a BTreeSet<&'a str>,
    /// Indexes in the Job's `completedIndexes` before this sync (Indexed Jobs).
    pub prev_succeeded_indexes: &'a IndexSet,
    /// Succeeded indexes, recorded or not (Indexed Jobs).
    pub succeeded_indexes: &'a IndexSet,
    /// Failed indexes, when per-index backoff limits are in use.
    pub failed_indexes: Option<&'a IndexSet>,
    /// Per index, the failed pod kept until its replacement exists.
    pub delayed: &'a BTreeMap<i32, SyncPod<'a>>,
    /// The condition the sync decided the Job finishes with (FailureTarget,
    /// SuccessCriteriaMet, or Failed after an earlier FailureTarget); `None`
    /// while it keeps running.
    pub finished_condition: Option<&'a JobCondition>,
}

/// What tracking decided.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct TrackingDecision {
    /// Status writes, finalizer removals and events, in the order they must be applied.
    pub actions: Vec<Action>,
    /// Whether `actions` starts with the flush of newly recorded pods; upstream
    /// saves the sync's new backoff record only once that write succeeds.
    pub flushed: bool,
    /// How many failed pods each pod failure policy action handled.
    pub policy_actions: FailurePolicyActionCounts,
}

/// The status a sync starts writing from: the Job's own, with an empty
/// uncounted list where it had none (the first flush writes the list).
pub(crate) fn working_status(job: &Job) -> JobStatus {
    let mut status = job.status.clone();
    status
        .uncounted_terminated_pods
        .get_or_insert_with(Default::default);
    status
}

/// Records finished pods, removes their finalizers, counts them, and finishes
/// the Job when it may. `status` is the status being written, with the pod
/// counts of this sync already in it; `needs_flush` says whether it already
/// needs a write.
pub(crate) fn track_status_and_remove_finalizers(
    facts: &TrackingFacts<'_>,
    mut status: JobStatus,
    mut needs_flush: bool,
) -> TrackingDecision {
    let job = facts.job;
    let indexed = job.spec.is_indexed();
    let mut decision = TrackingDecision::default();
    let pods = if indexed {
        in_completion_index_order(facts.pods)
    } else {
        Cow::Borrowed(facts.pods)
    };
    let pending = facts.finalizer_removals_pending;
    // Whether a uid's pod still carries the finalizer is asked only of the
    // uids the uncounted lists held before this sync: the pods this sync
    // records lose their finalizer in it. So only those pods are collected.
    let initially_uncounted = |uid: &str| {
        facts.initially_uncounted_succeeded.contains(uid)
            || facts.initially_uncounted_failed.contains(uid)
    };
    let mut with_finalizer: HashSet<&str> = pods
        .iter()
        .filter(|p| {
            p.has_tracking_finalizer && initially_uncounted(&p.uid) && !pending.contains(&p.uid)
        })
        .map(|p| p.pod().uid.as_str())
        .collect();

    needs_flush |= count_uncounted_without_finalizer(&mut status, &with_finalizer);

    let mut remove_finalizer: Vec<&Pod> = Vec::new();
    let mut new_succeeded_indexes: Vec<i32> = Vec::new();
    let mut reached_max_uncounted = false;
    let job_failing = facts
        .finished_condition
        .is_some_and(|c| c.condition_type != JobConditionType::SuccessCriteriaMet);
    for &pod in pods.iter() {
        if !pod.has_tracking_finalizer || pending.contains(&pod.uid) {
            continue;
        }
        let considered_failed = pod.failed;
        if !can_remove_finalizer(facts, &pod, considered_failed) {
            continue;
        }
        remove_finalizer.push(pod.pod());
        let uncounted = status
            .uncounted_terminated_pods
            .get_or_insert_with(Default::default);
        if pod.phase == PodPhase::Succeeded
            && !facts.initially_uncounted_failed.contains(pod.uid.as_str())
        {
            if indexed {
                if let Some(ix) = valid_index(job, &pod)
                    && !facts.prev_succeeded_indexes.contains(ix)
                {
                    new_succeeded_indexes.push(ix);
                    needs_flush = true;
                }
            } else if !facts
                .initially_uncounted_succeeded
                .contains(pod.uid.as_str())
            {
                uncounted.succeeded.push(pod.uid.clone());
                needs_flush = true;
            }
        } else if (considered_failed || job_failing)
            && !facts.initially_uncounted_failed.contains(pod.uid.as_str())
            && (!indexed || valid_index(job, &pod).is_some())
        {
            let action = pod.policy_action(job);
            record_policy_action(&mut decision.policy_actions, action);
            if counts_failure(action) {
                uncounted.failed.push(pod.uid.clone());
                needs_flush = true;
            }
        }
        if new_succeeded_indexes.len() + uncounted.succeeded.len() + uncounted.failed.len()
            >= MAX_UNCOUNTED_PODS
        {
            reached_max_uncounted = true;
            break;
        }
    }

    if indexed {
        let succeeded_indexes = facts
            .succeeded_indexes
            .union(&IndexSet::from_indexes(new_succeeded_indexes));
        let completed = succeeded_indexes.to_string();
        needs_flush |= completed != status.completed_indexes;
        status.succeeded = i32::try_from(succeeded_indexes.total()).unwrap_or(i32::MAX);
        status.completed_indexes = completed;
        let failed = facts.failed_indexes.map(ToString::to_string);
        if status.failed_indexes != failed {
            status.failed_indexes = failed;
            needs_flush = true;
        }
    }

    // The interim condition is written first; the terminal one follows once nothing is left running.
    let terminal = facts.finished_condition.map(|cond| {
        let (written, terminal) = interim_and_terminal(cond, &status, facts.now);
        if let Some(interim) = written {
            status.conditions.push(interim);
            needs_flush = true;
        }
        terminal
    });

    if needs_flush {
        decision
            .actions
            .push(Action::UpdateStatus(Box::new(status.clone())));
        decision.flushed = true;
        needs_flush = false;
    }
    if !remove_finalizer.is_empty() {
        let mut refs: Vec<PodRef> = remove_finalizer.iter().map(|p| PodRef::from(*p)).collect();
        refs.sort();
        for pod in &remove_finalizer {
            with_finalizer.remove(pod.uid.as_str());
        }
        decision.actions.push(Action::RemoveFinalizers(refs));
    }
    needs_flush |= count_uncounted_without_finalizer(&mut status, &with_finalizer);

    let finished = match &terminal {
        Some(cond) if !reached_max_uncounted => enact_job_finished(cond, &mut status, facts.now),
        _ => false,
    };
    if finished || needs_flush {
        decision
            .actions
            .push(Action::UpdateStatus(Box::new(status.clone())));
        if let (true, Some(cond)) = (finished, &terminal) {
            decision
                .actions
                .extend(job_finished_events(job, cond, &status));
        }
    }
    decision
}

/// The interim condition to add to the status (when it is not there yet) and
/// the terminal condition it leads to: FailureTarget leads to Failed,
/// SuccessCriteriaMet to Complete; any other condition is terminal already.
fn interim_and_terminal(
    cond: &JobCondition,
    status: &JobStatus,
    now: Time,
) -> (Option<JobCondition>, JobCondition) {
    let terminal_type = match cond.condition_type {
        JobConditionType::FailureTarget => JobConditionType::Failed,
        JobConditionType::SuccessCriteriaMet => JobConditionType::Complete,
        _ => return (None, cond.clone()),
    };
    // A SuccessCriteriaMet already in the status is kept as it is; FailureTarget is always added.
    let write_interim = cond.condition_type == JobConditionType::FailureTarget
        || !status.has_true_condition(&JobConditionType::SuccessCriteriaMet);
    let terminal = new_condition(
        terminal_type,
        ConditionStatus::True,
        &cond.reason,
        &cond.message,
        now,
    );
    (write_interim.then(|| cond.clone()), terminal)
}

/// Moves every uncounted UID whose pod no longer carries the finalizer (or is
/// gone) into the counters; `with_finalizer` holds, of the uncounted UIDs, those
/// whose pod still carries it. Returns whether anything moved.
fn count_uncounted_without_finalizer(
    status: &mut JobStatus,
    with_finalizer: &HashSet<&str>,
) -> bool {
    let Some(uncounted) = status.uncounted_terminated_pods.as_mut() else {
        return false;
    };
    let before = (uncounted.succeeded.len(), uncounted.failed.len());
    uncounted
        .succeeded
        .retain(|uid| with_finalizer.contains(uid.as_str()));
    uncounted
        .failed
        .retain(|uid| with_finalizer.contains(uid.as_str()));
    let moved_succeeded = before.0 - uncounted.succeeded.len();
    let moved_failed = before.1 - uncounted.failed.len();
    status.succeeded = status
        .succeeded
        .saturating_add(i32::try_from(moved_succeeded).unwrap_or(i32::MAX));
    status.failed = status
        .failed
        .saturating_add(i32::try_from(moved_failed).unwrap_or(i32::MAX));
    moved_succeeded + moved_failed > 0
}

/// A pod's finalizer may go when the Job is being deleted or finishing, the pod
/// succeeded, or it failed and is not the one its index keeps for its replacement.
fn can_remove_finalizer(facts: &TrackingFacts<'_>, pod: &Pod, considered_failed: bool) -> bool {
    if facts.job.being_deleted
        || facts.finished_condition.is_some()
        || pod.phase == PodPhase::Succeeded
    {
        return true;
    }
    if !considered_failed {
        return false;
    }
    // With per-index limits, the pod kept for its index's replacement keeps its finalizer.
    let kept_for_replacement = facts.job.spec.uses_backoff_limit_per_index()
        && pod
            .completion_index
            .and_then(|ix| facts.delayed.get(&ix))
            .is_some_and(|kept| kept.uid == pod.uid);
    !kept_for_replacement
}

/// Writes the terminal condition once nothing is uncounted and no pod is
/// terminating. Returns whether the Job finished.
fn enact_job_finished(terminal: &JobCondition, status: &mut JobStatus, now: Time) -> bool {
    let uncounted = status
        .uncounted_terminated_pods
        .as_ref()
        .map_or(0, |u| u.succeeded.len() + u.failed.len());
    if uncounted > 0 || status.terminating.unwrap_or(0) > 0 {
        return false;
    }
    ensure_condition(
        &mut status.conditions,
        terminal.condition_type.clone(),
        ConditionStatus::True,
        &terminal.reason,
        &terminal.message,
        now,
    );
    if terminal.condition_type == JobConditionType::Complete {
        status.completion_time = terminal.last_transition_time;
    }
    true
}

/// The events upstream records when a Job finishes.
fn job_finished_events(job: &Job, terminal: &JobCondition, status: &JobStatus) -> Vec<Action> {
    let event = |event_type, reason: &str, message: &str| {
        Action::RecordEvent(Event {
            event_type,
            reason: reason.into(),
            message: message.into(),
        })
    };
    if terminal.condition_type != JobConditionType::Complete {
        return vec![event(
            EventType::Warning,
            &terminal.reason,
            &terminal.message,
        )];
    }
    let mut events = Vec::new();
    if job.spec.completions.is_some_and(|c| status.succeeded > c) {
        events.push(event(
            EventType::Warning,
            "TooManySucceededPods",
            "Too many succeeded pods running after completion count reached",
        ));
    }
    events.push(event(EventType::Normal, "Completed", "Job completed"));
    events
}

/// Counts a failed pod handled by a policy action, for metrics.
fn record_policy_action(
    counts: &mut FailurePolicyActionCounts,
    action: Option<&PodFailurePolicyAction>,
) {
    match action {
        Some(PodFailurePolicyAction::FailJob) => counts.fail_job += 1,
        Some(PodFailurePolicyAction::FailIndex) => counts.fail_index += 1,
        Some(PodFailurePolicyAction::Ignore) => counts.ignore += 1,
        Some(PodFailurePolicyAction::Count) => counts.count += 1,
        // An action this version does not know is not counted.
        Some(PodFailurePolicyAction::Unknown(_)) | None => {}
    }
}

#[cfg(test)]
mod tests;
