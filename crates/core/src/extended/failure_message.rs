//! `failureMessage: Detailed`: the Job's FailureTarget (and so its Failed
//! condition and the matching event, which copy it) explains the failure after
//! upstream's words — which pod, its container and exit code or reason, the
//! node, the rule that handled it and the limit reached (kubeflow/trainer#1749,
//! ray-project/kuberay#1942; upstream has no such field).
//!
//! The reason is never touched, and with `Upstream` (the default) or without a
//! document the message is upstream's byte for byte. Everything is read from
//! the snapshot, with total orders for every choice, so the same snapshot
//! gives the same text; every echoed value is cut and the whole is bounded.

use std::borrow::Cow;

use crate::backoff::finished_time_for;
use crate::extended::rules;
use crate::index_set::IndexSet;
use crate::indexed::valid_index;
use crate::matched_on::MatchedOn;
use crate::model::{ExtendedFailurePolicy, FailureMessage, Job, PodPhase, RestartPolicy};
use crate::pod_failure_policy::counts_failure;
use crate::sync_pod::SyncPod;
use crate::text::truncated;

/// Longest condition message `Detailed` writes, in bytes.
pub const MAX_DETAILED_MESSAGE_BYTES: usize = 1024;
/// Longest value the explanation echoes from the snapshot (a name, a reason), in bytes.
pub const MAX_ECHOED_BYTES: usize = 128;
/// When fewer bytes than this are left after upstream's message, nothing is
/// added: a stub explanation would only say that it was cut.
pub const MIN_EXPLANATION_BYTES: usize = 64;

/// Why the Job is failing, as far as the explanation needs to know.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Cause<'s, 'a> {
    /// A FailJob from a policy rule (the document's or `spec.podFailurePolicy`'s): the pod that matched.
    FailJob(&'s SyncPod<'a>),
    /// More failures than `backoffLimit` (or, with restartPolicy OnFailure, container restarts).
    BackoffLimitExceeded,
    /// Every index finished and some failed (per-index backoff limits): the failed indexes.
    FailedIndexes(&'s IndexSet),
    /// More failed indexes than `maxFailedIndexes`: the failed indexes.
    MaxFailedIndexesExceeded(&'s IndexSet),
}

/// Whether the Job's document asks for detailed failure messages.
pub fn is_detailed(job: &Job) -> bool {
    job.extended_failure_policy
        .as_deref()
        .is_some_and(|p| p.failure_message == FailureMessage::Detailed)
}

/// The FailureTarget message for `cause`: `upstream` itself unless the Job's
/// document says `failureMessage: Detailed`, else `upstream` followed by
/// ` (` the explanation `)`, at most [`MAX_DETAILED_MESSAGE_BYTES`] in all.
pub(crate) fn failure_message<'u>(
    job: &Job,
    pods: &[SyncPod<'_>],
    cause: Cause<'_, '_>,
    upstream: &'u str,
) -> Cow<'u, str> {
    let Some(policy) = job
        .extended_failure_policy
        .as_deref()
        .filter(|_| is_detailed(job))
    else {
        return Cow::Borrowed(upstream);
    };
    let parts = explanation_parts(job, policy, pods, cause);
    bounded(upstream, &parts)
}

/// `upstream` and ` (part; part; …)`, the explanation cut so that the whole
/// fits in [`MAX_DETAILED_MESSAGE_BYTES`]; `upstream` alone when there is
/// nothing to add or less than [`MIN_EXPLANATION_BYTES`] of room.
fn bounded<'u>(upstream: &'u str, parts: &[String]) -> Cow<'u, str> {
    let room = MAX_DETAILED_MESSAGE_BYTES.saturating_sub(upstream.len());
    if parts.is_empty() || room < MIN_EXPLANATION_BYTES {
        return Cow::Borrowed(upstream);
    }
    let explanation = format!(" ({})", parts.join("; "));
    Cow::Owned(format!("{upstream}{}", truncated(&explanation, room)))
}

/// The explanation's parts, in order: the pod, the rule, the limit (each left
/// out when it has nothing to say).
fn explanation_parts(
    job: &Job,
    policy: &ExtendedFailurePolicy,
    pods: &[SyncPod<'_>],
    cause: Cause<'_, '_>,
) -> Vec<String> {
    let pod = match cause {
        Cause::FailJob(pod) => Some(pod),
        Cause::BackoffLimitExceeded => {
            last_failed(job, pods, |p| counts_failure(p.policy_action(job)))
        }
        Cause::FailedIndexes(failed) | Cause::MaxFailedIndexesExceeded(failed) => {
            last_failed(job, pods, |p| {
                valid_index(job, p).is_some_and(|ix| failed.contains(ix))
            })
        }
    };
    let mut parts = Vec::with_capacity(3);
    match pod {
        Some(pod) => {
            parts.push(pod_part(job, pod, what_failed(policy, pod)));
            parts.extend(rule_part(job, policy, pod));
        }
        None => {
            // With restartPolicy OnFailure the limit counts container restarts of live pods.
            let restarted = matches!(cause, Cause::BackoffLimitExceeded)
                .then(|| most_restarted(job, pods))
                .flatten();
            if let Some((pod, container, restarts)) = restarted {
                let what = format!("container {} restarted {restarts} times", echo(container));
                parts.push(pod_part(job, pod, Some(what)));
            }
        }
    }
    parts.extend(limit_part(job, policy, pod, cause));
    parts
}

/// A value from the snapshot, cut to [`MAX_ECHOED_BYTES`].
fn echo(s: &str) -> Cow<'_, str> {
    truncated(s, MAX_ECHOED_BYTES)
}

