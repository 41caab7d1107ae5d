//! Whether a node is unhealthy, for `terminatingTimeout` with
//! `onNodes: Unhealthy`: a pod stuck terminating there is not going to be
//! finished by its kubelet. A node is unhealthy when the caller's synced node
//! cache no longer holds it, when its Ready condition is False or Unknown (the
//! node lifecycle controller sets Unknown when the kubelet stops reporting),
//! when it carries one of [`UNHEALTHY_TAINTS`] with effect `NoExecute` (the
//! node lifecycle controller's verdict; the `NoSchedule` ones a node gets at
//! registration, before its kubelet first reports, are not), or when its
//! `MaintenanceInProgress` condition (KEP-5683) is True. A node the caller did
//! not report is taken as healthy: nothing says otherwise.

use crate::model::{ConditionStatus, NodeReport, NodeState};

/// Taint keys that mark a node unhealthy: set by the node lifecycle
/// controller (`unreachable`, `not-ready`) or by an administrator who knows
/// the node is down (`out-of-service`, as upstream's pod GC reads it).
pub const UNHEALTHY_TAINTS: [&str; 3] = [
    "node.kubernetes.io/unreachable",
    "node.kubernetes.io/not-ready",
    "node.kubernetes.io/out-of-service",
];
/// The only taint effect that marks a node unhealthy.
pub const NO_EXECUTE: &str = "NoExecute";

/// Whether a taint says its node is unhealthy: one of [`UNHEALTHY_TAINTS`]
/// with effect [`NO_EXECUTE`]. The wire keeps only these
/// (`NodeSignals::unhealthy_taints`).
pub fn unhealthy_taint(key: &str, effect: &str) -> bool {
    effect == NO_EXECUTE && UNHEALTHY_TAINTS.contains(&key)
}

/// The node condition KEP-5683 sets while a node is drained for maintenance.
pub const MAINTENANCE_CONDITION: &str = "MaintenanceInProgress";
/// The node condition that says whether the kubelet is healthy.
pub const READY_CONDITION: &str = "Ready";

/// Why a node counts as unhealthy, the first that holds in this order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unhealthy<'a> {
    /// The node object is gone.
    Missing,
    /// Its Ready condition is False.
    NotReady,
    /// Its Ready condition is Unknown: the kubelet stopped reporting.
    ReadyUnknown,
    /// It carries this taint.
    Tainted(&'a str),
    /// Its MaintenanceInProgress condition is True.
    Maintenance,
}

impl Unhealthy<'_> {
    /// A few words for a condition message.
    pub fn describe(&self) -> String {
        match self {
            Unhealthy::Missing => "the node no longer exists".into(),
            Unhealthy::NotReady => "the node is not Ready".into(),
            Unhealthy::ReadyUnknown => "the node's Ready condition is Unknown".into(),
            Unhealthy::Tainted(key) => format!("the node has the taint {key}"),
            Unhealthy::Maintenance => format!("the node's {MAINTENANCE_CONDITION} is True"),
        }
    }
}

/// Whether `name` is unhealthy according to `nodes` (sorted by name), and why.
pub fn unhealthy<'a>(nodes: &'a [NodeReport], name: &str) -> Option<Unhealthy<'a>> {
    let at = nodes.binary_search_by(|n| n.name.as_str().cmp(name)).ok()?;
    let signals = match &nodes.get(at)?.state {
        NodeState::Missing => return Some(Unhealthy::Missing),
        NodeState::Present(signals) => signals,
    };
    match signals.ready {
        Some(ConditionStatus::False) => return Some(Unhealthy::NotReady),
        Some(ConditionStatus::Unknown) => return Some(Unhealthy::ReadyUnknown),
        _ => {}
    }
    if let Some(key) = signals
        .unhealthy_taints
        .iter()
        .find(|k| UNHEALTHY_TAINTS.contains(&k.as_str()))
    {
        return Some(Unhealthy::Tainted(key));
    }
    (signals.maintenance_in_progress == Some(ConditionStatus::True))
        .then_some(Unhealthy::Maintenance)
}

#[cfg(test)]
mod tests;
