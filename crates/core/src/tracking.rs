//! Finalizer tracking (KEP-2307): finished pods go into
//! `uncountedTerminatedPods`, then lose their finalizer, then move into the
//! counters — in that order, so a pod is never lost or counted twice however
//! the plan is cut short. Upstream's trackJobStatusAndRemoveFinalizers.

use std::collections::{BTreeSet, HashSet};

use crate::conditions::{ensure_condition, new_condition};
use crate::index_set::IndexSet;
use crate::indexed::{is_pod_failed, sort_by_completion_index, valid_index};
use crate::model::{
    ConditionStatus, JobConditionType, JobStatus, Pod, PodFailurePolicyAction, PodPhase,
};
use crate::plan::{Action, Event, EventType, PodRef};
use crate::pod_failure_policy::match_pod_failure_policy;
use crate::sync::SyncCtx;

/// Most finished pods recorded in `uncountedTerminatedPods` by one status write.
pub const MAX_UNCOUNTED_PODS: usize = 500;

/// Records finished pods, removes their finalizers, counts them, and finishes
/// the Job when it may; adds the status writes, finalizer removals and events
/// to the plan. `needs_flush` says whether the status already needs a write.
pub(crate) fn track_status_and_remove_finalizers(ctx: &mut SyncCtx<'_>, mut needs_flush: bool) {
    let job = ctx.job;
    let indexed = job.spec.is_indexed();
    let mut pods = ctx.pods.clone();
    if indexed {
        sort_by_completion_index(&mut pods);
    }
    let pending = ctx.finalizer_removals_pending;
    let mut with_finalizer: HashSet<&str> = pods
        .iter()
        .filter(|p| p.has_tracking_finalizer && !pending.contains(&p.uid))
        .map(|p| p.uid.as_str())
        .collect();

    let mut status = std::mem::take(&mut ctx.status);
    needs_flush |= count_uncounted_without_finalizer(&mut status, &with_finalizer);

    let mut remove_finalizer: Vec<&Pod> = Vec::new();
    let mut new_succeeded_indexes: Vec<i32> = Vec::new();
    let mut reached_max_uncounted = false;
    let job_failing = ctx
        .finished_condition
        .as_ref()
        .is_some_and(|c| c.condition_type != JobConditionType::SuccessCriteriaMet);
    for pod in pods {
        if !pod.has_tracking_finalizer || pending.contains(&pod.uid) {
            continue;
        }
        let considered_failed = is_pod_failed(job, pod);
        if !can_remove_finalizer(ctx, pod, considered_failed) {
            continue;
        }
        remove_finalizer.push(pod);
        let uncounted = status
            .uncounted_terminated_pods
            .get_or_insert_with(Default::default);
        if pod.phase == PodPhase::Succeeded
            && !ctx.initially_uncounted_failed.contains(pod.uid.as_str())
        {
            if indexed {
                if let Some(ix) = valid_index(job, pod)
                    && !ctx.prev_succeeded_indexes.contains(ix)
                {
                    new_succeeded_indexes.push(ix);
                    needs_flush = true;
                }
            } else if !ctx.initially_uncounted_succeeded.contains(pod.uid.as_str()) {
                uncounted.succeeded.push(pod.uid.clone());
                needs_flush = true;
            }
        } else if (considered_failed || job_failing)
            && !ctx.initially_uncounted_failed.contains(pod.uid.as_str())
            && (!indexed || valid_index(job, pod).is_some())
        {
            let counts = match &job.spec.pod_failure_policy {
                Some(policy) => {
                    let decision = match_pod_failure_policy(Some(policy), &job.namespace, pod);
                    ctx.record_policy_action(decision.action.as_ref());
                    decision.counts_failure()
                }
                None => true,
            };
            if counts {
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
        ctx.succeeded_indexes = ctx
            .succeeded_indexes
            .union(&IndexSet::from_indexes(new_succeeded_indexes));
        let completed = ctx.succeeded_indexes.to_string();
        needs_flush |= completed != status.completed_indexes;
        status.succeeded = i32::try_from(ctx.succeeded_indexes.total()).unwrap_or(i32::MAX);
        status.completed_indexes = completed;
        let failed = ctx.failed_indexes.as_ref().map(ToString::to_string);
        if status.failed_indexes != failed {
            status.failed_indexes = failed;
            needs_flush = true;
        }
    }

    // The interim condition is written first; the terminal one follows once nothing is left running.
    if let Some(cond) = ctx.finished_condition.take() {
        let terminal = match cond.condition_type {
            JobConditionType::FailureTarget => {
                status.conditions.push(cond.clone());
                needs_flush = true;
                new_condition(
                    JobConditionType::Failed,
                    ConditionStatus::True,
                    &cond.reason,
                    &cond.message,
                    ctx.now,
                )
            }
            JobConditionType::SuccessCriteriaMet => {
                if !status.has_true_condition(&JobConditionType::SuccessCriteriaMet) {
                    status.conditions.push(cond.clone());
                    needs_flush = true;
                }
                new_condition(
                    JobConditionType::Complete,
                    ConditionStatus::True,
                    &cond.reason,
                    &cond.message,
                    ctx.now,
                )
            }
            _ => cond,
        };
        ctx.finished_condition = Some(terminal);
    }

    if needs_flush {
        ctx.actions
            .push(Action::UpdateStatus(Box::new(status.clone())));
        ctx.state.backoff = ctx.new_backoff;
        needs_flush = false;
    }
    if !remove_finalizer.is_empty() {
        let mut refs: Vec<PodRef> = remove_finalizer.iter().map(|p| PodRef::from(*p)).collect();
        refs.sort();
        for pod in &remove_finalizer {
            with_finalizer.remove(pod.uid.as_str());
        }
        ctx.actions.push(Action::RemoveFinalizers(refs));
    }
    needs_flush |= count_uncounted_without_finalizer(&mut status, &with_finalizer);

    let finished = !reached_max_uncounted && enact_job_finished(ctx, &mut status);
    if finished || needs_flush {
        ctx.actions
            .push(Action::UpdateStatus(Box::new(status.clone())));
        if finished {
            record_job_finished(ctx, &status);
        }
    }
    ctx.status = status;
}

/// Moves every uncounted UID whose pod no longer carries the finalizer (or is
/// gone) into the counters. Returns whether anything moved.
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
fn can_remove_finalizer(ctx: &SyncCtx<'_>, pod: &Pod, considered_failed: bool) -> bool {
    if ctx.job.being_deleted || ctx.finished_condition.is_some() || pod.phase == PodPhase::Succeeded
    {
        return true;
    }
    if !considered_failed {
        return false;
    }
    // With per-index limits, the pod kept for its index's replacement keeps its finalizer.
    let kept_for_replacement = ctx.job.spec.uses_backoff_limit_per_index()
        && pod
            .completion_index
            .and_then(|ix| ctx.delayed.get(&ix))
            .is_some_and(|kept| kept.uid == pod.uid);
    !kept_for_replacement
}

/// Writes the terminal condition once nothing is uncounted and no pod is
/// terminating. Returns whether the Job finished.
fn enact_job_finished(ctx: &SyncCtx<'_>, status: &mut JobStatus) -> bool {
    let Some(cond) = ctx.finished_condition.as_ref() else {
        return false;
    };
    let uncounted = status
        .uncounted_terminated_pods
        .as_ref()
        .map_or(0, |u| u.succeeded.len() + u.failed.len());
    if uncounted > 0 || ctx.terminating > 0 {
        return false;
    }
    ensure_condition(
        &mut status.conditions,
        cond.condition_type.clone(),
        ConditionStatus::True,
        &cond.reason,
        &cond.message,
        ctx.now,
    );
    if cond.condition_type == JobConditionType::Complete {
        status.completion_time = cond.last_transition_time;
    }
    true
}

/// The events upstream records when a Job finishes.
fn record_job_finished(ctx: &mut SyncCtx<'_>, status: &JobStatus) {
    let Some(cond) = ctx.finished_condition.clone() else {
        return;
    };
    if cond.condition_type == JobConditionType::Complete {
        if ctx
            .job
            .spec
            .completions
            .is_some_and(|c| status.succeeded > c)
        {
            ctx.record_event(Event {
                event_type: EventType::Warning,
                reason: "TooManySucceededPods".into(),
                message: "Too many succeeded pods running after completion count reached".into(),
            });
        }
        ctx.record_event(Event {
            event_type: EventType::Normal,
            reason: "Completed".into(),
            message: "Job completed".into(),
        });
    } else {
        ctx.record_event(Event {
            event_type: EventType::Warning,
            reason: cond.reason.clone(),
            message: cond.message.clone(),
        });
    }
}

/// UIDs in a status list, for membership tests.
pub(crate) fn uid_set(uids: &[String]) -> BTreeSet<&str> {
    uids.iter().map(String::as_str).collect()
}

/// Whether a pod failure policy action is one the metrics count.
pub(crate) fn is_counted_action(action: &PodFailurePolicyAction) -> bool {
    !matches!(action, PodFailurePolicyAction::Unknown(_))
}
