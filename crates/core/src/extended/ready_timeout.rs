//! Pods not Ready in time: a pod whose Ready condition was not True at its
//! deadline, `status.startTime` plus `readyTimeout.seconds`, is marked Failed
//! with the condition [`READY_TIMEOUT_CONDITION`], and the next sync handles it
//! like any failed pod, by the document's `readyTimeout.action` (the implicit
//! rule `ReadyTimeout`).
//!
//! "Not Ready at the deadline" is read from the snapshot alone: Ready is not
//! True now, and its last transition (when it has one) is no later than the
//! deadline — a later transition means the pod was Ready after the deadline,
//! so a pod Ready at its deadline is never failed by this timeout afterwards.

use std::time::Duration;

use crate::extended::READY_TIMEOUT_CONDITION;
use crate::model::{ConditionStatus, Pod, ReadyTimeout};
use crate::plan::{PodFailure, PodRef};
use crate::text::{human_duration, truncated};
use crate::time::Time;

/// The condition's reason when the Ready condition has none.
pub const NOT_READY: &str = "NotReady";
/// Longest Ready reason a condition repeats, in bytes.
const MAX_REASON_BYTES: usize = 128;

/// The limit as a duration (validation keeps `seconds` positive).
pub fn limit(settings: &ReadyTimeout) -> Duration {
    crate::time::secs(settings.seconds)
}

/// When `pod` times out for not being Ready, if it still can: an active pod
/// with a start time whose Ready condition is not True and did not change
/// after the deadline. `None` for a pod Ready now, or Ready at its deadline.
pub fn deadline(settings: &ReadyTimeout, pod: &Pod) -> Option<Time> {
    if !pod.is_active() || pod.is_ready() {
        return None;
    }
    let start = pod.failure_details.as_deref()?.start_time?;
    let deadline = start.saturating_add(limit(settings));
    let changed_after = pod
        .conditions
        .iter()
        .filter(|c| &*c.condition_type == "Ready")
        .filter_map(|c| c.last_transition_time)
        .any(|at| at > deadline);
    (!changed_after).then_some(deadline)
}

/// The FailPods entry of a pod not Ready at its deadline: the reason is the
/// Ready condition's (e.g. `ContainersNotReady`), else `NotReady`.
pub fn failure(settings: &ReadyTimeout, pod: &Pod) -> PodFailure {
    let reason = pod
        .failure_details
        .as_deref()
        .map(|d| d.ready_reason.as_str())
        .filter(|r| !r.is_empty())
        .unwrap_or(NOT_READY);
    let status = pod
        .conditions
        .iter()
        .find(|c| &*c.condition_type == "Ready")
        .map(|c| match &c.status {
            ConditionStatus::False => "Ready=False",
            ConditionStatus::Unknown => "Ready=Unknown",
            _ => "not Ready",
        })
        .unwrap_or("without a Ready condition");
    PodFailure {
        pod: PodRef::from(pod),
        condition_type: READY_TIMEOUT_CONDITION.into(),
        reason: truncated(reason, MAX_REASON_BYTES).into_owned(),
        message: format!(
            "Pod was {status} {} after it started, reaching the failure policy's readyTimeout",
            human_duration(limit(settings)),
        ),
        force_delete: false,
    }
}

#[cfg(test)]
mod tests;
