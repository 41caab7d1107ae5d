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
    POD_FAILURE_BACKOFF_BASE, POD_FAILURE_BACKOFF_MAX, backoff_delay, finished_time, grown_delay,
    index_backoff_failures, remaining_after,
};
use crate::model::Job;
use crate::model::{BackoffRecord, BackoffSettings, IgnoredFailureDelay};
use crate::pod_failure_policy::counts_failure;
use crate::sync_pod::SyncPod;
use crate::text::human_duration;
use crate::time::Time;

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

/// Seconds from the document (validated positive) as a duration.
fn secs(s: i64) -> Duration {
    Duration::from_secs(u64::try_from(s).unwrap_or(0))
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
    let last_failure = finished_time(pod);
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
mod tests {
    use super::*;
    use crate::backoff::backoff_delay;
    use crate::fixtures::{PodExt, exit_rule, indexed_job, job, pod, snapshot, t};
    use crate::model::ExtendedFailurePolicy;
    use crate::model::{BackoffRecord, PodFailurePolicy, PodFailurePolicyAction, PodPhase};
    use crate::plan::Action;
    use crate::sync::decide;
    use std::sync::Arc;

    fn settings(base: i64, max: i64, factor: i32, jitter: i32) -> BackoffSettings {
        BackoffSettings {
            base_seconds: base,
            max_seconds: max,
            factor,
            jitter_percent: jitter,
            after_ignored_failure: IgnoredFailureDelay::Delay,
        }
    }

    fn defaults() -> BackoffSettings {
        settings(10, 600, 2, 0)
    }

    fn ext<'a>(settings: &'a BackoffSettings, job_uid: &'a str) -> BackoffSchedule<'a> {
        BackoffSchedule::Extended { settings, job_uid }
    }

    fn secs_f(s: f64) -> Duration {
        Duration::from_secs_f64(s)
    }

    #[test]
    fn the_documents_defaults_give_upstreams_schedule() {
        let upstream = BackoffSchedule::upstream();
        let d = defaults();
        let schedule = ext(&d, "job-uid");
        for n in (-3..=40).chain([i32::MAX, i32::MIN]) {
            assert_eq!(schedule.delay(n, None), upstream.delay(n, None), "n = {n}");
            assert_eq!(
                schedule.delay(n, Some(3)),
                upstream.delay(n, None),
                "n = {n}"
            );
        }
        let waits: Vec<u64> = (1..=8).map(|n| schedule.delay(n, None).as_secs()).collect();
        assert_eq!(waits, vec![10, 20, 40, 80, 160, 320, 600, 600]);
    }

    #[test]
    fn delay_grows_by_the_factor_up_to_the_cap() {
        // (base, max, factor, failures, want seconds)
        let cases: &[(i64, i64, i32, i32, u64)] = &[
            (10, 600, 2, 0, 0),
            (10, 600, 2, 1, 10),
            (5, 100, 3, 1, 5),
            (5, 100, 3, 2, 15),
            (5, 100, 3, 3, 45),
            (5, 100, 3, 4, 100),
            (5, 100, 3, 50, 100),
            // Factor 1: a constant delay.
            (30, 600, 1, 1, 30),
            (30, 600, 1, 7, 30),
            (30, 600, 1, i32::MAX, 30),
            // The cap equal to the base.
            (60, 60, 10, 1, 60),
            (60, 60, 10, 9, 60),
            // Saturation at huge counts and the largest settings.
            (86_400, 86_400, 10, i32::MAX, 86_400),
            (1, 86_400, 10, i32::MAX, 86_400),
            (1, 86_400, 10, 5, 10_000),
            (1, 86_400, 10, 6, 86_400),
            // A wrapped (negative) count waits the base, as upstream's loop.
            (7, 600, 3, -5, 7),
        ];
        for &(base, max, factor, n, want) in cases {
            let got = ext(&settings(base, max, factor, 0), "u").delay(n, None);
            assert_eq!(
                got,
                Duration::from_secs(want),
                "base {base} max {max} factor {factor} n {n}"
            );
        }
    }

    #[test]
    fn fnv1a64_matches_the_published_vectors() {
        assert_eq!(fnv1a64(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a64(b"a"), 0xaf63_dc4c_8601_ec8c);
    }

    /// The documented hash, computed independently for these keys, gives
    /// these delays: another implementation can check itself against them.
    #[test]
    fn jitter_follows_the_documented_hash() {
        let s = settings(10, 600, 2, 20);
        let schedule = ext(&s, "job-uid");
        // fnv1a64("job-uid/1") % 21 = 15; ("job-uid/3") % 21 = 14; ("job-uid/0/2") % 21 = 20.
        assert_eq!(schedule.delay(1, None), secs_f(11.5));
        assert_eq!(schedule.delay(3, None), secs_f(45.6));
        assert_eq!(schedule.delay(2, Some(0)), secs_f(24.0));
        // ("other-uid/1") % 21 = 0: no jitter.
        assert_eq!(ext(&s, "other-uid").delay(1, None), secs_f(10.0));
        assert_eq!(jitter_percent_for("job-uid", 1, None, 100), 54);
    }

    #[test]
    fn jitter_stays_within_bounds_and_is_deterministic() {
        for percent in [0, 1, 20, 100] {
            let s = settings(10, 600, 2, percent);
            let mut seen = std::collections::BTreeSet::new();
            for uid in ["a", "b", "c", "d", "e", "f", "g", "h", "i", "j"] {
                for n in [1, 2, 7, 100, i32::MAX] {
                    for index in [None, Some(0), Some(99_999)] {
                        let schedule = ext(&s, uid);
                        let got = schedule.delay(n, index);
                        let base = backoff_delay(n, secs(10), secs(600));
                        let most = base + base * u32::try_from(percent).unwrap_or(0) / 100;
                        assert!(got >= base && got <= most, "{uid} {n} {index:?}: {got:?}");
                        assert_eq!(got, ext(&s, uid).delay(n, index), "same key, same delay");
                        seen.insert(got);
                    }
                }
            }
            if percent >= 20 {
                // Different uids (and indexes) land on different delays.
                assert!(seen.len() > 15, "{percent}%: only {} delays", seen.len());
            }
        }
        let s = settings(10, 600, 2, 100);
        let uids: Vec<Duration> = ["u1", "u2", "u3", "u4", "u5", "u6"]
            .iter()
            .map(|u| ext(&s, u).delay(1, None))
            .collect();
        assert!(uids.iter().any(|d| *d != uids[0]), "{uids:?}");
    }

    fn with_policy(mut j: Job, backoff: BackoffSettings) -> Job {
        j.extended_failure_policy = Some(Arc::new(ExtendedFailurePolicy {
            backoff: Some(backoff),
            ..ExtendedFailurePolicy::default()
        }));
        j
    }

    fn ignore_exit_7(mut j: Job) -> Job {
        j.spec.pod_failure_policy = Some(PodFailurePolicy {
            rules: vec![exit_rule(PodFailurePolicyAction::Ignore, vec![7])],
        });
        j
    }

    fn immediate() -> BackoffSettings {
        BackoffSettings {
            after_ignored_failure: IgnoredFailureDelay::Immediate,
            ..defaults()
        }
    }

    fn failed(name: &str, code: i32, at: i64) -> crate::model::Pod {
        pod(name).phase(PodPhase::Failed).exit("main", code, t(at))
    }

    #[test]
    fn immediate_drops_ignored_failures_from_the_record_delay_keeps_them() {
        let pods = [failed("ignored", 7, 10), failed("counted", 1, 5)];
        for (mode, want) in [
            (IgnoredFailureDelay::Delay, vec!["ignored", "counted"]),
            (IgnoredFailureDelay::Immediate, vec!["counted"]),
        ] {
            let job = with_policy(
                ignore_exit_7(job()),
                BackoffSettings {
                    after_ignored_failure: mode,
                    ..defaults()
                },
            );
            let sync_pods: Vec<SyncPod<'_>> = pods.iter().map(|p| SyncPod::new(&job, p)).collect();
            let kept = failures_for_backoff(&job, &sync_pods);
            let names: Vec<&str> = kept.iter().map(|p| p.name.as_str()).collect();
            assert_eq!(names, want, "{mode:?}");
        }
        // Without a document nothing is dropped.
        let job = ignore_exit_7(job());
        let sync_pods: Vec<SyncPod<'_>> = pods.iter().map(|p| SyncPod::new(&job, p)).collect();
        assert_eq!(failures_for_backoff(&job, &sync_pods).len(), 2);
    }

    #[test]
    fn index_failures_skip_ignored_ones_only_when_immediate() {
        // (settings, exit code, counted before, ignored before, want failures)
        let cases = [
            (None, 1, 2, 3, 6),
            (None, 7, 2, 3, 6),
            (Some(defaults()), 7, 2, 3, 6),
            (Some(immediate()), 1, 2, 3, 3),
            (Some(immediate()), 7, 2, 3, 0),
        ];
        for (s, code, counted, ignored, want) in cases {
            let mut job = ignore_exit_7(indexed_job(3, 3));
            job.spec.backoff_limit_per_index = Some(10);
            if let Some(s) = s {
                job = with_policy(job, s);
            }
            let p = failed("p", code, 1)
                .index(0)
                .failure_counts(counted, ignored);
            let sp = SyncPod::new(&job, &p);
            assert_eq!(index_failures(&job, &sp), want, "{s:?} exit {code}");
            let b = index_backoff(&job, Some(&sp), 0, t(1));
            assert_eq!(b.remaining.is_zero(), want == 0, "{s:?} exit {code}");
        }
    }

    fn requeue_and_creates(plan: &crate::plan::Plan) -> (Option<Duration>, usize) {
        let created = plan
            .actions
            .iter()
            .filter_map(|a| match a {
                Action::CreatePods(c) => Some(c.len()),
                _ => None,
            })
            .sum();
        (plan.requeue_after, created)
    }

    #[test]
    fn sync_waits_on_the_extended_schedule() {
        let record = BackoffRecord {
            failures_after_last_success: 3,
            last_failure_time: Some(t(100)),
        };
        // (settings, want requeue): upstream 40 s, factor 3 from 5 s is 45 s, capped at 30 s.
        let cases = [
            (None, 30),
            (Some(settings(5, 600, 3, 0)), 35),
            (Some(settings(5, 30, 3, 0)), 20),
            (Some(settings(10, 600, 1, 0)), 0),
        ];
        for (s, want) in cases {
            let mut job = job();
            if let Some(s) = s {
                job = with_policy(job, s);
            }
            let mut snap = snapshot(job, vec![], t(110));
            snap.state.backoff = record;
            let plan = decide(&snap);
            let (requeue, created) = requeue_and_creates(&plan);
            if want == 0 {
                assert_eq!((requeue, created), (None, 1), "{s:?}");
            } else {
                assert_eq!(
                    (requeue, created),
                    (Some(Duration::from_secs(want)), 0),
                    "{s:?}"
                );
            }
        }
    }

    #[test]
    fn sync_with_jitter_requeues_for_the_jittered_delay() {
        let s = settings(10, 600, 2, 20);
        let job = with_policy(job(), s);
        let mut snap = snapshot(job, vec![], t(100));
        snap.state.backoff = BackoffRecord {
            failures_after_last_success: 1,
            last_failure_time: Some(t(100)),
        };
        let plan = decide(&snap);
        assert_eq!(plan.requeue_after, Some(secs_f(11.5)));
        assert_eq!(decide(&snap), plan, "the same snapshot, the same plan");
    }

    #[test]
    fn sync_replaces_an_ignored_failure_at_once_only_when_immediate() {
        let ignored = failed("ignored", 7, 100);
        for (s, want) in [
            (None, (Some(Duration::from_secs(10)), 0)),
            (Some(defaults()), (Some(Duration::from_secs(10)), 0)),
            (Some(immediate()), (None, 1)),
        ] {
            let mut job = ignore_exit_7(job());
            if let Some(s) = s {
                job = with_policy(job, s);
            }
            let plan = decide(&snapshot(job, vec![ignored.clone()], t(100)));
            assert_eq!(requeue_and_creates(&plan), want, "{s:?}");
            if s.is_some_and(|s| s.after_ignored_failure == IgnoredFailureDelay::Immediate) {
                assert_eq!(plan.state.backoff, BackoffRecord::default());
            }
        }
        // A counted failure still waits with Immediate.
        let job = with_policy(ignore_exit_7(job()), immediate());
        let plan = decide(&snapshot(job, vec![failed("counted", 1, 100)], t(100)));
        assert_eq!(
            requeue_and_creates(&plan),
            (Some(Duration::from_secs(10)), 0)
        );
    }

    #[test]
    fn sync_per_index_backoff_uses_the_schedule_and_immediate() {
        let run = |s: Option<BackoffSettings>, code: i32| {
            let mut job = ignore_exit_7(indexed_job(1, 1));
            job.spec.backoff_limit_per_index = Some(5);
            if let Some(s) = s {
                job = with_policy(job, s);
            }
            let p = failed("p", code, 100).index(0).failure_counts(1, 0);
            requeue_and_creates(&decide(&snapshot(job, vec![p], t(100))))
        };
        let secs = |s| Some(Duration::from_secs(s));
        assert_eq!(run(None, 1), (secs(20), 0));
        assert_eq!(run(None, 7), (secs(20), 0));
        assert_eq!(run(Some(settings(7, 600, 3, 0)), 1), (secs(21), 0));
        assert_eq!(run(Some(immediate()), 1), (secs(20), 0));
        assert_eq!(run(Some(immediate()), 7), (None, 1));
    }

    #[test]
    fn explanation_names_the_extended_schedule_in_the_wait() {
        let record = BackoffRecord {
            failures_after_last_success: 2,
            last_failure_time: Some(t(100)),
        };
        let explain = |j: Job| {
            let mut snap = snapshot(j, vec![], t(100));
            snap.state.backoff = record;
            crate::sync::decide_explained(&snap).1
        };
        let upstream = explain(job());
        assert_eq!(
            upstream.requeue_reason,
            "the pod-failure backoff ends then: 20s after the 2nd failure"
        );
        let e = explain(with_policy(job(), settings(30, 600, 3, 0)));
        assert_eq!(
            e.requeue_reason,
            "the pod-failure backoff ends then: 1m30s after the 2nd failure \
             (extended backoff: base 30s, factor 3, cap 10m)"
        );
        assert!(
            e.summary
                .contains("(extended backoff: base 30s, factor 3, cap 10m)"),
            "{}",
            e.summary
        );
        assert_eq!(e.backoff.map(|b| b.delay), Some(Duration::from_secs(90)));
    }

    #[test]
    fn describe_names_the_extended_schedule_only_when_there_is_one() {
        assert_eq!(describe(&job()), "");
        let job = with_policy(
            job(),
            BackoffSettings {
                jitter_percent: 20,
                after_ignored_failure: IgnoredFailureDelay::Immediate,
                ..settings(30, 3600, 3, 0)
            },
        );
        assert_eq!(
            describe(&job),
            " (extended backoff: base 30s, factor 3, cap 1h, jitter up to 20%, ignored failures do not wait)"
        );
    }
}
