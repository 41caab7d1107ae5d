use super::*;
use crate::fixtures::{PodExt, pod, t};

const NOW: i64 = 1_000_000;
/// A month before NOW, as upstream's `then`.
const THEN: i64 = NOW - 30 * 24 * 3600;

fn active(name: &str, scheduled: bool, phase: PodPhase) -> Pod {
    let mut p = pod(name).phase(phase);
    p.scheduled = scheduled;
    p.creation_timestamp = None;
    p
}

fn ready_at(mut p: Pod, at: Option<Time>) -> Pod {
    p.conditions.push(PodCondition {
        condition_type: "Ready".into(),
        status: ConditionStatus::True,
        last_transition_time: at,
    });
    p
}

fn not_ready_at(mut p: Pod, at: Time) -> Pod {
    p.conditions.push(PodCondition {
        condition_type: "Ready".into(),
        status: ConditionStatus::False,
        last_transition_time: Some(at),
    });
    p
}

fn restarts(mut p: Pod, counts: &[i32]) -> Pod {
    for (i, &c) in counts.iter().enumerate() {
        p.container_statuses.push(ContainerStatus {
            name: format!("c{i}").into(),
            terminated: None,
            restart_count: c,
        });
    }
    p
}

fn sidecar_restarts(mut p: Pod, count: i32) -> Pod {
    p.init_container_statuses.push(ContainerStatus {
        name: "sidecar".into(),
        terminated: None,
        restart_count: count,
    });
    p
}

fn created(mut p: Pod, at: Time) -> Pod {
    p.creation_timestamp = Some(at);
    p
}

/// Upstream TestSortingActivePods' pods, in the wanted order.
fn upstream_pods() -> Vec<Pod> {
    let running = |name| active(name, true, PodPhase::Running);
    vec![
        active("unscheduled", false, PodPhase::Pending),
        active("scheduledButPending", true, PodPhase::Pending),
        active("unknownPhase", true, PodPhase::Unknown),
        running("runningButNotReady"),
        restarts(
            ready_at(running("runningNoLastTransitionTime"), None),
            &[3, 0],
        ),
        restarts(
            ready_at(running("runningWithLastTransitionTime"), Some(t(NOW))),
            &[3, 0],
        ),
        restarts(
            ready_at(running("runningLongerTime"), Some(t(THEN))),
            &[3, 0],
        ),
        created(
            sidecar_restarts(
                restarts(
                    ready_at(running("lowerSidecarContainerRestartCount"), Some(t(THEN))),
                    &[2, 1],
                ),
                2,
            ),
            t(NOW),
        ),
        created(
            restarts(
                ready_at(running("lowerContainerRestartCount"), Some(t(THEN))),
                &[2, 1],
            ),
            t(NOW),
        ),
        created(
            restarts(ready_at(running("oldest"), Some(t(THEN))), &[2, 1]),
            t(THEN),
        ),
    ]
}

/// Deterministic shuffles: every rotation, forwards and backwards.
fn shuffles(pods: &[Pod]) -> Vec<Vec<Pod>> {
    let mut out = Vec::new();
    for r in 0..pods.len() {
        let mut v = pods.to_vec();
        v.rotate_left(r);
        out.push(v.clone());
        v.reverse();
        out.push(v);
    }
    out
}

fn names(pods: &[Pod]) -> Vec<String> {
    pods.iter().map(|p| p.name.clone()).collect()
}

// Upstream TestSortingActivePods, with the sidecar named.
#[test]
fn sorts_like_upstream_active_pods() {
    let want = upstream_pods();
    for mut shuffled in shuffles(&want) {
        shuffled.sort_by(|a, b| cmp_active_pods_with_sidecars(a, b, |n| n == "sidecar"));
        assert_eq!(names(&shuffled), names(&want));
    }
}

