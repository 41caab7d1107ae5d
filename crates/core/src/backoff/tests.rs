use super::*;
use crate::fixtures::{PodExt, pod, t};
use crate::model::{PodCondition, PodPhase, Terminated};

/// Upstream's test instant, 2009-11-10T23:00:00Z.
const DEFAULT_SECS: i64 = 1_257_894_000;

fn at_ms(offset_ms: i64) -> Time {
    Time::from_unix_nanos(DEFAULT_SECS * 1_000_000_000 + offset_ms * 1_000_000)
}

fn default_time() -> Time {
    at_ms(0)
}

/// A pod with one container that terminated at `at`, created at the epoch.
fn finished_at(at: Time) -> Pod {
    let mut p = pod("p").exit("", 0, at);
    p.creation_timestamp = None;
    p
}

fn bare_pod() -> Pod {
    let mut p = pod("p");
    p.creation_timestamp = None;
    p
}

fn status(name: &str, terminated: Option<Option<Time>>) -> ContainerStatus {
    ContainerStatus {
        name: name.into(),
        terminated: terminated.map(|finished_at| Terminated {
            exit_code: 0,
            finished_at,
        }),
        restart_count: 0,
    }
}

fn ready(status: ConditionStatus, at: Option<Time>) -> PodCondition {
    PodCondition {
        condition_type: "Ready".into(),
        status,
        last_transition_time: at,
    }
}

// Upstream TestNewBackoffRecord.
#[test]
fn new_backoff_record_counts_failures_after_the_last_success() {
    struct Case {
        name: &'static str,
        old: BackoffRecord,
        succeeded: &'static [i64],
        failed: &'static [i64],
        want: BackoffRecord,
    }
    let empty = BackoffRecord::default();
    let record = |n, at: Option<i64>| BackoffRecord {
        failures_after_last_success: n,
        last_failure_time: at.map(at_ms),
    };
    let cases = [
        Case {
            name: "Empty backoff store and one new failure",
            old: empty,
            succeeded: &[],
            failed: &[0],
            want: record(1, Some(0)),
        },
        Case {
            name: "Empty backoff store and two new failures",
            old: empty,
            succeeded: &[],
            failed: &[0, -1],
            want: record(2, Some(0)),
        },
        Case {
            name: "Empty backoff store, two failures followed by success",
            old: empty,
            succeeded: &[0],
            failed: &[-2, -1],
            want: record(0, None),
        },
        Case {
            name: "Empty backoff store, two failures, one success and two more failures",
            old: empty,
            succeeded: &[-2],
            failed: &[0, -4, -3, -1],
            want: record(2, Some(0)),
        },
        Case {
            name: "Backoff store having failure count 2 and one new failure",
            old: record(2, None),
            succeeded: &[],
            failed: &[0],
            want: record(3, Some(0)),
        },
        Case {
            name: "Empty backoff store with success and failure at same timestamp",
            old: empty,
            succeeded: &[0],
            failed: &[0],
            want: record(0, None),
        },
        Case {
            name: "Empty backoff store with no success/failure",
            old: empty,
            succeeded: &[],
            failed: &[],
            want: record(0, None),
        },
        Case {
            name: "Empty backoff store with one success",
            old: empty,
            succeeded: &[0],
            failed: &[],
            want: record(0, None),
        },
        Case {
            name: "no new pods keep the old record",
            old: record(4, Some(-7)),
            succeeded: &[],
            failed: &[],
            want: record(4, Some(-7)),
        },
        Case {
            name: "a success resets an old record",
            old: record(4, Some(-7)),
            succeeded: &[-10],
            failed: &[],
            want: record(0, None),
        },
        Case {
            name: "old failures are dropped when a success comes with failures",
            old: record(4, Some(-7)),
            succeeded: &[-10],
            failed: &[-5, -20],
            want: record(1, Some(-5)),
        },
        Case {
            name: "the latest success counts, not the first",
            old: empty,
            succeeded: &[-10, 5, -3],
            failed: &[0, 6, 7],
            want: record(2, Some(7)),
        },
        Case {
            name: "the count wraps as Go's int32 does",
            old: record(i32::MAX, Some(-1)),
            succeeded: &[],
            failed: &[0],
            want: record(i32::MIN, Some(0)),
        },
    ];
    for c in cases {
        let succeeded: Vec<Pod> = c
            .succeeded
            .iter()
            .map(|&ms| finished_at(at_ms(ms)))
            .collect();
        let failed: Vec<Pod> = c.failed.iter().map(|&ms| finished_at(at_ms(ms))).collect();
        let succeeded: Vec<&Pod> = succeeded.iter().collect();
        let failed: Vec<&Pod> = failed.iter().collect();
        assert_eq!(
            new_backoff_record(&crate::fixtures::job(), c.old, &succeeded, &failed),
            c.want,
            "{}",
            c.name
        );
    }
}

