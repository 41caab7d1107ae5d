//! Pods that run too long: once a pod has run `attemptDeadline.seconds` from
//! its `status.startTime`, the plan marks it Failed with the condition
//! [`ATTEMPT_DEADLINE_CONDITION`] (reason `DeadlineExceeded`), and the next sync
//! handles it like any failed pod, by the document's `attemptDeadline.action`
//! (the implicit rule `AttemptDeadline`). Unlike the pod's own
//! `spec.activeDeadlineSeconds`, which the kubelet enforces and upstream counts
//! as an ordinary failure, the limit and the action live in the document.
//!
//! Only active pods (neither terminal nor being deleted) with a start time
//! reach it; which timeout fails a pod when several have passed is
//! [`super::timeouts`]'s choice.

use std::time::Duration;

use crate::extended::ATTEMPT_DEADLINE_CONDITION;
use crate::model::{AttemptDeadline, Pod};
use crate::plan::{PodFailure, PodRef};
use crate::text::human_duration;
use crate::time::Time;

/// The reason of the condition an attempt deadline sets (the kubelet's word
/// for `activeDeadlineSeconds`).
pub const DEADLINE_EXCEEDED: &str = "DeadlineExceeded";

/// The limit as a duration (validation keeps `seconds` positive).
pub fn limit(settings: &AttemptDeadline) -> Duration {
    crate::time::secs(settings.seconds)
}

/// When `pod` reaches its attempt deadline: its start plus the limit; `None`
/// for a pod that is not active or never started.
pub fn deadline(settings: &AttemptDeadline, pod: &Pod) -> Option<Time> {
    if !pod.is_active() {
        return None;
    }
    let start = pod.failure_details.as_deref()?.start_time?;
    Some(start.saturating_add(limit(settings)))
}

/// The FailPods entry of a pod past its deadline: how long it ran, and the limit.
pub fn failure(settings: &AttemptDeadline, pod: &Pod, now: Time) -> PodFailure {
    let ran = pod
        .failure_details
        .as_deref()
        .and_then(|d| d.start_time)
        .map(|s| human_duration(now.saturating_since(s)))
        .unwrap_or_else(|| "?".into());
    PodFailure {
        pod: PodRef::from(pod),
        condition_type: ATTEMPT_DEADLINE_CONDITION.into(),
        reason: DEADLINE_EXCEEDED.into(),
        message: format!(
            "Pod ran for {ran} since it started, reaching the failure policy's attemptDeadline of {}",
            human_duration(limit(settings)),
        ),
        force_delete: false,
    }
}

#[cfg(test)]
mod tests;
