//! The extended failure policy: opt-in failure handling beyond upstream's Job
//! API, carried by a Job in the `job-decider.dev/failure-policy` annotation (or
//! sent beside it in `DecideJobRequest.failure_policy`).
//!
//! This module holds the names of the document's annotations and conditions,
//! and the one reader of the rule-match-count annotation; the document itself,
//! parsed, defaulted and validated by the wire crate, is `model`'s. Each
//! feature's decision lives in a file of its own below; the sync consults them
//! only when the Job carries a document, so a Job without one decides byte for
//! byte as upstream does.
//!
//! Invariant: everything an extended decision counts is read from the
//! snapshot (annotations the controller wrote on the pods it created, pod
//! status), never from memory, so the same snapshot gives the same plan and a
//! plan cut short is repaired by deciding again.

pub mod attempt_deadline;
pub mod backoff_schedule;
pub mod failure_message;
pub mod node_avoidance;
pub mod node_health;
pub mod pending_timeout;
pub mod ready_timeout;
pub mod retry_limits;
pub mod rules;
pub mod terminating_timeout;
pub mod timeouts;

/// The annotation on a Job that carries its extended failure policy.
pub const FAILURE_POLICY_ANNOTATION: &str = "job-decider.dev/failure-policy";
/// The one `apiVersion` of the document this version reads.
pub const FAILURE_POLICY_API_VERSION: &str = "job-decider.dev/v1alpha1";
/// The document's `kind`.
pub const FAILURE_POLICY_KIND: &str = "FailurePolicy";
/// Pod annotation on pods the controller creates: how often each named rule
/// with a retry limit has matched so far in the pod's scope (its index, or the
/// Job when NonIndexed), as `name=count` pairs joined by commas, sorted by name.
pub const RULE_MATCH_COUNTS_ANNOTATION: &str = "job-decider.dev/rule-match-counts";
/// Most entries read of a pod's [`RULE_MATCH_COUNTS_ANNOTATION`] or
/// [`FAILED_NODES_ANNOTATION`]: a pod's annotations are the user's to write.
pub const MAX_ANNOTATION_ENTRIES: usize = 64;
/// The longest rule name a document may give, in bytes (the wire's validation
/// bound): KEP-4443's reason `PodFailurePolicy_{name}` has at most 128
/// characters, 17 of them the prefix. A longer name in the annotation can name no rule.
pub const MAX_RULE_NAME_BYTES: usize = 128 - NAMED_RULE_REASON_PREFIX.len();

/// Reads a [`RULE_MATCH_COUNTS_ANNOTATION`] leniently, as upstream reads its
/// count annotations: of the first [`MAX_ANNOTATION_ENTRIES`] pairs, one that is
/// not a rule name and a non-negative count is dropped, a repeated name keeps
/// its largest count; sorted by name. The one reader, for the wire and the tests.
pub fn parse_rule_match_counts(text: &str) -> Vec<(String, i32)> {
    let mut out: Vec<(String, i32)> = Vec::new();
    for pair in text.split(',').take(MAX_ANNOTATION_ENTRIES) {
        let Some((name, count)) = pair.split_once('=') else {
            continue;
        };
        let (name, count) = (name.trim(), count.trim());
        let Ok(count) = count.parse::<i32>() else {
            continue;
        };
        if name.is_empty() || name.len() > MAX_RULE_NAME_BYTES || count < 0 {
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
/// Pod annotation on pods the controller creates: the nodes where earlier pods
/// of its scope failed, comma-separated, oldest first, at most
/// [`crate::model::NodeAvoidance::max_nodes`] of them.
pub const FAILED_NODES_ANNOTATION: &str = "job-decider.dev/failed-nodes";
/// The pod condition type the controller sets when it fails a pod stuck in
/// Pending past its timeout.
pub const PENDING_TIMEOUT_CONDITION: &str = "job-decider.dev/PendingTimeout";
/// The pod condition type the controller sets when it fails a pod that ran
/// past its `attemptDeadline`.
pub const ATTEMPT_DEADLINE_CONDITION: &str = "job-decider.dev/AttemptDeadlineExceeded";
/// The pod condition type the controller sets when it fails a pod not Ready
/// within its `readyTimeout`.
pub const READY_TIMEOUT_CONDITION: &str = "job-decider.dev/ReadyTimeout";
/// The condition a pod failed for its terminating timeout carries.
pub const TERMINATING_TIMEOUT_CONDITION: &str = "job-decider.dev/TerminatingTimeout";
/// Prefix of the Failed reason a named FailJob rule gives (KEP-4443's).
pub const NAMED_RULE_REASON_PREFIX: &str = "PodFailurePolicy_";

/// Whether the Job's state lets the document's timeouts fail pods at all: not
/// while it is finished, `finishing`, suspended (its pods are deleted, not
/// failed) or being deleted.
pub(crate) fn timeouts_quiet(job: &crate::model::Job, finishing: bool) -> bool {
    finishing || job.status.is_finished() || job.spec.suspend || job.being_deleted
}
