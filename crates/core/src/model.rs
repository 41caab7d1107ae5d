//! The domain view of a snapshot: a Job, its pods, the time, and the state the
//! caller carried over. Built from the wire form by `api::convert`, which
//! applies the API defaults and rejects what cannot be decided; everything here
//! is therefore already defaulted and well-formed.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use crate::time::Time;

/// The finalizer that keeps a finished pod until the Job's status has counted it.
pub const JOB_TRACKING_FINALIZER: &str = "batch.kubernetes.io/job-tracking";
/// Annotation (and label) holding an Indexed pod's completion index.
pub const COMPLETION_INDEX_KEY: &str = "batch.kubernetes.io/job-completion-index";
/// Annotation holding the counted failures of earlier pods of the same index.
pub const INDEX_FAILURE_COUNT_KEY: &str = "batch.kubernetes.io/job-index-failure-count";
/// Annotation holding the failures of earlier pods of the same index that the policy ignored.
pub const INDEX_IGNORED_FAILURE_COUNT_KEY: &str =
    "batch.kubernetes.io/job-index-ignored-failure-count";
/// The environment variable that tells an Indexed pod its index.
pub const COMPLETION_INDEX_ENV: &str = "JOB_COMPLETION_INDEX";
/// The kind a Job's owner references carry.
pub const JOB_KIND: &str = "Job";
/// The group/version of Jobs: what the controller references the pods it creates with,
/// and the only one the orphan-pod worker recognises as an owner.
pub const JOB_API_VERSION: &str = "batch/v1";
/// The `managedBy` value of the built-in Job controller.
pub const BUILT_IN_CONTROLLER: &str = "kubernetes.io/job-controller";

/// Everything one decision reads.
#[derive(Clone, Debug, PartialEq)]
pub struct Snapshot {
    /// The Job, with API defaults applied.
    pub job: Job,
    /// The pods that the Job owns or that match its selector, in the caller's order.
    pub pods: Vec<Pod>,
    /// The current time.
    pub now: Time,
    /// What the previous decision for this Job handed back.
    pub state: ControllerState,
    /// The controller this decision is made for (a `managedBy` value); empty
    /// means upstream's own, [`BUILT_IN_CONTROLLER`].
    pub controller_name: String,
    /// The caller's writes that its caches do not show yet.
    pub expectations: Expectations,
    /// The nodes of the Job's terminating pods, as the caller's node cache
    /// shows them: sorted by name, each once (the wire checks). Read only by
    /// the extended policy's `terminatingTimeout`; empty otherwise.
    pub nodes: Vec<NodeReport>,
}

/// What the caller's node cache says of one node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeReport {
    /// The node's name.
    pub name: String,
    /// What is known of it.
    pub state: NodeState,
}

/// One node as the caller's node cache shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NodeState {
    /// The synced cache holds no such node: it was deleted.
    Missing,
    /// The node exists; what it says of its health.
    Present(NodeSignals),
}

/// The parts of a node that say whether it is healthy.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NodeSignals {
    /// Its Ready condition's status, if it has one.
    pub ready: Option<ConditionStatus>,
    /// Its MaintenanceInProgress condition's status (KEP-5683), if it has one.
    pub maintenance_in_progress: Option<ConditionStatus>,
    /// The keys of its taints that say it is unhealthy
    /// (`extended::node_health::unhealthy_taint`; the wire keeps no others).
    pub unhealthy_taints: Vec<String>,
}

/// The caller's own writes that its caches do not show yet (upstream's expectations).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Expectations {
    /// Pod creations or deletions issued but not yet observed.
    pub pod_changes_pending: bool,
    /// UIDs of pods whose finalizer removal was issued but not yet observed.
    pub finalizer_removals_pending: BTreeSet<String>,
}

/// What upstream keeps in memory between syncs of one Job.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ControllerState {
    /// The pod-failure backoff record.
    pub backoff: BackoffRecord,
}

/// Failures since the last success, for the exponential re-creation delay.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BackoffRecord {
    /// Failures of pods that finished after the last successful pod.
    pub failures_after_last_success: i32,
    /// When the latest of those failures happened.
    pub last_failure_time: Option<Time>,
}

