//! The lean pod encoding, from the Kubernetes-shaped `Pod`: what a caller that
//! holds full pods sends to spend a third of the bytes and a fraction of the
//! server's decoding (the contract's `LeanPod`). Both forms of a pod decide
//! alike; the vector tests run every vector through both to keep it so.

use crate::convert;
use crate::pb;
use crate::pod_details::POD_SCHEDULED;
use crate::pod_fields::ReadFields;
use job_decider_core::extended::{FAILED_NODES_ANNOTATION, RULE_MATCH_COUNTS_ANNOTATION};
use job_decider_core::go_text::go_quote;
use job_decider_core::model::{
    COMPLETION_INDEX_KEY, ConditionStatus, INDEX_FAILURE_COUNT_KEY,
    INDEX_IGNORED_FAILURE_COUNT_KEY, JOB_API_VERSION, JOB_KIND, JOB_TRACKING_FINALIZER, PodPhase,
};

/// The Job a lean pod is encoded for: its controller reference is elided when it is the Job's own.
#[derive(Clone, Copy, Debug)]
pub struct JobIdentity<'a> {
    /// The Job's name.
    pub name: &'a str,
    /// The Job's uid.
    pub uid: &'a str,
}

impl<'a> JobIdentity<'a> {
    /// The identity of a wire Job (empty strings where the request lacks them).
    pub fn of(job: Option<&'a pb::Job>) -> Self {
        let meta = job.and_then(|j| j.metadata.as_ref());
        JobIdentity {
            name: meta.map_or("", |m| m.name.as_str()),
            uid: meta.map_or("", |m| m.uid.as_str()),
        }
    }

    /// Whether `owner` is the Job's own controller reference.
    fn is_own_controller(&self, owner: &pb::OwnerReference) -> bool {
        owner.controller == Some(true)
            && !self.uid.is_empty()
            && owner.api_version == JOB_API_VERSION
            && owner.kind == JOB_KIND
            && owner.name == self.name
            && owner.uid == self.uid
    }
}

/// A value the lean encoding has no form for: its enumerations hold only the
/// values the Kubernetes API defines, so such a pod is sent as a `Pod`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum NotLean {
    /// `status.phase` is not one of the API's phases.
    #[error("status.phase {} is not a Kubernetes pod phase", go_quote(.0))]
    Phase(String),
    /// A condition's status is not True, False, Unknown or empty.
    #[error(
        "status.conditions[{index}].status {} is not True, False or Unknown",
        go_quote(value)
    )]
    ConditionStatus {
        /// The condition's position.
        index: usize,
        /// The status as written.
        value: String,
    },
}

/// A pod in the lean encoding. Everything any decision reads is kept: all
/// labels (the caller may trim them to the selector's keys), all conditions,
/// and what the extended failure policy reads (`lean_request` drops that for
/// a Job without a document).
pub fn lean_pod(pod: &pb::Pod, job: JobIdentity<'_>) -> Result<pb::LeanPod, NotLean> {
    let meta = pod.metadata.clone().unwrap_or_default();
    let spec = pod.spec.as_ref();
    let status = pod.status.clone().unwrap_or_default();
    let controller = meta
        .owner_references
        .iter()
        .position(|o| o.controller == Some(true));
    let elided = controller.filter(|&i| job.is_own_controller(&meta.owner_references[i]));
    let owner_references = meta
        .owner_references
        .into_iter()
        .enumerate()
        .filter(|(i, _)| Some(*i) != elided)
        .map(|(_, o)| o)
        .collect();
    let annotation = |key: &str| meta.annotations.get(key).cloned();
    let phase = lean_phase(&status.phase).ok_or_else(|| NotLean::Phase(status.phase.clone()))?;
    let conditions = status
        .conditions
        .into_iter()
        .enumerate()
        .map(|(index, c)| {
            let lean_status = lean_condition_status(&c.status).ok_or(NotLean::ConditionStatus {
                index,
                value: c.status,
            })?;
            Ok(pb::LeanPodCondition {
                status: lean_status as i32,
                r#type: c.r#type,
                last_transition_time: c.last_transition_time,
                reason: c.reason,
            })
        })
        .collect::<Result<_, NotLean>>()?;
    Ok(pb::LeanPod {
        name: meta.name,
        uid: meta.uid,
        labels: meta.labels,
        completion_index: annotation(COMPLETION_INDEX_KEY),
        index_failure_count: annotation(INDEX_FAILURE_COUNT_KEY),
        index_ignored_failure_count: annotation(INDEX_IGNORED_FAILURE_COUNT_KEY),
        controlled_by_job: elided.is_some(),
        owner_references,
        tracking_finalizer: meta.finalizers.iter().any(|f| f == JOB_TRACKING_FINALIZER),
        creation_timestamp: meta.creation_timestamp,
        deletion_timestamp: meta.deletion_timestamp,
        deletion_grace_period_seconds: meta.deletion_grace_period_seconds,
        scheduled: spec.is_some_and(|s| !s.node_name.is_empty()),
        sidecar_init_containers: spec
            .map(|s| {
                s.init_containers
                    .iter()
                    .filter(|c| c.restart_policy == "Always")
                    .map(|c| c.name.clone())
                    .collect()
            })
            .unwrap_or_default(),
        phase: phase as i32,
        conditions,
        container_statuses: lean_container_statuses(status.container_statuses),
        init_container_statuses: lean_container_statuses(status.init_container_statuses),
        reason: status.reason,
        message: status.message,
        node_name: spec.map(|s| s.node_name.clone()).unwrap_or_default(),
        rule_match_counts: annotation(RULE_MATCH_COUNTS_ANNOTATION),
        failed_nodes: annotation(FAILED_NODES_ANNOTATION),
        start_time: status.start_time,
    })
}

