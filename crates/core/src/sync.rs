//! One sync of one Job, in upstream's order (syncJob): claim pods, count the
//! newly finished ones, decide whether the Job is finishing, then either delete
//! its active pods or manage them, and finally track the status.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use crate::backoff::new_backoff_record;
use crate::conditions::{ensure_condition, new_condition};
use crate::index_set::IndexSet;
use crate::indexed::{
    failed_indexes, is_pod_failed, pods_with_delayed_deletion, succeeded_indexes, valid_index,
};
use crate::manage::{manage_job, pod_deletions};
use crate::model::Pod;
use crate::model::{
    BUILT_IN_CONTROLLER, BackoffRecord, CompletionMode, ConditionStatus, ControllerState, Job,
    JobCondition, JobConditionType, JobStatus, OwnerRef, PodFailurePolicyAction, PodPhase,
    RestartPolicy, Snapshot,
};
use crate::plan::{Action, Event, EventType, FailurePolicyActionCounts, Plan, PodRef};
use crate::pod_failure_policy::match_pod_failure_policy;
use crate::selector;
use crate::success_policy::{match_success_policy, success_policy_message};
use crate::time::Time;
use crate::tracking::{is_counted_action, track_status_and_remove_finalizers, uid_set};

/// Shortest backoff requeue: upstream's delayed enqueue never waits less than its 1 s batch period.
pub const MIN_REQUEUE: Duration = Duration::from_secs(1);

/// The kind a Job's owner references carry.
const JOB_KIND: &str = "Job";
/// The group/version of Jobs the orphan-pod worker recognises as owners.
const JOB_API_VERSION: &str = "batch/v1";

/// What one sync has worked out so far; the pieces in `manage` and `tracking` read and extend it.
pub(crate) struct SyncCtx<'a> {
    pub job: &'a Job,
    pub now: Time,
    /// The status being built; written by the plan's UpdateStatus actions.
    pub status: JobStatus,
    /// The Job's pods after adoption and release.
    pub pods: Vec<&'a Pod>,
    pub active_pods: Vec<&'a Pod>,
    pub finished_condition: Option<JobCondition>,
    pub succeeded: i32,
    pub prev_succeeded_indexes: IndexSet,
    pub succeeded_indexes: IndexSet,
    pub failed_indexes: Option<IndexSet>,
    pub new_backoff: BackoffRecord,
    pub finalizer_removals_pending: &'a BTreeSet<String>,
    pub initially_uncounted_succeeded: BTreeSet<&'a str>,
    pub initially_uncounted_failed: BTreeSet<&'a str>,
    /// Per index, the failed pod kept until its replacement exists.
    pub delayed: BTreeMap<i32, &'a Pod>,
    pub terminating: i32,
    pub ready: i32,
    pub actions: Vec<Action>,
    pub requeue: Option<Duration>,
    pub state: ControllerState,
    pub policy_actions: FailurePolicyActionCounts,
}

impl SyncCtx<'_> {
    /// Asks to decide again after `delay`; the earliest ask wins.
    pub fn requeue_after(&mut self, delay: Duration) {
        self.requeue = Some(self.requeue.map_or(delay, |d| d.min(delay)));
    }

    /// Asks to decide again once a pod-failure backoff expires: never sooner
    /// than [`MIN_REQUEUE`], as upstream's delayed enqueue.
    pub fn requeue_after_backoff(&mut self, delay: Duration) {
        self.requeue_after(delay.max(MIN_REQUEUE));
    }

    /// Records an event at the point of the plan where upstream records it.
    pub fn record_event(&mut self, event: Event) {
        self.actions.push(Action::RecordEvent(event));
    }

    /// Counts a failed pod handled by a policy action, for metrics.
    pub fn record_policy_action(&mut self, action: Option<&PodFailurePolicyAction>) {
        let Some(action) = action.filter(|a| is_counted_action(a)) else {
            return;
        };
        let counts = &mut self.policy_actions;
        match action {
            PodFailurePolicyAction::FailJob => counts.fail_job += 1,
            PodFailurePolicyAction::FailIndex => counts.fail_index += 1,
            PodFailurePolicyAction::Ignore => counts.ignore += 1,
            PodFailurePolicyAction::Count => counts.count += 1,
            PodFailurePolicyAction::Unknown(_) => {}
        }
    }
}

