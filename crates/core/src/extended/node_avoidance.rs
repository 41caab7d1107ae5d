//! Keeping replacement pods off the nodes where their scope failed.
//!
//! A scope is a completion index (Indexed Jobs) or the whole Job
//! (NonIndexed). Its failed nodes are, in order: the lists its pods carry in
//! the [`FAILED_NODES_ANNOTATION`] (pods by creation time, then name), then
//! the node of each of its failed pods (by finish time, then name); each node
//! kept only at its latest occurrence, and only the last `maxNodes` of them.
//! The carried lists remember nodes whose pods are gone (deleted once
//! replaced), so the list survives from the snapshot alone.
//!
//! Every pod created in a scope with a non-empty list carries the annotation
//! (comma-joined, oldest first) and [`PodCreation::avoid_nodes`].

use std::collections::BTreeMap;

use crate::backoff::finished_time;
use crate::extended::FAILED_NODES_ANNOTATION;
use crate::model::NodeAvoidance;
use crate::model::{Job, Pod};
use crate::plan::{AvoidNodes, PodCreation};
use crate::sync_pod::SyncPod;

/// Adds the failed nodes of each creation's scope to it, when the Job's
/// policy has `nodeAvoidance`; otherwise leaves the creations as they are.
pub(crate) fn avoid_failed_nodes(job: &Job, pods: &[SyncPod<'_>], creations: &mut [PodCreation]) {
    let Some(settings) = job
        .extended_failure_policy
        .as_deref()
        .and_then(|p| p.node_avoidance)
    else {
        return;
    };
    let indexed = job.spec.is_indexed();
    // One pass groups the pods by scope; only the scopes being created are read.
    let mut scopes: BTreeMap<Option<i32>, Vec<&SyncPod<'_>>> = creations
        .iter()
        .map(|c| (scope_of(indexed, c.completion_index), Vec::new()))
        .collect();
    for pod in pods {
        if let Some(members) = scopes.get_mut(&scope_of(indexed, pod.completion_index)) {
            members.push(pod);
        }
    }
    let lists: BTreeMap<Option<i32>, Vec<String>> = scopes
        .into_iter()
        .map(|(scope, members)| (scope, failed_nodes(&members, settings)))
        .collect();
    for creation in creations {
        let Some(nodes) = lists.get(&scope_of(indexed, creation.completion_index)) else {
            continue;
        };
        if nodes.is_empty() {
            continue;
        }
        creation
            .annotations
            .insert(FAILED_NODES_ANNOTATION.into(), nodes.join(","));
        creation.avoid_nodes = Some(AvoidNodes {
            nodes: nodes.clone(),
            mode: settings.mode,
        });
    }
}

/// The scope key: the index for Indexed Jobs, `None` (the Job) otherwise.
fn scope_of(indexed: bool, index: Option<i32>) -> Option<i32> {
    if indexed { index } else { None }
}

/// The failed nodes of one scope's pods, oldest first (see the module's doc).
pub(crate) fn failed_nodes(scope: &[&SyncPod<'_>], settings: NodeAvoidance) -> Vec<String> {
    let max = usize::try_from(settings.max_nodes).unwrap_or(0);
    let mut carriers: Vec<&Pod> = scope
        .iter()
        .map(|p| p.pod())
        .filter(|p| details_nodes(p).is_some_and(|n| !n.is_empty()))
        .collect();
    carriers.sort_by(|a, b| (a.creation_timestamp, &a.name).cmp(&(b.creation_timestamp, &b.name)));
    let mut failed: Vec<(crate::time::Time, &str, &str)> = scope
        .iter()
        .filter(|p| p.failed)
        .filter_map(|p| {
            let node = p.failure_details.as_deref()?.node_name.as_str();
            (!node.is_empty()).then(|| (finished_time(p), p.name.as_str(), node))
        })
        .collect();
    failed.sort();
    let sequence = carriers
        .iter()
        .flat_map(|p| details_nodes(p).unwrap_or_default())
        .map(String::as_str)
        .chain(failed.iter().map(|&(_, _, node)| node));
    // Latest occurrence wins: walk backwards, keep the first sighting of each.
    let all: Vec<&str> = sequence.collect();
    let mut kept: Vec<&str> = Vec::new();
    for node in all.iter().rev() {
        if kept.len() >= max {
            break;
        }
        if !node.is_empty() && !kept.contains(node) {
            kept.push(node);
        }
    }
    kept.reverse();
    kept.into_iter().map(str::to_owned).collect()
}

/// The failed nodes a pod carries in its annotation.
fn details_nodes(pod: &Pod) -> Option<&[String]> {
    pod.failure_details
        .as_deref()
        .map(|d| d.failed_nodes.as_slice())
}

/// Most pods, and nodes per pod, an explanation names.
const MAX_DESCRIBED: usize = 5;

/// For explanations: the nodes the created pods keep off, when any does
/// (the first few pods and nodes; the rest counted); empty otherwise.
pub fn describe(creations: &[PodCreation]) -> String {
    let avoiding: Vec<(&PodCreation, &AvoidNodes)> = creations
        .iter()
        .filter_map(|c| Some((c, c.avoid_nodes.as_ref()?)))
        .collect();
    let Some((_, first)) = avoiding.first() else {
        return String::new();
    };
    let nodes = |a: &AvoidNodes| {
        let shown: Vec<&str> = a
            .nodes
            .iter()
            .take(MAX_DESCRIBED)
            .map(String::as_str)
            .collect();
        let more = a.nodes.len().saturating_sub(MAX_DESCRIBED);
        if more > 0 {
            format!("{} and {more} more", shown.join(", "))
        } else {
            shown.join(", ")
        }
    };
    let mode = first.mode.as_str();
    if avoiding.iter().all(|(c, _)| c.completion_index.is_none()) {
        return format!(
            "; {} new pod(s) keep off ({mode}) the nodes where the Job's pods failed: {}",
            avoiding.len(),
            nodes(first)
        );
    }
    let per_index: Vec<String> = avoiding
        .iter()
        .take(MAX_DESCRIBED)
        .map(|(c, a)| {
            format!(
                "index {} avoids {}",
                c.completion_index.unwrap_or_default(),
                nodes(a)
            )
        })
        .collect();
    let more = crate::text::and_more(avoiding.len(), MAX_DESCRIBED);
    format!(
        "; new pods keep off ({mode}) the nodes where their index failed: {}{more}",
        per_index.join("; ")
    )
}

#[cfg(test)]
mod tests;
