//! One sync of one Job, in upstream's order (syncJob): claim pods, count the
//! newly finished ones, decide whether the Job is finishing, then either delete
//! its active pods or manage them, and finally track the status.
//!
//! The sync gathers its read-only facts once (`SyncFacts`); `manage` and
//! `tracking` read the facts they need and return what they decided, which
//! only this module folds into the plan. Neither imports this module.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use crate::backoff::new_backoff_record;
use crate::cancel::{Cancelled, Interrupt, Never, check};
use crate::conditions::{ensure_condition, new_condition};
use crate::explain::{self, ExplainFacts, JobExplanation};
use crate::extended::backoff_schedule::failures_for_backoff;
use crate::extended::failure_message::{Cause, failure_message};
use crate::extended::rules;
use crate::extended::terminating_timeout;
use crate::extended::timeouts;
use crate::index_set::IndexSet;
use crate::indexed::{self, pods_with_delayed_deletion, valid_index};
use crate::manage::{ManageDecision, ManageFacts, manage_job_why, pod_deletions};
use crate::model::{
    BUILT_IN_CONTROLLER, BackoffRecord, CompletionMode, ConditionStatus, JOB_API_VERSION, JOB_KIND,
    Job, JobCondition, JobConditionType, JobStatus, OwnerRef, Pod, PodFailurePolicyAction,
    PodPhase, RestartPolicy, Snapshot,
};
use crate::plan::{Action, Event, EventType, Plan, PodDeletion, PodRef};
use crate::pod_failure_policy::counts_failure;
use crate::selector;
use crate::success_policy::{match_success_policy, success_policy_message};
use crate::sync_pod::SyncPod;
use crate::time::Time;
use crate::tracking::{TrackingFacts, track_status_and_remove_finalizers, working_status};

/// Shortest backoff requeue: upstream's delayed enqueue never waits less than its 1 s batch period.
pub const MIN_REQUEUE: Duration = Duration::from_secs(1);

/// Decides one sync of the snapshot's Job: the plan upstream's controller would carry out.
pub fn decide(snapshot: &Snapshot) -> Plan {
    // `Never` never interrupts, so the default is never what is returned.
    decide_with(snapshot, false, &Never)
        .map(|(plan, _)| plan)
        .unwrap_or_default()
}

/// [`decide`], with the explanation of the plan, built from the same sync.
pub fn decide_explained(snapshot: &Snapshot) -> (Plan, JobExplanation) {
    decide_explained_until(snapshot, &Never).unwrap_or_default()
}

/// [`decide`], stopping with [`Cancelled`] as soon as `interrupt` is set
/// (asked between pods): for a caller whose answer may stop being wanted.
pub fn decide_until(snapshot: &Snapshot, interrupt: &dyn Interrupt) -> Result<Plan, Cancelled> {
    decide_with(snapshot, false, interrupt).map(|(plan, _)| plan)
}

/// [`decide_explained`], stopping with [`Cancelled`] as soon as `interrupt` is set.
pub fn decide_explained_until(
    snapshot: &Snapshot,
    interrupt: &dyn Interrupt,
) -> Result<(Plan, JobExplanation), Cancelled> {
    let (plan, explanation) = decide_with(snapshot, true, interrupt)?;
    Ok((plan, explanation.unwrap_or_default()))
}

