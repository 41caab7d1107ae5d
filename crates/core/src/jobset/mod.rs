//! JobSet failure policy: one reconcile's failure-handling part, as JobSet's controller
//! (kubernetes-sigs/jobset, v0.12 line) does it.
//!
//! [`decide_jobset`] takes a [`JobSetSnapshot`] (the JobSet, its child Jobs, `now`) and returns
//! a [`JobSetPlan`]: previous-attempt Jobs to delete (foreground), the new status (counters,
//! `Failed` and `RestartingJobSet` conditions, `terminalState`, `replicatedJobsStatus`), the
//! events to record after the status write, and the Jobs that may be created now.
//!
//! The order is the controller's: group the child Jobs; recompute the replicatedJob statuses;
//! stop (deleting active Jobs) when the JobSet has finished; delete previous attempts; mark
//! `RestartingJobSet=False/JobsReady` when all Jobs are ready; then, if any Job of the current
//! attempt failed, run exactly one failure-policy action and create nothing; otherwise work out
//! which Jobs may be created under `Recreate` or `BlockingRecreate`.
//!
//! The feature gate `RestartJob` is treated as on: the per-Job counters and the
//! `job-restart-attempt` label are read and written, and `RestartJob*` actions run. The gate
//! `InPlaceRestart` is not modelled: `InPlaceRestart` JobSets are recreated as under
//! `Recreate`, and the in-place restart limit (which needs Pods) is not decided here.
//! With no failed Job, the `Suspended` condition follows `spec.suspend` (True/`SuspendedJobs`
//! plus `RestartingJobSet=False/JobSetSuspended`, or an existing one turns False/`ResumeJobs`),
//! as suspendJobs / resumeJobsIfNecessary leave it; the child Jobs' own suspend flag is the
//! caller's. Not decided either: the success policy (`Completed`), startup policy ordering
//! (an `InOrder` JobSet may set `StartupPolicyInProgress` instead of resuming), TTL after
//! finished.
//!
//! Deliberately unlike upstream, which creates every missing Job (and deletes every previous
//! attempt) in one reconcile, a plan creates and deletes at most [`MAX_JOB_CHANGES_PER_PLAN`]
//! Jobs and sets [`JobSetPlan::requeue`] when more follow, so a small request never buys a huge
//! answer; the explanation keeps [`MAX_EXPLANATION_ENTRIES`] entries per list.
//!
//! [`decide_jobset_until`] is the same decision asking an [`Interrupt`] between child Jobs
//! and between rule evaluations (where a large JobSet's cost is), so a server can stop a
//! decision nobody waits for; [`decide_jobset`] never stops.

mod explanation;
mod model;

pub use explanation::*;
pub use model::*;

use std::collections::HashMap;

use crate::cancel::{Cancelled, Interrupt, Never, check};
use crate::plan::{Event, EventType};
use crate::text::truncated;
use crate::time::Time;

/// The child Jobs sorted the way `getChildJobs` sorts them (indexes into the snapshot's list).
#[derive(Debug, Default)]
struct Groups {
    previous: Vec<usize>,
    active: Vec<usize>,
    failed: Vec<usize>,
    succeeded: Vec<usize>,
}

/// The status being built and the events it queues.
struct Writer {
    status: JobSetStatus,
    events: Vec<Event>,
    now: Time,
}

impl Writer {
    /// JobSet's setCondition: update the condition and, when it changed, queue its event.
    fn set_condition(
        &mut self,
        condition_type: &str,
        status: &str,
        reason: &str,
        message: &str,
        event_type: EventType,
    ) {
        if update_condition(
            &mut self.status.conditions,
            condition_type,
            status,
            reason,
            message,
            self.now,
        ) {
            self.event(event_type, reason, message.to_string());
        }
    }

    fn event(&mut self, event_type: EventType, reason: &str, message: String) {
        self.events.push(Event {
            event_type,
            reason: reason.to_string(),
            message,
        });
    }

    /// setJobSetFailedCondition: Failed=True, RestartingJobSet=False (if present), terminal state.
    fn fail(&mut self, reason: &str, message: &str) {
        self.set_condition(
            CONDITION_FAILED,
            "True",
            reason,
            message,
            EventType::Warning,
        );
        self.set_condition(
            CONDITION_RESTARTING,
            "False",
            REASON_JOBSET_FAILED,
            MSG_JOBSET_FAILED,
            EventType::Normal,
        );
        self.status.terminal_state = CONDITION_FAILED.to_string();
    }
}

