//! The one place that decides which of the document's timeouts fails a pod:
//! `pendingTimeout` ([`super::pending_timeout`]), `readyTimeout`
//! ([`super::ready_timeout`]) and `attemptDeadline`
//! ([`super::attempt_deadline`]). Each file says when its deadline is; here,
//! per active pod, the timeout whose deadline came first among those passed
//! fails it (ties in that order: pending, ready, attempt), one failure per
//! pod per plan; a pod none has reached asks for a decision at its earliest
//! deadline. Nothing is failed while the Job is finished, finishing,
//! suspended or being deleted (the sync drops a pod the same plan deletes,
//! and every failure from a plan that finds the Job complete).

use std::time::Duration;

use super::{
    ATTEMPT_DEADLINE_CONDITION, PENDING_TIMEOUT_CONDITION, READY_TIMEOUT_CONDITION,
    TERMINATING_TIMEOUT_CONDITION,
};
use super::{attempt_deadline, pending_timeout, ready_timeout, terminating_timeout};
use crate::model::{ConditionStatus, ExtendedAction, ExtendedFailurePolicy, Job, Pod, PodPhase};
use crate::plan::PodFailure;
use crate::text::{human_duration, truncated};
use crate::time::Time;

/// The name of the implicit rule that handles pods failed for their pending timeout.
pub const PENDING_TIMEOUT_RULE: &str = "PendingTimeout";
/// The name of the implicit rule that handles pods failed for their ready timeout.
pub const READY_TIMEOUT_RULE: &str = "ReadyTimeout";
/// The name of the implicit rule that handles pods failed for their attempt deadline.
pub const ATTEMPT_DEADLINE_RULE: &str = "AttemptDeadline";
/// The name of the implicit rule that handles pods failed for their terminating timeout.
pub const TERMINATING_TIMEOUT_RULE: &str = "TerminatingTimeout";

/// Which timeout; the order is the tie order when two deadlines are equal.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Timeout {
    /// `pendingTimeout`: stuck in Pending.
    Pending,
    /// `readyTimeout`: not Ready in time.
    Ready,
    /// `attemptDeadline`: running too long.
    Attempt,
    /// `terminatingTimeout`: still terminating long after its grace period (a
    /// pod being deleted, so never one of the three above; decided with the
    /// nodes in `terminating_timeout`).
    Terminating,
}

impl Timeout {
    /// Every timeout, in tie order.
    pub const ALL: [Timeout; 4] = [
        Timeout::Pending,
        Timeout::Ready,
        Timeout::Attempt,
        Timeout::Terminating,
    ];

    /// The condition the controller sets on a pod this timeout fails.
    pub fn condition_type(self) -> &'static str {
        match self {
            Timeout::Pending => PENDING_TIMEOUT_CONDITION,
            Timeout::Ready => READY_TIMEOUT_CONDITION,
            Timeout::Attempt => ATTEMPT_DEADLINE_CONDITION,
            Timeout::Terminating => TERMINATING_TIMEOUT_CONDITION,
        }
    }

    /// The timeout that set a condition of this type.
    pub fn of_condition(condition_type: &str) -> Option<Timeout> {
        Timeout::ALL
            .into_iter()
            .find(|t| t.condition_type() == condition_type)
    }

    /// The document's field, as explanations name it.
    pub fn field(self) -> &'static str {
        match self {
            Timeout::Pending => "pendingTimeout",
            Timeout::Ready => "readyTimeout",
            Timeout::Attempt => "attemptDeadline",
            Timeout::Terminating => "terminatingTimeout",
        }
    }

    /// The name of the implicit rule that handles the pods this timeout fails.
    pub fn rule_name(self) -> &'static str {
        match self {
            Timeout::Pending => PENDING_TIMEOUT_RULE,
            Timeout::Ready => READY_TIMEOUT_RULE,
            Timeout::Attempt => ATTEMPT_DEADLINE_RULE,
            Timeout::Terminating => TERMINATING_TIMEOUT_RULE,
        }
    }

    /// What a pod this timeout fails did, as explanations say it before the
    /// field: `running past` (attemptDeadline).
    pub fn failing(self) -> &'static str {
        match self {
            Timeout::Pending => "stuck in Pending past",
            Timeout::Ready => "not Ready within",
            Timeout::Attempt => "running past",
            Timeout::Terminating => "stuck terminating past",
        }
    }

    /// The document's seconds for this timeout; `None` when it lacks it.
    pub fn seconds(self, policy: &ExtendedFailurePolicy) -> Option<i64> {
        match self {
            Timeout::Pending => policy.pending_timeout.as_ref().map(|s| s.seconds),
            Timeout::Ready => policy.ready_timeout.map(|s| s.seconds),
            Timeout::Attempt => policy.attempt_deadline.map(|s| s.seconds),
            Timeout::Terminating => policy.terminating_timeout.map(|s| s.seconds),
        }
    }

    /// The document's action for the pods this timeout fails; `None` when it lacks it.
    pub fn action(self, policy: &ExtendedFailurePolicy) -> Option<ExtendedAction> {
        match self {
            Timeout::Pending => policy.pending_timeout.as_ref().map(|s| s.action),
            Timeout::Ready => policy.ready_timeout.map(|s| s.action),
            Timeout::Attempt => policy.attempt_deadline.map(|s| s.action),
            Timeout::Terminating => policy.terminating_timeout.map(|s| s.action),
        }
    }

    /// Whether the document has this timeout.
    pub fn in_force(self, policy: &ExtendedFailurePolicy) -> bool {
        self.seconds(policy).is_some()
    }
}