/// Decides one sync; explains it only when `explain` is set (nothing is spent on it otherwise).
fn decide_with(
    snapshot: &Snapshot,
    explain: bool,
    interrupt: &dyn Interrupt,
) -> Result<(Plan, Option<JobExplanation>), Cancelled> {
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
        let plan = Plan {
            state: snapshot.state.clone(),
            ..Plan::default()
        };
        return Ok((
            plan,
            explain.then(|| explain::not_managed(managed_by, deciding_for)),
        ));
    }
    if job.status.is_finished() {
        let plan = finished_job_cleanup(snapshot);
        let explanation = explain.then(|| explain::finished(snapshot, &plan));
        return Ok((plan, explanation));
    }
    if let CompletionMode::Unknown(_) = job.spec.completion_mode {
        let plan = Plan {
            state: snapshot.state.clone(),
            actions: vec![Action::RecordEvent(Event {
                event_type: EventType::Warning,
                reason: "UnknownCompletionMode".into(),
                message: "Skipped Job sync because completion mode is unknown".into(),
            })],
            ..Plan::default()
        };
        let explanation = explain.then(|| explain::unknown_mode(&plan));
        return Ok((plan, explanation));
    }
    sync_job(snapshot, explain, interrupt)
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
/// its apiVersion. (The uid is compared first: it tells most pods apart.)
fn listed_under(job: &Job, owner: &OwnerRef) -> bool {
    owner.uid == job.uid && owner.kind == JOB_KIND && owner.name == job.name
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
/// Returns the owned pods and the adopted orphans, each in snapshot order
/// (the Job's pods are the owned ones, then the adopted), and the claim actions.
fn claim_pods<'a>(
    job: &'a Job,
    pods: &'a [Pod],
    interrupt: &dyn Interrupt,
) -> Result<Claim<'a>, Cancelled> {
    let mut claimed = Vec::with_capacity(pods.len());
    let mut adopted = Vec::new();
    let (mut adopt, mut release) = (Vec::new(), Vec::new());
    for pod in pods {
        // A pod's selector match and policy match are the sync's per-pod cost.
        check(interrupt)?;
        // Only the Job's own pods and orphans are matched against its selector.
        let matches = || selector::matches(&job.spec.selector, &pod.labels);
        match &pod.controller {
            Some(owner) if listed_under(job, owner) => {
                if matches() {
                    claimed.push(SyncPod::new(job, pod));
                } else if !job.being_deleted {
                    release.push(PodRef::from(pod));
                }
            }
            // Another controller's pod, or one naming this Job's uid under
            // another kind or name, which upstream never lists.
            Some(_) => {}
            None => {
                if job.being_deleted || pod.deletion.is_some() || !matches() {
                    continue;
                }
                adopt.push(PodRef::from(pod));
                if pod.owners_name_job || pod.has_tracking_finalizer {
                    adopted.push(Cow::Borrowed(pod));
                } else {
                    let mut copy = pod.clone();
                    copy.has_tracking_finalizer = true;
                    adopted.push(Cow::Owned(copy));
                }
            }
        }
    }
    let mut actions = Vec::new();
    if !adopt.is_empty() {
        adopt.sort();
        actions.push(Action::AdoptPods(adopt));
    }
    if !release.is_empty() {
        release.sort();
        actions.push(Action::ReleasePods(release));
    }
    Ok(Claim {
        owned: claimed,
        adopted,
        actions,
    })
}

/// What claiming decided: the pods the Job owns, the orphans it adopts (a copy
/// only where adoption adds the finalizer), and the claim actions.
struct Claim<'a> {
    /// Owned pods that still match, in snapshot order.
    owned: Vec<SyncPod<'a>>,
    /// Adopted orphans, in snapshot order.
    adopted: Vec<Cow<'a, Pod>>,
    /// AdoptPods and ReleasePods.
    actions: Vec<Action>,
}

/// The read-only facts of one sync: what the snapshot says and what follows
/// from it, gathered before anything is decided. Nothing changes them after.
struct SyncFacts<'a> {
    /// The Job being synced.
    job: &'a Job,
    /// The snapshot's time.
    now: Time,
    /// The Job's pods after adoption and release.
    pods: Vec<SyncPod<'a>>,
    /// The pods among them that are neither finished nor being deleted.
    active_pods: Vec<&'a Pod>,
    /// No pod creation or deletion of an earlier plan is still unobserved.
    expectations_satisfied: bool,
    /// UIDs of pods whose finalizer removal is issued but not yet observed.
    finalizer_removals_pending: &'a BTreeSet<String>,
    /// Succeeded UIDs in the Job's `uncountedTerminatedPods` before this sync.
    initially_uncounted_succeeded: BTreeSet<&'a str>,
    /// Failed UIDs in the Job's `uncountedTerminatedPods` before this sync.
    initially_uncounted_failed: BTreeSet<&'a str>,
    /// Succeeded pods (NonIndexed) or indexes (Indexed), counted or not.
    succeeded: i32,
    /// Failed pods that count against backoffLimit, counted or not.
    failed: i32,
    /// The Job's start time, set now when it starts unsuspended.
    start_time: Option<Time>,
    /// The completion indexes of the active pods (Indexed Jobs).
    active_indexes: IndexSet,
    /// Indexes in the Job's `completedIndexes` before this sync (Indexed Jobs).
    prev_succeeded_indexes: IndexSet,
    /// Succeeded indexes, recorded or not (Indexed Jobs).
    succeeded_indexes: IndexSet,
    /// Failed indexes, when per-index backoff limits are in use.
    failed_indexes: Option<IndexSet>,
    /// Per index, the failed pod kept until its replacement exists.
    delayed: BTreeMap<i32, SyncPod<'a>>,
    /// The backoff record including this sync's newly finished pods.
    new_backoff: BackoffRecord,
}