/// Decides one sync of the snapshot's Job: the plan upstream's controller would carry out.
pub fn decide(snapshot: &Snapshot) -> Plan {
    let job = &snapshot.job;
    let managed_by = job
        .spec
        .managed_by
        .as_deref()
        .unwrap_or(BUILT_IN_CONTROLLER);
    let deciding_for = if snapshot.controller_name.is_empty() {
        BUILT_IN_CONTROLLER
    } else {
        snapshot.controller_name.as_str()
    };
    if managed_by != deciding_for {
        return Plan {
            state: snapshot.state.clone(),
            ..Plan::default()
        };
    }
    if job.status.is_finished() {
        return finished_job_cleanup(snapshot);
    }
    if let CompletionMode::Unknown(_) = job.spec.completion_mode {
        return Plan {
            state: snapshot.state.clone(),
            actions: vec![Action::RecordEvent(Event {
                event_type: EventType::Warning,
                reason: "UnknownCompletionMode".into(),
                message: "Skipped Job sync because completion mode is unknown".into(),
            })],
            ..Plan::default()
        };
    }
    sync_job(snapshot)
}

/// A finished Job is never modified; what is left is the orphan worker's job:
/// taking the finalizer off the Job's pods (and orphans) that still carry it.
/// That worker visits pods matching the selector, and pods being deleted.
fn finished_job_cleanup(snapshot: &Snapshot) -> Plan {
    let job = &snapshot.job;
    let mut refs: Vec<PodRef> = snapshot
        .pods
        .iter()
        .filter(|p| p.has_tracking_finalizer)
        .filter(|p| p.deletion.is_some() || selector::matches(&job.spec.selector, &p.labels))
        .filter(|p| match &p.controller {
            // The worker leaves pods whose controller is not a batch/v1 Job
            // alone, even when the reference carries this Job's uid.
            Some(owner) => owner.uid == job.uid && is_batch_v1_job(owner),
            None => true,
        })
        .map(PodRef::from)
        .collect();
    refs.sort();
    let actions = if refs.is_empty() {
        vec![]
    } else {
        vec![Action::RemoveFinalizers(refs)]
    };
    // Upstream drops the backoff record of a finished Job.
    Plan {
        actions,
        ..Plan::default()
    }
}

/// Whether upstream's pod listing finds a pod with this controller reference
/// under the Job: it indexes pods by the reference's kind, name and uid, not
/// its apiVersion.
fn listed_under(job: &Job, owner: &OwnerRef) -> bool {
    owner.kind == JOB_KIND && owner.name == job.name && owner.uid == job.uid
}

/// Whether the orphan-pod worker takes a controller reference for a Job's.
fn is_batch_v1_job(owner: &OwnerRef) -> bool {
    owner.kind == JOB_KIND && owner.api_version == JOB_API_VERSION
}

/// Claims pods as upstream's getPodsForJob does. Upstream lists the pods
/// whose controller reference is this Job by namespace, kind, name and uid
/// (any apiVersion), then the orphans; a reference with the Job's uid under
/// another kind or name is never listed. Matching orphans not being deleted
/// are adopted; owned pods that stopped matching are released. An adopted
/// orphan counts as carrying the finalizer only when none of its owner
/// references has the Job's uid (upstream's in-memory finalizer): one that
/// already names the Job, not as controller, is adopted as it is, so a
/// finished one without the finalizer waits for the next sync to be counted.
/// Returns the Job's pods — owned ones first, then adopted orphans, each in
/// snapshot order — and the claim actions.
fn claim_pods<'a>(job: &Job, pods: &'a [Pod]) -> (Vec<Cow<'a, Pod>>, Vec<Action>) {
    let mut claimed = Vec::with_capacity(pods.len());
    let mut adopted = Vec::new();
    let (mut adopt, mut release) = (Vec::new(), Vec::new());
    for pod in pods {
        let matches = selector::matches(&job.spec.selector, &pod.labels);
        match &pod.controller {
            Some(owner) if owner.uid == job.uid => {
                if !listed_under(job, owner) {
                    continue;
                }
                if matches {
                    claimed.push(Cow::Borrowed(pod));
                } else if !job.being_deleted {
                    release.push(PodRef::from(pod));
                }
            }
            Some(_) => {}
            None => {
                if job.being_deleted || !matches || pod.deletion.is_some() {
                    continue;
                }
                adopt.push(PodRef::from(pod));
                let names_this_job = pod.owner_uids.contains(&job.uid);
                if names_this_job || pod.has_tracking_finalizer {
                    adopted.push(Cow::Borrowed(pod));
                } else {
                    let mut copy = pod.clone();
                    copy.has_tracking_finalizer = true;
                    adopted.push(Cow::Owned(copy));
                }
            }
        }
    }
    claimed.extend(adopted);
    let mut actions = Vec::new();
    if !adopt.is_empty() {
        adopt.sort();
        actions.push(Action::AdoptPods(adopt));
    }
    if !release.is_empty() {
        release.sort();
        actions.push(Action::ReleasePods(release));
    }
    (claimed, actions)
}