/// JobSet's updateCondition: an unchanged condition stays; a new reason or message under the
/// same status keeps the transition time; a new status takes `now`; a missing condition is
/// added only when True. Returns whether anything changed.
pub fn update_condition(
    conditions: &mut Vec<Condition>,
    condition_type: &str,
    status: &str,
    reason: &str,
    message: &str,
    now: Time,
) -> bool {
    // metav1.Time is stored with second precision; so is what we write.
    let now = Time::from_unix_nanos(now.unix_nanos() - now.unix_nanos().rem_euclid(1_000_000_000));
    if let Some(existing) = conditions
        .iter_mut()
        .find(|c| c.condition_type == condition_type)
    {
        // Upstream replaces the whole condition with a fresh one (observedGeneration 0).
        if existing.status != status {
            existing.observed_generation = 0;
            existing.status = status.to_string();
            existing.reason = reason.to_string();
            existing.message = message.to_string();
            existing.last_transition_time = Some(now);
            return true;
        }
        if existing.reason != reason || existing.message != message {
            existing.observed_generation = 0;
            existing.reason = reason.to_string();
            existing.message = message.to_string();
            return true;
        }
        return false;
    }
    if status != "True" {
        return false;
    }
    conditions.push(Condition {
        condition_type: condition_type.to_string(),
        status: status.to_string(),
        observed_generation: 0,
        last_transition_time: Some(now),
        reason: reason.to_string(),
        message: message.to_string(),
    });
    true
}

/// Whether the JobSet has `Completed=True` or `Failed=True`.
pub fn is_finished(status: &JobSetStatus) -> bool {
    status.conditions.iter().any(|c| {
        (c.condition_type == CONDITION_COMPLETED || c.condition_type == CONDITION_FAILED)
            && c.status == "True"
    })
}

/// The name of Job `index` of `replicated_job`: `<jobset>-<replicatedJob>-<index>`.
pub fn job_name(job_set: &str, replicated_job: &str, index: i32) -> String {
    format!("{job_set}-{replicated_job}-{index}")
}

/// `message (first failed job: <job>)`, the suffix every failure-policy message carries.
pub fn message_with_first_failed_job(message: &str, job: &str) -> String {
    format!("{message} (first failed job: {job})")
}

/// Counted restarts: `restartsCountTowardsMax` plus every `jobRestartsCountTowardsMax` entry.
pub fn total_restarts_count_towards_max(status: &JobSetStatus) -> i64 {
    let per_job: i64 = status
        .replicated_jobs_status
        .iter()
        .flat_map(|s| s.job_restarts_count_towards_max.iter())
        .map(|&n| i64::from(n))
        .sum();
    i64::from(status.restarts_count_towards_max) + per_job
}

/// The status entries by replicatedJob name, the first of each name (as a linear search finds
/// it): one lookup per Job instead of a scan, so work stays linear in the request.
fn statuses_by_name(status: &JobSetStatus) -> HashMap<&str, &ReplicatedJobStatus> {
    let mut out = HashMap::with_capacity(status.replicated_jobs_status.len());
    for s in &status.replicated_jobs_status {
        out.entry(s.name.as_str()).or_insert(s);
    }
    out
}

/// `jobRestarts[index]` of `replicated_job`, zero when the array has not been written yet.
fn job_restarts_of(
    statuses: &HashMap<&str, &ReplicatedJobStatus>,
    replicated_job: &str,
    index: i32,
) -> i32 {
    statuses
        .get(replicated_job)
        .and_then(|s| {
            usize::try_from(index)
                .ok()
                .and_then(|i| s.job_restarts.get(i))
        })
        .copied()
        .unwrap_or(0)
}

fn group_jobs(
    js: &JobSet,
    jobs: &[ChildJob],
    interrupt: &dyn Interrupt,
) -> Result<Groups, Cancelled> {
    let mut groups = Groups::default();
    let statuses = statuses_by_name(&js.status);
    for (i, job) in jobs.iter().enumerate() {
        check(interrupt)?;
        let older_attempt = job.restart_attempt < js.status.restarts;
        // A Job without the label predates the RestartJob gate: upstream only logs it.
        let older_job_attempt = job
            .job_restart_attempt
            .is_some_and(|a| a < job_restarts_of(&statuses, &job.replicated_job, job.job_index));
        if older_attempt || older_job_attempt {
            groups.previous.push(i);
            continue;
        }
        match job.finished() {
            None => groups.active.push(i),
            Some(Finished::Failed) => groups.failed.push(i),
            Some(Finished::Succeeded) => groups.succeeded.push(i),
        }
    }
    Ok(groups)
}

