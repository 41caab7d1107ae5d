//! Exponential delay before replacing failed pods: the Job-wide backoff record
//! and the per-index delay of KEP-3850, as upstream's `backoff_utils.go` computes them.

use std::ops::Deref;
use std::time::Duration;

use crate::model::{BackoffRecord, ConditionStatus, ContainerStatus, Job, Pod};
use crate::time::Time;

/// The delay after the first failure (upstream `DefaultJobPodFailureBackOff`).
pub const POD_FAILURE_BACKOFF_BASE: Duration = Duration::from_secs(10);
/// The longest delay (upstream `MaxJobPodFailureBackOff`).
pub const POD_FAILURE_BACKOFF_MAX: Duration = Duration::from_secs(600);

/// When the pod finished, as upstream's `getFinishedTime` estimates it.
///
/// The first of: the latest `finishedAt` of its containers (only when every
/// one has terminated with a `finishedAt`), the `Ready=False` transition time,
/// the deletion time less the grace period, the creation time.
///
/// Restartable init ("sidecar") containers count with the regular ones in the
/// containers' rule, as upstream's do; other init containers do not.
pub fn finished_time(pod: &Pod) -> Time {
    finished_time_with_sidecars(pod, |name| pod.is_sidecar(name))
}

/// When `pod` of `job` finished, for the pod-failure backoff: [`finished_time`],
/// except that while the Job's extended policy has a timeout (pending, ready,
/// attempt), a pod it failed finished when it was failed (its condition's
/// transition), not when it first went unready — else the backoff after it
/// would already have run out. Without that timeout the condition is not read,
/// so upstream's rule holds for every pod whatever it carries.
pub fn finished_time_for(job: &Job, pod: &Pod) -> Time {
    job.extended_failure_policy
        .as_deref()
        .and_then(|p| crate::extended::timeouts::failed_at(p, pod))
        .unwrap_or_else(|| finished_time(pod))
}

/// [`finished_time`], with `is_sidecar` naming the init containers whose
/// restart policy is `Always`; their statuses join the containers' rule.
pub fn finished_time_with_sidecars(pod: &Pod, is_sidecar: impl Fn(&str) -> bool) -> Time {
    finish_time_from_containers(pod, is_sidecar)
        .or_else(|| finish_time_from_ready_false(pod))
        .or_else(|| {
            // Deleted pods (e.g. by PodGC) finished around when the grace period began.
            pod.deletion.map(|d| {
                d.timestamp
                    .saturating_sub_secs(d.grace_period_seconds.unwrap_or(0))
            })
        })
        .or(pod.creation_timestamp)
        .unwrap_or_default()
}

/// The latest container finish time: regular containers, then sidecars on top of them.
fn finish_time_from_containers(pod: &Pod, is_sidecar: impl Fn(&str) -> bool) -> Option<Time> {
    let regular = latest_finish(None, pod.container_statuses.iter());
    // As upstream, an unfinished regular container only resets the running
    // value: terminated sidecars can still give a time.
    let sidecars = pod
        .init_container_statuses
        .iter()
        .filter(|s| is_sidecar(&s.name));
    latest_finish(regular, sidecars)
}

/// The latest `finishedAt` after `start`, or `None` as soon as a status has none.
fn latest_finish<'a>(
    start: Option<Time>,
    statuses: impl Iterator<Item = &'a ContainerStatus>,
) -> Option<Time> {
    let mut latest = start;
    for status in statuses {
        let finished_at = status.terminated.and_then(|t| t.finished_at)?;
        latest = Some(latest.map_or(finished_at, |l| l.max(finished_at)));
    }
    latest
}

/// The transition time of the pod's (first) Ready condition, when it is False.
fn finish_time_from_ready_false(pod: &Pod) -> Option<Time> {
    let ready = pod
        .conditions
        .iter()
        .find(|c| &*c.condition_type == "Ready")?;
    if ready.status == ConditionStatus::False {
        ready.last_transition_time
    } else {
        None
    }
}