/// A Job, with API defaults applied.
#[derive(Clone, Debug, PartialEq)]
pub struct Job {
    /// Namespace of the Job.
    pub namespace: String,
    /// Name of the Job.
    pub name: String,
    /// UID of the Job.
    pub uid: String,
    /// True once deletion of the Job was requested.
    pub being_deleted: bool,
    /// The Job's spec.
    pub spec: JobSpec,
    /// The Job's status as last written.
    pub status: JobStatus,
    /// The extended failure policy the Job carries (or the caller sent);
    /// `None` decides exactly as upstream.
    pub extended_failure_policy: Option<Arc<ExtendedFailurePolicy>>,
}

/// A Job's spec, defaulted as the API server defaults it.
#[derive(Clone, Debug, PartialEq)]
pub struct JobSpec {
    /// Maximum pods running at once (default 1).
    pub parallelism: i32,
    /// Successes that complete the Job; `None` for a work queue.
    pub completions: Option<i32>,
    /// Seconds the Job may be active before it fails.
    pub active_deadline_seconds: Option<i64>,
    /// Rules for handling pod failures.
    pub pod_failure_policy: Option<PodFailurePolicy>,
    /// Rules for declaring an Indexed Job succeeded early.
    pub success_policy: Option<SuccessPolicy>,
    /// Counted failures after which the Job fails (default 6, or `i32::MAX` with per-index limits).
    pub backoff_limit: i32,
    /// Counted failures allowed per index.
    pub backoff_limit_per_index: Option<i32>,
    /// Failed indexes after which the Job fails.
    pub max_failed_indexes: Option<i32>,
    /// The Job's pod selector.
    pub selector: LabelSelector,
    /// True when the user wrote the selector.
    pub manual_selector: bool,
    /// NonIndexed or Indexed.
    pub completion_mode: CompletionMode,
    /// True while the Job must run no pods.
    pub suspend: bool,
    /// When terminating pods are replaced.
    pub pod_replacement_policy: PodReplacementPolicy,
    /// The controller that manages the Job; `None` for the built-in one.
    pub managed_by: Option<String>,
    /// Seconds after finishing before the Job is garbage collected (validated, not decided).
    pub ttl_seconds_after_finished: Option<i32>,
    /// The pod template, trimmed to what decisions read.
    pub template: PodTemplate,
}

/// How completions are counted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CompletionMode {
    /// Any `completions` successful pods complete the Job.
    NonIndexed,
    /// Each index in `0..completions` must succeed once.
    Indexed,
    /// A value this version does not know; upstream skips such Jobs.
    Unknown(String),
}

/// When a terminating pod is replaced.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PodReplacementPolicy {
    /// As soon as it is terminating (the default without a pod failure policy).
    TerminatingOrFailed,
    /// Only once it has reached phase Failed (required with a pod failure policy).
    Failed,
    /// A value this version does not know (validation rejects it).
    Unknown(String),
}

/// The pod template, trimmed to what decisions and validation read.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PodTemplate {
    /// The template's labels.
    pub labels: BTreeMap<String, String>,
    /// The template's finalizers.
    pub finalizers: Vec<String>,
    /// Whether every container and init container already defines `JOB_COMPLETION_INDEX`.
    pub completion_index_env_everywhere: bool,
    /// The pods' restart policy.
    pub restart_policy: RestartPolicy,
    /// Names of the regular containers, in order.
    pub containers: Vec<String>,
    /// Names of the init containers, in order.
    pub init_containers: Vec<String>,
}

/// A pod template's restart policy.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum RestartPolicy {
    /// Containers are never restarted in place; failures fail the pod.
    #[default]
    Never,
    /// Failed containers restart in place; restarts count against backoffLimit.
    OnFailure,
    /// Not allowed for Jobs; kept so validation can name it.
    Always,
    /// Empty or unknown; kept so validation can name it.
    Other(String),
}

/// A label selector.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LabelSelector {
    /// Labels that must be present with exactly these values.
    pub match_labels: BTreeMap<String, String>,
    /// Set-based requirements.
    pub match_expressions: Vec<SelectorRequirement>,
}

