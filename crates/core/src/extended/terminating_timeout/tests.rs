use super::*;
use crate::fixtures::{PodExt, job, pod, t};
use crate::model::{
    ConditionStatus, ExtendedAction, ExtendedFailurePolicy, NodeSignals, NodeState,
    PodFailureDetails,
};
use std::sync::Arc;

fn settings(seconds: i64, on_nodes: TerminatingNodes) -> TerminatingTimeout {
    TerminatingTimeout {
        seconds,
        on_nodes,
        action: ExtendedAction::Count,
        force_delete: true,
    }
}

/// A Running pod on `node` whose deletion was asked for with a grace period
/// ending at `grace_ends`.
fn terminating(name: &str, node: &str, grace_ends: i64) -> Pod {
    let mut p = pod(name)
        .phase(PodPhase::Running)
        .deleted(t(grace_ends), Some(30));
    p.failure_details = Some(Box::new(PodFailureDetails {
        node_name: node.into(),
        ..PodFailureDetails::default()
    }));
    p
}

fn nodes() -> Vec<NodeReport> {
    vec![
        NodeReport {
            name: "gone".into(),
            state: NodeState::Missing,
        },
        NodeReport {
            name: "healthy".into(),
            state: NodeState::Present(NodeSignals {
                ready: Some(ConditionStatus::True),
                ..NodeSignals::default()
            }),
        },
        NodeReport {
            name: "lost".into(),
            state: NodeState::Present(NodeSignals {
                ready: Some(ConditionStatus::Unknown),
                unhealthy_taints: vec!["node.kubernetes.io/unreachable".into()],
                ..NodeSignals::default()
            }),
        },
    ]
}

#[test]
fn stuck_terminating_needs_a_deleted_non_terminal_pod_and_an_unhealthy_node_when_asked() {
    let any = settings(60, TerminatingNodes::Any);
    let unhealthy = settings(60, TerminatingNodes::Unhealthy);
    let nodes = nodes();
    let cases: [(&str, &TerminatingTimeout, Pod, Option<i64>); 8] = [
        (
            "any node: a healthy one",
            &any,
            terminating("p", "healthy", 100),
            Some(100),
        ),
        (
            "unhealthy only: healthy node",
            &unhealthy,
            terminating("p", "healthy", 100),
            None,
        ),
        (
            "unhealthy only: unreported node",
            &unhealthy,
            terminating("p", "elsewhere", 100),
            None,
        ),
        (
            "unhealthy only: lost node",
            &unhealthy,
            terminating("p", "lost", 100),
            Some(100),
        ),
        (
            "unhealthy only: deleted node",
            &unhealthy,
            terminating("p", "gone", 100),
            Some(100),
        ),
        (
            "not being deleted",
            &any,
            pod("p").phase(PodPhase::Running),
            None,
        ),
        (
            "already Failed",
            &any,
            terminating("p", "lost", 100).phase(PodPhase::Failed),
            None,
        ),
        (
            "already Succeeded",
            &any,
            terminating("p", "lost", 100).phase(PodPhase::Succeeded),
            None,
        ),
    ];
    for (name, s, p, want) in cases {
        let got = stuck_terminating(s, &p, &nodes).map(|s| s.since);
        assert_eq!(got, want.map(t), "{name}");
    }
}

fn with_policy(mut j: Job, s: TerminatingTimeout) -> Job {
    j.extended_failure_policy = Some(Arc::new(ExtendedFailurePolicy {
        terminating_timeout: Some(s),
        ..ExtendedFailurePolicy::default()
    }));
    j
}

fn timeouts(j: &Job, pods: &[Pod], now: Time, finishing: bool) -> StuckPods {
    terminating_timeouts(j, pods, &nodes(), now, finishing)
}

fn names(out: &StuckPods) -> Vec<&str> {
    out.failures.iter().map(|f| f.pod.name.as_str()).collect()
}

