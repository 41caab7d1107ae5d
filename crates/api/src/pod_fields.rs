//! What the two pod decoders (`pod_decode` for `Pod`, `lean_decode` for
//! `LeanPod`) share with the conversion that drives them: where a pod sits in
//! the request, which of its fields decisions read, the names pods repeat
//! (held once), and the pod's controller reference. The decoders depend on
//! this module, never on `convert`.

use std::collections::BTreeSet;
use std::sync::Arc;

use crate::pb;
use crate::violations::Violations;
use crate::wire::WireError;
use job_decider_core::extended::{
    ATTEMPT_DEADLINE_CONDITION, PENDING_TIMEOUT_CONDITION, READY_TIMEOUT_CONDITION,
    TERMINATING_TIMEOUT_CONDITION,
};
use job_decider_core::model::{Job, OwnerRef};

/// The pod condition every decision reads (ready counts).
const POD_READY: &str = "Ready";

/// A pod's position: its list and its index there.
#[derive(Clone, Copy, Debug)]
pub(crate) struct PodAt {
    lean: bool,
    i: usize,
}

impl PodAt {
    /// The JSON path of a field of this pod, given as its path in a `Pod` and in a `LeanPod`.
    pub(crate) fn field(self, full: &str, lean: &str) -> String {
        if self.lean {
            format!("leanPods[{}].{lean}", self.i)
        } else {
            format!("pods[{}].{full}", self.i)
        }
    }

    /// Numbers each list's pods from 0, the full ones first.
    pub(crate) fn number<T>(
        full: impl Iterator<Item = T>,
        lean: impl Iterator<Item = T>,
    ) -> impl Iterator<Item = (PodAt, T)> {
        let full = full.enumerate().map(|(i, p)| (PodAt { lean: false, i }, p));
        let lean = lean.enumerate().map(|(i, p)| (PodAt { lean: true, i }, p));
        full.chain(lean)
    }

    /// The JSON path of the pod itself.
    pub(crate) fn path(self) -> String {
        let list = if self.lean { "leanPods" } else { "pods" };
        format!("{list}[{}]", self.i)
    }

    /// The JSON path of a field of this pod, in the form it was sent.
    pub(crate) fn sub(self, path: impl std::fmt::Display) -> String {
        format!("{}.{path}", self.path())
    }

    /// The first pod of a list (tests, and a pod converted on its own).
    pub(crate) fn first(lean: bool) -> Self {
        PodAt { lean, i: 0 }
    }
}

/// Strings most pods of a Job repeat (container names, condition types, the
/// selector's labels), held once per snapshot: each pod shares the copy
/// instead of allocating its own.
#[derive(Default)]
pub(crate) struct SharedNames {
    names: Vec<Arc<str>>,
    label_values: Vec<Arc<str>>,
}

impl SharedNames {
    /// Distinct strings kept in each table; past this (hostile input), strings
    /// are no longer shared, so a lookup never costs more than this many comparisons.
    const MAX: usize = 64;

    fn shared(table: &mut Vec<Arc<str>>, s: &str) -> Arc<str> {
        if let Some(shared) = table.iter().find(|n| ***n == *s) {
            return Arc::clone(shared);
        }
        let shared: Arc<str> = s.into();
        if table.len() < Self::MAX {
            table.push(Arc::clone(&shared));
        }
        shared
    }

    fn shared_bytes(
        table: &mut Vec<Arc<str>>,
        bytes: &[u8],
        field: &'static str,
    ) -> Result<Arc<str>, WireError> {
        // A string seen before is known to be UTF-8: only new ones are checked.
        if let Some(shared) = table.iter().find(|n| n.as_bytes() == bytes) {
            return Ok(Arc::clone(shared));
        }
        let s = std::str::from_utf8(bytes).map_err(|_| WireError::Utf8 { field })?;
        Ok(Self::shared(table, s))
    }

