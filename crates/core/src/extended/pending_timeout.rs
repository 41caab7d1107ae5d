//! Pods stuck in Pending: once one has waited `pendingTimeout.seconds` in one
//! of the listed reasons, the plan marks it Failed with the condition
//! [`PENDING_TIMEOUT_CONDITION`] (as upstream's pod garbage collector fails
//! pods), and the next sync accounts for it like any failed pod. Before that,
//! the plan asks to decide again at the moment it would time out.
//!
//! A pod is stuck when it is active (neither terminal nor being deleted), in
//! phase Pending, and either a container (init ones included) waits with a
//! listed reason, or PodScheduled is False with reason Unschedulable and
//! `Unschedulable` is listed. The wait is measured from when the pod was
//! scheduled (PodScheduled=True's transition), else from its creation; a pod
//! with neither time never times out. Nothing is failed while the Job is
//! finished, finishing, suspended or being deleted; which timeout fails a pod
//! when several have passed is [`super::timeouts`]'s choice.

use std::time::Duration;

use crate::extended::PENDING_TIMEOUT_CONDITION;
use crate::model::PendingTimeout;
use crate::model::{Job, Pod, PodPhase};
use crate::plan::{PodFailure, PodRef};
use crate::text::{human_duration, truncated};
use crate::time::Time;

/// The reason `pendingTimeout.reasons` lists for an unschedulable pod.
pub const UNSCHEDULABLE: &str = "Unschedulable";
/// Longest reason or container name a condition repeats, in bytes.
const MAX_NAME_BYTES: usize = 128;

/// Why a pod counts as stuck in Pending.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stuck<'a> {
    /// The waiting reason (or `Unschedulable`).
    pub reason: &'a str,
    /// The waiting container, when a container's reason it is.
    pub container: Option<&'a str>,
    /// When the wait started: scheduling, else creation.
    pub since: Time,
}

impl Stuck<'_> {
    /// When the pod times out under `settings`.
    pub fn deadline(&self, settings: &PendingTimeout) -> Time {
        self.since
            .saturating_add(crate::time::secs(settings.seconds))
    }
}

/// Whether `pod` is stuck in Pending in one of the listed reasons, and since when.
pub fn stuck<'p>(settings: &PendingTimeout, pod: &'p Pod) -> Option<Stuck<'p>> {
    if !pod.is_active() || pod.phase != PodPhase::Pending {
        return None;
    }
    let details = pod.failure_details.as_deref()?;
    let listed = |reason: &str| settings.reasons.iter().any(|r| r == reason);
    let (reason, container) = match details
        .waiting_reasons
        .iter()
        .find(|(_, reason)| listed(reason))
    {
        Some((container, reason)) => (reason.as_str(), Some(&**container)),
        None if details.unschedulable && listed(UNSCHEDULABLE) => (UNSCHEDULABLE, None),
        None => return None,
    };
    let since = details.scheduled_at.or(pod.creation_timestamp)?;
    Some(Stuck {
        reason,
        container,
        since,
    })
}

/// When the pending timeout failed `pod`: the transition time of its True
/// [`PENDING_TIMEOUT_CONDITION`]. Its finish time, so that the backoff after
/// this failure starts there, as after any other failure.
pub fn failed_at(pod: &Pod) -> Option<Time> {
    if pod.phase != PodPhase::Failed {
        return None;
    }
    pod.conditions
        .iter()
        .find(|c| &*c.condition_type == PENDING_TIMEOUT_CONDITION)
        .filter(|c| c.status == crate::model::ConditionStatus::True)
        .and_then(|c| c.last_transition_time)
}

/// The FailPods entry of a stuck pod: the condition's reason is the waiting
/// reason; its message says how long the pod waited and the limit.
pub(crate) fn failure(
    settings: &PendingTimeout,
    pod: &Pod,
    s: &Stuck<'_>,
    now: Time,
) -> PodFailure {
    let reason = truncated(s.reason, MAX_NAME_BYTES);
    let container = s
        .container
        .map(|c| format!(" (container \"{}\")", truncated(c, MAX_NAME_BYTES)))
        .unwrap_or_default();
    PodFailure {
        pod: PodRef::from(pod),
        condition_type: PENDING_TIMEOUT_CONDITION.into(),
        reason: reason.clone().into_owned(),
        message: format!(
            "Pod was pending in {reason}{container} for {}, reaching the pending timeout of {}",
            human_duration(now.saturating_since(s.since)),
            human_duration(crate::time::secs(settings.seconds)),
        ),
        force_delete: false,
    }
}

/// Most pods an explanation names.
const MAX_DESCRIBED: usize = 5;

/// For explanations: which pods a FailPods action fails, in which waiting
/// reason, after how long (the first few; the rest counted).
pub fn describe(job: &Job, now: Time, pods: &[Pod], failures: &[PodFailure]) -> String {
    let settings = job
        .extended_failure_policy
        .as_deref()
        .and_then(|p| p.pending_timeout.as_ref());
    let limit = settings
        .map(|s| format!(" ({})", human_duration(crate::time::secs(s.seconds))))
        .unwrap_or_default();
    let named: Vec<String> = failures
        .iter()
        .take(MAX_DESCRIBED)
        .map(|f| {
            let waited = settings
                .zip(pods.iter().find(|p| p.uid == f.pod.uid))
                .and_then(|(s, p)| stuck(s, p))
                .map(|s| format!(" for {}", human_duration(now.saturating_since(s.since))))
                .unwrap_or_default();
            format!(
                "{} ({}{waited})",
                truncated(&f.pod.name, MAX_NAME_BYTES),
                truncated(&f.reason, MAX_NAME_BYTES)
            )
        })
        .collect();
    let more = crate::text::and_more(failures.len(), MAX_DESCRIBED);
    format!(
        "pods stuck in Pending past the extended policy's pendingTimeout{limit}: {}{more}; marked Failed, then deleted",
        named.join(", ")
    )
}

/// When the next stuck pod of the Job times out, from now (for explanations).
pub fn next_timeout(job: &Job, pods: &[Pod], now: Time) -> Option<Duration> {
    let settings = job
        .extended_failure_policy
        .as_deref()
        .and_then(|p| p.pending_timeout.as_ref())?;
    if job.spec.suspend || job.being_deleted {
        return None;
    }
    pods.iter()
        .filter_map(|p| stuck(settings, p))
        .map(|s| s.deadline(settings))
        .filter(|&d| d > now)
        .map(|d| d.saturating_since(now))
        .min()
}

#[cfg(test)]
mod tests;