impl<'a> SyncFacts<'a> {
    /// Gathers the facts of a sync of the snapshot's Job over its claimed `pods`.
    fn gather(snapshot: &'a Snapshot, pods: Vec<SyncPod<'a>>) -> Self {
        let job = &snapshot.job;
        let now = snapshot.now;
        let pending = &snapshot.expectations.finalizer_removals_pending;
        // Sized for every pod: growing it would copy it several times over.
        let mut active_pods: Vec<&Pod> = Vec::with_capacity(pods.len());
        active_pods.extend(pods.iter().filter(|p| p.is_active()).map(SyncPod::pod));
        let uncounted = job.status.uncounted_terminated_pods.as_ref();
        let initially_uncounted_succeeded =
            uncounted.map_or_else(BTreeSet::new, |u| uid_set(&u.succeeded));
        let initially_uncounted_failed =
            uncounted.map_or_else(BTreeSet::new, |u| uid_set(&u.failed));

        let (new_succeeded, new_failed) = new_finished_pods(
            job,
            &pods,
            pending,
            &initially_uncounted_succeeded,
            &initially_uncounted_failed,
        );
        let counted_new_failures = new_failed
            .iter()
            .filter(|p| counts_failure(p.policy_action(job)))
            .count();
        let mut succeeded = job
            .status
            .succeeded
            .saturating_add(count(new_succeeded.len()))
            .saturating_add(count(uncounted.map_or(0, |u| u.succeeded.len())));
        let failed = job
            .status
            .failed
            .saturating_add(count(counted_new_failures))
            .saturating_add(count(uncounted.map_or(0, |u| u.failed.len())));
        let start_time = match job.status.start_time {
            None if !job.spec.suspend => Some(now),
            start_time => start_time,
        };
        let new_backoff = new_backoff_record(
            job,
            snapshot.state.backoff,
            &new_succeeded,
            &failures_for_backoff(job, &new_failed),
        );

        let (mut prev_succeeded_indexes, mut succeeded_indexes, mut active_indexes) =
            (IndexSet::new(), IndexSet::new(), IndexSet::new());
        let (mut failed_indexes, mut delayed) = (None, BTreeMap::new());
        if job.spec.is_indexed() {
            (prev_succeeded_indexes, succeeded_indexes) = indexed::succeeded_indexes(job, &pods);
            active_indexes =
                IndexSet::from_indexes(active_pods.iter().filter_map(|p| p.completion_index));
            // An Indexed Job counts succeeded indexes, not pods.
            succeeded = i32::try_from(succeeded_indexes.total()).unwrap_or(i32::MAX);
            if job.spec.uses_backoff_limit_per_index() {
                let failed = indexed::failed_indexes(job, &pods);
                delayed = pods_with_delayed_deletion(
                    job,
                    &pods,
                    &active_indexes,
                    &succeeded_indexes,
                    &failed,
                    pending,
                );
                failed_indexes = Some(failed);
            }
        }

        SyncFacts {
            job,
            now,
            pods,
            active_pods,
            active_indexes,
            expectations_satisfied: !snapshot.expectations.pod_changes_pending,
            finalizer_removals_pending: pending,
            initially_uncounted_succeeded,
            initially_uncounted_failed,
            succeeded,
            failed,
            start_time,
            prev_succeeded_indexes,
            succeeded_indexes,
            failed_indexes,
            delayed,
            new_backoff,
        }
    }

