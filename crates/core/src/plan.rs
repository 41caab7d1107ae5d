//! A plan: the ordered actions of one sync, when to look again, and the state
//! to hand back.
//!
//! Architecture invariant: applying a plan's actions in order, stopping at the
//! first failure, and deciding again never loses or double-counts a pod.
//! Concretely, a RemoveFinalizers action only names pods that an earlier
//! UpdateStatus of the same plan (or the Job's status already) records.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::model::NodeAvoidanceMode;
use crate::model::{ControllerState, JobStatus, OwnerRef, Pod};

/// The output of one decision.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Plan {
    /// Actions, in the order they must be applied.
    pub actions: Vec<Action>,
    /// Decide again after this long even if nothing changes.
    pub requeue_after: Option<Duration>,
    /// State to send back with the next decision for this Job.
    pub state: ControllerState,
    /// How many failed pods each pod-failure-policy action handled in this plan (for metrics).
    pub failure_policy_actions: FailurePolicyActionCounts,
}

/// Failed pods handled by each pod failure policy action in one plan.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FailurePolicyActionCounts {
    /// Pods that matched a FailJob rule.
    pub fail_job: u32,
    /// Pods that matched a FailIndex rule.
    pub fail_index: u32,
    /// Pods that matched an Ignore rule.
    pub ignore: u32,
    /// Pods that matched a Count rule.
    pub count: u32,
}

/// One step of a plan.
#[derive(Clone, Debug, PartialEq)]
pub enum Action {
    /// Take orphan pods that match the selector: set the controller reference and the tracking finalizer.
    AdoptPods(Vec<PodRef>),
    /// Drop the controller reference of owned pods that no longer match the selector.
    ReleasePods(Vec<PodRef>),
    /// Create pods from the template.
    CreatePods(Vec<PodCreation>),
    /// Delete pods.
    DeletePods(Vec<PodDeletion>),
    /// Remove the tracking finalizer from pods already recorded in the status.
    RemoveFinalizers(Vec<PodRef>),
    /// Mark pods stuck in Pending as failed (extended policy only): set
    /// `status.phase` to Failed and add the condition (a `pods/status` patch,
    /// as upstream's pod garbage collector fails pods), then delete each pod.
    /// The next decision counts them like any failed pod.
    FailPods(Vec<PodFailure>),
    /// Write the Job's whole status.
    UpdateStatus(Box<JobStatus>),
    /// Record an event on the Job.
    RecordEvent(Event),
}

/// A pod named by name and UID.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct PodRef {
    /// Name of the pod.
    pub name: String,
    /// UID of the pod.
    pub uid: String,
}

/// What the caller adds to the Job's pod template for one new pod.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PodCreation {
    /// Prefix for the generated name; empty means the API default `<job name>-`.
    pub generate_name: String,
    /// Labels to add to the template's.
    pub labels: BTreeMap<String, String>,
    /// Annotations to add to the template's.
    pub annotations: BTreeMap<String, String>,
    /// Finalizers the pod carries.
    pub finalizers: Vec<String>,
    /// `spec.hostname`, for Indexed Jobs; empty otherwise.
    pub hostname: String,
    /// Variables appended to every container lacking one of that name.
    pub env: Vec<EnvVarFromField>,
    /// The completion index, for Indexed Jobs.
    pub completion_index: Option<i32>,
    /// The controller reference to the Job.
    pub owner: OwnerRef,
    /// Nodes the new pod must or should not run on (extended policy only);
    /// the caller adds a node affinity term on `metadata.name` NotIn these.
    pub avoid_nodes: Option<AvoidNodes>,
}

/// Nodes a new pod keeps off, and how strictly.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AvoidNodes {
    /// Node names, oldest failure first.
    pub nodes: Vec<String>,
    /// Required or preferred.
    pub mode: NodeAvoidanceMode,
}

/// A pending pod to mark failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PodFailure {
    /// The pod.
    pub pod: PodRef,
    /// The condition to add, with status True (e.g. `job-decider.dev/PendingTimeout`).
    pub condition_type: String,
    /// The condition's reason (the waiting reason that held the pod, e.g. `ImagePullBackOff`).
    pub reason: String,
    /// The condition's message, for people.
    pub message: String,
    /// Delete the pod with a grace period of 0 after the status patch (its
    /// kubelet is not expected to finish it); otherwise with the pod's own.
    pub force_delete: bool,
}

/// An environment variable whose value comes from a pod field (the downward API).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EnvVarFromField {
    /// Variable name.
    pub name: String,
    /// The field path, e.g. `metadata.labels['batch.kubernetes.io/job-completion-index']`.
    pub field_path: String,
}

/// One pod to delete.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PodDeletion {
    /// The pod.
    pub pod: PodRef,
    /// Remove the finalizer before deleting, so the pod is never counted.
    pub remove_finalizer_first: bool,
    /// Whether the pod was Ready.
    pub ready: bool,
}

/// An event on the Job.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Event {
    /// Normal or Warning.
    pub event_type: EventType,
    /// Machine-readable reason.
    pub reason: String,
    /// Human-readable message.
    pub message: String,
}

/// The type of an event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventType {
    /// Informational.
    Normal,
    /// Something went wrong.
    Warning,
}

impl From<&Pod> for PodRef {
    fn from(pod: &Pod) -> Self {
        PodRef {
            name: pod.name.clone(),
            uid: pod.uid.clone(),
        }
    }
}