/// The timeouts' part of a plan.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Timeouts {
    /// Pods to mark failed, by name.
    pub failures: Vec<PodFailure>,
    /// When the next pod reaches a deadline, from now.
    pub requeue: Option<Duration>,
}

/// Each timeout's deadline for `pod`, in tie order; `None` where the document
/// lacks the timeout or the pod cannot reach it.
fn deadlines(policy: &ExtendedFailurePolicy, pod: &Pod) -> [Option<(Time, Timeout)>; 3] {
    let pending = policy
        .pending_timeout
        .as_ref()
        .and_then(|s| pending_timeout::stuck(s, pod).map(|st| (st.deadline(s), Timeout::Pending)));
    let ready = policy
        .ready_timeout
        .as_ref()
        .and_then(|s| ready_timeout::deadline(s, pod).map(|d| (d, Timeout::Ready)));
    let attempt = policy
        .attempt_deadline
        .as_ref()
        .and_then(|s| attempt_deadline::deadline(s, pod).map(|d| (d, Timeout::Attempt)));
    [pending, ready, attempt]
}

/// What `now` means for one pod: the passed timeout whose deadline came first,
/// or else when its earliest deadline comes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Due {
    /// This timeout fails the pod now; its deadline.
    Fails(Timeout, Time),
    /// No deadline has passed; the earliest is this one.
    Waits(Timeout, Time),
}

/// The pod's fate under the document's timeouts; `None` when none applies.
pub fn due(policy: &ExtendedFailurePolicy, pod: &Pod, now: Time) -> Option<Due> {
    let all = deadlines(policy, pod);
    let first = all.iter().flatten().min_by_key(|(d, t)| (*d, *t))?;
    Some(if first.0 <= now {
        Due::Fails(first.1, first.0)
    } else {
        Due::Waits(first.1, first.0)
    })
}

/// The Job's pods past a timeout, and when the next one reaches one. Empty
/// without a timeout in the document, and while the Job is finished,
/// `finishing`, suspended or being deleted.
pub(crate) fn pod_timeouts<'p>(
    job: &Job,
    pods: impl IntoIterator<Item = &'p Pod>,
    now: Time,
    finishing: bool,
) -> Timeouts {
    let mut out = Timeouts::default();
    let Some(policy) = job.extended_failure_policy.as_deref() else {
        return out;
    };
    if super::timeouts_quiet(job, finishing) {
        return out;
    }
    for pod in pods {
        match due(policy, pod, now) {
            None => {}
            Some(Due::Fails(timeout, _)) => {
                if let Some(f) = failure(policy, timeout, pod, now) {
                    out.failures.push(f);
                }
            }
            Some(Due::Waits(_, deadline)) => {
                let wait = deadline.saturating_since(now);
                out.requeue = Some(out.requeue.map_or(wait, |r| r.min(wait)));
            }
        }
    }
    out.failures.sort_by(|a, b| a.pod.cmp(&b.pod));
    out
}

