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
mod tests {
    use super::*;
    use crate::fixtures::*;
    use crate::model::{OnPodConditionsPattern, PodFailurePolicy, PodFailurePolicyRule, PodPhase};
    use crate::pod_failure_policy::match_pod_failure_policy;

    /// The action read from a SyncPod is the one the full matcher decides, for
    /// failed pods (matched when gathered) and others (matched when asked).
    #[test]
    fn policy_action_is_the_full_matchers_action() {
        let mut job = job();
        let exit = crate::fixtures::exit_rule;
        job.spec.pod_failure_policy = Some(PodFailurePolicy {
            rules: vec![
                exit(PodFailurePolicyAction::Unknown("Later".into()), vec![1]),
                exit(PodFailurePolicyAction::FailJob, vec![42]),
                PodFailurePolicyRule {
                    action: PodFailurePolicyAction::Ignore,
                    on_exit_codes: None,
                    on_pod_conditions: vec![OnPodConditionsPattern {
                        condition_type: "DisruptionTarget".into(),
                        status: crate::model::ConditionStatus::True,
                    }],
                },
                exit(PodFailurePolicyAction::Count, vec![1, 2]),
            ],
        });
        let pods = [
            pod("fail-job")
                .phase(PodPhase::Failed)
                .exit("main", 42, t(1)),
            pod("counted").phase(PodPhase::Failed).exit("main", 1, t(1)),
            pod("ignored")
                .phase(PodPhase::Failed)
                .exit("main", 7, t(1))
                .condition("DisruptionTarget", t(1)),
            pod("unmatched")
                .phase(PodPhase::Failed)
                .exit("main", 9, t(1)),
            // Not failed: matched only when asked (tracking, for a failing Job).
            pod("running-exited").exit("main", 42, t(1)),
            pod("running"),
        ];
        let mut actions = Vec::new();
        for p in &pods {
            let sync_pod = SyncPod::new(&job, p);
            let full = match_pod_failure_policy(job.spec.pod_failure_policy.as_ref(), "ns", p);
            assert_eq!(sync_pod.failed, p.phase == PodPhase::Failed, "{}", p.name);
            assert_eq!(
                sync_pod.policy_action(&job),
                full.action.as_ref(),
                "{}",
                p.name
            );
            actions.push(sync_pod.policy_action(&job).cloned());
        }
        use PodFailurePolicyAction::*;
        assert_eq!(
            actions,
            vec![
                Some(FailJob),
                Some(Count),
                Some(Ignore),
                None,
                Some(FailJob),
                None
            ]
        );
    }

    /// With a document, its rules come first; the spec's rules decide a pod
    /// none of them holds for; a pod that did not fail is matched when asked.
    #[test]
    fn a_document_decides_first_and_falls_through_to_the_spec() {
        use crate::extended::rules::DocumentRule;
        use crate::extended::rules::test_docs::*;
        use crate::model::ExtendedAction;
        let mut job = with_document(
            job(),
            document(vec![
                rule(ExtendedAction::Ignore)
                    .named("drain")
                    .exit_in(&[(42, 42)]),
            ]),
        );
        job.spec.pod_failure_policy = Some(PodFailurePolicy {
            rules: vec![crate::fixtures::exit_rule(
                PodFailurePolicyAction::FailJob,
                vec![42, 7],
            )],
        });
        let by_document = pod("d").phase(PodPhase::Failed).exit("main", 42, t(1));
        let by_spec = pod("s").phase(PodPhase::Failed).exit("main", 7, t(1));
        let running = pod("r").exit("main", 42, t(1));
        let d = SyncPod::new(&job, &by_document);
        assert_eq!(d.policy_action(&job), Some(&PodFailurePolicyAction::Ignore));
        assert_eq!(
            d.failed_document_match().map(|m| m.rule),
            Some(DocumentRule::Rule(0))
        );
        let s = SyncPod::new(&job, &by_spec);
        assert_eq!(
            s.policy_action(&job),
            Some(&PodFailurePolicyAction::FailJob)
        );
        assert_eq!(s.failed_document_match(), None);
        let r = SyncPod::new(&job, &running);
        assert_eq!(r.failed_document_match(), None, "not failed");
        assert_eq!(r.policy_action(&job), Some(&PodFailurePolicyAction::Ignore));
    }

    /// The sync holds one per pod: the document's match or upstream's (by position) in 32 bytes.
    #[test]
    fn a_sync_pod_stays_small() {
        assert!(std::mem::size_of::<SyncPod<'_>>() <= 32);
    }
}