#[test]
fn pods_fail_exactly_at_the_deadline_past_their_grace_and_requeue_before() {
    let j = with_policy(job(), settings(300, TerminatingNodes::Unhealthy));
    let pods = [
        terminating("b", "lost", 0),
        terminating("a", "gone", 0),
        terminating("later", "lost", 100),
        terminating("fine", "healthy", 0),
    ];
    let just_before = Time::from_unix_nanos(t(300).unix_nanos() - 1);
    let out = timeouts(&j, &pods, just_before, false);
    assert_eq!(names(&out), Vec::<&str>::new());
    assert_eq!(out.requeue, Some(Duration::from_nanos(1)));

    let out = timeouts(&j, &pods, t(300), false);
    assert_eq!(names(&out), vec!["a", "b"], "sorted by name");
    assert_eq!(out.requeue, Some(Duration::from_secs(100)));
    let b = &out.failures[1];
    assert_eq!(b.condition_type, TERMINATING_TIMEOUT_CONDITION);
    assert_eq!(b.reason, TERMINATING_TIMEOUT_REASON);
    assert!(b.force_delete);
    assert_eq!(
        b.message,
        "Pod was still terminating on node lost (the node's Ready condition is Unknown) 5m after its grace period ended, reaching the terminating timeout of 5m"
    );
}

#[test]
fn nothing_fails_while_finishing_suspended_deleted_or_finished_or_without_the_setting() {
    let pods = [terminating("a", "lost", 0)];
    let base = with_policy(job(), settings(10, TerminatingNodes::Any));
    assert_eq!(names(&timeouts(&base, &pods, t(100), false)), vec!["a"]);
    assert_eq!(timeouts(&base, &pods, t(100), true), StuckPods::default());
    let mut suspended = base.clone();
    suspended.spec.suspend = true;
    assert_eq!(
        timeouts(&suspended, &pods, t(100), false),
        StuckPods::default()
    );
    let mut deleted = base.clone();
    deleted.being_deleted = true;
    assert_eq!(
        timeouts(&deleted, &pods, t(100), false),
        StuckPods::default()
    );
    assert_eq!(timeouts(&job(), &pods, t(100), false), StuckPods::default());
}

#[test]
fn failed_at_reads_the_conditions_transition_on_a_failed_pod_only() {
    let j = with_policy(job(), settings(60, TerminatingNodes::Any));
    let policy = j.extended_failure_policy.as_deref().expect("a document");
    let mut p = terminating("p", "lost", 0).phase(PodPhase::Failed);
    p.conditions.push(crate::model::PodCondition {
        condition_type: Arc::from(TERMINATING_TIMEOUT_CONDITION),
        status: ConditionStatus::True,
        last_transition_time: Some(t(42)),
    });
    assert_eq!(
        crate::extended::timeouts::failed_at(policy, &p),
        Some(t(42))
    );
    let running = p.clone().phase(PodPhase::Running);
    assert_eq!(crate::extended::timeouts::failed_at(policy, &running), None);
}

/// A started Job with podReplacementPolicy Failed (so a terminating pod is
/// not replaced until it is terminal), carrying `settings`.
fn replace_on_failed(settings: TerminatingTimeout) -> Job {
    let mut j = with_policy(job(), settings);
    j.spec.parallelism = 1;
    j.spec.completions = Some(1);
    j.spec.pod_replacement_policy = crate::model::PodReplacementPolicy::Failed;
    j.status.start_time = Some(t(0));
    j
}

fn fail_pods(plan: &crate::plan::Plan) -> Vec<&PodFailure> {
    plan.actions
        .iter()
        .filter_map(|a| match a {
            crate::plan::Action::FailPods(f) => Some(f.iter()),
            _ => None,
        })
        .flatten()
        .collect()
}

#[test]
fn sync_a_pod_stuck_on_a_lost_node_is_failed_then_counted_and_replaced_under_replacement_policy_failed()
 {
    use crate::fixtures::{PodExt, creations, last_status, snapshot};
    use crate::sync::decide;
    let j = replace_on_failed(settings(60, TerminatingNodes::Unhealthy));
    let stuck = terminating("p", "lost", 100);
    // Before the deadline: nothing failed, nothing created, a requeue at the deadline.
    let mut s = snapshot(j.clone(), vec![stuck.clone()], t(130));
    s.nodes = nodes();
    let plan = decide(&s);
    assert!(fail_pods(&plan).is_empty());
    assert!(creations(&plan).is_empty(), "replaced only once terminal");
    assert_eq!(plan.requeue_after, Some(Duration::from_secs(30)));
    // At the deadline: failed with force.
    s.now = t(160);
    let plan = decide(&s);
    let failed = fail_pods(&plan);
    assert_eq!(failed.len(), 1);
    assert!(failed[0].force_delete);
    // Without the node report, the node is taken as healthy: nothing.
    s.nodes = Vec::new();
    assert!(fail_pods(&decide(&s)).is_empty());
    // The next sync sees it Failed with the condition: counted and replaced.
    let mut failed_pod = stuck.phase(PodPhase::Failed);
    failed_pod.conditions.push(crate::model::PodCondition {
        condition_type: Arc::from(TERMINATING_TIMEOUT_CONDITION),
        status: ConditionStatus::True,
        last_transition_time: Some(t(160)),
    });
    let plan = decide(&snapshot(j.clone(), vec![failed_pod.clone()], t(161)));
    assert_eq!(last_status(&plan).failed, 1);
    // The pod failure backoff (10 s) counts from the condition's transition.
    assert!(creations(&plan).is_empty());
    assert_eq!(plan.requeue_after, Some(Duration::from_secs(9)));
    let mut j = j;
    j.status.failed = 1;
    let plan = decide(&snapshot(j, vec![failed_pod.without_finalizer()], t(170)));
    assert_eq!(
        creations(&plan).len(),
        1,
        "a replacement once the backoff ran out"
    );
}

