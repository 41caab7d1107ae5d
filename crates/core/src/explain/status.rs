//! The Job's status in words: the condition that comes next, what a status
//! write changes, why the plan asks to decide again, and the one-line summary.

use std::collections::HashSet;
use std::fmt::Write as _;

use crate::model::{JobConditionType, JobStatus};
use crate::plan::{Action, Plan};
use crate::text::MAX_MESSAGE_BYTES;
use crate::text::{human_duration, ordinal, truncated};

use super::*;

/// The condition that follows: the one the Job is finishing with, or its deadline ahead.
pub(super) fn coming_condition(facts: &ExplainFacts<'_>, plan: &Plan) -> Option<ComingCondition> {
    let job = &facts.snapshot.job;
    let Some(cond) = facts.finishing else {
        let at = facts.deadline?;
        return Some(ComingCondition {
            interim: Some(JobConditionType::FailureTarget),
            terminal: JobConditionType::Failed,
            reason: "DeadlineExceeded".into(),
            message: "Job was active longer than specified deadline".into(),
            terminal_now: false,
            waits_for: "the active deadline passes, unless the Job finishes first".into(),
            at: Some(at),
        });
    };
    let (interim, terminal) = match &cond.condition_type {
        JobConditionType::FailureTarget | JobConditionType::Failed => (
            Some(JobConditionType::FailureTarget),
            JobConditionType::Failed,
        ),
        JobConditionType::SuccessCriteriaMet | JobConditionType::Complete => (
            Some(JobConditionType::SuccessCriteriaMet),
            JobConditionType::Complete,
        ),
        other => (None, other.clone()),
    };
    let last_status = plan.actions.iter().rev().find_map(|a| match a {
        Action::UpdateStatus(s) => Some(&**s),
        _ => None,
    });
    let terminal_now = last_status.is_some_and(|s| s.has_true_condition(&terminal))
        && !job.status.has_true_condition(&terminal);
    let waits_for = if terminal_now {
        String::new()
    } else if !facts.expectations_satisfied {
        "earlier pod creations and deletions are observed".into()
    } else {
        let status = last_status.unwrap_or(&job.status);
        let terminating = status.terminating.unwrap_or(0);
        let uncounted = status
            .uncounted_terminated_pods
            .as_ref()
            .map_or(0, |u| u.succeeded.len() + u.failed.len());
        let mut parts = Vec::new();
        if terminating > 0 {
            parts.push(format!("the {terminating} terminating pod(s) are gone"));
        }
        if uncounted > 0 {
            parts.push(format!(
                "the {uncounted} finished pod(s) in uncountedTerminatedPods are counted (after their finalizers are removed)"
            ));
        }
        if parts.is_empty() {
            NEXT_SYNC.into()
        } else {
            parts.join(" and ")
        }
    };
    Some(ComingCondition {
        interim,
        terminal,
        reason: text(&cond.reason),
        message: truncated(&cond.message, MAX_MESSAGE_BYTES).into_owned(),
        terminal_now,
        waits_for,
        at: None,
    })
}

/// What a status write changes, in words.
pub(super) fn describe_status_change(before: &JobStatus, after: &JobStatus) -> String {
    let mut parts: Vec<String> = Vec::new();
    let empty = Default::default();
    let (b, a) = (
        before.uncounted_terminated_pods.as_ref().unwrap_or(&empty),
        after.uncounted_terminated_pods.as_ref().unwrap_or(&empty),
    );
    let added = |old: &[String], new: &[String]| {
        let old: HashSet<&str> = old.iter().map(String::as_str).collect();
        new.iter().filter(|u| !old.contains(u.as_str())).count()
    };
    let (new_succeeded, new_failed) = (
        added(&b.succeeded, &a.succeeded),
        added(&b.failed, &a.failed),
    );
    let recorded: Vec<String> = [(new_succeeded, "succeeded"), (new_failed, "failed")]
        .iter()
        .filter(|(n, _)| *n > 0)
        .map(|(n, what)| format!("{n} {what}"))
        .collect();
    if !recorded.is_empty() {
        parts.push(format!(
            "records {} pod(s) in uncountedTerminatedPods",
            recorded.join(" and ")
        ));
    }
    let counter =
        |name: &str, old: i32, new: i32| (old != new).then(|| format!("{name} {old}→{new}"));
    parts.extend(counter("succeeded", before.succeeded, after.succeeded));
    parts.extend(counter("failed", before.failed, after.failed));
    parts.extend(counter("active", before.active, after.active));
    parts.extend(counter(
        "ready",
        before.ready.unwrap_or(0),
        after.ready.unwrap_or(0),
    ));
    parts.extend(counter(
        "terminating",
        before.terminating.unwrap_or(0),
        after.terminating.unwrap_or(0),
    ));
    if before.completed_indexes != after.completed_indexes {
        parts.push(format!(
            "completedIndexes {:?}",
            text(&after.completed_indexes)
        ));
    }
    if before.failed_indexes != after.failed_indexes {
        parts.push(format!(
            "failedIndexes {:?}",
            text(after.failed_indexes.as_deref().unwrap_or(""))
        ));
    }
    for c in &after.conditions {
        let same = before
            .conditions
            .iter()
            .any(|p| p.condition_type == c.condition_type && p.status == c.status);
        if !same {
            parts.push(format!(
                "condition {}={} ({})",
                c.condition_type.as_str(),
                c.status.as_str(),
                text(&c.reason)
            ));
        }
    }
    if before.start_time != after.start_time {
        parts.push(if after.start_time.is_some() {
            "sets startTime".into()
        } else {
            "clears startTime".into()
        });
    }
    if before.completion_time != after.completion_time && after.completion_time.is_some() {
        parts.push("sets completionTime".into());
    }
    if parts.is_empty() {
        if before.uncounted_terminated_pods.is_none() && after.uncounted_terminated_pods.is_some() {
            return "writes uncountedTerminatedPods for the first time".into();
        }
        // Upstream writes the status here although none of the fields above changed
        // (e.g. ready and terminating counted for the first time).
        return "writes the status as upstream does here; no count, index list or condition changes".into();
    }
    parts.join(", ")
}

