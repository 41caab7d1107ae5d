//! Job conditions: creating them and setting them the way upstream does.

use crate::model::{ConditionStatus, JobCondition, JobConditionType};
use crate::time::Time;

/// Reason and message of a condition the controller writes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reason {
    /// Machine-readable reason.
    pub reason: &'static str,
    /// Human-readable message.
    pub message: String,
}

/// A condition whose probe and transition times are `now`.
pub fn new_condition(
    condition_type: JobConditionType,
    status: ConditionStatus,
    reason: &str,
    message: &str,
    now: Time,
) -> JobCondition {
    JobCondition {
        condition_type,
        status,
        last_probe_time: Some(now),
        last_transition_time: Some(now),
        reason: reason.to_string(),
        message: message.to_string(),
    }
}

/// Makes the first condition of this type carry this status, reason and
/// message, replacing it wholesale (times reset to `now`) when anything
/// differs. A missing condition is appended unless the status is False.
/// Returns whether the list changed.
pub fn ensure_condition(
    conditions: &mut Vec<JobCondition>,
    condition_type: JobConditionType,
    status: ConditionStatus,
    reason: &str,
    message: &str,
    now: Time,
) -> bool {
    if let Some(existing) = conditions
        .iter_mut()
        .find(|c| c.condition_type == condition_type)
    {
        if existing.status != status || existing.reason != reason || existing.message != message {
            *existing = new_condition(condition_type, status, reason, message, now);
            return true;
        }
        return false;
    }
    if status == ConditionStatus::False {
        return false;
    }
    conditions.push(new_condition(condition_type, status, reason, message, now));
    true
}

#[cfg(test)]
mod tests;
