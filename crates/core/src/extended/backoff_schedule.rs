//! The pod-failure backoff schedule: upstream's 10 s doubling capped at
//! 10 min, or the extended policy's base, factor, cap and jitter.
//!
//! The delay after `n` failures (n ≥ 1) is `min(max, base · factor^(n−1))`,
//! computed saturating, plus a jitter of `delay · j / 100` where `j` is a
//! whole percent in `[0, jitterPercent]`. So that the same snapshot gives the
//! same plan, `j` is not random: it is
//!
//! ```text
//! j = fnv1a64(key) % (jitterPercent + 1)
//! key = "{job uid}/{n}"            for the Job-wide backoff (NonIndexed, or Indexed without per-index limits)
//! key = "{job uid}/{index}/{n}"    for an index's backoff (backoffLimitPerIndex)
//! ```
//!
//! where `fnv1a64` is 64-bit FNV-1a over the key's UTF-8 bytes (offset basis
//! 0xcbf29ce484222325, prime 0x100000001b3) and `n`, `index` are written in
//! decimal. The jitter is added to the capped delay, so the longest wait is
//! `max · (100 + jitterPercent) / 100`.

use std::borrow::Cow;
use std::time::Duration;

use crate::backoff::{
    POD_FAILURE_BACKOFF_BASE, POD_FAILURE_BACKOFF_MAX, backoff_delay, finished_time_for,
    grown_delay, index_backoff_failures, remaining_after,
};
use crate::model::Job;
use crate::model::{BackoffRecord, BackoffSettings, IgnoredFailureDelay};
use crate::pod_failure_policy::counts_failure;
use crate::sync_pod::SyncPod;
use crate::text::human_duration;
use crate::time::Time;
use crate::time::secs;

/// How long to wait after a number of failures.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BackoffSchedule<'a> {
    /// Upstream's: `base · 2^(n−1)` capped at `max`, exactly as its loop computes it.
    Doubling {
        /// The delay after the first failure.
        base: Duration,
        /// The longest delay.
        max: Duration,
    },
    /// The extended policy's settings, with the Job's uid that seeds the jitter.
    Extended {
        /// The document's backoff settings.
        settings: &'a BackoffSettings,
        /// The Job's uid.
        job_uid: &'a str,
    },
}

impl<'a> BackoffSchedule<'a> {
    /// Upstream's schedule: 10 s doubling, capped at 10 minutes.
    pub fn upstream() -> Self {
        BackoffSchedule::Doubling {
            base: POD_FAILURE_BACKOFF_BASE,
            max: POD_FAILURE_BACKOFF_MAX,
        }
    }

    /// The Job's schedule: its document's backoff settings, else upstream's.
    pub fn for_job(job: &'a Job) -> Self {
        match job
            .extended_failure_policy
            .as_deref()
            .and_then(|p| p.backoff.as_ref())
        {
            Some(settings) => BackoffSchedule::Extended {
                settings,
                job_uid: &job.uid,
            },
            None => BackoffSchedule::upstream(),
        }
    }

    /// The extended settings, when they apply.
    pub fn settings(&self) -> Option<&'a BackoffSettings> {
        match self {
            BackoffSchedule::Extended { settings, .. } => Some(settings),
            BackoffSchedule::Doubling { .. } => None,
        }
    }

    /// How long the Job must still wait on this schedule: upstream's
    /// `getRemainingTime` with this schedule's delay.
    pub fn remaining(&self, record: &BackoffRecord, now: Time) -> Duration {
        let failures = record.failures_after_last_success;
        remaining_after(
            failures,
            record.last_failure_time,
            now,
            self.delay(failures, None),
        )
    }

    /// The whole delay after `failures` failures: zero for none; `index` names
    /// the index whose per-index backoff this is (it seeds the jitter).
    pub fn delay(&self, failures: i32, index: Option<i32>) -> Duration {
        match *self {
            BackoffSchedule::Doubling { base, max } => backoff_delay(failures, base, max),
            BackoffSchedule::Extended { settings, job_uid } => {
                extended_delay(settings, job_uid, failures, index)
            }
        }
    }
}

/// The extended delay: grown, capped, then jittered (see the module's doc).
fn extended_delay(
    settings: &BackoffSettings,
    job_uid: &str,
    failures: i32,
    index: Option<i32>,
) -> Duration {
    if failures == 0 {
        return Duration::ZERO;
    }
    let max = secs(settings.max_seconds);
    // The document's factor is validated ≥ 1; a factor below that would not grow.
    let factor = u32::try_from(settings.factor).unwrap_or(1).max(1);
    // The extension caps the first delay too (upstream waits its base even above its cap).
    let capped = grown_delay(failures, secs(settings.base_seconds), factor, max).min(max);
    capped.saturating_add(jitter(settings, job_uid, failures, index, capped))
}