/// Why the plan asks to decide again.
pub(super) fn requeue_reason(
    facts: &ExplainFacts<'_>,
    explanation: &JobExplanation,
    plan: &Plan,
) -> String {
    let Some(after) = plan.requeue_after else {
        return String::new();
    };
    let now = facts.snapshot.now;
    let deadline_wait = facts.deadline.map(|d| d.saturating_since(now));
    let job = &facts.snapshot.job;
    use crate::extended::timeouts::{Timeout, next_timeout};
    match next_timeout(job, &facts.snapshot.pods, now) {
        Some((wait, Timeout::Pending)) if wait == after => {
            return "a pod stuck in Pending reaches the extended policy's pendingTimeout then"
                .into();
        }
        Some((wait, Timeout::Ready)) if wait == after => {
            return "a pod not yet Ready reaches the extended policy's readyTimeout then".into();
        }
        Some((wait, Timeout::Attempt)) if wait == after => {
            return "a running pod reaches the extended policy's attemptDeadline then".into();
        }
        _ => {}
    }
    if crate::extended::terminating_timeout::next_timeout(
        job,
        &facts.snapshot.pods,
        &facts.snapshot.nodes,
        now,
    ) == Some(after)
    {
        return "a pod stuck terminating reaches the extended policy's terminatingTimeout then"
            .into();
    }
    match (&explanation.backoff, deadline_wait) {
        (Some(b), deadline) if deadline.is_none_or(|d| b.until.saturating_since(now) <= d) => {
            let index = b
                .index
                .map(|i| format!(" of index {i}"))
                .unwrap_or_default();
            format!(
                "the pod-failure backoff{index} ends then: {} after the {} failure{}",
                human_duration(b.delay),
                ordinal(i64::from(b.failures)),
                crate::extended::backoff_schedule::describe(job)
            )
        }
        (_, Some(d)) if d <= after => "the active deadline passes then".into(),
        _ => "to look again".into(),
    }
}

/// One line saying what happens.
pub(super) fn summary(
    facts: &ExplainFacts<'_>,
    explanation: &JobExplanation,
    plan: &Plan,
) -> String {
    let job = &facts.snapshot.job;
    if let Some(c) = explanation
        .coming_condition
        .as_ref()
        .filter(|c| c.at.is_none())
    {
        let terminal = c.terminal.as_str();
        if c.terminal_now {
            return format!("The Job is {terminal} now (reason {}).", c.reason);
        }
        let interim = c
            .interim
            .as_ref()
            .map(|i| format!("{} (reason {}) now; ", i.as_str(), c.reason))
            .unwrap_or_default();
        let when = if c.waits_for == NEXT_SYNC {
            format!("at {NEXT_SYNC}")
        } else {
            format!("once {}", c.waits_for)
        };
        return format!("The Job is finishing: {interim}{terminal} {when}.");
    }
    if job.being_deleted {
        return "The Job is being deleted: no pods are created or deleted.".into();
    }
    if !facts.expectations_satisfied {
        return "Earlier pod creations or deletions are not yet observed: no pods are created or deleted in this sync.".into();
    }
    let mut line = if job.spec.suspend {
        "The Job is suspended".to_string()
    } else {
        "The Job keeps running".to_string()
    };
    for action in &plan.actions {
        match action {
            Action::CreatePods(p) => {
                let _ = write!(line, "; creates {} pod(s)", p.len());
            }
            Action::DeletePods(p) => {
                let _ = write!(line, "; deletes {} pod(s)", p.len());
            }
            _ => {}
        }
    }
    if let Some(b) = &explanation.backoff {
        let _ = write!(
            line,
            "; pod creation waits for the backoff ({} after the {} failure{})",
            human_duration(b.delay),
            ordinal(i64::from(b.failures)),
            crate::extended::backoff_schedule::describe(job)
        );
    }
    line.push('.');
    line
}