/// One set-based selector requirement.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SelectorRequirement {
    /// The label key.
    pub key: String,
    /// The operator.
    pub operator: SelectorOperator,
    /// The values for In and NotIn.
    pub values: Vec<String>,
}

/// Operator of a set-based selector requirement.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SelectorOperator {
    /// The label's value is one of the values.
    In,
    /// The label is absent or its value is none of the values.
    NotIn,
    /// The label is present.
    Exists,
    /// The label is absent.
    DoesNotExist,
    /// Anything else (validation rejects it).
    Unknown(String),
}

/// A pod failure policy.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PodFailurePolicy {
    /// Rules in order; the first match wins.
    pub rules: Vec<PodFailurePolicyRule>,
}

/// One pod failure policy rule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PodFailurePolicyRule {
    /// What to do when the rule matches.
    pub action: PodFailurePolicyAction,
    /// Exit-code requirement; when set, `on_pod_conditions` is not consulted.
    pub on_exit_codes: Option<OnExitCodes>,
    /// Pod condition patterns; an empty list means none.
    pub on_pod_conditions: Vec<OnPodConditionsPattern>,
}

/// The action of a pod failure policy rule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PodFailurePolicyAction {
    /// Fail the whole Job.
    FailJob,
    /// Fail the pod's index (requires backoffLimitPerIndex).
    FailIndex,
    /// Do not count the failure.
    Ignore,
    /// Count the failure (the default handling).
    Count,
    /// An action this version does not know: the rule is skipped.
    Unknown(String),
}

/// An exit-code requirement.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OnExitCodes {
    /// Restrict the match to the container of this name.
    pub container_name: Option<String>,
    /// In or NotIn.
    pub operator: ExitCodeOperator,
    /// The exit codes.
    pub values: Vec<i32>,
}

/// Operator of an exit-code requirement.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ExitCodeOperator {
    /// The exit code is one of the values.
    In,
    /// The exit code is none of the values.
    NotIn,
    /// Anything else: never matches.
    Unknown(String),
}

/// A pod condition pattern.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OnPodConditionsPattern {
    /// The condition type.
    pub condition_type: String,
    /// The condition status (defaulted to True).
    pub status: ConditionStatus,
}

/// A condition's status.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ConditionStatus {
    /// "True".
    True,
    /// "False".
    False,
    /// "Unknown".
    Unknown,
    /// Anything else, kept verbatim.
    Other(String),
}

/// A success policy.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SuccessPolicy {
    /// Rules in order; the first met rule wins.
    pub rules: Vec<SuccessPolicyRule>,
}

/// One success policy rule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SuccessPolicyRule {
    /// Indexes that must succeed, as written (an interval list).
    pub succeeded_indexes: Option<String>,
    /// How many (of succeeded_indexes, when set) suffice.
    pub succeeded_count: Option<i32>,
}

/// A Job's status.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct JobStatus {
    /// Conditions, in the order written.
    pub conditions: Vec<JobCondition>,
    /// When the Job started or was last resumed.
    pub start_time: Option<Time>,
    /// When the Job completed.
    pub completion_time: Option<Time>,
    /// Active pods.
    pub active: i32,
    /// Succeeded pods (NonIndexed) or indexes (Indexed).
    pub succeeded: i32,
    /// Counted failed pods.
    pub failed: i32,
    /// Terminating pods; `None` when not tracked.
    pub terminating: Option<i32>,
    /// Completed indexes as an interval list.
    pub completed_indexes: String,
    /// Failed indexes as an interval list; `None` when per-index limits are not in use.
    pub failed_indexes: Option<String>,
    /// Finished pods recorded but not yet counted; `None` when never written.
    pub uncounted_terminated_pods: Option<UncountedTerminatedPods>,
    /// Ready active pods.
    pub ready: Option<i32>,
}

/// UIDs of finished pods recorded but not yet in the counters.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct UncountedTerminatedPods {
    /// Succeeded pods.
    pub succeeded: Vec<String>,
    /// Failed pods.
    pub failed: Vec<String>,
}

/// A Job condition.
#[derive(Clone, Debug, PartialEq)]
pub struct JobCondition {
    /// The condition type.
    pub condition_type: JobConditionType,
    /// Its status.
    pub status: ConditionStatus,
    /// When last probed.
    pub last_probe_time: Option<Time>,
    /// When the status last changed.
    pub last_transition_time: Option<Time>,
    /// Machine-readable reason.
    pub reason: String,
    /// Human-readable message.
    pub message: String,
}

