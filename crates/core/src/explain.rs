//! Why a Job's plan is what it is, built from the sync's own facts and
//! decisions (never by applying the rules a second time): what the sync
//! concluded about each pod, why each action, the backoff that holds pods
//! back, and the condition that comes next.
//!
//! Built only when asked for ([`crate::sync::decide_explained`]): a caller
//! that does not ask pays nothing. Bounded however large the Job: pods with
//! the same verdict are grouped, every list keeps its first entries and counts
//! the rest, every index list its first intervals, every text its first bytes.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use crate::index_set::IndexSet;
use crate::manage::{BackoffHold, ManageWhy};
use crate::model::{
    ConditionStatus, JobCondition, JobConditionType, PodFailurePolicyAction, Snapshot,
};
use crate::plan::{Action, Plan};
use crate::sync_pod::SyncPod;
use crate::text::{Capped, truncated};
use crate::text::{MAX_MESSAGE_BYTES, MAX_TEXT_BYTES};
use crate::time::Time;

mod actions;
mod pods;
mod status;

use actions::action_reasons;
use pods::pod_groups;
use status::{coming_condition, requeue_reason, summary};
/// Most pod names one group lists.
pub const MAX_PODS_PER_GROUP: usize = 10;
/// Most intervals an index list keeps.
pub const MAX_INDEX_INTERVALS: usize = 100;

/// What a terminal condition waits for when nothing else holds it back.
const NEXT_SYNC: &str = "the next sync";

/// Why one sync's plan is what it is.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct JobExplanation {
    /// One line saying what happens.
    pub summary: String,
    /// The pods, grouped by verdict, rule and detail, in the order of each group's first pod.
    pub pods: Capped<PodGroup>,
    /// Why each action, in plan order.
    pub action_reasons: Capped<ActionReason>,
    /// The completed indexes after this sync (Indexed Jobs).
    pub completed_indexes: Option<IndexSummary>,
    /// The failed indexes after this sync (backoffLimitPerIndex).
    pub failed_indexes: Option<IndexSummary>,
    /// The backoff that holds pod creation back.
    pub backoff: Option<BackoffWait>,
    /// The condition the Job is finishing with, or its active deadline ahead.
    pub coming_condition: Option<ComingCondition>,
    /// Why the plan is empty: another controller manages the Job.
    pub not_managed: Option<NotManaged>,
    /// Why the plan asks to decide again; empty when it does not.
    pub requeue_reason: String,
}

/// What the sync concluded about a pod.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Verdict {
    /// It succeeded: it counts towards completions.
    Succeeded,
    /// It failed and counts towards backoffLimit (or its index's backoffLimitPerIndex).
    FailedCounted,
    /// It failed and an Ignore rule matched: not counted.
    FailedIgnored,
    /// It failed and a FailJob rule matched: the Job fails.
    FailsJob,
    /// It failed its index: a FailIndex rule, or the index reached backoffLimitPerIndex.
    FailsIndex,
    /// Pending or running.
    Running,
    /// Being deleted, not yet finished, and not counted as failed.
    Terminating,
    /// Owned, but its labels no longer match the selector: released.
    Released,
    /// Not the Job's: another controller's, or an orphan it does not adopt.
    NotClaimed,
}

impl Verdict {
    /// The name the API uses.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Succeeded => "Succeeded",
            Verdict::FailedCounted => "FailedCounted",
            Verdict::FailedIgnored => "FailedIgnored",
            Verdict::FailsJob => "FailsJob",
            Verdict::FailsIndex => "FailsIndex",
            Verdict::Running => "Running",
            Verdict::Terminating => "Terminating",
            Verdict::Released => "Released",
            Verdict::NotClaimed => "NotClaimed",
        }
    }
}

/// Pods with the same verdict, matched rule and detail.
#[derive(Clone, Debug, PartialEq)]
pub struct PodGroup {
    /// What the sync concluded.
    pub verdict: Verdict,
    /// How many pods.
    pub count: usize,
    /// The first of them, by name, in request order.
    pub pods: Capped<String>,
    /// Their completion indexes (Indexed Jobs).
    pub indexes: Option<IndexSummary>,
    /// The pod failure policy rule that matched, and its action.
    pub rule: Option<(usize, PodFailurePolicyAction)>,
    /// The extended failure policy document's rule that handled the pods
    /// (then `rule` is `None`): its name, `rules[i]` when unnamed, or
    /// `PendingTimeout`, `ReadyTimeout`, `AttemptDeadline` or `TerminatingTimeout` for pods
    /// failed for that timeout.
    pub extended_rule: Option<String>,
    /// What the rule matched, e.g. `exit code 42 of container "main" (In [42])`.
    pub matched: String,
    /// Why, in words, and where the pods stand in the status.
    pub detail: String,
    /// Orphans the Job adopts in this plan.
    pub adopted: bool,
}