// Upstream TestGetFinishedTime, plus the rules' edges.
#[test]
fn finished_time_takes_the_first_rule_that_applies() {
    let d = default_time();
    let minus_30s = d.saturating_sub_secs(30);
    let cases: Vec<(&str, Pod, Time)> = vec![
        (
            "Pod with multiple containers and all containers terminated",
            bare_pod()
                .exit("a", 0, at_ms(-1000))
                .exit("b", 0, d)
                .exit("c", 0, at_ms(-2000)),
            d,
        ),
        (
            "Pod with multiple containers; two containers in terminated state and one in running state; fallback to deletionTimestamp",
            Pod {
                container_statuses: vec![
                    status("a", Some(Some(at_ms(-1000)))),
                    status("b", None),
                    status("c", Some(Some(at_ms(-2000)))),
                ],
                ..bare_pod().deleted(d, None)
            },
            d,
        ),
        (
            "fallback to deletionTimestamp",
            Pod {
                container_statuses: vec![status("a", None)],
                ..bare_pod().deleted(d, None)
            },
            d,
        ),
        (
            "fallback to deletionTimestamp, decremented by grace period",
            Pod {
                container_statuses: vec![status("a", None)],
                ..bare_pod().deleted(d, Some(30))
            },
            minus_30s,
        ),
        (
            "fallback to PodReady.LastTransitionTime when status of the condition is False",
            Pod {
                container_statuses: vec![status("a", Some(None))],
                conditions: vec![ready(ConditionStatus::False, Some(d))],
                ..bare_pod()
            },
            d,
        ),
        (
            "skip fallback to PodReady.LastTransitionTime when status of the condition is True",
            Pod {
                container_statuses: vec![status("a", Some(None))],
                conditions: vec![ready(ConditionStatus::True, Some(minus_30s))],
                ..bare_pod().deleted(d, None)
            },
            d,
        ),
        (
            "fallback to creationTimestamp",
            Pod {
                container_statuses: vec![status("a", Some(None))],
                creation_timestamp: Some(d),
                ..bare_pod()
            },
            d,
        ),
        (
            "no statuses at all fall through to the creation time",
            Pod {
                creation_timestamp: Some(d),
                ..bare_pod()
            },
            d,
        ),
        (
            "nothing known gives the default time",
            bare_pod(),
            Time::default(),
        ),
        (
            "a non-sidecar init container finishing later is not looked at",
            bare_pod()
                .exit("main", 0, minus_30s)
                .init_exit("init", 0, d),
            minus_30s,
        ),
        (
            "an unfinished non-sidecar init container does not block the rule",
            Pod {
                init_container_statuses: vec![status("init", None)],
                ..bare_pod().exit("main", 0, d)
            },
            d,
        ),
        (
            "Ready=False without a transition time is skipped",
            Pod {
                conditions: vec![ready(ConditionStatus::False, None)],
                ..bare_pod().deleted(d, None)
            },
            d,
        ),
        (
            "only the first Ready condition is read",
            Pod {
                conditions: vec![
                    ready(ConditionStatus::True, Some(minus_30s)),
                    ready(ConditionStatus::False, Some(minus_30s)),
                ],
                ..bare_pod().deleted(d, None)
            },
            d,
        ),
        (
            "a negative grace period moves the time forward",
            bare_pod().deleted(minus_30s, Some(-30)),
            d,
        ),
        (
            "an absurd grace period saturates",
            bare_pod().deleted(d, Some(i64::MAX)),
            Time::from_unix_nanos(d.unix_nanos() - i64::MAX),
        ),
    ];
    for (name, p, want) in cases {
        assert_eq!(finished_time(&p), want, "{name}");
    }
}

#[test]
fn finished_time_counts_sidecars_when_named() {
    let d = default_time();
    let is_sidecar = |name: &str| name == "sidecar";
    let cases: Vec<(&str, Pod, Time)> = vec![
        (
            // Upstream "Pod with sidecar container and all containers terminated".
            "Pod with sidecar container and all containers terminated",
            bare_pod()
                .exit("main", 0, at_ms(-1000))
                .init_exit("sidecar", 0, d),
            d,
        ),
        (
            "an unfinished sidecar makes the containers give nothing",
            Pod {
                init_container_statuses: vec![status("sidecar", None)],
                ..bare_pod().exit("main", 0, d).deleted(at_ms(5000), None)
            },
            at_ms(5000),
        ),
        (
            "a finished sidecar gives a time even when a regular container is unfinished",
            Pod {
                container_statuses: vec![status("main", None)],
                ..bare_pod()
                    .init_exit("sidecar", 0, at_ms(-1000))
                    .deleted(d, None)
            },
            at_ms(-1000),
        ),
    ];
    for (name, p, want) in cases {
        assert_eq!(finished_time_with_sidecars(&p, is_sidecar), want, "{name}");
    }
}