/// The type of a Job condition.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum JobConditionType {
    /// The Job is suspended.
    Suspended,
    /// The Job completed (terminal).
    Complete,
    /// The Job failed (terminal).
    Failed,
    /// The Job will fail once its pods have terminated.
    FailureTarget,
    /// The Job will complete once its pods have terminated.
    SuccessCriteriaMet,
    /// A type this version does not write; kept as is.
    Other(String),
}

/// A pod, as decisions see it.
#[derive(Clone, Debug, PartialEq)]
pub struct Pod {
    /// Name of the pod.
    pub name: String,
    /// UID of the pod.
    pub uid: String,
    /// The pod's labels that its Job's selector names (all that selector
    /// matching reads; the wire conversion keeps no others).
    pub labels: PodLabels,
    /// The completion index from the annotation; `None` when missing, not an integer, or negative.
    pub completion_index: Option<i32>,
    /// The `job-index-failure-count` annotation, parsed leniently (0 when unusable).
    pub index_failure_count: i32,
    /// The `job-index-ignored-failure-count` annotation, parsed leniently (0 when unusable).
    pub index_ignored_failure_count: i32,
    /// The pod's controller owner reference, if any. Shared: the pods whose
    /// controller is the Job's own reference all hold one copy of it.
    pub controller: Option<Arc<OwnerRef>>,
    /// Whether any of the pod's owner references, the controller's included,
    /// carries the Job's uid: an orphan that already names the Job is adopted
    /// without being counted in that sync, as upstream's pod claim does.
    pub owners_name_job: bool,
    /// Whether the pod carries the job-tracking finalizer.
    pub has_tracking_finalizer: bool,
    /// When the pod was created.
    pub creation_timestamp: Option<Time>,
    /// Set once deletion was requested.
    pub deletion: Option<Deletion>,
    /// Whether the pod is bound to a node.
    pub scheduled: bool,
    /// Names of the init containers with restartPolicy Always (sidecars).
    pub sidecar_init_containers: Vec<String>,
    /// The pod's phase.
    pub phase: PodPhase,
    /// The pod's conditions that decisions read: Ready and the types the pod
    /// failure policy names (the wire conversion checks every condition, keeps these).
    pub conditions: Vec<PodCondition>,
    /// Statuses of the regular containers.
    pub container_statuses: Vec<ContainerStatus>,
    /// Statuses of the init containers.
    pub init_container_statuses: Vec<ContainerStatus>,
    /// What only the extended failure policy reads; `None` unless the Job carries one.
    pub failure_details: Option<Box<PodFailureDetails>>,
}

/// Up to this many labels, [`PodLabels::get`] scans rather than searches.
const SHORT_LABEL_LIST: usize = 16;

/// A pod's labels as decisions keep them: the few its Job's selector names,
/// as a list sorted by key. (A map's first node alone takes over 500 bytes:
/// 50 MB for 100,000 pods holding one label each.) Keys and values are shared
/// strings: the pods of a Job carry the same selector labels, so conversion
/// can hand every pod one copy.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PodLabels(Vec<(Arc<str>, Arc<str>)>);

impl PodLabels {
    /// The value of the label `key`, if the pod has it.
    pub fn get(&self, key: &str) -> Option<&str> {
        // A pod keeps a handful of labels: scanning them compares lengths
        // first, where a binary search orders every key it meets byte by byte.
        if self.0.len() <= SHORT_LABEL_LIST {
            return self.0.iter().find(|(k, _)| **k == *key).map(|(_, v)| &**v);
        }
        self.0
            .binary_search_by(|(k, _)| (**k).cmp(key))
            .ok()
            .map(|i| &*self.0[i].1)
    }

    /// Sets the label `key` to `value`.
    pub fn insert(&mut self, key: impl Into<Arc<str>>, value: impl Into<Arc<str>>) {
        let (key, value) = (key.into(), value.into());
        match self.0.binary_search_by(|(k, _)| k.cmp(&key)) {
            Ok(i) => self.0[i].1 = value,
            Err(i) => self.0.insert(i, (key, value)),
        }
    }

