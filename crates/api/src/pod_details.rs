//! What the extended failure policy reads of a pod beyond upstream's fields
//! ([`PodFailureDetails`]), gathered by both pod decoders while they read a pod
//! and built only when the Job carries a document (`ReadFields::details`): the
//! common path neither allocates nor keeps any of it.

use std::sync::Arc;

use pbjson_types::Timestamp;

use job_decider_core::extended::{MAX_ANNOTATION_ENTRIES, parse_rule_match_counts};
use job_decider_core::model::{ContainerTermination, PodFailureDetails};
use job_decider_core::violation::truncated;

use crate::wire_time::time_from_pb;

/// Longest message kept (a pod's or a container's), in bytes: termination
/// messages may be 4 KiB by default and 12 KiB in all; the rules need no more.
pub const MAX_MESSAGE_BYTES: usize = 4096;
/// Longest reason or node name kept, in bytes.
pub const MAX_REASON_BYTES: usize = 1024;
/// The condition whose time and reason say when a pod was scheduled, or why it is not.
pub const POD_SCHEDULED: &str = "PodScheduled";
/// The condition whose reason a ready timeout repeats.
pub const POD_READY: &str = "Ready";

/// A pod's details as read off the wire, borrowed from its bytes until built.
#[derive(Default)]
pub(crate) struct WireDetails<'a> {
    /// `status.reason`.
    pub(crate) reason: &'a str,
    /// `status.message`.
    pub(crate) message: &'a str,
    /// `spec.nodeName`.
    pub(crate) node_name: &'a str,
    /// Per container waiting with a reason: name, reason.
    pub(crate) waiting: Vec<(Arc<str>, &'a str)>,
    /// Per terminated container: name, whether init, reason, message.
    pub(crate) terminations: Vec<(Arc<str>, bool, &'a str, &'a str)>,
    /// The last PodScheduled condition: status, reason, last transition time.
    pub(crate) scheduled: Option<(&'a str, &'a str, Option<Timestamp>)>,
    /// `status.startTime`.
    pub(crate) start_time: Option<Timestamp>,
    /// The last Ready condition's reason.
    pub(crate) ready_reason: &'a str,
    /// The rule-match-counts annotation, verbatim.
    pub(crate) rule_match_counts: Option<&'a str>,
    /// The failed-nodes annotation, verbatim.
    pub(crate) failed_nodes: Option<&'a str>,
}

impl WireDetails<'_> {
    /// The domain's details; long texts cut to their bounds.
    pub(crate) fn build(self) -> Box<PodFailureDetails> {
        let (scheduled_at, unschedulable) = match self.scheduled {
            Some(("True", _, time)) => (time.as_ref().and_then(time_from_pb), false),
            Some(("False", "Unschedulable", _)) => (None, true),
            _ => (None, false),
        };
        Box::new(PodFailureDetails {
            reason: bounded(self.reason, MAX_REASON_BYTES),
            message: bounded(self.message, MAX_MESSAGE_BYTES),
            node_name: bounded(self.node_name, MAX_REASON_BYTES),
            waiting_reasons: self
                .waiting
                .into_iter()
                .map(|(name, reason)| (name, bounded(reason, MAX_REASON_BYTES)))
                .collect(),
            terminations: self
                .terminations
                .into_iter()
                .map(
                    |(container, init_container, reason, message)| ContainerTermination {
                        container,
                        init_container,
                        reason: bounded(reason, MAX_REASON_BYTES),
                        message: bounded(message, MAX_MESSAGE_BYTES),
                    },
                )
                .collect(),
            scheduled_at,
            unschedulable,
            // Lenient, as the scheduling time: a time out of range starts no deadline.
            start_time: self.start_time.as_ref().and_then(time_from_pb),
            ready_reason: bounded(self.ready_reason, MAX_REASON_BYTES),
            rule_match_counts: self
                .rule_match_counts
                .map(parse_rule_match_counts)
                .unwrap_or_default(),
            failed_nodes: self.failed_nodes.map(failed_nodes).unwrap_or_default(),
        })
    }
}

fn bounded(s: &str, max: usize) -> String {
    truncated(s, max).into_owned()
}

/// Comma-separated node names read leniently: blanks dropped, order kept
/// (oldest first), the most recent [`MAX_ANNOTATION_ENTRIES`] of them.
pub fn failed_nodes(text: &str) -> Vec<String> {
    let names: Vec<&str> = text
        .split(',')
        .map(str::trim)
        .filter(|n| !n.is_empty() && n.len() <= 253)
        .collect();
    let skip = names.len().saturating_sub(MAX_ANNOTATION_ENTRIES);
    names[skip..].iter().map(|n| n.to_string()).collect()
}

#[cfg(test)]
mod tests;