/// calculateReplicatedJobStatuses: counts over the current attempt, per-Job arrays carried over.
/// One pass over the Jobs tallies every replicatedJob at once (work linear in the request).
fn replicated_job_statuses(
    js: &JobSet,
    jobs: &[ChildJob],
    groups: &Groups,
    interrupt: &dyn Interrupt,
) -> Result<Vec<ReplicatedJobStatus>, Cancelled> {
    #[derive(Default)]
    struct Tally {
        ready: usize,
        succeeded: usize,
        failed: usize,
        active: usize,
        suspended: usize,
    }
    let mut tallies: HashMap<&str, Tally> = HashMap::new();
    let mut tally = |idx: &[usize], add: &dyn Fn(&mut Tally, &ChildJob)| {
        for &i in idx {
            check(interrupt)?;
            let job = &jobs[i];
            add(tallies.entry(job.replicated_job.as_str()).or_default(), job);
        }
        Ok(())
    };
    tally(&groups.active, &|t, j| {
        t.ready += usize::from(j.ready);
        t.active += usize::from(j.has_active_pods);
        t.suspended += usize::from(j.suspended);
    })?;
    tally(&groups.succeeded, &|t, _| t.succeeded += 1)?;
    tally(&groups.failed, &|t, _| t.failed += 1)?;
    let old = statuses_by_name(&js.status);
    let n = |k: usize| i32::try_from(k).unwrap_or(i32::MAX);
    Ok(js
        .spec
        .replicated_jobs
        .iter()
        .map(|rj| {
            let t = tallies.get(rj.name.as_str());
            let old = old.get(rj.name.as_str());
            ReplicatedJobStatus {
                name: rj.name.clone(),
                ready: n(t.map_or(0, |t| t.ready)),
                succeeded: n(t.map_or(0, |t| t.succeeded)),
                failed: n(t.map_or(0, |t| t.failed)),
                active: n(t.map_or(0, |t| t.active)),
                suspended: n(t.map_or(0, |t| t.suspended)),
                job_restarts: old.map(|s| s.job_restarts.clone()).unwrap_or_default(),
                job_restarts_count_towards_max: old
                    .map(|s| s.job_restarts_count_towards_max.clone())
                    .unwrap_or_default(),
            }
        })
        .collect())
}

/// replicatedJobStatusesEqual's side effect: the list ends up sorted by name, descending.
fn sort_replicated_job_statuses(statuses: &mut [ReplicatedJobStatus]) {
    statuses.sort_by(|a, b| b.name.cmp(&a.name));
}

/// Whether every Job is ready or succeeded: Σ(ready + succeeded) equals Σ replicas.
fn all_jobs_ready(js: &JobSet, statuses: &[ReplicatedJobStatus]) -> bool {
    let replicas: i64 = js
        .spec
        .replicated_jobs
        .iter()
        .map(|rj| i64::from(rj.replicas))
        .sum();
    let ready: i64 = statuses
        .iter()
        .map(|s| i64::from(s.ready) + i64::from(s.succeeded))
        .sum();
    replicas == ready
}

/// Whether `rule` applies to the failed `job` whose Failed condition is `failure`, checked in
/// upstream's order: reason, message, replicatedJob label, target.
pub fn rule_verdict(
    rule: &FailurePolicyRule,
    job: &ChildJob,
    failure: &ChildJobCondition,
) -> RuleVerdict {
    if !rule.on_job_failure_reasons.is_empty()
        && !rule.on_job_failure_reasons.contains(&failure.reason)
    {
        return RuleVerdict::ReasonNotListed(failure.reason.clone());
    }
    if !rule.on_job_failure_message_patterns.is_empty()
        && !rule
            .on_job_failure_message_patterns
            .iter()
            .any(|p| p.is_match(&failure.message))
    {
        return RuleVerdict::MessageNotMatched;
    }
    if job.replicated_job.is_empty() {
        return RuleVerdict::NoReplicatedJob;
    }
    if !rule.target_replicated_jobs.is_empty()
        && !rule.target_replicated_jobs.contains(&job.replicated_job)
    {
        return RuleVerdict::NotTargeted(job.replicated_job.clone());
    }
    RuleVerdict::Applies
}

