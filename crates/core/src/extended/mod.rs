//! The extended failure policy: opt-in failure handling beyond upstream's Job
//! API, carried by a Job in the `job-decider.dev/failure-policy` annotation (or
//! sent beside it in `DecideJobRequest.failure_policy`).
//!
//! This module holds the document as decisions see it: parsed, defaulted and
//! validated by the wire crate. Each feature's decision lives in a file of its
//! own below; the sync consults them only when the Job carries a document, so
//! a Job without one decides byte for byte as upstream does.
//!
//! Invariant: everything an extended decision counts is read from the
//! snapshot (annotations the controller wrote on the pods it created, pod
//! status), never from memory, so the same snapshot gives the same plan and a
//! plan cut short is repaired by deciding again.

pub mod backoff_schedule;
pub mod node_avoidance;
pub mod pending_timeout;
pub mod retry_limits;
pub mod rules;

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
/// Pod annotation on pods the controller creates: the nodes where earlier pods
/// of its scope failed, comma-separated, oldest first, at most
/// [`crate::model::NodeAvoidance::max_nodes`] of them.
pub const FAILED_NODES_ANNOTATION: &str = "job-decider.dev/failed-nodes";
/// The pod condition type the controller sets when it fails a pod stuck in
/// Pending past its timeout.
pub const PENDING_TIMEOUT_CONDITION: &str = "job-decider.dev/PendingTimeout";
/// Prefix of the Failed reason a named FailJob rule gives (KEP-4443's).
pub const NAMED_RULE_REASON_PREFIX: &str = "PodFailurePolicy_";
