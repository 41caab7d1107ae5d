//! Pods stuck terminating: a pod that is being deleted but is still not
//! terminal `terminatingTimeout.seconds` after its `deletionTimestamp` (the
//! moment its grace period ran out) is marked Failed with the condition
//! [`TERMINATING_TIMEOUT_CONDITION`], as upstream's pod garbage collector
//! fails terminating pods on out-of-service nodes; with `forceDelete` it is
//! then deleted with a grace period of 0. The next sync sees an ordinary
//! Failed pod: it is counted with the timeout's action and, under
//! `podReplacementPolicy: Failed`, replaced. Before that, the plan asks to
//! decide again at the moment it would time out.
//!
//! With `onNodes: Unhealthy` only pods on an unhealthy node
//! ([`node_health`](super::node_health)) are failed; a pod whose node becomes
//! unhealthy later is failed once the caller decides again (the shim does
//! when a node's health changes). Nothing is failed while the Job is
//! finished, finishing, suspended (its pods are deleted, not failed) or being
//! deleted.

use std::time::Duration;

use super::TERMINATING_TIMEOUT_CONDITION;
use super::node_health::{self, Unhealthy};
use crate::model::{Job, NodeReport, Pod, PodPhase, TerminatingNodes, TerminatingTimeout};
use crate::plan::{PodFailure, PodRef};
use crate::text::{human_duration, truncated};
use crate::time::Time;
/// The reason of that condition.
pub const TERMINATING_TIMEOUT_REASON: &str = "TerminatingTimeout";
/// Longest node name a message repeats, in bytes.
const MAX_NAME_BYTES: usize = 128;

/// Why a pod counts as stuck terminating.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StuckTerminating<'a> {
    /// The end of its grace period: its `deletionTimestamp`.
    pub since: Time,
    /// Its node, when it has one.
    pub node: Option<&'a str>,
    /// Why that node is unhealthy, when it is.
    pub unhealthy: Option<Unhealthy<'a>>,
}

impl StuckTerminating<'_> {
    /// When the pod times out under `settings`.
    pub fn deadline(&self, settings: &TerminatingTimeout) -> Time {
        self.since.saturating_add(seconds(settings))
    }
}

fn seconds(settings: &TerminatingTimeout) -> Duration {
    crate::time::secs(settings.seconds)
}

/// Whether `pod` is terminating and not terminal, on a node `settings`
/// applies to, and since when its grace period is over.
pub fn stuck_terminating<'a>(
    settings: &TerminatingTimeout,
    pod: &'a Pod,
    nodes: &'a [NodeReport],
) -> Option<StuckTerminating<'a>> {
    let deletion = pod.deletion.as_ref()?;
    if matches!(pod.phase, PodPhase::Succeeded | PodPhase::Failed) {
        return None;
    }
    let node = pod
        .failure_details
        .as_deref()
        .map(|d| d.node_name.as_str())
        .filter(|n| !n.is_empty());
    let unhealthy = node.and_then(|n| node_health::unhealthy(nodes, n));
    if settings.on_nodes == TerminatingNodes::Unhealthy && unhealthy.is_none() {
        return None;
    }
    Some(StuckTerminating {
        since: deletion.timestamp,
        node,
        unhealthy,
    })
}

/// The terminating timeout's part of a plan.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StuckPods {
    /// Pods to mark failed, by name.
    pub failures: Vec<PodFailure>,
    /// When the next stuck pod times out, from now.
    pub requeue: Option<Duration>,
}

/// The Job's pods past their terminating timeout, and when the next one
/// passes it. Empty without a `terminatingTimeout`, and while the Job is
/// finished, `finishing`, suspended or being deleted.
pub(crate) fn terminating_timeouts<'p>(
    job: &Job,
    pods: impl IntoIterator<Item = &'p Pod>,
    nodes: &[NodeReport],
    now: Time,
    finishing: bool,
) -> StuckPods {
    let mut out = StuckPods::default();
    let Some(settings) = job
        .extended_failure_policy
        .as_deref()
        .and_then(|p| p.terminating_timeout.as_ref())
    else {
        return out;
    };
    if super::timeouts_quiet(job, finishing) {
        return out;
    }
    for pod in pods {
        let Some(s) = stuck_terminating(settings, pod, nodes) else {
            continue;
        };
        let deadline = s.deadline(settings);
        if deadline <= now {
            out.failures.push(failure(settings, pod, &s, now));
        } else {
            let wait = deadline.saturating_since(now);
            out.requeue = Some(out.requeue.map_or(wait, |r| r.min(wait)));
        }
    }
    out.failures.sort_by(|a, b| a.pod.cmp(&b.pod));
    out
}