/// findFirstFailedJob: the Job whose Failed=True condition is earliest; a tie goes to the
/// first listed. Returns its position in `jobs`.
pub fn first_failed_job<'a>(jobs: impl IntoIterator<Item = &'a ChildJob>) -> Option<usize> {
    let mut best: Option<(usize, Option<Time>)> = None;
    for (pos, job) in jobs.into_iter().enumerate() {
        let Some(failure) = job.failure_condition() else {
            continue;
        };
        // Option orders None first, as Go's zero time is before every real time.
        let t = failure.last_transition_time;
        if best.is_none_or(|(_, bt)| t < bt) {
            best = Some((pos, t));
        }
    }
    best.map(|(pos, _)| pos)
}

/// findFirstFailedPolicyRuleAndJob: rules in order; the first rule that applies to any failed
/// Job wins, paired with the earliest-failed Job among those it applies to. Returns the rule
/// index and the Job's position in `failed`, and records the evaluations (the first ones, as
/// `evaluations` keeps them).
pub fn first_matching_rule_and_job(
    rules: &[FailurePolicyRule],
    failed: &[&ChildJob],
    evaluations: &mut Capped<RuleEvaluation>,
) -> Option<(usize, usize)> {
    // `Never` never interrupts, so the search always finishes.
    first_matching_rule_and_job_until(rules, failed, evaluations, &Never).unwrap_or_default()
}

/// [`first_matching_rule_and_job`], asking `interrupt` before each evaluation: one
/// evaluation may search a message with every pattern of its rule.
fn first_matching_rule_and_job_until(
    rules: &[FailurePolicyRule],
    failed: &[&ChildJob],
    evaluations: &mut Capped<RuleEvaluation>,
    interrupt: &dyn Interrupt,
) -> Result<Option<(usize, usize)>, Cancelled> {
    for (rule_index, rule) in rules.iter().enumerate() {
        let mut best: Option<(usize, Option<Time>)> = None;
        for (pos, job) in failed.iter().enumerate() {
            check(interrupt)?;
            let Some(failure) = job.failure_condition() else {
                continue;
            };
            let verdict = rule_verdict(rule, job, failure);
            let t = failure.last_transition_time;
            if verdict.applies() && best.is_none_or(|(_, bt)| t < bt) {
                best = Some((pos, t));
            }
            evaluations.push_with(|| RuleEvaluation {
                rule_index,
                rule_name: explanation_text(&rule.name),
                job: explanation_text(&job.name),
                verdict: verdict.bounded(),
            });
        }
        if let Some((pos, _)) = best {
            return Ok(Some((rule_index, pos)));
        }
    }
    Ok(None)
}

/// One reconcile's failure-policy part. Pure: the same snapshot gives the same plan.
pub fn decide_jobset(snap: &JobSetSnapshot) -> JobSetPlan {
    // `Never` never interrupts, so the default is never what is returned.
    decide_jobset_until(snap, &Never).unwrap_or_default()
}

