//! The order in which upstream picks active pods to delete: least valuable
//! first, as the `controller.ActivePods` sort orders them.

use std::cmp::Ordering;

use crate::model::{ConditionStatus, ContainerStatus, Pod, PodCondition, PodPhase};
use crate::time::Time;

/// Orders two active pods, least valuable first (upstream `ActivePods.Less`).
///
/// In turn: unscheduled before scheduled; Pending before Unknown before
/// Running; not ready before ready; when both are ready, ready for less time
/// before longer (an unset ready time first); more container restarts before
/// fewer; then newer before older (an unset creation time first). Pods equal
/// on all of these compare `Equal`.
///
/// A tie in regular-container restarts is broken by the restarts of sidecar
/// init containers, as upstream does (a Job's pods share one template, so
/// either pod's sidecar list names them).
pub fn cmp_active_pods(a: &Pod, b: &Pod) -> Ordering {
    cmp_active_pods_with_sidecars(a, b, |name| a.is_sidecar(name) || b.is_sidecar(name))
}

/// [`cmp_active_pods`], with `is_sidecar` naming the init containers whose
/// restart policy is `Always`, so that their restarts break ties as upstream's do.
pub fn cmp_active_pods_with_sidecars(
    a: &Pod,
    b: &Pod,
    is_sidecar: impl Fn(&str) -> bool,
) -> Ordering {
    let (a_ready, b_ready) = (ready_condition(a), ready_condition(b));
    // `true` sorts after `false`: scheduled and ready pods are worth more.
    a.scheduled
        .cmp(&b.scheduled)
        .then_with(|| phase_rank(a.phase).cmp(&phase_rank(b.phase)))
        .then_with(|| a_ready.is_some().cmp(&b_ready.is_some()))
        .then_with(|| match (a_ready, b_ready) {
            (Some(ra), Some(rb)) => {
                cmp_unset_then_newest(ra.last_transition_time, rb.last_transition_time)
            }
            _ => Ordering::Equal,
        })
        // More restarts first: compare b to a.
        .then_with(|| {
            max_restarts(b.container_statuses.iter())
                .cmp(&max_restarts(a.container_statuses.iter()))
        })
        .then_with(|| {
            let sidecars = |p: &Pod| {
                max_restarts(
                    p.init_container_statuses
                        .iter()
                        .filter(|s| is_sidecar(&s.name)),
                )
            };
            sidecars(b).cmp(&sidecars(a))
        })
        .then_with(|| cmp_unset_then_newest(a.creation_timestamp, b.creation_timestamp))
}

/// The pod's Ready condition when it is True; as upstream, only the first
/// condition of type Ready is looked at.
fn ready_condition(pod: &Pod) -> Option<&PodCondition> {
    pod.conditions
        .iter()
        .find(|c| &*c.condition_type == "Ready")
        .filter(|c| c.status == ConditionStatus::True)
}

/// Pending < Unknown < Running; upstream's table has no other phase, so they rank as Pending.
fn phase_rank(phase: PodPhase) -> u8 {
    match phase {
        PodPhase::Unknown => 1,
        PodPhase::Running => 2,
        PodPhase::Pending | PodPhase::Succeeded | PodPhase::Failed => 0,
    }
}

/// The highest restart count among the statuses; upstream starts from 0.
fn max_restarts<'a>(statuses: impl Iterator<Item = &'a ContainerStatus>) -> i32 {
    statuses.map(|s| s.restart_count).fold(0, i32::max)
}

/// Unset first, then later before earlier (upstream `afterOrZero`).
fn cmp_unset_then_newest(a: Option<Time>, b: Option<Time>) -> Ordering {
    match (a, b) {
        (None, None) => Ordering::Equal,
        (None, Some(_)) => Ordering::Less,
        (Some(_), None) => Ordering::Greater,
        (Some(a), Some(b)) => b.cmp(&a),
    }
}

#[cfg(test)]
mod tests;
