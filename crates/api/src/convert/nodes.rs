//! The request's `nodes` and `missingNodes`: what the caller's node cache says
//! of the nodes of the Job's terminating pods, for the extended policy's
//! `terminatingTimeout`. Kept to the signals the core's `node_health` reads
//! (the Ready and MaintenanceInProgress conditions, the unhealthy taints) and
//! sorted by name, so a node the request lists twice, or lists both present and
//! missing, is refused rather than one of the two picked.

use job_decider_core::extended::node_health::{
    MAINTENANCE_CONDITION, READY_CONDITION, unhealthy_taint,
};
use job_decider_core::model::{ConditionStatus, NodeReport, NodeSignals, NodeState};
use job_decider_core::text::truncated;
use job_decider_core::validate::ViolationKind;

use crate::pb;
use crate::violations::Violations;

/// Most nodes one request may report (present and missing together).
pub const MAX_NODES: usize = 65_536;
/// Longest node name, in bytes: a DNS subdomain, as the API server allows.
const MAX_NODE_NAME_BYTES: usize = 253;
/// Longest name a violation repeats.
const MAX_ECHO_BYTES: usize = 64;

/// The request's nodes, sorted by name; each problem is a violation at its field.
pub(crate) fn nodes_from_wire(
    nodes: Vec<pb::Node>,
    missing: Vec<String>,
    errs: &mut Violations,
) -> Vec<NodeReport> {
    let total = nodes.len().saturating_add(missing.len());
    if total > MAX_NODES {
        errs.push(
            "nodes",
            ViolationKind::TooMany,
            Some(total.to_string()),
            format!("at most {MAX_NODES} nodes (nodes and missingNodes together)"),
        );
        return Vec::new();
    }
    let mut out = Vec::with_capacity(total);
    for (i, node) in nodes.into_iter().enumerate() {
        let field = || format!("nodes[{i}]");
        if !name_ok(&node.name, || format!("{}.name", field()), errs) {
            continue;
        }
        let signals = signals(&node, &field, errs);
        out.push((
            format!("{}.name", field()),
            NodeReport {
                name: node.name,
                state: NodeState::Present(signals),
            },
        ));
    }
    for (i, name) in missing.into_iter().enumerate() {
        let field = || format!("missingNodes[{i}]");
        if !name_ok(&name, field, errs) {
            continue;
        }
        out.push((
            field(),
            NodeReport {
                name,
                state: NodeState::Missing,
            },
        ));
    }
    // Stable: of two entries with one name, the later in the request is the duplicate.
    out.sort_by(|a, b| a.1.name.cmp(&b.1.name));
    let mut kept: Vec<NodeReport> = Vec::with_capacity(out.len());
    for (field, report) in out {
        if kept.last().is_some_and(|k| k.name == report.name) {
            let name = truncated(&report.name, MAX_ECHO_BYTES).into_owned();
            errs.push(
                field,
                ViolationKind::Duplicate,
                Some(format!("\"{name}\"")),
                "each node once, in nodes or in missingNodes",
            );
            continue;
        }
        kept.push(report);
    }
    kept
}

fn name_ok(name: &str, field: impl FnOnce() -> String, errs: &mut Violations) -> bool {
    if name.is_empty() {
        errs.required(field(), "a node's name");
        return false;
    }
    if name.len() > MAX_NODE_NAME_BYTES {
        errs.push(
            field(),
            ViolationKind::TooLong,
            None,
            format!("at most {MAX_NODE_NAME_BYTES} bytes"),
        );
        return false;
    }
    true
}

/// The conditions and taints `node_health` reads; a read condition type
/// given twice is refused (which one holds would be a guess).
fn signals(node: &pb::Node, field: &dyn Fn() -> String, errs: &mut Violations) -> NodeSignals {
    let mut signals = NodeSignals::default();
    for (i, c) in node.conditions.iter().enumerate() {
        let slot = match c.r#type.as_str() {
            READY_CONDITION => &mut signals.ready,
            MAINTENANCE_CONDITION => &mut signals.maintenance_in_progress,
            _ => continue,
        };
        if slot.is_some() {
            errs.push(
                format!("{}.conditions[{i}].type", field()),
                ViolationKind::Duplicate,
                Some(format!("\"{}\"", c.r#type)),
                "each condition type once",
            );
            continue;
        }
        *slot = Some(ConditionStatus::from(
            truncated(&c.status, MAX_ECHO_BYTES).into_owned(),
        ));
    }
    for taint in &node.taints {
        if unhealthy_taint(&taint.key, &taint.effect)
            && !signals.unhealthy_taints.contains(&taint.key)
        {
            signals.unhealthy_taints.push(taint.key.clone());
        }
    }
    signals
}

#[cfg(test)]
mod tests;