/// A request with its pods moved to the lean encoding, each trimmed to the
/// labels and conditions that decisions on this Job read (the server keeps no
/// others). The first pod that has no lean form is named by its position.
pub fn lean_request(
    mut request: pb::DecideJobRequest,
) -> Result<pb::DecideJobRequest, (usize, NotLean)> {
    let pods = std::mem::take(&mut request.pods);
    let identity = JobIdentity::of(request.job.as_ref());
    // A Job the server would reject is sent untrimmed: its answer is the rejection.
    let job = request.job.clone().and_then(|job| {
        convert::job_for_validation(pb::ValidateJobRequest {
            job: Some(job),
            failure_policy: request.failure_policy.clone(),
        })
        .ok()
    });
    let read = job.as_ref().map(ReadFields::of);
    request.lean_pods = pods
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let mut lean = lean_pod(p, identity).map_err(|e| (i, e))?;
            if let Some(read) = &read {
                lean.labels
                    .retain(|key, _| read.label_keys.contains(key.as_str()));
                // PodScheduled says when a pod started waiting, for the pending timeout.
                lean.conditions.retain(|c| {
                    read.conditions.contains(c.r#type.as_str())
                        || (read.details && c.r#type == POD_SCHEDULED)
                });
                if !read.details {
                    without_details(&mut lean);
                }
            }
            Ok(lean)
        })
        .collect::<Result<_, _>>()?;
    Ok(request)
}

/// A lean pod without what only the extended failure policy reads.
fn without_details(lean: &mut pb::LeanPod) {
    lean.reason.clear();
    lean.message.clear();
    lean.node_name.clear();
    lean.rule_match_counts = None;
    lean.failed_nodes = None;
    lean.start_time = None;
    for c in &mut lean.conditions {
        c.reason.clear();
    }
    for s in lean
        .container_statuses
        .iter_mut()
        .chain(&mut lean.init_container_statuses)
    {
        s.waiting_reason.clear();
        if let Some(t) = &mut s.terminated {
            t.reason.clear();
            t.message.clear();
        }
    }
}

/// An empty phase is unspecified in both forms (the core reads it as Pending).
fn lean_phase(phase: &str) -> Option<pb::LeanPodPhase> {
    if phase.is_empty() {
        return Some(pb::LeanPodPhase::Unspecified);
    }
    Some(match PodPhase::parse(phase)? {
        PodPhase::Pending => pb::LeanPodPhase::Pending,
        PodPhase::Running => pb::LeanPodPhase::Running,
        PodPhase::Succeeded => pb::LeanPodPhase::Succeeded,
        PodPhase::Failed => pb::LeanPodPhase::Failed,
        PodPhase::Unknown => pb::LeanPodPhase::Unknown,
    })
}

/// An empty status is unspecified in both forms (decisions reject it where they read it).
fn lean_condition_status(status: &str) -> Option<pb::LeanConditionStatus> {
    if status.is_empty() {
        return Some(pb::LeanConditionStatus::Unspecified);
    }
    let Ok(status) = status.parse::<ConditionStatus>();
    Some(match status {
        ConditionStatus::True => pb::LeanConditionStatus::True,
        ConditionStatus::False => pb::LeanConditionStatus::False,
        ConditionStatus::Unknown => pb::LeanConditionStatus::Unknown,
        ConditionStatus::Other(_) => return None,
    })
}

fn lean_container_statuses(statuses: Vec<pb::ContainerStatus>) -> Vec<pb::LeanContainerStatus> {
    statuses
        .into_iter()
        .map(|s| {
            let state = s.state.unwrap_or_default();
            pb::LeanContainerStatus {
                name: s.name,
                restart_count: s.restart_count,
                terminated: state.terminated.map(|t| pb::LeanTerminated {
                    exit_code: t.exit_code,
                    finished_at: t.finished_at,
                    reason: t.reason,
                    message: t.message,
                }),
                waiting_reason: state.waiting.map(|w| w.reason).unwrap_or_default(),
            }
        })
        .collect()
}