/// The FailPods entry of a stuck pod; its message says how long past its
/// grace period the pod was terminating, on which node, and the limit.
fn failure(
    settings: &TerminatingTimeout,
    pod: &Pod,
    s: &StuckTerminating<'_>,
    now: Time,
) -> PodFailure {
    let node = match (s.node, s.unhealthy) {
        (Some(n), Some(u)) => format!(
            " on node {} ({})",
            truncated(n, MAX_NAME_BYTES),
            u.describe()
        ),
        (Some(n), None) => format!(" on node {}", truncated(n, MAX_NAME_BYTES)),
        (None, _) => String::new(),
    };
    PodFailure {
        pod: PodRef::from(pod),
        condition_type: TERMINATING_TIMEOUT_CONDITION.into(),
        reason: TERMINATING_TIMEOUT_REASON.into(),
        message: format!(
            "Pod was still terminating{node} {} after its grace period ended, reaching the terminating timeout of {}",
            human_duration(now.saturating_since(s.since)),
            human_duration(seconds(settings)),
        ),
        force_delete: settings.force_delete,
    }
}

/// Most pods an explanation names.
const MAX_DESCRIBED: usize = 5;

/// For explanations: which pods a FailPods action fails for their
/// terminating timeout, and on which node (the first few; the rest counted).
pub fn describe(job: &Job, now: Time, pods: &[Pod], failures: &[PodFailure]) -> String {
    let settings = job
        .extended_failure_policy
        .as_deref()
        .and_then(|p| p.terminating_timeout.as_ref());
    let limit = settings
        .map(|s| format!(" ({})", human_duration(seconds(s))))
        .unwrap_or_default();
    let named: Vec<String> = failures
        .iter()
        .take(MAX_DESCRIBED)
        .map(|f| {
            let pod = pods.iter().find(|p| p.uid == f.pod.uid);
            let node = pod
                .and_then(|p| p.failure_details.as_deref())
                .map(|d| d.node_name.as_str())
                .filter(|n| !n.is_empty())
                .map(|n| format!(" on {}", truncated(n, MAX_NAME_BYTES)))
                .unwrap_or_default();
            let since = pod
                .and_then(|p| p.deletion.as_ref())
                .map(|d| {
                    format!(
                        ", {} past its grace period",
                        human_duration(now.saturating_since(d.timestamp))
                    )
                })
                .unwrap_or_default();
            format!("{}{node}{since}", truncated(&f.pod.name, MAX_NAME_BYTES))
        })
        .collect();
    let more = crate::text::and_more(failures.len(), MAX_DESCRIBED);
    let force = settings.is_some_and(|s| s.force_delete);
    format!(
        "pods stuck terminating past the extended policy's terminatingTimeout{limit}: {}{more}; marked Failed, then deleted{}",
        named.join(", "),
        if force {
            " with a grace period of 0"
        } else {
            ""
        }
    )
}

/// When the next stuck terminating pod of the Job times out, from now (for
/// explanations).
pub fn next_timeout(job: &Job, pods: &[Pod], nodes: &[NodeReport], now: Time) -> Option<Duration> {
    let settings = job
        .extended_failure_policy
        .as_deref()
        .and_then(|p| p.terminating_timeout.as_ref())?;
    if job.spec.suspend || job.being_deleted {
        return None;
    }
    pods.iter()
        .filter_map(|p| stuck_terminating(settings, p, nodes))
        .map(|s| s.deadline(settings))
        .filter(|&d| d > now)
        .map(|d| d.saturating_since(now))
        .min()
}

#[cfg(test)]
mod tests;