    /// What manageJob reads.
    fn for_manage(&self) -> ManageFacts<'_> {
        ManageFacts {
            job: self.job,
            now: self.now,
            pods: &self.pods,
            active_pods: &self.active_pods,
            succeeded: self.succeeded,
            active_indexes: &self.active_indexes,
            succeeded_indexes: &self.succeeded_indexes,
            failed_indexes: self.failed_indexes.as_ref(),
            delayed: &self.delayed,
            backoff: &self.new_backoff,
        }
    }

    /// What tracking reads, with the condition this sync finishes the Job with.
    fn for_tracking<'s>(
        &'s self,
        finished_condition: Option<&'s JobCondition>,
    ) -> TrackingFacts<'s> {
        TrackingFacts {
            job: self.job,
            now: self.now,
            pods: &self.pods,
            finalizer_removals_pending: self.finalizer_removals_pending,
            initially_uncounted_succeeded: &self.initially_uncounted_succeeded,
            initially_uncounted_failed: &self.initially_uncounted_failed,
            prev_succeeded_indexes: &self.prev_succeeded_indexes,
            succeeded_indexes: &self.succeeded_indexes,
            failed_indexes: self.failed_indexes.as_ref(),
            delayed: &self.delayed,
            finished_condition,
        }
    }
}

/// The pod counts the status reports, as this sync leaves them.
struct PodCounts {
    active: i32,
    ready: i32,
    terminating: i32,
}

impl PodCounts {
    /// Deleted pods leave the active (and ready) pods and become terminating.
    fn delete(&mut self, deletions: &[PodDeletion]) {
        let deleted = count(deletions.len());
        self.active -= deleted;
        self.terminating += deleted;
        self.ready -= count(deletions.iter().filter(|d| d.ready).count());
    }
}

/// The plan's actions and requeue as the sync builds them.
struct PlanSoFar {
    actions: Vec<Action>,
    requeue: Option<Duration>,
}

impl PlanSoFar {
    /// Asks to decide again after `delay`; the earliest ask wins.
    fn requeue_after(&mut self, delay: Duration) {
        self.requeue = Some(self.requeue.map_or(delay, |d| d.min(delay)));
    }

    /// Adds what manageJob decided; the pod counts follow its creations and deletions.
    fn add_manage_decision(&mut self, decision: ManageDecision, counts: &mut PodCounts) {
        match decision {
            ManageDecision::Nothing => {}
            ManageDecision::Create(creations) => {
                counts.active += count(creations.len());
                self.actions.push(Action::CreatePods(creations));
            }
            ManageDecision::Delete(deletions) => {
                counts.delete(&deletions);
                self.actions.push(Action::DeletePods(deletions));
            }
            // Upstream's delayed enqueue never waits less than its batch period.
            ManageDecision::WaitForBackoff(wait) => self.requeue_after(wait.max(MIN_REQUEUE)),
        }
    }
}