/// A set of completion indexes, its first intervals written out.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IndexSummary {
    /// The first [`MAX_INDEX_INTERVALS`] intervals, as the status writes them.
    pub text: String,
    /// How many indexes the whole set holds.
    pub count: u64,
    /// Intervals left out of `text`.
    pub intervals_omitted: usize,
}

impl IndexSummary {
    /// The summary of `set`.
    pub fn of(set: &IndexSet) -> Self {
        let intervals = set.intervals();
        let kept = intervals.len().min(MAX_INDEX_INTERVALS);
        let text = if kept == intervals.len() {
            set.to_string()
        } else {
            IndexSet::from_intervals(intervals[..kept].iter().copied()).to_string()
        };
        IndexSummary {
            text,
            count: set.total(),
            intervals_omitted: intervals.len() - kept,
        }
    }
}

/// Why the plan has one of its actions.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ActionReason {
    /// Position of the action in the plan.
    pub action: usize,
    /// Machine-readable cause.
    pub reason: &'static str,
    /// For people.
    pub message: String,
    /// How many of the action's pods this cause covers.
    pub pods: usize,
}

/// The pod-failure backoff that holds pod creation back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BackoffWait {
    /// When pods may be created again.
    pub until: Time,
    /// The whole delay.
    pub delay: Duration,
    /// The failures it counts.
    pub failures: i32,
    /// When the last of them happened.
    pub last_failure: Time,
    /// The index whose replacement waits (backoffLimitPerIndex).
    pub index: Option<i32>,
}

/// The condition that follows.
#[derive(Clone, Debug, PartialEq)]
pub struct ComingCondition {
    /// FailureTarget or SuccessCriteriaMet, when one comes first.
    pub interim: Option<JobConditionType>,
    /// Failed or Complete.
    pub terminal: JobConditionType,
    /// The conditions' reason.
    pub reason: String,
    /// The conditions' message.
    pub message: String,
    /// Whether this plan writes the terminal condition.
    pub terminal_now: bool,
    /// What the terminal condition waits for, when not now.
    pub waits_for: String,
    /// For an active deadline ahead: when it passes.
    pub at: Option<Time>,
}

/// Another controller manages the Job.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NotManaged {
    /// The Job's spec.managedBy.
    pub managed_by: String,
    /// The controller the request decided for.
    pub controller_name: String,
    /// For people.
    pub message: String,
}

/// The facts of one sync the explanation reads, all of them the sync's own.
pub(crate) struct ExplainFacts<'a> {
    /// The snapshot.
    pub snapshot: &'a Snapshot,
    /// The claimed pods, with the sync's conclusions about them.
    pub pods: &'a [SyncPod<'a>],
    /// Succeeded UIDs in `uncountedTerminatedPods` before the sync.
    pub initially_uncounted_succeeded: &'a BTreeSet<&'a str>,
    /// Failed UIDs in `uncountedTerminatedPods` before the sync.
    pub initially_uncounted_failed: &'a BTreeSet<&'a str>,
    /// Completed indexes after the sync.
    pub succeeded_indexes: &'a IndexSet,
    /// Failed indexes after the sync.
    pub failed_indexes: Option<&'a IndexSet>,
    /// Per index, the failed pod kept until its replacement exists.
    pub delayed: &'a BTreeMap<i32, SyncPod<'a>>,
    /// Succeeded pods or indexes, counted or not.
    pub succeeded: i32,
    /// Failed pods that count, counted or not.
    pub failed: i32,
    /// The condition the sync found the Job finishing with.
    pub finishing: Option<&'a JobCondition>,
    /// The sync deleted the active pods because the Job is finishing (not manage's doing).
    pub finishing_deletes: bool,
    /// No earlier creation or deletion is unobserved.
    pub expectations_satisfied: bool,
    /// What manage decided on, when the sync called it.
    pub manage: Option<ManageWhy>,
    /// When the active deadline passes, when it is ahead.
    pub deadline: Option<Time>,
}

