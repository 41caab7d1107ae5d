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

use std::sync::Arc;

pub mod backoff_schedule;
pub mod node_avoidance;
pub mod pending_timeout;
pub mod retry_limits;
pub mod rules;

use crate::model::{ConditionStatus, ExitCodeOperator};

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
/// [`NodeAvoidance::max_nodes`] of them.
pub const FAILED_NODES_ANNOTATION: &str = "job-decider.dev/failed-nodes";
/// The pod condition type the controller sets when it fails a pod stuck in
/// Pending past its timeout.
pub const PENDING_TIMEOUT_CONDITION: &str = "job-decider.dev/PendingTimeout";
/// Prefix of the Failed reason a named FailJob rule gives (KEP-4443's).
pub const NAMED_RULE_REASON_PREFIX: &str = "PodFailurePolicy_";

/// A Job's extended failure policy, defaulted and validated.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ExtendedFailurePolicy {
    /// Rules tried in order before the Job's own `spec.podFailurePolicy`;
    /// the first that matches a failed pod decides its handling.
    pub rules: Vec<ExtendedRule>,
    /// Pod-failure backoff settings; `None` keeps upstream's (10 s doubling, 10 min cap).
    pub backoff: Option<BackoffSettings>,
    /// Failing pods stuck in Pending; `None` leaves them pending forever, as upstream does.
    pub pending_timeout: Option<PendingTimeout>,
    /// Keeping a replacement pod off the nodes where its scope failed.
    pub node_avoidance: Option<NodeAvoidance>,
}

/// One extended rule: matchers that must all hold, and what to do then.
#[derive(Clone, Debug, PartialEq)]
pub struct ExtendedRule {
    /// The rule's name; a FailJob it causes gives the reason
    /// `PodFailurePolicy_{name}` (KEP-4443). Unnamed rules give `PodFailurePolicy`.
    pub name: Option<String>,
    /// What a match does.
    pub action: ExtendedAction,
    /// Exit codes of terminated containers.
    pub on_exit_codes: Option<ExitCodeMatcher>,
    /// Pod conditions, as upstream's `onPodConditions` (any one matching suffices).
    pub on_pod_conditions: Vec<ConditionMatcher>,
    /// `status.reason` of the pod, any of these exact values (e.g. `UnexpectedAdmissionError`).
    pub on_pod_reasons: Vec<String>,
    /// Termination reasons of containers (e.g. `OOMKilled`).
    pub on_container_reasons: Option<ContainerReasonMatcher>,
    /// A regular expression searched in the pod's `status.message` and each
    /// terminated container's message.
    pub on_message: Option<MessagePattern>,
    /// How often this rule may match in a scope (an index, or the whole Job
    /// when NonIndexed) before [`RetryLimit::then`] applies instead.
    pub retry_limit: Option<RetryLimit>,
}

/// What an extended rule does with a pod it matches: upstream's four actions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExtendedAction {
    /// Fail the Job.
    FailJob,
    /// Fail the pod's index (needs `backoffLimitPerIndex`).
    FailIndex,
    /// Do not count the failure.
    Ignore,
    /// Count the failure towards the backoff limits.
    Count,
}

/// Exit codes a rule matches, as upstream's `onExitCodes` plus ranges and signals.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExitCodeMatcher {
    /// Only this container's exit code; `None` for any container.
    pub container_name: Option<String>,
    /// `In` or `NotIn` the set below.
    pub operator: ExitCodeOperator,
    /// The set: the listed values, the ranges, and 128 + each signal number,
    /// as sorted, disjoint, inclusive intervals.
    pub codes: Vec<(i32, i32)>,
}

/// A pod condition a rule matches.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConditionMatcher {
    /// The condition type.
    pub condition_type: String,
    /// The status it must have.
    pub status: ConditionStatus,
}

/// Container termination reasons a rule matches.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ContainerReasonMatcher {
    /// Only this container; `None` for any.
    pub container_name: Option<String>,
    /// Any of these exact `state.terminated.reason` values.
    pub reasons: Vec<String>,
}

/// An `onMessage` pattern: the one bounded matcher (a dense DFA, one step per byte), with
/// the text it was written as; JobSet's message patterns use the same.
pub use crate::message_pattern::BoundedPattern as MessagePattern;

