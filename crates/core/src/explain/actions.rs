//! Why each action of the plan: creations, deletions, failures, status writes
//! and events, in plan order.

use crate::index_set::IndexSet;
use crate::manage::{MAX_POD_CREATE_DELETE_PER_SYNC, ManageWhy};
use crate::model::{JobConditionType, JobStatus};
use crate::plan::{Action, Plan};
use crate::text::{Capped, truncated};
use crate::text::{MAX_EXPLANATION_ENTRIES, MAX_MESSAGE_BYTES};

use super::status::describe_status_change;
use super::*;

/// Why each action, in plan order.
pub(super) fn action_reasons(facts: &ExplainFacts<'_>, plan: &Plan) -> Capped<ActionReason> {
    let job = &facts.snapshot.job;
    let mut reasons = Capped::new(MAX_EXPLANATION_ENTRIES);
    let mut previous: &JobStatus = &job.status;
    let why = facts.manage.unwrap_or_default();
    for (i, action) in plan.actions.iter().enumerate() {
        let mut push = |reason: &'static str, message: String, pods: usize| {
            reasons.push_with(|| ActionReason {
                action: i,
                reason,
                message: truncated(&message, MAX_MESSAGE_BYTES).into_owned(),
                pods,
            });
        };
        match action {
            Action::FailPods(pods) => {
                let (reason, message) = crate::extended::timeouts::describe(
                    job,
                    facts.snapshot.now,
                    &facts.snapshot.pods,
                    pods,
                );
                push(reason, message, pods.len())
            }
            Action::AdoptPods(pods) => push(
                "OrphansMatch",
                "orphan pods whose labels match the Job's selector: the Job becomes their controller and adds its tracking finalizer".into(),
                pods.len(),
            ),
            Action::ReleasePods(pods) => push(
                "SelectorMismatch",
                "pods the Job controls whose labels no longer match its selector: released".into(),
                pods.len(),
            ),
            Action::CreatePods(pods) => {
                let (reason, mut message) = creation_reason(facts, &why, pods);
                message.push_str(&crate::extended::node_avoidance::describe(pods));
                push(reason, message, pods.len());
            }
            Action::DeletePods(pods) => {
                let n = pods.len();
                if let Some(cond) = facts.finishing.filter(|_| facts.finishing_deletes) {
                    let counted = if cond.condition_type == JobConditionType::SuccessCriteriaMet {
                        ""
                    } else {
                        "; they keep their finalizer and count as failed"
                    };
                    push(
                        "JobFinishing",
                        format!(
                            "the Job is finishing ({}, reason {}): its active pods are deleted{counted}",
                            cond.condition_type.as_str(),
                            text(&cond.reason)
                        ),
                        n,
                    );
                } else if why.suspended {
                    push(
                        "JobSuspended",
                        "the Job is suspended: its active pods are deleted, their finalizer removed first so they are not counted as failed".into(),
                        n,
                    );
                } else {
                    let conflicts = why.index_conflicts.min(n);
                    if conflicts > 0 {
                        push(
                            "DuplicateIndex",
                            "a second active pod for the same completion index, or an index outside completions: all but the most valuable go".into(),
                            conflicts,
                        );
                    }
                    if n > conflicts {
                        push(
                            "ExcessPods",
                            format!(
                                "the Job wants {} active pod(s) and has {}: the least valuable go, their finalizer removed first so they are not counted as failed",
                                why.want_active, why.active
                            ),
                            n - conflicts,
                        );
                    }
                }
            }
            Action::RemoveFinalizers(pods) => push(
                "FinishedPods",
                if facts.finishing.is_some() || job.being_deleted {
                    "the Job is finishing or being deleted: its pods' tracking finalizers go, the status having recorded them".into()
                } else {
                    "finished pods, recorded in the status or never counted (an Ignore rule): their tracking finalizer goes, so they can be removed".into()
                },
                pods.len(),
            ),
            Action::UpdateStatus(status) => {
                push("StatusChanged", describe_status_change(previous, status), 0);
                previous = status;
            }
            Action::RecordEvent(event) => {
                let message = match event.reason.as_str() {
                    "Suspended" | "Resumed" => "the Job's Suspended condition changes".to_string(),
                    _ if facts.finishing.is_some() => {
                        "recorded with the Job's terminal condition".to_string()
                    }
                    _ => text(&event.message),
                };
                push(
                    match event.reason.as_str() {
                        "Suspended" => "Suspended",
                        "Resumed" => "Resumed",
                        "TooManySucceededPods" => "TooManySucceededPods",
                        _ => "JobFinished",
                    },
                    message,
                    0,
                );
            }
        }
    }
    reasons
}

/// Why pods are created.
fn creation_reason(
    facts: &ExplainFacts<'_>,
    why: &ManageWhy,
    pods: &[crate::plan::PodCreation],
) -> (&'static str, String) {
    let job = &facts.snapshot.job;
    let capped = if pods.len() >= MAX_POD_CREATE_DELETE_PER_SYNC {
        format!(" (at most {MAX_POD_CREATE_DELETE_PER_SYNC} a sync)")
    } else {
        String::new()
    };
    if job.spec.is_indexed() {
        let indexes = IndexSummary::of(&IndexSet::from_indexes(
            pods.iter().filter_map(|p| p.completion_index),
        ));
        let more = if indexes.intervals_omitted > 0 {
            format!(" and {} more intervals", indexes.intervals_omitted)
        } else {
            String::new()
        };
        let plural = indexes.count != 1;
        let (noun, has) = if plural {
            ("indexes", "each have")
        } else {
            ("index", "has")
        };
        let rest = match (job.spec.uses_backoff_limit_per_index(), plural) {
            (true, true) => ", have neither succeeded nor failed, and no backoff holds them back",
            (true, false) => ", has neither succeeded nor failed, and no backoff holds it back",
            (false, true) => " and have not succeeded",
            (false, false) => " and has not succeeded",
        };
        return (
            "PendingIndexes",
            format!(
                "{noun} {}{more} {has} no active pod{rest}{capped}",
                indexes.text
            ),
        );
    }
    let basis = match job.spec.completions {
        None => format!("parallelism {}", job.spec.parallelism),
        Some(c) => format!(
            "the lesser of parallelism {} and completions {c} less {} succeeded",
            job.spec.parallelism, facts.succeeded
        ),
    };
    let terminating = if why.terminating > 0 {
        format!(
            " and {} terminating (replaced only once failed)",
            why.terminating
        )
    } else {
        String::new()
    };
    (
        "MissingPods",
        format!(
            "the Job wants {} active pod(s) ({basis}) and has {}{terminating}{capped}",
            why.want_active, why.active
        ),
    )
}