/// [`decide_jobset`], stopping with [`Cancelled`] as soon as `interrupt` is set (asked
/// between child Jobs and between rule evaluations): half a plan would be wrong.
pub fn decide_jobset_until(
    snap: &JobSetSnapshot,
    interrupt: &dyn Interrupt,
) -> Result<JobSetPlan, Cancelled> {
    let js = &snap.job_set;
    let jobs = &snap.jobs;
    let groups = group_jobs(js, jobs, interrupt)?;
    let names = |idx: &[usize]| -> Capped<String> {
        let mut out = Capped::default();
        for &i in idx {
            out.push_with(|| explanation_text(&jobs[i].name));
        }
        out
    };
    let mut explanation = JobSetExplanation {
        previous_jobs: names(&groups.previous),
        active_jobs: names(&groups.active),
        failed_jobs: names(&groups.failed),
        succeeded_jobs: names(&groups.succeeded),
        ..JobSetExplanation::default()
    };
    let mut w = Writer {
        status: js.status.clone(),
        events: Vec::new(),
        now: snap.now,
    };
    w.status.replicated_jobs_status = replicated_job_statuses(js, jobs, &groups, interrupt)?;
    sort_replicated_job_statuses(&mut w.status.replicated_jobs_status);
    let mut actions = Vec::new();
    let mut jobs_to_create = Vec::new();
    let mut requeue = false;

    if is_finished(&js.status) {
        // A finished JobSet only cleans up its running Jobs; failed and completed ones stay.
        let (active, more) = deletions(jobs, &groups.active);
        requeue |= more;
        explanation.summary = format!(
            "the JobSet has finished; {} active Job(s) to delete, nothing else to do",
            active.len()
        );
        if !active.is_empty() {
            actions.push(JobSetAction::DeleteJobs(active));
        }
    } else {
        let (previous, more) = deletions(jobs, &groups.previous);
        requeue |= more;
        if !previous.is_empty() {
            actions.push(JobSetAction::DeleteJobs(previous));
        }
        if !js.spec.suspend && all_jobs_ready(js, &w.status.replicated_jobs_status) {
            w.set_condition(
                CONDITION_RESTARTING,
                "False",
                REASON_JOBS_READY,
                MSG_JOBS_READY,
                EventType::Normal,
            );
        }
        if groups.failed.is_empty() {
            // suspendJobs / resumeJobsIfNecessary run after job creation, only on this path.
            if js.spec.suspend {
                w.set_condition(
                    CONDITION_SUSPENDED,
                    "True",
                    REASON_SUSPENDED_JOBS,
                    MSG_JOBSET_SUSPENDED,
                    EventType::Normal,
                );
                w.set_condition(
                    CONDITION_RESTARTING,
                    "False",
                    REASON_JOBSET_SUSPENDED,
                    MSG_JOBSET_SUSPENDED,
                    EventType::Normal,
                );
            } else {
                // Only changes an existing Suspended condition (a False one is never added).
                w.set_condition(
                    CONDITION_SUSPENDED,
                    "False",
                    REASON_RESUME_JOBS,
                    MSG_JOBSET_RESUMED,
                    EventType::Normal,
                );
            }
            let more;
            (jobs_to_create, more) = creatable_jobs(js, jobs, &groups, interrupt)?;
            requeue |= more;
            explanation.summary = creation_summary(js, &groups, jobs_to_create.len(), more);
        } else {
            let failed: Vec<&ChildJob> = groups.failed.iter().map(|&i| &jobs[i]).collect();
            let decision =
                execute_failure_policy(js, &failed, &mut w, &mut explanation, interrupt)?;
            explanation.summary = decision
                .as_ref()
                .map(decision_summary)
                .unwrap_or_else(|| "no failed Job carries a Failed=True condition".to_string());
            explanation.decision = decision;
        }
    }

    // Upstream's equality check on replicatedJobsStatus sorts both the old and the new list by
    // name, descending, in place: that is the order written, and a mere reordering is no change.
    let mut before = js.status.clone();
    sort_replicated_job_statuses(&mut before.replicated_jobs_status);
    if w.status != before {
        actions.push(JobSetAction::UpdateStatus(Box::new(w.status)));
    }
    actions.extend(w.events.into_iter().map(JobSetAction::RecordEvent));
    if requeue {
        explanation.summary.push_str(&format!(
            "; the plan stops at {MAX_JOB_CHANGES_PER_PLAN} Job creations or deletions, so \
             decide again once it is applied"
        ));
    }
    explanation.summary =
        truncated(&explanation.summary, MAX_EXPLANATION_SUMMARY_BYTES).into_owned();
    Ok(JobSetPlan {
        actions,
        jobs_to_create,
        requeue,
        explanation,
    })
}

/// The Jobs at these positions that are not already being deleted, the first
/// [`MAX_JOB_CHANGES_PER_PLAN`] of them, and whether more are left for the next plan.
fn deletions(jobs: &[ChildJob], idx: &[usize]) -> (Vec<JobRef>, bool) {
    let mut pending = idx
        .iter()
        .map(|&i| &jobs[i])
        .filter(|j| !j.deletion_pending);
    let out = pending
        .by_ref()
        .take(MAX_JOB_CHANGES_PER_PLAN)
        .map(|j| JobRef {
            name: j.name.clone(),
            uid: j.uid.clone(),
        })
        .collect();
    (out, pending.next().is_some())
}