/// The failed pod (`failed` and admitted by `keep`) that finished last, as the
/// backoff reads finish times; ties go to the smaller name, then the smaller uid.
fn last_failed<'s, 'a>(
    job: &Job,
    pods: &'s [SyncPod<'a>],
    keep: impl Fn(&SyncPod<'a>) -> bool,
) -> Option<&'s SyncPod<'a>> {
    pods.iter()
        .filter(|p| p.failed && keep(p))
        .map(|p| (finished_time_for(job, p), p))
        .max_by(|(ta, a), (tb, b)| {
            ta.cmp(tb)
                .then_with(|| b.name.cmp(&a.name))
                .then_with(|| b.uid.cmp(&a.uid))
        })
        .map(|(_, p)| p)
}

/// With restartPolicy OnFailure, the running or pending pod's container with
/// the most restarts (at least one); ties go to the smaller pod name, then
/// the smaller container name.
fn most_restarted<'s, 'a>(
    job: &Job,
    pods: &'s [SyncPod<'a>],
) -> Option<(&'s SyncPod<'a>, &'s str, i32)> {
    if job.spec.template.restart_policy != RestartPolicy::OnFailure {
        return None;
    }
    pods.iter()
        .filter(|p| matches!(p.phase, PodPhase::Running | PodPhase::Pending))
        .flat_map(|p| {
            p.container_statuses
                .iter()
                .chain(&p.init_container_statuses)
                .filter(|c| c.restart_count > 0)
                .map(move |c| (p, &*c.name, c.restart_count))
        })
        .max_by(|(pa, ca, ra), (pb, cb, rb)| {
            ra.cmp(rb)
                .then_with(|| pb.name.cmp(&pa.name))
                .then_with(|| cb.cmp(ca))
        })
}

/// `pod NAME[ index I][ on node NODE][: WHAT]`.
fn pod_part(job: &Job, pod: &SyncPod<'_>, what: Option<String>) -> String {
    let mut s = format!("pod {}", echo(&pod.name));
    if job.spec.is_indexed()
        && let Some(ix) = valid_index(job, pod)
    {
        s.push_str(&format!(" index {ix}"));
    }
    let node = pod
        .failure_details
        .as_ref()
        .map_or("", |d| d.node_name.as_str());
    if !node.is_empty() {
        s.push_str(&format!(" on node {}", echo(node)));
    }
    if let Some(what) = what {
        s.push_str(": ");
        s.push_str(&what);
    }
    s
}

/// What failed in the pod: what its rule matched on (for a pod a timeout
/// failed, that timeout's condition), else its first container that exited
/// non-zero, else its reason, else that it was deleted.
fn what_failed(policy: &ExtendedFailurePolicy, pod: &SyncPod<'_>) -> Option<String> {
    let matched = match (pod.failed_document_match(), pod.upstream_match()) {
        (Some(m), _) => rules::matched_on(policy, m.rule, pod).into_iter().next(),
        (None, Some(m)) => m.matched_on(pod),
        (None, None) => None,
    };
    match matched {
        Some(
            MatchedOn::ExitCode {
                container,
                init_container,
                ..
            }
            | MatchedOn::ContainerReason {
                container,
                init_container,
                ..
            },
        ) => Some(container_text(pod, &container, Some(init_container))),
        Some(MatchedOn::Message {
            container: Some(container),
        }) => Some(container_text(pod, &container, None)),
        Some(MatchedOn::Condition {
            condition_type,
            status,
        }) => Some(format!(
            "condition {}={}",
            echo(&condition_type),
            status.as_str()
        )),
        Some(MatchedOn::PodReason { reason }) => Some(format!("pod reason {}", echo(&reason))),
        // The controller failed the pod: its exit code, if any, is the kill's, not the cause.
        Some(MatchedOn::Timeout(timeout)) => {
            Some(format!("condition {}=True", timeout.condition_type()))
        }
        // No rule, or one that matched the pod's own message: what the pod shows.
        _ => unmatched_failure(pod),
    }
}

