//! A pod of the Job being synced, with the facts about it that several steps
//! of the sync read — whether it failed, and which pod failure policy rule it
//! matches — derived once when the sync gathers its pods, not once per step.

use std::ops::Deref;

use crate::indexed::is_pod_failed;
use crate::model::{Job, Pod, PodFailurePolicyAction};
use crate::pod_failure_policy::matched_action;

/// A claimed pod and what the sync derived about it. Derefs to the pod.
#[derive(Clone, Copy, Debug)]
pub(crate) struct SyncPod<'a> {
    /// The pod.
    pod: &'a Pod,
    /// Upstream's "failed" for this pod ([`is_pod_failed`]).
    pub failed: bool,
    /// For a failed pod, the action of the first policy rule it matches;
    /// `None` when none matches, the Job has no policy, or the pod did not fail.
    failed_action: Option<&'a PodFailurePolicyAction>,
}

impl<'a> SyncPod<'a> {
    /// The pod of `job` with its facts. A failed pod is matched against the
    /// policy here: every step that reads a failure's handling reads this.
    pub fn new(job: &'a Job, pod: &'a Pod) -> Self {
        let failed = is_pod_failed(job, pod);
        let failed_action = if failed {
            matched_action(job.spec.pod_failure_policy.as_ref(), pod)
        } else {
            None
        };
        SyncPod {
            pod,
            failed,
            failed_action,
        }
    }

    /// The pod itself, for the lifetime of the snapshot.
    pub fn pod(&self) -> &'a Pod {
        self.pod
    }

    /// The action of the first policy rule the pod matches, or `None`.
    /// A failed pod's match was made when it was gathered; a pod that did not
    /// fail is matched here (only tracking asks, when the Job is failing and
    /// its finalizer is removed, and it asks once per pod).
    pub fn policy_action(&self, job: &'a Job) -> Option<&'a PodFailurePolicyAction> {
        if self.failed {
            self.failed_action
        } else {
            matched_action(job.spec.pod_failure_policy.as_ref(), self.pod)
        }
    }
}

impl Deref for SyncPod<'_> {
    type Target = Pod;

    fn deref(&self) -> &Pod {
        self.pod
    }
}