// Upstream TestGetRemainingBackoffTime (base 5 s, max 700 s).
#[test]
fn remaining_backoff_doubles_up_to_the_cap() {
    let d = default_time();
    let cases: &[(&str, i32, Option<Time>, Time, u64)] = &[
        ("no failures", 0, None, Time::default(), 0),
        (
            "one failure; current time and failure time are same",
            1,
            Some(d),
            d,
            5,
        ),
        (
            "one failure; current time == 1 second + failure time",
            1,
            Some(d),
            at_ms(1000),
            4,
        ),
        (
            "one failure; current time == expected backoff time",
            1,
            Some(d),
            at_ms(5000),
            0,
        ),
        (
            "one failure; current time == expected backoff time + 1 Second",
            1,
            Some(d),
            at_ms(6000),
            0,
        ),
        (
            "three failures; current time and failure time are same",
            3,
            Some(d),
            d,
            20,
        ),
        (
            "eight failures; current time and failure time are same; backoff not exceeding maxBackoff",
            8,
            Some(d),
            d,
            640,
        ),
        (
            "nine failures; current time and failure time are same; backoff exceeding maxBackoff",
            9,
            Some(d),
            d,
            700,
        ),
        (
            "a failure in the future waits longer",
            1,
            Some(at_ms(3000)),
            d,
            8,
        ),
        ("a huge count is capped", i32::MAX, Some(d), d, 700),
        ("a negative count waits the base", -3, Some(d), d, 5),
        ("a count without a time does not wait", 4, None, d, 0),
    ];
    for (name, failures, last, now, want_secs) in cases {
        let record = BackoffRecord {
            failures_after_last_success: *failures,
            last_failure_time: *last,
        };
        let got = remaining_backoff(
            &record,
            *now,
            Duration::from_secs(5),
            Duration::from_secs(700),
        );
        assert_eq!(got, Duration::from_secs(*want_secs), "{name}");
    }
}

#[test]
fn default_constants_give_upstream_schedule() {
    let now = default_time();
    let waits: Vec<u64> = (1..=8)
        .map(|n| {
            let record = BackoffRecord {
                failures_after_last_success: n,
                last_failure_time: Some(now),
            };
            remaining_backoff(
                &record,
                now,
                POD_FAILURE_BACKOFF_BASE,
                POD_FAILURE_BACKOFF_MAX,
            )
            .as_secs()
        })
        .collect();
    assert_eq!(waits, vec![10, 20, 40, 80, 160, 320, 600, 600]);
}

#[test]
fn remaining_backoff_survives_extreme_times() {
    let record = BackoffRecord {
        failures_after_last_success: 1,
        last_failure_time: Some(Time::from_unix_nanos(i64::MAX)),
    };
    let got = remaining_backoff(
        &record,
        Time::from_unix_nanos(i64::MIN),
        POD_FAILURE_BACKOFF_BASE,
        POD_FAILURE_BACKOFF_MAX,
    );
    assert_eq!(
        got,
        Duration::from_nanos(u64::try_from(i64::MAX).unwrap_or(0))
    );
    let long_ago = BackoffRecord {
        failures_after_last_success: 3,
        last_failure_time: Some(Time::from_unix_nanos(i64::MIN)),
    };
    let got = remaining_backoff(
        &long_ago,
        Time::from_unix_nanos(i64::MAX),
        POD_FAILURE_BACKOFF_BASE,
        POD_FAILURE_BACKOFF_MAX,
    );
    assert_eq!(got, Duration::ZERO);
    let zero_base = BackoffRecord {
        failures_after_last_success: i32::MAX,
        ..record
    };
    let got = remaining_backoff(
        &zero_base,
        Time::from_unix_nanos(i64::MAX),
        Duration::ZERO,
        Duration::MAX,
    );
    assert_eq!(got, Duration::ZERO);
}

// Upstream TestGetRemainingBackoffTimePerIndex (base 5 s, max 700 s).
#[test]
fn remaining_backoff_for_index_counts_failed_and_ignored() {
    let d = default_time();
    let failed_at = |failed, ignored| {
        bare_pod()
            .phase(PodPhase::Failed)
            .failure_counts(failed, ignored)
            .deleted(d, None)
    };
    let cases: Vec<(&str, Option<Pod>, u64)> = vec![
        ("no failures", None, 0),
        (
            "two prev failures; current time and failure time are same",
            Some(failed_at(2, 0)),
            20,
        ),
        (
            "one prev failure counted and one ignored; current time and failure time are same",
            Some(failed_at(1, 1)),
            20,
        ),
        ("the first failure waits the base", Some(failed_at(0, 0)), 5),
        (
            "saturated annotations wrap as Go's int32 does",
            Some(failed_at(i32::MAX, 1)),
            5,
        ),
    ];
    for (name, p, want_secs) in cases {
        let got = remaining_backoff_for_index(
            p.as_ref(),
            d,
            Duration::from_secs(5),
            Duration::from_secs(700),
        );
        assert_eq!(got, Duration::from_secs(want_secs), "{name}");
    }
}

#[test]
fn remaining_backoff_for_index_uses_the_finish_time() {
    let p = bare_pod()
        .phase(PodPhase::Failed)
        .exit("main", 1, t(100))
        .failure_counts(1, 0);
    let got = remaining_backoff_for_index(
        Some(&p),
        t(105),
        POD_FAILURE_BACKOFF_BASE,
        POD_FAILURE_BACKOFF_MAX,
    );
    assert_eq!(got, Duration::from_secs(15));
}
