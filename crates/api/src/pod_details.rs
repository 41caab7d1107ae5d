//! What the extended failure policy reads of a pod beyond upstream's fields
//! ([`PodFailureDetails`]), gathered by both pod decoders while they read a pod
//! and built only when the Job carries a document (`ReadFields::details`): the
//! common path neither allocates nor keeps any of it.

use std::sync::Arc;

use pbjson_types::Timestamp;

use job_decider_core::model::{ContainerTermination, PodFailureDetails};
use job_decider_core::violation::truncated;

use crate::wire_time::time_from_pb;

/// Longest message kept (a pod's or a container's), in bytes: termination
/// messages may be 4 KiB by default and 12 KiB in all; the rules need no more.
pub const MAX_MESSAGE_BYTES: usize = 4096;
/// Longest reason or node name kept, in bytes.
pub const MAX_REASON_BYTES: usize = 1024;
/// Most entries kept of a pod's rule-match-counts or failed-nodes annotation.
pub const MAX_ANNOTATION_ENTRIES: usize = 64;
/// The condition whose time and reason say when a pod was scheduled, or why it is not.
pub const POD_SCHEDULED: &str = "PodScheduled";

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
            rule_match_counts: self
                .rule_match_counts
                .map(rule_match_counts)
                .unwrap_or_default(),
            failed_nodes: self.failed_nodes.map(failed_nodes).unwrap_or_default(),
        })
    }
}

fn bounded(s: &str, max: usize) -> String {
    truncated(s, max).into_owned()
}

/// `name=count,...` read leniently, as upstream reads its count annotations:
/// a pair that is not a name and a non-negative count is dropped, a repeated
/// name keeps its largest count; sorted by name.
pub fn rule_match_counts(text: &str) -> Vec<(String, i32)> {
    let mut out: Vec<(String, i32)> = Vec::new();
    for pair in text.split(',').take(MAX_ANNOTATION_ENTRIES) {
        let Some((name, count)) = pair.split_once('=') else {
            continue;
        };
        let (name, count) = (name.trim(), count.trim());
        let Ok(count) = count.parse::<i32>() else {
            continue;
        };
        if name.is_empty() || name.len() > 63 || count < 0 {
            continue;
        }
        match out.iter_mut().find(|(n, _)| n == name) {
            Some((_, c)) => *c = (*c).max(count),
            None => out.push((name.to_string(), count)),
        }
    }
    out.sort();
    out
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
mod tests {
    use super::*;

    #[test]
    fn rule_match_counts_are_read_leniently() {
        assert_eq!(
            rule_match_counts("oom=2,crash=1"),
            vec![("crash".to_string(), 1), ("oom".to_string(), 2)]
        );
        assert_eq!(
            rule_match_counts(" oom = 2 ,,x,=3,y=-1,z=abc,oom=1,w=4"),
            vec![("oom".to_string(), 2), ("w".to_string(), 4)]
        );
        assert!(rule_match_counts("").is_empty());
        let many: Vec<String> = (0..100).map(|i| format!("r{i}=1")).collect();
        assert_eq!(
            rule_match_counts(&many.join(",")).len(),
            MAX_ANNOTATION_ENTRIES
        );
    }

    /// The bounded reading here keeps what the core's own reading of the
    /// annotation (`retry_limits::parse_rule_match_counts`) keeps, each name
    /// once at its largest count.
    #[test]
    fn rule_match_counts_read_as_the_core_reads_them() {
        use job_decider_core::extended::retry_limits::parse_rule_match_counts;
        for text in [
            "a=1,,=3,b,c=-1,d=x, e = 4 ,f=99999999999",
            "b=2,a=1,b=5",
            "",
            "x",
        ] {
            let mut core = parse_rule_match_counts(text);
            core.sort_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)));
            core.dedup_by(|later, first| later.0 == first.0);
            assert_eq!(rule_match_counts(text), core, "{text:?}");
        }
    }

    #[test]
    fn failed_nodes_are_read_leniently() {
        assert_eq!(failed_nodes("a, b,,c "), vec!["a", "b", "c"]);
        assert!(failed_nodes(" , ").is_empty());
        assert!(failed_nodes(&"n".repeat(300)).is_empty());
        // Past the bound, the most recent (last) nodes are the ones kept.
        let many: Vec<String> = (0..100).map(|i| format!("n{i}")).collect();
        let kept = failed_nodes(&many.join(","));
        assert_eq!(kept.len(), MAX_ANNOTATION_ENTRIES);
        assert_eq!(kept.last().map(String::as_str), Some("n99"));
        assert_eq!(kept.first().map(String::as_str), Some("n36"));
    }

    #[test]
    fn details_are_bounded_and_scheduling_read() {
        let long = "é".repeat(10_000);
        let details = WireDetails {
            message: &long,
            terminations: vec![("main".into(), false, "OOMKilled", &long)],
            scheduled: Some((
                "True",
                "",
                Some(Timestamp {
                    seconds: 5,
                    nanos: 0,
                }),
            )),
            ..Default::default()
        }
        .build();
        assert!(details.message.len() <= MAX_MESSAGE_BYTES);
        assert!(details.terminations[0].message.len() <= MAX_MESSAGE_BYTES);
        assert_eq!(details.terminations[0].reason, "OOMKilled");
        assert!(details.scheduled_at.is_some() && !details.unschedulable);
        let details = WireDetails {
            scheduled: Some(("False", "Unschedulable", None)),
            ..Default::default()
        }
        .build();
        assert!(details.scheduled_at.is_none() && details.unschedulable);
    }
}