// The same without sidecar knowledge: the sidecar tie-break is the only step lost.
#[test]
fn sorts_like_upstream_without_sidecar_knowledge() {
    let want = upstream_pods();
    assert_eq!(cmp_active_pods(&want[7], &want[8]), Ordering::Equal);
    let sidecar = want[7].name.clone();
    let want: Vec<Pod> = want.into_iter().filter(|p| p.name != sidecar).collect();
    for mut shuffled in shuffles(&want) {
        shuffled.sort_by(cmp_active_pods);
        assert_eq!(names(&shuffled), names(&want));
    }
}

#[test]
fn each_rule_decides_in_turn() {
    let running = |name| active(name, true, PodPhase::Running);
    let cases: Vec<(&str, Pod, Pod, Ordering)> = vec![
        (
            "unscheduled before scheduled, whatever the rest",
            ready_at(active("a", false, PodPhase::Running), Some(t(0))),
            active("b", true, PodPhase::Pending),
            Ordering::Less,
        ),
        (
            "terminal phases rank as Pending",
            active("a", true, PodPhase::Failed),
            active("b", true, PodPhase::Unknown),
            Ordering::Less,
        ),
        (
            "Succeeded and Pending tie on phase",
            active("a", true, PodPhase::Succeeded),
            active("b", true, PodPhase::Pending),
            Ordering::Equal,
        ),
        (
            "not ready before ready",
            restarts(running("a"), &[0]),
            restarts(ready_at(running("b"), Some(t(5))), &[9]),
            Ordering::Less,
        ),
        (
            "only the first Ready condition counts",
            ready_at(not_ready_at(running("a"), t(1)), Some(t(1))),
            ready_at(running("b"), Some(t(1))),
            Ordering::Less,
        ),
        (
            "ready for less time first",
            ready_at(running("a"), Some(t(10))),
            ready_at(running("b"), Some(t(5))),
            Ordering::Less,
        ),
        (
            "an unset ready time first",
            ready_at(running("a"), None),
            ready_at(running("b"), Some(t(10))),
            Ordering::Less,
        ),
        (
            "equal ready times fall through to restarts",
            restarts(ready_at(running("a"), Some(t(5))), &[1]),
            restarts(ready_at(running("b"), Some(t(5))), &[2]),
            Ordering::Greater,
        ),
        (
            "the max over containers counts, not the sum",
            restarts(running("a"), &[3]),
            restarts(running("b"), &[2, 2, 2]),
            Ordering::Less,
        ),
        (
            "negative restart counts count as zero",
            created(restarts(running("a"), &[-5]), t(1)),
            created(running("b"), t(1)),
            Ordering::Equal,
        ),
        (
            "without sidecar knowledge init restarts are ignored",
            created(sidecar_restarts(running("a"), 7), t(1)),
            created(running("b"), t(1)),
            Ordering::Equal,
        ),
        (
            "newer before older",
            created(running("a"), t(10)),
            created(running("b"), t(5)),
            Ordering::Less,
        ),
        (
            "an unset creation time first",
            running("a"),
            created(running("b"), t(5)),
            Ordering::Less,
        ),
        (
            "the transition time of a Ready=False condition is not compared",
            created(not_ready_at(running("a"), t(1)), t(1)),
            created(not_ready_at(running("b"), t(9)), t(1)),
            Ordering::Equal,
        ),
        (
            "extreme restart counts and times",
            created(
                restarts(running("a"), &[i32::MAX]),
                Time::from_unix_nanos(i64::MIN),
            ),
            created(
                restarts(running("b"), &[i32::MAX]),
                Time::from_unix_nanos(i64::MAX),
            ),
            Ordering::Greater,
        ),
    ];
    for (name, a, b, want) in cases {
        assert_eq!(cmp_active_pods(&a, &b), want, "{name}");
        assert_eq!(cmp_active_pods(&b, &a), want.reverse(), "{name} (swapped)");
    }
}

#[test]
fn a_pod_equals_itself_and_empty_lists_sort() {
    for p in upstream_pods() {
        assert_eq!(cmp_active_pods(&p, &p), Ordering::Equal, "{}", p.name);
    }
    let mut none: Vec<Pod> = vec![];
    none.sort_by(cmp_active_pods);
    assert!(none.is_empty());
}