/// The jitter added to `delay`: `delay · j / 100`, `j` from the hash of the key.
fn jitter(
    settings: &BackoffSettings,
    job_uid: &str,
    failures: i32,
    index: Option<i32>,
    delay: Duration,
) -> Duration {
    let percent = u64::try_from(settings.jitter_percent).unwrap_or(0);
    if percent == 0 {
        return Duration::ZERO;
    }
    let j = jitter_percent_for(job_uid, failures, index, percent);
    let nanos = delay.as_nanos().saturating_mul(u128::from(j)) / 100;
    Duration::from_nanos(u64::try_from(nanos).unwrap_or(u64::MAX))
}

/// The whole percent `j` in `[0, max_percent]` for this key.
pub fn jitter_percent_for(
    job_uid: &str,
    failures: i32,
    index: Option<i32>,
    max_percent: u64,
) -> u64 {
    let key = match index {
        Some(ix) => format!("{job_uid}/{ix}/{failures}"),
        None => format!("{job_uid}/{failures}"),
    };
    fnv1a64(key.as_bytes()) % (max_percent + 1)
}

/// 64-bit FNV-1a.
pub fn fnv1a64(bytes: &[u8]) -> u64 {
    const OFFSET_BASIS: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    bytes.iter().fold(OFFSET_BASIS, |hash, &b| {
        (hash ^ u64::from(b)).wrapping_mul(PRIME)
    })
}

/// Whether ignored failures skip the backoff (`afterIgnoredFailure: Immediate`).
pub fn ignored_failures_skip_backoff(job: &Job) -> bool {
    job.extended_failure_policy
        .as_deref()
        .and_then(|p| p.backoff.as_ref())
        .is_some_and(|b| b.after_ignored_failure == IgnoredFailureDelay::Immediate)
}

/// Whether an Ignore rule (upstream's or, once matched through
/// [`SyncPod::policy_action`], the document's) handled this failed pod.
pub(crate) fn ignored(job: &Job, pod: &SyncPod<'_>) -> bool {
    !counts_failure(pod.policy_action(job))
}

/// The newly failed pods the Job-wide backoff record counts: all of them,
/// except, with `afterIgnoredFailure: Immediate`, those an Ignore rule handled.
pub(crate) fn failures_for_backoff<'s, 'a>(
    job: &Job,
    new_failed: &'s [SyncPod<'a>],
) -> Cow<'s, [SyncPod<'a>]> {
    if !ignored_failures_skip_backoff(job) {
        return Cow::Borrowed(new_failed);
    }
    Cow::Owned(
        new_failed
            .iter()
            .filter(|p| !ignored(job, p))
            .copied()
            .collect(),
    )
}

/// The failures an index's backoff counts, given its latest failed pod.
/// Upstream's count (earlier counted and ignored failures, plus this one);
/// with `afterIgnoredFailure: Immediate`, only counted failures, and none at
/// all when this pod's failure was ignored (it neither waits nor grows the delay).
pub(crate) fn index_failures(job: &Job, last_failed: &SyncPod<'_>) -> i32 {
    if !ignored_failures_skip_backoff(job) {
        return index_backoff_failures(last_failed);
    }
    if ignored(job, last_failed) {
        return 0;
    }
    last_failed.index_failure_count.wrapping_add(1)
}

/// How long an index must still wait, on the Job's schedule; with the
/// failures it counts and their whole delay.
pub(crate) fn index_backoff(
    job: &Job,
    last_failed: Option<&SyncPod<'_>>,
    index: i32,
    now: Time,
) -> IndexBackoff {
    let Some(pod) = last_failed else {
        return IndexBackoff::default();
    };
    let failures = index_failures(job, pod);
    let delay = BackoffSchedule::for_job(job).delay(failures, Some(index));
    let last_failure = finished_time_for(job, pod);
    IndexBackoff {
        failures,
        last_failure,
        delay,
        remaining: remaining_after(failures, Some(last_failure), now, delay),
    }
}

/// An index's backoff as [`index_backoff`] finds it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct IndexBackoff {
    /// The failures it counts.
    pub failures: i32,
    /// When the latest failed.
    pub last_failure: Time,
    /// The whole delay.
    pub delay: Duration,
    /// What is left of it now.
    pub remaining: Duration,
}

/// For explanations: the extended schedule, when the Job has one, as
/// ` (extended backoff: base 10s, factor 2, cap 10m, jitter up to 20%)`;
/// empty for upstream's.
pub fn describe(job: &Job) -> String {
    let Some(b) = BackoffSchedule::for_job(job).settings() else {
        return String::new();
    };
    let jitter = if b.jitter_percent > 0 {
        format!(", jitter up to {}%", b.jitter_percent)
    } else {
        String::new()
    };
    let ignored = if b.after_ignored_failure == IgnoredFailureDelay::Immediate {
        ", ignored failures do not wait"
    } else {
        ""
    };
    format!(
        " (extended backoff: base {}, factor {}, cap {}{jitter}{ignored})",
        human_duration(secs(b.base_seconds)),
        b.factor,
        human_duration(secs(b.max_seconds)),
    )
}

#[cfg(test)]
mod tests;