    /// The shared copy of a name read off the wire, or the error for bytes that are not UTF-8.
    pub(crate) fn name_from(
        &mut self,
        bytes: &[u8],
        field: &'static str,
    ) -> Result<Arc<str>, WireError> {
        Self::shared_bytes(&mut self.names, bytes, field)
    }

    /// The shared copy of a label value read off the wire (kept apart: values vary more than names).
    pub(crate) fn label_value_from(
        &mut self,
        bytes: &[u8],
        field: &'static str,
    ) -> Result<Arc<str>, WireError> {
        Self::shared_bytes(&mut self.label_values, bytes, field)
    }

    /// The shared copy of a name: a container's, a condition type, a label key.
    pub(crate) fn get(&mut self, name: &str) -> Arc<str> {
        Self::shared(&mut self.names, name)
    }
}

/// What of a pod's labels and conditions any decision reads; the rest is checked, then dropped.
///
/// Selector matching reads only the selector's keys, and the rules read only the
/// Ready condition and the types the pod failure policy names: keeping the rest
/// would more than double the memory a large snapshot's pods take.
pub(crate) struct ReadFields<'a> {
    /// The pod conditions whose status a decision reads.
    pub(crate) conditions: BTreeSet<&'a str>,
    /// The label keys a decision reads.
    pub(crate) label_keys: BTreeSet<&'a str>,
    /// Whether the Job has an extended failure policy, so pods' failure details are read
    /// (`Pod::failure_details`); without one, none of it is kept.
    pub(crate) details: bool,
}

impl<'a> ReadFields<'a> {
    /// What decisions on `job` read of its pods.
    pub(crate) fn of(job: &'a Job) -> Self {
        // Ready, and the conditions the policy matches on.
        let mut conditions: BTreeSet<&str> = BTreeSet::from([POD_READY]);
        if let Some(policy) = &job.spec.pod_failure_policy {
            for rule in &policy.rules {
                for pattern in &rule.on_pod_conditions {
                    conditions.insert(pattern.condition_type.as_str());
                }
            }
        }
        // The extended policy's rules, and the conditions its timeouts set.
        let extended = job.extended_failure_policy.as_deref();
        if let Some(policy) = extended {
            conditions.insert(PENDING_TIMEOUT_CONDITION);
            conditions.insert(READY_TIMEOUT_CONDITION);
            conditions.insert(ATTEMPT_DEADLINE_CONDITION);
            conditions.insert(TERMINATING_TIMEOUT_CONDITION);
            for rule in &policy.rules {
                for pattern in &rule.on_pod_conditions {
                    conditions.insert(pattern.condition_type.as_str());
                }
            }
        }
        // The keys the Job's selector names (adoption and release).
        let selector = &job.spec.selector;
        let label_keys = selector
            .match_labels
            .keys()
            .chain(selector.match_expressions.iter().map(|req| &req.key))
            .map(String::as_str)
            .collect();
        ReadFields {
            conditions,
            label_keys,
            details: extended.is_some(),
        }
    }
}

/// A pod's controller reference (the shared `own` when it is the Job's own);
/// one naming another owner is rejected: the request holds the Job's pods and orphans only.
pub(crate) fn controller_ref(
    owner: pb::OwnerReference,
    own: &Arc<OwnerRef>,
    errs: &mut Violations,
    uid_field: impl FnOnce() -> String,
) -> Arc<OwnerRef> {
    // Without a job uid there is nothing to compare with; that is reported once.
    if !own.uid.is_empty() && owner.uid != own.uid {
        errs.invalid(
            uid_field(),
            format!("\"{}\"", owner.uid),
            "the pod's controller is not this Job; send only the Job's pods and orphans",
        );
    }
    let owner = OwnerRef {
        api_version: owner.api_version,
        kind: owner.kind,
        name: owner.name,
        uid: owner.uid,
    };
    if owner == **own {
        Arc::clone(own)
    } else {
        Arc::new(owner)
    }
}