#[test]
fn sync_a_fail_job_terminating_timeout_gives_its_implicit_rules_reason() {
    use crate::fixtures::{last_status, snapshot};
    use crate::model::JobConditionType;
    use crate::sync::decide;
    let mut s = settings(60, TerminatingNodes::Any);
    s.action = ExtendedAction::FailJob;
    let mut failed_pod = terminating("p", "healthy", 100).phase(PodPhase::Failed);
    failed_pod.conditions.push(crate::model::PodCondition {
        condition_type: Arc::from(TERMINATING_TIMEOUT_CONDITION),
        status: ConditionStatus::True,
        last_transition_time: Some(t(160)),
    });
    let plan = decide(&snapshot(replace_on_failed(s), vec![failed_pod], t(161)));
    let reason = last_status(&plan)
        .conditions
        .iter()
        .find(|c| c.condition_type == JobConditionType::FailureTarget)
        .map(|c| c.reason.clone());
    assert_eq!(
        reason.as_deref(),
        Some("PodFailurePolicy_TerminatingTimeout")
    );
}

/// Every combination of a few pods (phase, deleted or not and when, which
/// node) against both node settings: a pod is failed exactly when it is
/// deleted, not terminal, past its deadline and (with Unhealthy) on an
/// unhealthy node; each at most once, sorted; the requeue is the earliest
/// deadline still ahead; and a failure's message stays bounded.
#[test]
fn failures_and_requeue_are_exactly_the_passed_and_the_earliest_coming_deadlines() {
    let phases = [PodPhase::Pending, PodPhase::Running, PodPhase::Failed];
    let deletions = [None, Some(0), Some(100), Some(250)];
    let node_names = ["healthy", "lost", "gone", "elsewhere", ""];
    let now = t(300);
    for on_nodes in [TerminatingNodes::Any, TerminatingNodes::Unhealthy] {
        let j = with_policy(job(), settings(60, on_nodes));
        let mut pods = Vec::new();
        let mut n = 0;
        for phase in phases {
            for deletion in deletions {
                for node in node_names {
                    let mut p = terminating(&format!("p{n:03}"), node, 0).phase(phase);
                    p.uid = format!("uid-{n}");
                    p.deletion = deletion.map(|at| crate::model::Deletion {
                        timestamp: t(at),
                        grace_period_seconds: Some(30),
                    });
                    pods.push(p);
                    n += 1;
                }
            }
        }
        let out = timeouts(&j, &pods, now, false);
        let mut want_failed = Vec::new();
        let mut want_requeue: Option<Duration> = None;
        for p in &pods {
            let Some(at) = p.deletion.as_ref().map(|d| d.timestamp) else {
                continue;
            };
            if p.phase == PodPhase::Failed {
                continue;
            }
            let node = p
                .failure_details
                .as_deref()
                .map_or("", |d| d.node_name.as_str());
            let unhealthy = matches!(node, "lost" | "gone");
            if on_nodes == TerminatingNodes::Unhealthy && !unhealthy {
                continue;
            }
            let deadline = at.saturating_add(Duration::from_secs(60));
            if deadline <= now {
                want_failed.push(p.name.as_str());
            } else {
                let wait = deadline.saturating_since(now);
                want_requeue = Some(want_requeue.map_or(wait, |r| r.min(wait)));
            }
        }
        want_failed.sort_unstable();
        assert_eq!(names(&out), want_failed, "{on_nodes:?}");
        assert_eq!(out.requeue, want_requeue, "{on_nodes:?}");
        assert!(
            out.failures
                .iter()
                .all(|f| f.force_delete && f.message.len() <= 512)
        );
    }
}