fn sync_job(snapshot: &Snapshot) -> Plan {
    let job = &snapshot.job;
    let now = snapshot.now;
    let (claimed, claim_actions) = claim_pods(job, &snapshot.pods);
    let pods: Vec<&Pod> = claimed.iter().map(|p| p.as_ref()).collect();
    let active_pods: Vec<&Pod> = pods.iter().copied().filter(|p| p.is_active()).collect();
    let uncounted = job
        .status
        .uncounted_terminated_pods
        .clone()
        .unwrap_or_default();
    let mut status = job.status.clone();
    status.uncounted_terminated_pods = Some(uncounted);

    let mut ctx = SyncCtx {
        job,
        now,
        status,
        ready: count(active_pods.iter().filter(|p| p.is_ready()).count()),
        terminating: count(pods.iter().filter(|p| p.is_terminating()).count()),
        active_pods,
        pods,
        finished_condition: None,
        succeeded: 0,
        prev_succeeded_indexes: IndexSet::new(),
        succeeded_indexes: IndexSet::new(),
        failed_indexes: None,
        new_backoff: BackoffRecord::default(),
        finalizer_removals_pending: &snapshot.expectations.finalizer_removals_pending,
        initially_uncounted_succeeded: BTreeSet::new(),
        initially_uncounted_failed: BTreeSet::new(),
        delayed: BTreeMap::new(),
        actions: claim_actions,
        requeue: None,
        state: snapshot.state.clone(),
        policy_actions: FailurePolicyActionCounts::default(),
    };
    if let Some(u) = job.status.uncounted_terminated_pods.as_ref() {
        ctx.initially_uncounted_succeeded = uid_set(&u.succeeded);
        ctx.initially_uncounted_failed = uid_set(&u.failed);
    }
    let expectations_satisfied = !snapshot.expectations.pod_changes_pending;
    let mut active = count(ctx.active_pods.len());

    let (new_succeeded, new_failed) = new_finished_pods(&ctx);
    let counted_new_failures = match &job.spec.pod_failure_policy {
        Some(policy) => new_failed
            .iter()
            .filter(|p| match_pod_failure_policy(Some(policy), &job.namespace, p).counts_failure())
            .count(),
        None => new_failed.len(),
    };
    let uncounted_in_status = job.status.uncounted_terminated_pods.as_ref();
    ctx.succeeded = job
        .status
        .succeeded
        .saturating_add(count(new_succeeded.len()))
        .saturating_add(count(uncounted_in_status.map_or(0, |u| u.succeeded.len())));
    let failed = job
        .status
        .failed
        .saturating_add(count(counted_new_failures))
        .saturating_add(count(uncounted_in_status.map_or(0, |u| u.failed.len())));

    if ctx.status.start_time.is_none() && !job.spec.suspend {
        ctx.status.start_time = Some(now);
    }
    ctx.new_backoff = new_backoff_record(snapshot.state.backoff, &new_succeeded, &new_failed);

    ctx.finished_condition = job
        .status
        .true_condition(&JobConditionType::SuccessCriteriaMet)
        .cloned();
    if ctx.finished_condition.is_none() {
        if let Some(target) = job.status.true_condition(&JobConditionType::FailureTarget) {
            ctx.finished_condition = Some(new_condition(
                JobConditionType::Failed,
                ConditionStatus::True,
                &target.reason,
                &target.message,
                now,
            ));
        } else if let Some(message) = fail_job_message(job, &ctx.pods) {
            ctx.finished_condition = Some(failure_target("PodFailurePolicy", &message, now));
        }
    }
    if ctx.finished_condition.is_none() {
        if failed > job.spec.backoff_limit || past_backoff_limit_on_failure(job, &ctx.pods) {
            ctx.finished_condition = Some(failure_target(
                "BackoffLimitExceeded",
                "Job has reached the specified backoff limit",
                now,
            ));
        } else if past_active_deadline(job, ctx.status.start_time, now) {
            ctx.finished_condition = Some(failure_target(
                "DeadlineExceeded",
                "Job was active longer than specified deadline",
                now,
            ));
        } else if let (Some(ads), false) = (job.spec.active_deadline_seconds, job.spec.suspend) {
            let start = ctx.status.start_time.unwrap_or(now);
            let deadline =
                start.saturating_add(Duration::from_secs(u64::try_from(ads).unwrap_or(0)));
            ctx.requeue_after(deadline.saturating_since(now));
        }
    }

    if job.spec.is_indexed() {
        let completions = job.spec.completions.unwrap_or(0);
        let (previous, all) = succeeded_indexes(job, &ctx.pods);
        ctx.prev_succeeded_indexes = previous;
        ctx.succeeded_indexes = all;
        ctx.succeeded = i32::try_from(ctx.succeeded_indexes.total()).unwrap_or(i32::MAX);
        if job.spec.uses_backoff_limit_per_index() {
            let failed_ix = failed_indexes(job, &ctx.pods);
            if ctx.finished_condition.is_none() {
                let failed_total = failed_ix.total();
                if job
                    .spec
                    .max_failed_indexes
                    .is_some_and(|max| failed_total > u64::try_from(max).unwrap_or(0))
                {
                    ctx.finished_condition = Some(failure_target(
                        "MaxFailedIndexesExceeded",
                        "Job has exceeded the specified maximal number of failed indexes",
                        now,
                    ));
                } else if failed_total > 0
                    && failed_total + ctx.succeeded_indexes.total()
                        >= u64::try_from(completions).unwrap_or(0)
                {
                    ctx.finished_condition = Some(failure_target(
                        "FailedIndexes",
                        "Job has failed indexes",
                        now,
                    ));
                }
            }
            ctx.delayed = pods_with_delayed_deletion(
                job,
                &ctx.pods,
                &ctx.active_pods,
                &ctx.succeeded_indexes,
                &failed_ix,
                ctx.finalizer_removals_pending,
            );
            ctx.failed_indexes = Some(failed_ix);
        }
        if ctx.finished_condition.is_none()
            && let Some(rule) = match_success_policy(
                job.spec.success_policy.as_ref(),
                completions,
                &ctx.succeeded_indexes,
            )
        {
            ctx.finished_condition = Some(new_condition(
                JobConditionType::SuccessCriteriaMet,
                ConditionStatus::True,
                "SuccessPolicy",
                &success_policy_message(rule),
                now,
            ));
        }
    }

    let mut suspend_condition_changed = false;
    if ctx.finished_condition.is_some() {
        // A finishing Job loses its active pods; they keep their finalizer so they are counted.
        let deleting: Vec<&Pod> = ctx.active_pods.clone();
        if !deleting.is_empty() {
            ctx.actions
                .push(Action::DeletePods(pod_deletions(&deleting, false)));
        }
        let deleted = count(deleting.len());
        if !expectations_satisfied {
            ctx.finished_condition = None;
        }
        active -= deleted;
        ctx.terminating += deleted;
        ctx.ready -= count(deleting.iter().filter(|p| p.is_ready()).count());
    } else {
        let mut manage_called = false;
        if expectations_satisfied && !job.being_deleted {
            active = manage_job(&mut ctx);
            manage_called = true;
        }
        let complete = match job.spec.completions {
            None => ctx.succeeded > 0 && active == 0,
            Some(completions) => ctx.succeeded >= completions && active == 0,
        };
        if complete {
            ctx.finished_condition = Some(new_condition(
                JobConditionType::SuccessCriteriaMet,
                ConditionStatus::True,
                "CompletionsReached",
                "Reached expected number of succeeded pods",
                now,
            ));
        } else if manage_called {
            suspend_condition_changed = update_suspend_condition(&mut ctx);
        }
    }

    let needs_status_update = suspend_condition_changed
        || active != ctx.status.active
        || Some(ctx.ready) != ctx.status.ready
        || Some(ctx.terminating) != ctx.status.terminating;
    ctx.status.active = active;
    ctx.status.ready = Some(ctx.ready);
    ctx.status.terminating = Some(ctx.terminating);
    track_status_and_remove_finalizers(&mut ctx, needs_status_update);

    Plan {
        actions: ctx.actions,
        requeue_after: ctx.requeue,
        state: ctx.state,
        failure_policy_actions: ctx.policy_actions,
    }
}