    /// Removes every label.
    pub fn clear(&mut self) {
        self.0.clear();
    }

    /// The labels in key order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.0.iter().map(|(k, v)| (&**k, &**v))
    }

    /// How many labels there are.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl<K: Into<Arc<str>>, V: Into<Arc<str>>> FromIterator<(K, V)> for PodLabels {
    /// Sorted by key; of repeated keys, the last value wins, as in a map.
    fn from_iter<I: IntoIterator<Item = (K, V)>>(iter: I) -> Self {
        let mut labels: Vec<(Arc<str>, Arc<str>)> = iter
            .into_iter()
            .map(|(k, v)| (k.into(), v.into()))
            .collect();
        // Stable: of equal keys the last written stays last, and is the one kept.
        labels.sort_by(|a, b| a.0.cmp(&b.0));
        labels.reverse();
        labels.dedup_by(|later, earlier| later.0 == earlier.0);
        labels.reverse();
        PodLabels(labels)
    }
}

impl From<BTreeMap<String, String>> for PodLabels {
    fn from(map: BTreeMap<String, String>) -> Self {
        // Already sorted and unique.
        PodLabels(map.into_iter().map(|(k, v)| (k.into(), v.into())).collect())
    }
}

/// A pending deletion.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Deletion {
    /// When deletion was requested (the deletionTimestamp).
    pub timestamp: Time,
    /// The grace period in seconds; `None` counts as 0.
    pub grace_period_seconds: Option<i64>,
}

/// A controller owner reference.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OwnerRef {
    /// API version of the owner.
    pub api_version: String,
    /// Kind of the owner.
    pub kind: String,
    /// Name of the owner.
    pub name: String,
    /// UID of the owner.
    pub uid: String,
}

/// A pod phase.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum PodPhase {
    /// Pending, or no phase reported yet.
    Pending,
    /// The node lost contact.
    Unknown,
    /// Running.
    Running,
    /// All containers succeeded (terminal).
    Succeeded,
    /// The pod failed (terminal).
    Failed,
}

/// A pod condition.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PodCondition {
    /// The condition type, e.g. "Ready" or "DisruptionTarget".
    pub condition_type: Arc<str>,
    /// Its status.
    pub status: ConditionStatus,
    /// When the status last changed.
    pub last_transition_time: Option<Time>,
}

/// A container status.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ContainerStatus {
    /// The container's name.
    pub name: Arc<str>,
    /// Set once the container has terminated.
    pub terminated: Option<Terminated>,
    /// How often the container restarted.
    pub restart_count: i32,
}

/// A terminated container state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Terminated {
    /// Exit code of the last run.
    pub exit_code: i32,
    /// When it finished; `None` when unset.
    pub finished_at: Option<Time>,
}

impl Pod {
    /// Active: neither terminal nor being deleted.
    pub fn is_active(&self) -> bool {
        !matches!(self.phase, PodPhase::Succeeded | PodPhase::Failed) && self.deletion.is_none()
    }

    /// Terminating: being deleted and not yet in a terminal phase.
    pub fn is_terminating(&self) -> bool {
        self.deletion.is_some() && !matches!(self.phase, PodPhase::Succeeded | PodPhase::Failed)
    }

    /// The Ready condition, when its status is True.
    pub fn ready_condition(&self) -> Option<&PodCondition> {
        self.conditions
            .iter()
            .find(|c| &*c.condition_type == "Ready" && c.status == ConditionStatus::True)
    }

    /// Whether the init container of this name is a sidecar (restartPolicy Always).
    pub fn is_sidecar(&self, init_container: &str) -> bool {
        self.sidecar_init_containers
            .iter()
            .any(|n| n == init_container)
    }

    /// Whether the pod has `Ready=True`.
    pub fn is_ready(&self) -> bool {
        self.ready_condition().is_some()
    }
}

impl JobSpec {
    /// True for Indexed completion mode.
    pub fn is_indexed(&self) -> bool {
        self.completion_mode == CompletionMode::Indexed
    }