/// The first container (regular before init) that exited non-zero, else the
/// pod's `status.reason`, else `deleted` for a pod deleted before it finished.
fn unmatched_failure(pod: &SyncPod<'_>) -> Option<String> {
    let exited = |statuses: &[crate::model::ContainerStatus]| {
        statuses
            .iter()
            .find(|s| s.terminated.is_some_and(|t| t.exit_code != 0))
            .map(|s| s.name.clone())
    };
    if let Some(name) = exited(&pod.container_statuses) {
        return Some(container_text(pod, &name, Some(false)));
    }
    if let Some(name) = exited(&pod.init_container_statuses) {
        return Some(container_text(pod, &name, Some(true)));
    }
    let reason = pod
        .failure_details
        .as_ref()
        .map_or("", |d| d.reason.as_str());
    if !reason.is_empty() {
        return Some(format!("pod reason {}", echo(reason)));
    }
    (pod.deletion.is_some() && pod.phase != PodPhase::Failed).then(|| "deleted".to_string())
}

/// `container NAME[ exit code N][ reason R]` (`init container` for an init
/// container); `init` is `None` when only the name is known (regular first).
fn container_text(pod: &SyncPod<'_>, name: &str, init: Option<bool>) -> String {
    let in_list = |init: bool| {
        let statuses = if init {
            &pod.init_container_statuses
        } else {
            &pod.container_statuses
        };
        statuses
            .iter()
            .find(|s| &*s.name == name)
            .map(|s| (s, init))
    };
    let found = match init {
        Some(init) => in_list(init),
        None => in_list(false).or_else(|| in_list(true)),
    };
    let init = found.map_or(init.unwrap_or(false), |(_, init)| init);
    let kind = if init { "init container" } else { "container" };
    let mut s = format!("{kind} {}", echo(name));
    if let Some(t) = found.and_then(|(status, _)| status.terminated) {
        s.push_str(&format!(" exit code {}", t.exit_code));
    }
    let reason = pod.failure_details.as_ref().and_then(|d| {
        d.terminations
            .iter()
            .find(|t| t.init_container == init && &*t.container == name && !t.reason.is_empty())
    });
    if let Some(t) = reason {
        s.push_str(&format!(" reason {}", echo(&t.reason)));
    }
    s
}

/// `rule LABEL action ACTION[ (maxRetries=N used up)]`, or `None` when no
/// rule handled the pod. LABEL is `rules[i]` (with `"name"` when named) for
/// the document's rules, a timeout's implicit rule's name (`PendingTimeout`,
/// `ReadyTimeout`, `AttemptDeadline`, `TerminatingTimeout`), or
/// `spec.podFailurePolicy.rules[i]`.
fn rule_part(job: &Job, policy: &ExtendedFailurePolicy, pod: &SyncPod<'_>) -> Option<String> {
    if let Some(m) = pod.failed_document_match() {
        let name = rules::rule_name(policy, m.rule);
        let label = match (m.rule.index(), name) {
            (Some(i), Some(name)) => format!("rules[{i}] {:?}", echo(name)),
            (Some(i), None) => format!("rules[{i}]"),
            (None, name) => echo(name.unwrap_or_default()).into_owned(),
        };
        let mut s = format!("rule {label} action {}", m.action.as_str());
        if m.exhausted {
            let max = rules::max_retries(policy, m.rule).unwrap_or(0);
            s.push_str(&format!(" (maxRetries={max} used up)"));
        }
        return Some(s);
    }
    let m = pod.upstream_match()?;
    let action = m.action(job.spec.pod_failure_policy.as_ref()?)?;
    Some(format!(
        "rule spec.podFailurePolicy.rules[{}] action {}",
        m.rule_index(),
        action.as_str()
    ))
}

/// `limit backoffLimit=N`, `limit backoffLimitPerIndex=N`, `limit
/// maxFailedIndexes=N`, or for a FailJob whose rule's retries ran out `limit
/// maxRetries=N`; `None` for a FailJob rule, which has no limit.
fn limit_part(
    job: &Job,
    policy: &ExtendedFailurePolicy,
    pod: Option<&SyncPod<'_>>,
    cause: Cause<'_, '_>,
) -> Option<String> {
    let spec = &job.spec;
    let limit = match cause {
        Cause::BackoffLimitExceeded => format!("backoffLimit={}", spec.backoff_limit),
        Cause::FailedIndexes(_) => {
            format!("backoffLimitPerIndex={}", spec.backoff_limit_per_index?)
        }
        Cause::MaxFailedIndexesExceeded(_) => {
            format!("maxFailedIndexes={}", spec.max_failed_indexes?)
        }
        Cause::FailJob(_) => {
            let m = pod?.failed_document_match().filter(|m| m.exhausted)?;
            format!("maxRetries={}", rules::max_retries(policy, m.rule)?)
        }
    };
    Some(format!("limit {limit}"))
}

#[cfg(test)]
mod tests;
