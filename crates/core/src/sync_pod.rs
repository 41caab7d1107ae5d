//! A pod of the Job being synced, with the facts about it that several steps
//! of the sync read — whether it failed, and which pod failure policy rule it
//! matches — derived once when the sync gathers its pods, not once per step.
//!
//! With an extended failure policy document the handling may come from the
//! document (or from a used-up retry limit); it is still read as one of
//! upstream's actions, so every step treats it exactly as that action.

use std::ops::Deref;

use crate::extended::rules::{DocumentMatch, match_document, policy_action_of};
use crate::model::{Job, Pod, PodFailurePolicyAction, PodPhase};
use crate::pod_failure_policy::{RuleMatch, first_match};

/// How a failed pod's failure is handled: by the document, or by a rule of
/// upstream's `spec.podFailurePolicy` (never both: the document comes first).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Handling {
    /// Upstream's whole match: the rule and what it matched on.
    Upstream(RuleMatch),
    /// The document's rule and action.
    Document(DocumentMatch),
}

/// A claimed pod and what the sync derived about it. Derefs to the pod.
#[derive(Clone, Copy, Debug)]
pub(crate) struct SyncPod<'a> {
    /// The pod.
    pod: &'a Pod,
    /// Upstream's "failed" for this pod ([`is_pod_failed`]).
    pub failed: bool,
    /// For a failed pod, the first rule that handles it (the document's, else
    /// `spec.podFailurePolicy`'s); `None` when none matches, the Job has no
    /// policy, or the pod did not fail. The FailJob message and the
    /// explanation read it rather than match again.
    handling: Option<Handling>,
}

impl<'a> SyncPod<'a> {
    /// The pod of `job` with its facts. A failed pod is matched against the
    /// policy here: every step that reads a failure's handling reads this.
    pub fn new(job: &'a Job, pod: &'a Pod) -> Self {
        let failed = is_pod_failed(job, pod);
        SyncPod {
            pod,
            failed,
            handling: if failed { handling(job, pod) } else { None },
        }
    }

    /// The pod itself, for the lifetime of the snapshot.
    pub fn pod(&self) -> &'a Pod {
        self.pod
    }

    /// The action of the first policy rule the pod matches (the document's
    /// first, then `spec.podFailurePolicy`'s), or `None`.
    /// A failed pod's match was made when it was gathered; a pod that did not
    /// fail is matched here (only tracking asks, when the Job is failing and
    /// its finalizer is removed, and it asks once per pod).
    pub fn policy_action(&self, job: &'a Job) -> Option<&'a PodFailurePolicyAction> {
        let handling = if self.failed {
            self.handling
        } else {
            handling(job, self.pod)
        };
        match handling? {
            Handling::Document(m) => Some(policy_action_of(m.action)),
            Handling::Upstream(m) => m.action(job.spec.pod_failure_policy.as_ref()?),
        }
    }

    /// Upstream's match of a failed pod the document did not handle, as gathered.
    pub fn upstream_match(&self) -> Option<RuleMatch> {
        match self.handling.filter(|_| self.failed)? {
            Handling::Upstream(m) => Some(m),
            Handling::Document(_) => None,
        }
    }

    /// The document's handling of a failed pod, as gathered; `None` for a pod that did not fail.
    pub fn failed_document_match(&self) -> Option<DocumentMatch> {
        match self.handling.filter(|_| self.failed)? {
            Handling::Document(m) => Some(m),
            Handling::Upstream(_) => None,
        }
    }

    /// Replaces a failed pod's document handling (a retry limit judged over
    /// the pod's whole scope); its action follows.
    pub fn set_document_match(&mut self, m: DocumentMatch) {
        self.handling = Some(Handling::Document(m));
    }
}

/// Upstream's "failed" for a pod: phase Failed, or — unless only failed pods are
/// replaced — being deleted without having succeeded.
pub fn is_pod_failed(job: &Job, pod: &Pod) -> bool {
    if pod.phase == PodPhase::Failed {
        return true;
    }
    if job.spec.only_replace_failed_pods() {
        return false;
    }
    pod.deletion.is_some() && pod.phase != PodPhase::Succeeded
}

/// The handling of a failed pod: the document's first (steps 1 and 2, its
/// retry limit judged from the pod alone), else `spec.podFailurePolicy`'s.
fn handling(job: &Job, pod: &Pod) -> Option<Handling> {
    if let Some(m) = job
        .extended_failure_policy
        .as_deref()
        .and_then(|policy| match_document(policy, pod))
    {
        return Some(Handling::Document(m));
    }
    first_match(job.spec.pod_failure_policy.as_ref(), pod).map(Handling::Upstream)
}

impl Deref for SyncPod<'_> {
    type Target = Pod;

    fn deref(&self) -> &Pod {
        self.pod
    }
}

#[cfg(test)]
mod tests;