/// Suspended=True when suspended (clearing startTime, as the beta gate
/// MutableSchedulingDirectivesForSuspendedJobs does), or Suspended=False when
/// resumed (resetting startTime). Returns whether the condition changed.
fn update_suspend_condition(ctx: &mut SyncCtx<'_>) -> bool {
    let now = ctx.now;
    let (status, reason, message, event, start_time) = if ctx.job.spec.suspend {
        (
            ConditionStatus::True,
            "JobSuspended",
            "Job suspended",
            "Suspended",
            None,
        )
    } else {
        (
            ConditionStatus::False,
            "JobResumed",
            "Job resumed",
            "Resumed",
            Some(now),
        )
    };
    let changed = ensure_condition(
        &mut ctx.status.conditions,
        JobConditionType::Suspended,
        status,
        reason,
        message,
        now,
    );
    if changed {
        ctx.record_event(normal(event, message));
        ctx.status.start_time = start_time;
    }
    changed
}

fn normal(reason: &str, message: &str) -> Event {
    Event {
        event_type: EventType::Normal,
        reason: reason.into(),
        message: message.into(),
    }
}

/// The interim condition of a failing Job.
fn failure_target(reason: &str, message: &str, now: Time) -> JobCondition {
    new_condition(
        JobConditionType::FailureTarget,
        ConditionStatus::True,
        reason,
        message,
        now,
    )
}