/// The backoff record after this sync's newly finished pods (upstream `newBackoffRecord`).
///
/// Only failures that finished strictly after the latest new success still
/// count; a failure at the same instant as a success does not. Finish times
/// are `job`'s ([`finished_time_for`]).
pub fn new_backoff_record<P: Deref<Target = Pod>>(
    job: &Job,
    old: BackoffRecord,
    new_succeeded: &[P],
    new_failed: &[P],
) -> BackoffRecord {
    let latest = |pods: &[P]| pods.iter().map(|p| finished_time_for(job, p)).max();
    match latest(new_succeeded) {
        None if new_failed.is_empty() => old,
        None => BackoffRecord {
            // Go adds int32s here, wrapping on overflow; so do we.
            failures_after_last_success: old
                .failures_after_last_success
                .wrapping_add(len_as_i32(new_failed.len())),
            last_failure_time: latest(new_failed),
        },
        Some(last_success) => {
            let after: Vec<Time> = new_failed
                .iter()
                .map(|p| finished_time_for(job, p))
                .filter(|&at| at > last_success)
                .collect();
            BackoffRecord {
                failures_after_last_success: len_as_i32(after.len()),
                last_failure_time: after.into_iter().max(),
            }
        }
    }
}

/// A length as Go's `int32(len(...))` converts it (truncating, never in practice).
fn len_as_i32(len: usize) -> i32 {
    len as i32
}

/// How long the Job must still wait before creating pods (upstream `getRemainingTime`).
pub fn remaining_backoff(
    record: &BackoffRecord,
    now: Time,
    base: Duration,
    max: Duration,
) -> Duration {
    remaining_for_failures(
        record.failures_after_last_success,
        record.last_failure_time,
        now,
        base,
        max,
    )
}

/// How long an index must still wait before its replacement pod is created
/// (upstream `getRemainingTimePerIndex`); `last_failed` is the index's latest
/// failed pod, whose annotations count the failures before it.
pub fn remaining_backoff_for_index(
    last_failed: Option<&Pod>,
    now: Time,
    base: Duration,
    max: Duration,
) -> Duration {
    let Some(pod) = last_failed else {
        return Duration::ZERO;
    };
    remaining_for_failures(
        index_backoff_failures(pod),
        Some(finished_time(pod)),
        now,
        base,
        max,
    )
}

/// The failures an index's backoff counts, given its latest failed pod: the
/// ones before it (counted and ignored) and its own.
pub fn index_backoff_failures(pod: &Pod) -> i32 {
    // Ignored failures delay too; Go's int32 sum wraps, as here.
    pod.index_failure_count
        .wrapping_add(pod.index_ignored_failure_count)
        .wrapping_add(1)
}

/// The whole delay after `failures` failures: `base · 2^(failures-1)`, capped
/// at `max`; zero for no failures.
pub fn backoff_delay(failures: i32, base: Duration, max: Duration) -> Duration {
    grown_delay(failures, base, 2, max)
}

/// The one backoff growth, upstream's loop with any whole `factor`:
/// `base · factor^(failures-1)`, saturating, capped at `max` once it reaches
/// it; zero for no failures. A negative count (a wrapped counter) skips the
/// growth and waits `base`, as Go's loop does. The extended schedule uses it
/// with its own settings (`extended::backoff_schedule`).
pub fn grown_delay(failures: i32, base: Duration, factor: u32, max: Duration) -> Duration {
    if failures == 0 {
        return Duration::ZERO;
    }
    let mut backoff = base;
    for _ in 1..failures {
        let next = backoff.saturating_mul(factor);
        if next >= max {
            return max;
        }
        // Not growing (a zero base, or factor 1): huge counts stop after one step.
        if next == backoff {
            break;
        }
        backoff = next;
    }
    backoff
}

/// `base · 2^(failures-1)`, capped at `max`, less the time since the last failure.
fn remaining_for_failures(
    failures: i32,
    last_failure: Option<Time>,
    now: Time,
    base: Duration,
    max: Duration,
) -> Duration {
    remaining_after(
        failures,
        last_failure,
        now,
        backoff_delay(failures, base, max),
    )
}

/// What is left of `backoff` (the whole delay after `failures` failures)
/// since the last failure; zero without failures or without a time.
pub(crate) fn remaining_after(
    failures: i32,
    last_failure: Option<Time>,
    now: Time,
    backoff: Duration,
) -> Duration {
    if failures == 0 {
        return Duration::ZERO;
    }
    // Upstream would dereference a missing time and crash, which forgets the
    // record: the same as no record, so no delay.
    let Some(last_failure) = last_failure else {
        return Duration::ZERO;
    };
    // Go's `time.Since` saturates at the int64 range of nanoseconds.
    let elapsed = now
        .signed_nanos_since(last_failure)
        .clamp(i64::MIN.into(), i64::MAX.into());
    let backoff = i128::try_from(backoff.as_nanos()).unwrap_or(i128::MAX);
    if backoff < elapsed {
        return Duration::ZERO;
    }
    let remaining = (backoff - elapsed).min(i64::MAX.into());
    Duration::from_nanos(u64::try_from(remaining).unwrap_or(0))
}

#[cfg(test)]
mod tests;