/// Claims the pods, gathers the facts, decides whether the Job is finishing,
/// then deletes its active pods or manages them, and tracks the status.
fn sync_job(
    snapshot: &Snapshot,
    explain: bool,
    interrupt: &dyn Interrupt,
) -> Result<(Plan, Option<JobExplanation>), Cancelled> {
    let job = &snapshot.job;
    let now = snapshot.now;
    let Claim {
        owned: mut pods,
        adopted,
        actions,
    } = claim_pods(job, &snapshot.pods, interrupt)?;
    for pod in &adopted {
        check(interrupt)?;
        pods.push(SyncPod::new(job, pod));
    }
    crate::extended::retry_limits::apply_retry_limits(job, &mut pods);
    let facts = SyncFacts::gather(snapshot, pods);
    check(interrupt)?;
    let mut plan = PlanSoFar {
        actions,
        requeue: None,
    };
    let (finishing, deadline_wait) = finishing_condition(&facts);
    if let Some(wait) = deadline_wait {
        plan.requeue_after(wait);
    }
    // Extended policy: pods past a timeout fail right after adoption and release.
    let mut stuck = timeouts::pod_timeouts(
        job,
        facts.pods.iter().map(|p| &**p),
        now,
        finishing.is_some(),
    );
    // Disjoint from those: these pods are already being deleted.
    let terminating = terminating_timeout::terminating_timeouts(
        job,
        facts.pods.iter().map(|p| &**p),
        &snapshot.nodes,
        now,
        finishing.is_some(),
    );
    // A deadline due in under a second is decided a second from now, as the backoff is.
    for wait in [stuck.requeue, terminating.requeue].into_iter().flatten() {
        plan.requeue_after(wait.max(MIN_REQUEUE));
    }
    if !terminating.failures.is_empty() {
        stuck.failures.extend(terminating.failures);
        stuck.failures.sort_by(|a, b| a.pod.cmp(&b.pod));
    }
    if !stuck.failures.is_empty() {
        plan.actions.push(Action::FailPods(stuck.failures));
    }
    // Only an explanation reads the condition after the match below takes it.
    let finishing_explained = if explain { finishing.clone() } else { None };
    let finishing_deletes = finishing.is_some();
    let mut manage_why = None;

    let mut status = working_status(job);
    status.start_time = facts.start_time;
    let mut counts = PodCounts {
        active: count(facts.active_pods.len()),
        ready: count(facts.active_pods.iter().filter(|p| p.is_ready()).count()),
        terminating: count(facts.pods.iter().filter(|p| p.is_terminating()).count()),
    };

    // The one place the finished condition is decided; tracking only reads it.
    let mut suspend_condition_changed = false;
    let finished_condition = match finishing {
        Some(condition) => {
            // A finishing Job loses its active pods; they keep their finalizer so they are counted.
            if !facts.active_pods.is_empty() {
                let deletions = pod_deletions(&facts.active_pods, false);
                counts.delete(&deletions);
                plan.actions.push(Action::DeletePods(deletions));
            }
            // Until earlier creations and deletions are observed the Job is not finished yet.
            facts.expectations_satisfied.then_some(condition)
        }
        None => {
            let manage_called = facts.expectations_satisfied && !job.being_deleted;
            if manage_called {
                let (decision, why) = manage_job_why(&facts.for_manage());
                manage_why = Some(why);
                plan.add_manage_decision(decision, &mut counts);
            }
            let complete = counts.active == 0
                && match job.spec.completions {
                    None => facts.succeeded > 0,
                    Some(completions) => facts.succeeded >= completions,
                };
            if complete {
                // Finishing now, the Job fails no pod for a timeout, as when it was
                // finishing before (`timeouts_quiet`): it takes its terminating
                // pods' finalizers without counting them.
                plan.actions.retain(|a| !matches!(a, Action::FailPods(_)));
                Some(new_condition(
                    JobConditionType::SuccessCriteriaMet,
                    ConditionStatus::True,
                    "CompletionsReached",
                    "Reached expected number of succeeded pods",
                    now,
                ))
            } else {
                if manage_called {
                    suspend_condition_changed =
                        update_suspend_condition(job, now, &mut status, &mut plan.actions);
                }
                None
            }
        }
    };

    let needs_status_update = suspend_condition_changed
        || counts.active != status.active
        || Some(counts.ready) != status.ready
        || Some(counts.terminating) != status.terminating;
    status.active = counts.active;
    status.ready = Some(counts.ready);
    status.terminating = Some(counts.terminating);
    let tracked = track_status_and_remove_finalizers(
        &facts.for_tracking(finished_condition.as_ref()),
        status,
        needs_status_update,
    );
    plan.actions.extend(tracked.actions);
    drop_deleted_from_fail_pods(&mut plan.actions);

    let mut state = snapshot.state.clone();
    if tracked.flushed {
        // Upstream saves the backoff record once the flush of newly finished pods succeeds.
        state.backoff = facts.new_backoff;
    }
    let plan = Plan {
        actions: plan.actions,
        requeue_after: plan.requeue,
        state,
        failure_policy_actions: tracked.policy_actions,
    };
    let explanation = explain.then(|| {
        explain::sync(
            &ExplainFacts {
                snapshot,
                pods: &facts.pods,
                initially_uncounted_succeeded: &facts.initially_uncounted_succeeded,
                initially_uncounted_failed: &facts.initially_uncounted_failed,
                succeeded_indexes: &facts.succeeded_indexes,
                failed_indexes: facts.failed_indexes.as_ref(),
                delayed: &facts.delayed,
                succeeded: facts.succeeded,
                failed: facts.failed,
                // The condition found before managing, or the one reaching completions makes.
                finishing: finishing_explained.as_ref().or(finished_condition.as_ref()),
                finishing_deletes,
                expectations_satisfied: facts.expectations_satisfied,
                manage: manage_why,
                deadline: deadline_wait.map(|w| now.saturating_add(w)),
            },
            &plan,
        )
    });
    Ok((plan, explanation))
}