    /// Per-index backoff limits are in use.
    pub fn uses_backoff_limit_per_index(&self) -> bool {
        self.backoff_limit_per_index.is_some()
    }

    /// Terminating pods are replaced only once they have failed. (The API
    /// defaults the policy to Failed when a pod failure policy is set.)
    pub fn only_replace_failed_pods(&self) -> bool {
        self.pod_replacement_policy == PodReplacementPolicy::Failed
    }
}

impl JobStatus {
    /// The first condition of this type whose status is True.
    pub fn true_condition(&self, condition_type: &JobConditionType) -> Option<&JobCondition> {
        self.conditions
            .iter()
            .find(|c| &c.condition_type == condition_type && c.status == ConditionStatus::True)
    }

    /// Whether a condition of this type is True.
    pub fn has_true_condition(&self, condition_type: &JobConditionType) -> bool {
        self.true_condition(condition_type).is_some()
    }

    /// Complete=True or Failed=True.
    pub fn is_finished(&self) -> bool {
        self.has_true_condition(&JobConditionType::Complete)
            || self.has_true_condition(&JobConditionType::Failed)
    }
}

// The extended failure policy's data (docs/failure-policy.md): here with the rest of
// the model, so `extended`'s decisions depend on the model and never the reverse.

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
    /// Failing pods that run longer than a limit from their start; `None`
    /// lets them run (only the Job's `activeDeadlineSeconds` bounds them, as upstream).
    pub attempt_deadline: Option<AttemptDeadline>,
    /// Failing pods not Ready within a limit from their start; `None` lets them
    /// wait, as upstream does.
    pub ready_timeout: Option<ReadyTimeout>,
    /// Keeping a replacement pod off the nodes where its scope failed.
    pub node_avoidance: Option<NodeAvoidance>,
    /// What the message of the Job's FailureTarget and Failed conditions says.
    pub failure_message: FailureMessage,
    /// Failing pods stuck terminating; `None` waits for them as upstream does.
    pub terminating_timeout: Option<TerminatingTimeout>,
}

/// How much the FailureTarget/Failed condition message says about the failure.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum FailureMessage {
    /// Upstream's message, byte for byte.
    #[default]
    Upstream,
    /// Upstream's message followed by a bounded explanation: the pod, its
    /// container and exit code or reason, the node, the rule and the limit.
    Detailed,
}

/// Failing pods that stay terminating past their grace period.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TerminatingTimeout {
    /// How long past its `deletionTimestamp` (the end of its grace period) a
    /// pod that is not yet terminal is left alone.
    pub seconds: i64,
    /// Which pods it applies to: on any node, or only on an unhealthy one.
    pub on_nodes: TerminatingNodes,
    /// What the resulting failure does.
    pub action: ExtendedAction,
    /// Whether the pod is then deleted with a grace period of 0.
    pub force_delete: bool,
}

/// Which terminating pods `terminatingTimeout` applies to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TerminatingNodes {
    /// Every pod, whatever its node says.
    Any,
    /// Only pods whose node is gone, not Ready, unreachable or under maintenance.
    Unhealthy,
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

/// Failing pods that run too long: the deadline is the pod's `status.startTime`
/// plus `seconds` (a pod without a start time never reaches it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AttemptDeadline {
    /// How long a pod may run, from its start.
    pub seconds: i64,
    /// What the resulting failure does.
    pub action: ExtendedAction,
}

/// Failing pods not Ready in time: the deadline is the pod's `status.startTime`
/// plus `seconds`; a pod not Ready at its deadline is failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReadyTimeout {
    /// How long a pod may take to become Ready, from its start.
    pub seconds: i64,
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
    /// `status.startTime`: when the kubelet accepted the pod (attemptDeadline, readyTimeout).
    pub start_time: Option<crate::time::Time>,
    /// The Ready condition's `reason`, whatever its status (empty when unset), bounded.
    pub ready_reason: String,
    /// The rule-match-counts annotation (`crate::extended::RULE_MATCH_COUNTS_ANNOTATION`),
    /// parsed leniently (unusable pairs dropped).
    pub rule_match_counts: Vec<(String, i32)>,
    /// The failed-nodes annotation (`crate::extended::FAILED_NODES_ANNOTATION`), parsed leniently.
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