/// Text from the request, cut for an explanation.
fn text(s: &str) -> String {
    truncated(s, MAX_TEXT_BYTES).into_owned()
}

/// The explanation of an empty plan for a Job another controller manages.
pub(crate) fn not_managed(managed_by: &str, deciding_for: &str) -> JobExplanation {
    let message = format!(
        "spec.managedBy is {:?}: that controller manages the Job, and this request decides for {:?}; \
         to decide as that controller, send controller_name {:?}",
        text(managed_by),
        text(deciding_for),
        text(managed_by)
    );
    JobExplanation {
        summary: truncated(
            &format!(
                "Nothing to do: the Job is managed by {:?}",
                text(managed_by)
            ),
            MAX_MESSAGE_BYTES,
        )
        .into_owned(),
        not_managed: Some(NotManaged {
            managed_by: text(managed_by),
            controller_name: text(deciding_for),
            message: truncated(&message, MAX_MESSAGE_BYTES).into_owned(),
        }),
        ..JobExplanation::default()
    }
}

/// The explanation of a finished Job's plan: only finalizers are left to remove.
pub(crate) fn finished(snapshot: &Snapshot, plan: &Plan) -> JobExplanation {
    let status = &snapshot.job.status;
    let condition = status
        .conditions
        .iter()
        .find(|c| {
            c.status == ConditionStatus::True
                && matches!(
                    c.condition_type,
                    JobConditionType::Complete | JobConditionType::Failed
                )
        })
        .map(|c| format!("{} ({})", c.condition_type.as_str(), text(&c.reason)))
        .unwrap_or_default();
    let mut explanation = JobExplanation {
        summary: format!(
            "The Job has finished {condition}: it is never changed again; only the tracking finalizers left on its pods are removed"
        ),
        ..JobExplanation::default()
    };
    for (i, action) in plan.actions.iter().enumerate() {
        if let Action::RemoveFinalizers(pods) = action {
            explanation.action_reasons.push_with(|| ActionReason {
                action: i,
                reason: "JobFinished",
                message:
                    "the Job has finished: its pods' tracking finalizers go, so they can be removed"
                        .into(),
                pods: pods.len(),
            });
        }
    }
    explanation
}

/// The explanation of the warning a Job of an unknown completion mode gets.
pub(crate) fn unknown_mode(plan: &Plan) -> JobExplanation {
    let mut explanation = JobExplanation {
        summary: "The Job's completion mode is unknown to this version: the sync is skipped".into(),
        ..JobExplanation::default()
    };
    for i in 0..plan.actions.len() {
        explanation.action_reasons.push_with(|| ActionReason {
            action: i,
            reason: "UnknownCompletionMode",
            message: "upstream records this warning and skips the sync".into(),
            pods: 0,
        });
    }
    explanation
}

/// The explanation of one sync of a running Job.
pub(crate) fn sync(facts: &ExplainFacts<'_>, plan: &Plan) -> JobExplanation {
    let job = &facts.snapshot.job;
    let mut explanation = JobExplanation {
        pods: pod_groups(facts, plan),
        ..JobExplanation::default()
    };
    if job.spec.is_indexed() {
        explanation.completed_indexes = Some(IndexSummary::of(facts.succeeded_indexes));
        explanation.failed_indexes = facts.failed_indexes.map(IndexSummary::of);
    }
    let waiting = plan.requeue_after.is_some()
        && !plan
            .actions
            .iter()
            .any(|a| matches!(a, Action::CreatePods(_)));
    explanation.backoff = facts
        .manage
        .and_then(|m| m.backoff)
        .filter(|_| waiting)
        .map(|hold: BackoffHold| BackoffWait {
            until: hold.last_failure.saturating_add(hold.delay),
            delay: hold.delay,
            failures: hold.failures,
            last_failure: hold.last_failure,
            index: hold.index,
        });
    explanation.coming_condition = coming_condition(facts, plan);
    explanation.action_reasons = action_reasons(facts, plan);
    explanation.requeue_reason = requeue_reason(facts, &explanation, plan);
    explanation.summary =
        truncated(&summary(facts, &explanation, plan), MAX_MESSAGE_BYTES).into_owned();
    explanation
}

#[cfg(test)]
mod tests;