/// Takes the pods the plan deletes out of its FailPods action (only a Job
/// with a pending timeout has one): the deletion supersedes the timeout, and
/// a pod deleted finalizer-first (a Job reaching its completions by scaling
/// down) would otherwise be marked failed and never counted.
fn drop_deleted_from_fail_pods(actions: &mut Vec<Action>) {
    if !actions.iter().any(|a| matches!(a, Action::FailPods(_))) {
        return;
    }
    let deleted: BTreeSet<String> = actions
        .iter()
        .filter_map(|a| match a {
            Action::DeletePods(d) => Some(d),
            _ => None,
        })
        .flatten()
        .map(|d| d.pod.uid.clone())
        .collect();
    if deleted.is_empty() {
        return;
    }
    for action in actions.iter_mut() {
        if let Action::FailPods(failures) = action {
            failures.retain(|f| !deleted.contains(&f.pod.uid));
        }
    }
    actions.retain(|a| !matches!(a, Action::FailPods(f) if f.is_empty()));
}

/// The condition the Job is finishing with, in upstream's order of
/// precedence, or `None` while it keeps running; and, when its active
/// deadline is still ahead, how long until it passes.
fn finishing_condition(facts: &SyncFacts<'_>) -> (Option<JobCondition>, Option<Duration>) {
    let job = facts.job;
    let now = facts.now;
    let mut deadline_wait = None;
    let mut condition = job
        .status
        .true_condition(&JobConditionType::SuccessCriteriaMet)
        .cloned();
    if condition.is_none() {
        if let Some(target) = job.status.true_condition(&JobConditionType::FailureTarget) {
            condition = Some(new_condition(
                JobConditionType::Failed,
                ConditionStatus::True,
                &target.reason,
                &target.message,
                now,
            ));
        } else if let Some((reason, message, pod)) = fail_job_reason_and_message(job, &facts.pods) {
            let message = failure_message(job, &facts.pods, Cause::FailJob(pod), &message);
            condition = Some(failure_target(&reason, &message, now));
        }
    }
    if condition.is_none() {
        if facts.failed > job.spec.backoff_limit || past_backoff_limit_on_failure(job, &facts.pods)
        {
            condition = Some(failure_target(
                "BackoffLimitExceeded",
                &failure_message(
                    job,
                    &facts.pods,
                    Cause::BackoffLimitExceeded,
                    "Job has reached the specified backoff limit",
                ),
                now,
            ));
        } else if past_active_deadline(job, facts.start_time, now) {
            condition = Some(failure_target(
                "DeadlineExceeded",
                "Job was active longer than specified deadline",
                now,
            ));
        } else if let (Some(ads), false) = (job.spec.active_deadline_seconds, job.spec.suspend) {
            let start = facts.start_time.unwrap_or(now);
            let deadline = start.saturating_add(crate::time::secs(ads));
            deadline_wait = Some(deadline.saturating_since(now));
        }
    }
    if condition.is_none() && job.spec.is_indexed() {
        condition = indexed_finishing_condition(facts);
    }
    (condition, deadline_wait)
}

/// The conditions only Indexed Jobs finish with: too many or enough failed
/// indexes (per-index backoff limits), or a met success policy.
fn indexed_finishing_condition(facts: &SyncFacts<'_>) -> Option<JobCondition> {
    let job = facts.job;
    let now = facts.now;
    let completions = job.spec.completions.unwrap_or(0);
    if let Some(failed) = &facts.failed_indexes {
        let failed_total = failed.total();
        if job
            .spec
            .max_failed_indexes
            .is_some_and(|max| failed_total > u64::try_from(max).unwrap_or(0))
        {
            return Some(failure_target(
                "MaxFailedIndexesExceeded",
                &failure_message(
                    job,
                    &facts.pods,
                    Cause::MaxFailedIndexesExceeded(failed),
                    "Job has exceeded the specified maximal number of failed indexes",
                ),
                now,
            ));
        }
        if failed_total > 0
            && failed_total + facts.succeeded_indexes.total()
                >= u64::try_from(completions).unwrap_or(0)
        {
            return Some(failure_target(
                "FailedIndexes",
                &failure_message(
                    job,
                    &facts.pods,
                    Cause::FailedIndexes(failed),
                    "Job has failed indexes",
                ),
                now,
            ));
        }
    }
    let rule = match_success_policy(
        job.spec.success_policy.as_ref(),
        completions,
        &facts.succeeded_indexes,
    )?;
    Some(new_condition(
        JobConditionType::SuccessCriteriaMet,
        ConditionStatus::True,
        "SuccessPolicy",
        &success_policy_message(rule),
        now,
    ))
}