/// The FailPods entry a timeout gives the pod.
fn failure(
    policy: &ExtendedFailurePolicy,
    timeout: Timeout,
    pod: &Pod,
    now: Time,
) -> Option<PodFailure> {
    match timeout {
        Timeout::Pending => {
            let s = policy.pending_timeout.as_ref()?;
            let stuck = pending_timeout::stuck(s, pod)?;
            Some(pending_timeout::failure(s, pod, &stuck, now))
        }
        Timeout::Ready => Some(ready_timeout::failure(policy.ready_timeout.as_ref()?, pod)),
        Timeout::Attempt => Some(attempt_deadline::failure(
            policy.attempt_deadline.as_ref()?,
            pod,
            now,
        )),
        // Needs the nodes: `terminating_timeout::terminating_timeouts` decides it.
        Timeout::Terminating => None,
    }
}

/// Which of the document's timeouts failed `pod`: the first whose True
/// condition the pod carries, of those the document has.
pub fn failed_by(policy: &ExtendedFailurePolicy, pod: &Pod) -> Option<Timeout> {
    pod.conditions
        .iter()
        .filter(|c| c.status == ConditionStatus::True)
        .filter_map(|c| Timeout::of_condition(&c.condition_type))
        .filter(|t| t.in_force(policy))
        .min()
}

/// When a timeout of the document failed `pod`: the transition time of its
/// True condition. Its finish time, so the backoff after this failure starts
/// there, as after any other failure.
pub fn failed_at(policy: &ExtendedFailurePolicy, pod: &Pod) -> Option<Time> {
    if pod.phase != PodPhase::Failed {
        return None;
    }
    let timeout = failed_by(policy, pod)?;
    pod.conditions
        .iter()
        .find(|c| &*c.condition_type == timeout.condition_type())
        .filter(|c| c.status == ConditionStatus::True)
        .and_then(|c| c.last_transition_time)
}

/// When the next pod of the Job reaches a timeout, from now, and which (for
/// explanations): pods a timeout fails now are left out, as the plan leaves them.
pub fn next_timeout(job: &Job, pods: &[Pod], now: Time) -> Option<(Duration, Timeout)> {
    let policy = job.extended_failure_policy.as_deref()?;
    if job.spec.suspend || job.being_deleted {
        return None;
    }
    pods.iter()
        .filter_map(|p| match due(policy, p, now)? {
            Due::Waits(t, d) => Some((d.saturating_since(now), t)),
            Due::Fails(..) => None,
        })
        .min()
}

/// Most pods an explanation names per timeout.
const MAX_DESCRIBED: usize = 5;
/// Longest name or reason an explanation repeats, in bytes.
const MAX_NAME_BYTES: usize = 128;

/// For explanations: the reason of a FailPods action (the implicit rule's name
/// when one timeout failed every pod, `PodTimeouts` otherwise) and which pods
/// each timeout fails.
pub fn describe(
    job: &Job,
    now: Time,
    pods: &[Pod],
    failures: &[PodFailure],
) -> (&'static str, String) {
    let of = |t: Timeout| -> Vec<PodFailure> {
        failures
            .iter()
            .filter(|f| f.condition_type == t.condition_type())
            .cloned()
            .collect()
    };
    let mut parts = Vec::new();
    let mut kinds = Vec::new();
    for t in Timeout::ALL {
        let these = of(t);
        if these.is_empty() {
            continue;
        }
        kinds.push(t);
        parts.push(match t {
            Timeout::Pending => pending_timeout::describe(job, now, pods, &these),
            Timeout::Terminating => terminating_timeout::describe(job, now, pods, &these),
            _ => describe_one(job, t, &these),
        });
    }
    let reason = match kinds.as_slice() {
        [t] => t.rule_name(),
        [] => PENDING_TIMEOUT_RULE,
        _ => "PodTimeouts",
    };
    (reason, parts.join("; "))
}

/// One timeout's pods, for [`describe`].
fn describe_one(job: &Job, t: Timeout, failures: &[PodFailure]) -> String {
    let seconds = job
        .extended_failure_policy
        .as_deref()
        .and_then(|p| t.seconds(p));
    let limit = seconds
        .map(|s| format!(" ({})", human_duration(crate::time::secs(s))))
        .unwrap_or_default();
    let named: Vec<String> = failures
        .iter()
        .take(MAX_DESCRIBED)
        .map(|f| {
            format!(
                "{} ({})",
                truncated(&f.pod.name, MAX_NAME_BYTES),
                truncated(&f.reason, MAX_NAME_BYTES)
            )
        })
        .collect();
    let more = crate::text::and_more(failures.len(), MAX_DESCRIBED);
    format!(
        "pods {} the extended policy's {}{limit}: {}{more}; marked Failed, then deleted",
        t.failing(),
        t.field(),
        named.join(", ")
    )
}

#[cfg(test)]
mod tests;