/// A per-rule retry budget.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RetryLimit {
    /// Matches allowed in a scope; the match after the last allowed one takes `then`.
    pub max_retries: i32,
    /// The action once the budget is used up: FailJob or FailIndex.
    pub then: ExtendedAction,
}

/// Pod-failure backoff settings, replacing upstream's fixed schedule.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BackoffSettings {
    /// The delay after the first failure, in seconds.
    pub base_seconds: i64,
    /// The largest delay, in seconds.
    pub max_seconds: i64,
    /// Each further failure multiplies the delay by this.
    pub factor: i32,
    /// Up to this percent is added to each delay, chosen from the Job's uid
    /// and the failure count (so the same snapshot gives the same delay).
    pub jitter_percent: i32,
    /// Whether failures an Ignore rule handled lengthen the delay.
    pub after_ignored_failure: IgnoredFailureDelay,
}

/// Whether ignored failures grow the backoff delay.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum IgnoredFailureDelay {
    /// As upstream: an ignored failure counts towards the delay (it protects
    /// the control plane from a crash loop of ignored pods).
    #[default]
    Delay,
    /// Ignored failures neither wait nor grow the delay (kubernetes#130881).
    Immediate,
}

/// Failing pods stuck in Pending.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PendingTimeout {
    /// How long a pod may wait in one of `reasons`, counted from when it was
    /// scheduled (its PodScheduled condition), or created if it never was.
    pub seconds: i64,
    /// Container waiting reasons (and `Unschedulable`, the PodScheduled
    /// condition's reason) that count as stuck.
    pub reasons: Vec<String>,
    /// What the resulting failure does.
    pub action: ExtendedAction,
}

/// Keeping replacement pods off nodes where their scope failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NodeAvoidance {
    /// Whether the scheduler must or should avoid those nodes.
    pub mode: NodeAvoidanceMode,
    /// At most this many nodes are avoided (the most recent failures).
    pub max_nodes: i32,
}

/// How strongly a replacement avoids nodes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NodeAvoidanceMode {
    /// A required node affinity term: the pod never runs there.
    Required,
    /// A preferred term (weight 100): the scheduler avoids them when it can.
    Preferred,
}

impl NodeAvoidanceMode {
    /// The document's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            NodeAvoidanceMode::Required => "Required",
            NodeAvoidanceMode::Preferred => "Preferred",
        }
    }
}

impl ExtendedAction {
    /// The document's spelling (upstream's action names).
    pub fn as_str(self) -> &'static str {
        match self {
            ExtendedAction::FailJob => "FailJob",
            ExtendedAction::FailIndex => "FailIndex",
            ExtendedAction::Ignore => "Ignore",
            ExtendedAction::Count => "Count",
        }
    }
}

/// What the extended policy reads about a pod beyond upstream's fields;
/// filled by the wire conversion only when the Job carries a document.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PodFailureDetails {
    /// `status.reason`.
    pub reason: String,
    /// `status.message`, cut to a bounded length.
    pub message: String,
    /// `spec.nodeName`.
    pub node_name: String,
    /// Per container (init ones included), `state.waiting.reason` while waiting.
    pub waiting_reasons: Vec<(Arc<str>, String)>,
    /// Per terminated container (init ones included): name, `reason`, `message` (bounded).
    pub terminations: Vec<ContainerTermination>,
    /// When the PodScheduled condition became True, if it is.
    pub scheduled_at: Option<crate::time::Time>,
    /// Whether PodScheduled is False with reason Unschedulable.
    pub unschedulable: bool,
    /// The [`RULE_MATCH_COUNTS_ANNOTATION`], parsed leniently (unusable pairs dropped).
    pub rule_match_counts: Vec<(String, i32)>,
    /// The [`FAILED_NODES_ANNOTATION`], parsed leniently.
    pub failed_nodes: Vec<String>,
}

/// A terminated container's reason and message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ContainerTermination {
    /// The container's name.
    pub container: Arc<str>,
    /// Whether it is an init container.
    pub init_container: bool,
    /// `state.terminated.reason`.
    pub reason: String,
    /// `state.terminated.message`, bounded.
    pub message: String,
}