/// Suspended=True when suspended (clearing startTime, as the beta gate
/// MutableSchedulingDirectivesForSuspendedJobs does), or Suspended=False when
/// resumed (resetting startTime), with its event. Returns whether the condition changed.
fn update_suspend_condition(
    job: &Job,
    now: Time,
    status: &mut JobStatus,
    actions: &mut Vec<Action>,
) -> bool {
    let (condition_status, reason, message, event, start_time) = if job.spec.suspend {
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
        &mut status.conditions,
        JobConditionType::Suspended,
        condition_status,
        reason,
        message,
        now,
    );
    if changed {
        actions.push(Action::RecordEvent(normal(event, message)));
        status.start_time = start_time;
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
fn new_finished_pods<'a>(
    job: &Job,
    pods: &[SyncPod<'a>],
    finalizer_removals_pending: &BTreeSet<String>,
    uncounted_succeeded: &BTreeSet<&str>,
    uncounted_failed: &BTreeSet<&str>,
) -> (Vec<SyncPod<'a>>, Vec<SyncPod<'a>>) {
    let eligible = |p: &SyncPod<'a>| {
        p.has_tracking_finalizer
            && !finalizer_removals_pending.contains(&p.uid)
            && (!job.spec.is_indexed() || valid_index(job, p).is_some())
    };
    let (mut succeeded, mut failed) = (Vec::new(), Vec::new());
    // One pass: a succeeded pod is never a failed one.
    for pod in pods {
        if pod.phase == PodPhase::Succeeded {
            if eligible(pod) && !uncounted_succeeded.contains(pod.uid.as_str()) {
                succeeded.push(*pod);
            }
        } else if pod.failed && eligible(pod) && !uncounted_failed.contains(pod.uid.as_str()) {
            failed.push(*pod);
        }
    }
    (succeeded, failed)
}

/// The reason and message of the first failed pod (in snapshot order,
/// counted or not) whose handling is FailJob, and that pod: `PodFailurePolicy`
/// and upstream's message for a `spec.podFailurePolicy` rule; for a rule of the
/// extended policy document, the reason its name gives and a message naming it.
fn fail_job_reason_and_message<'s, 'a>(
    job: &Job,
    pods: &'s [SyncPod<'a>],
) -> Option<(String, String, &'s SyncPod<'a>)> {
    if job.spec.pod_failure_policy.is_none() && job.extended_failure_policy.is_none() {
        return None;
    }
    let pod = pods
        .iter()
        .find(|p| p.failed && p.policy_action(job) == Some(&PodFailurePolicyAction::FailJob))?;
    // Only the pod the message names needs the match's details.
    if let (Some(m), Some(document)) = (
        pod.failed_document_match(),
        job.extended_failure_policy.as_deref(),
    ) {
        return Some((
            rules::fail_job_reason(document, m.rule),
            rules::fail_job_message(job, &m, pod),
            pod,
        ));
    }
    let policy = job.spec.pod_failure_policy.as_ref()?;
    let message = pod
        .upstream_match()?
        .decision(policy, &job.namespace, pod)
        .fail_job_message?;
    Some(("PodFailurePolicy".into(), message, pod))
}

/// With restartPolicy OnFailure, container restarts of running and pending pods count against backoffLimit.
fn past_backoff_limit_on_failure(job: &Job, pods: &[SyncPod<'_>]) -> bool {
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
fn count(n: usize) -> i32 {
    i32::try_from(n).unwrap_or(i32::MAX)
}

/// UIDs in a status list, for membership tests.
fn uid_set(uids: &[String]) -> BTreeSet<&str> {
    uids.iter().map(String::as_str).collect()
}

#[cfg(test)]
mod tests;