fn execute_failure_policy(
    js: &JobSet,
    failed: &[&ChildJob],
    w: &mut Writer,
    explanation: &mut JobSetExplanation,
    interrupt: &dyn Interrupt,
) -> Result<Option<FailureDecision>, Cancelled> {
    let counted_restarts = total_restarts_count_towards_max(&w.status);
    let Some(policy) = &js.spec.failure_policy else {
        let Some(first) = first_failed_job(failed.iter().copied()) else {
            return Ok(None);
        };
        let job = failed[first];
        w.fail(
            REASON_FAILED_JOBS,
            &message_with_first_failed_job(MSG_FAILED_JOBS, &job.name),
        );
        return Ok(Some(FailureDecision {
            rule: None,
            job: job.name.clone(),
            action: None,
            outcome: FailureOutcome::JobSetFailed(REASON_FAILED_JOBS),
            counted_restarts,
            max_restarts: None,
        }));
    };
    let matched = first_matching_rule_and_job_until(
        &policy.rules,
        failed,
        &mut explanation.evaluations,
        interrupt,
    )?;
    let (rule, job, action) = match matched {
        Some((ri, pos)) => (
            Some((ri, &policy.rules[ri])),
            failed[pos],
            policy.rules[ri].action,
        ),
        None => {
            let Some(first) = first_failed_job(failed.iter().copied()) else {
                return Ok(None);
            };
            (None, failed[first], FailurePolicyAction::RestartJobSet)
        }
    };
    let outcome = apply_action(
        js,
        policy,
        action,
        rule.map(|(_, r)| r.name.as_str()),
        job,
        w,
    );
    Ok(Some(FailureDecision {
        rule: rule.map(|(i, r)| (i, r.name.clone())),
        job: job.name.clone(),
        action: Some(action),
        outcome,
        counted_restarts,
        max_restarts: Some(policy.max_restarts),
    }))
}

fn apply_action(
    js: &JobSet,
    policy: &FailurePolicy,
    action: FailurePolicyAction,
    rule_name: Option<&str>,
    job: &ChildJob,
    w: &mut Writer,
) -> FailureOutcome {
    let over_budget = total_restarts_count_towards_max(&w.status) >= i64::from(policy.max_restarts);
    let action_message = message_with_first_failed_job(
        &format!("applying {action} failure policy action"),
        &job.name,
    );
    match action {
        FailurePolicyAction::FailJobSet => {
            w.fail(REASON_FAIL_JOBSET_ACTION, &action_message);
            FailureOutcome::JobSetFailed(REASON_FAIL_JOBSET_ACTION)
        }
        FailurePolicyAction::RestartJobSet | FailurePolicyAction::RestartJob if over_budget => {
            w.fail(
                REASON_REACHED_MAX_RESTARTS,
                &message_with_first_failed_job(MSG_REACHED_MAX_RESTARTS, &job.name),
            );
            FailureOutcome::JobSetFailed(REASON_REACHED_MAX_RESTARTS)
        }
        FailurePolicyAction::RestartJobSet
        | FailurePolicyAction::RestartJobSetAndIgnoreMaxRestarts => {
            let counted = action == FailurePolicyAction::RestartJobSet;
            w.status.restarts = w.status.restarts.saturating_add(1);
            if counted {
                w.status.restarts_count_towards_max =
                    w.status.restarts_count_towards_max.saturating_add(1);
            }
            let reason = rule_name.map_or_else(
                || REASON_DEFAULT_FAILURE_POLICY.to_string(),
                |n| format!("FailurePolicy_{n}"),
            );
            w.set_condition(
                CONDITION_RESTARTING,
                "True",
                &reason,
                &action_message,
                EventType::Warning,
            );
            let event_reason = if counted {
                REASON_RESTART_JOBSET_ACTION
            } else {
                REASON_RESTART_JOBSET_IGNORE_ACTION
            };
            w.event(EventType::Warning, event_reason, action_message);
            FailureOutcome::JobSetRestarted {
                restarts: w.status.restarts,
                counted,
            }
        }
        FailurePolicyAction::RestartJob | FailurePolicyAction::RestartJobAndIgnoreMaxRestarts => {
            let counted = action == FailurePolicyAction::RestartJob;
            let replicas = js
                .spec
                .replicated_jobs
                .iter()
                .find(|rj| rj.name == job.replicated_job)
                .map_or(0, |rj| rj.replicas);
            let job_restarts = bump_job_restarts(&mut w.status, replicas, job, counted);
            let event_reason = if counted {
                REASON_RESTART_JOB_ACTION
            } else {
                REASON_RESTART_JOB_IGNORE_ACTION
            };
            w.event(EventType::Warning, event_reason, action_message);
            FailureOutcome::JobRestarted {
                replicated_job: job.replicated_job.clone(),
                job_index: job.job_index,
                job_restarts,
                counted,
            }
        }
    }
}

