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