/// Succeeded and failed pods not yet recorded: carrying the finalizer, not in
/// the uncounted lists, not awaiting finalizer removal, with a valid index when Indexed.
fn new_finished_pods<'a>(ctx: &SyncCtx<'a>) -> (Vec<&'a Pod>, Vec<&'a Pod>) {
    let job = ctx.job;
    let eligible = |p: &&&'a Pod| {
        p.has_tracking_finalizer
            && !ctx.finalizer_removals_pending.contains(&p.uid)
            && (!job.spec.is_indexed() || valid_index(job, p).is_some())
    };
    let succeeded = ctx
        .pods
        .iter()
        .filter(eligible)
        .filter(|p| {
            p.phase == PodPhase::Succeeded
                && !ctx.initially_uncounted_succeeded.contains(p.uid.as_str())
        })
        .copied()
        .collect();
    let failed = ctx
        .pods
        .iter()
        .filter(eligible)
        .filter(|p| {
            is_pod_failed(job, p) && !ctx.initially_uncounted_failed.contains(p.uid.as_str())
        })
        .copied()
        .collect();
    (succeeded, failed)
}

/// The message of the first failed pod (in snapshot order, counted or not) that matches a FailJob rule.
fn fail_job_message(job: &Job, pods: &[&Pod]) -> Option<String> {
    let policy = job.spec.pod_failure_policy.as_ref()?;
    pods.iter()
        .filter(|p| is_pod_failed(job, p))
        .find_map(|p| match_pod_failure_policy(Some(policy), &job.namespace, p).fail_job_message)
}

/// With restartPolicy OnFailure, container restarts of running and pending pods count against backoffLimit.
fn past_backoff_limit_on_failure(job: &Job, pods: &[&Pod]) -> bool {
    if job.spec.template.restart_policy != RestartPolicy::OnFailure {
        return false;
    }
    let restarts: i64 = pods
        .iter()
        .filter(|p| matches!(p.phase, PodPhase::Running | PodPhase::Pending))
        .flat_map(|p| {
            p.init_container_statuses
                .iter()
                .chain(&p.container_statuses)
        })
        .map(|c| i64::from(c.restart_count))
        .sum();
    if job.spec.backoff_limit == 0 {
        return restarts > 0;
    }
    restarts >= i64::from(job.spec.backoff_limit)
}

/// Whether the Job has been active for at least activeDeadlineSeconds.
fn past_active_deadline(job: &Job, start_time: Option<Time>, now: Time) -> bool {
    let (Some(ads), Some(start)) = (job.spec.active_deadline_seconds, start_time) else {
        return false;
    };
    if job.spec.suspend {
        return false;
    }
    now.signed_nanos_since(start) >= i128::from(ads) * 1_000_000_000
}

/// A pod count as the status's i32; counts beyond i32 cannot come from a valid snapshot.
pub(crate) fn count(n: usize) -> i32 {
    i32::try_from(n).unwrap_or(i32::MAX)
}

#[cfg(test)]
#[path = "sync_tests.rs"]
mod tests;