/// Increments `jobRestarts[index]` (and `jobRestartsCountTowardsMax[index]` when counted),
/// creating each array with `replicas` zeros the first time it is written. Returns the new
/// `jobRestarts[index]`.
fn bump_job_restarts(
    status: &mut JobSetStatus,
    replicas: i32,
    job: &ChildJob,
    counted: bool,
) -> i32 {
    let Some(rj) = status
        .replicated_jobs_status
        .iter_mut()
        .find(|s| s.name == job.replicated_job)
    else {
        return 0;
    };
    let Ok(index) = usize::try_from(job.job_index) else {
        return 0;
    };
    // The API boundary guarantees 0 <= index < replicas and arrays of length replicas.
    let len = usize::try_from(replicas).unwrap_or(0).max(index + 1);
    let bump = |arr: &mut Vec<i32>| -> i32 {
        if arr.is_empty() {
            arr.resize(len, 0);
        }
        arr.get_mut(index).map_or(0, |n| {
            *n = n.saturating_add(1);
            *n
        })
    };
    let new = bump(&mut rj.job_restarts);
    if counted {
        bump(&mut rj.job_restarts_count_towards_max);
    }
    new
}

/// Whether `BlockingRecreate` holds creation back: previous-attempt Jobs still exist.
fn blocked_by_previous_attempt(js: &JobSet, groups: &Groups) -> bool {
    let blocking = js
        .spec
        .failure_policy
        .as_ref()
        .is_some_and(|p| p.restart_strategy == RestartStrategy::BlockingRecreate);
    blocking && !groups.previous.is_empty()
}

/// The Jobs that may be created now: every `<jobset>-<rj>-<i>` with no object of that name,
/// and, under `BlockingRecreate`, nothing while a previous-attempt Job still exists. Only the
/// first [`MAX_JOB_CHANGES_PER_PLAN`] (spec order, then index), with whether more are missing;
/// the walk stops there, so its work is bounded by the Jobs listed plus the cap, not the replicas.
fn creatable_jobs(
    js: &JobSet,
    jobs: &[ChildJob],
    groups: &Groups,
    interrupt: &dyn Interrupt,
) -> Result<(Vec<JobToCreate>, bool), Cancelled> {
    if blocked_by_previous_attempt(js, groups) {
        return Ok((Vec::new(), false));
    }
    let existing: std::collections::HashSet<&str> = jobs.iter().map(|j| j.name.as_str()).collect();
    let statuses = statuses_by_name(&js.status);
    let restarts = js.status.restarts.to_string();
    let mut out = Vec::new();
    for rj in &js.spec.replicated_jobs {
        for index in 0..rj.replicas.max(0) {
            check(interrupt)?;
            let name = job_name(&js.name, &rj.name, index);
            if existing.contains(name.as_str()) {
                continue;
            }
            if out.len() == MAX_JOB_CHANGES_PER_PLAN {
                return Ok((out, true));
            }
            let job_restarts = job_restarts_of(&statuses, &rj.name, index).to_string();
            // Key order, so the plan is deterministic.
            let labels = vec![
                (JOB_INDEX_KEY.to_string(), index.to_string()),
                (JOB_RESTART_ATTEMPT_KEY.to_string(), job_restarts),
                (JOBSET_NAME_KEY.to_string(), js.name.clone()),
                (REPLICATED_JOB_NAME_KEY.to_string(), rj.name.clone()),
                (
                    REPLICATED_JOB_REPLICAS_KEY.to_string(),
                    rj.replicas.to_string(),
                ),
                (RESTART_ATTEMPT_KEY.to_string(), restarts.clone()),
            ];
            out.push(JobToCreate {
                name,
                replicated_job: rj.name.clone(),
                job_index: index,
                annotations: labels.clone(),
                labels,
            });
        }
    }
    Ok((out, false))
}

#[cfg(test)]
mod tests;
