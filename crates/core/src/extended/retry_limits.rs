//! Per-rule retry limits: "retry OOMKilled at most twice, then fail the Job".
//!
//! A limited rule R counts its matches per scope: the pod's completion index
//! for an Indexed Job, the whole Job otherwise. Everything is counted from the
//! snapshot, never from memory: for a failed pod q of scope S that matched R,
//!
//! ```text
//! ordinal(q) = max(carried_R(q) + 1,
//!                  rank of q among S's visible failed pods that matched R,
//!                  ordered by (finish time, name))
//! ```
//!
//! where `carried_R(p)` is R's count in pod p's `job-decider.dev/rule-match-counts`
//! annotation, written when p was created. Once `ordinal(q) > maxRetries` the
//! pod takes `whenRetriesExhausted` instead of R's action.
//!
//! Every pod created in S carries the annotation with
//! `count_R(S) = max(#visible failed pods of S that matched R,
//!                   max over S's pods p of carried_R(p) + [p failed and matched R])`.
//! Both terms are lower bounds of the true count (pods may have been deleted,
//! taking their failures out of sight); the larger is the best bound the
//! snapshot gives, and the carried term survives the deletion of every
//! earlier pod as long as the latest replacement is visible.

use std::collections::{BTreeMap, BTreeSet};

use super::RULE_MATCH_COUNTS_ANNOTATION;
use super::rules::{DocumentMatch, DocumentRule, carried, judge, retry_limit};
use crate::backoff::finished_time;
use crate::indexed::valid_index;
use crate::model::ExtendedFailurePolicy;
use crate::model::{Job, Pod};
use crate::plan::PodCreation;
use crate::sync_pod::SyncPod;

/// Whether the document has a rule with a retry limit (nothing here runs otherwise).
fn has_limits(policy: &ExtendedFailurePolicy) -> bool {
    policy.rules.iter().any(|r| r.retry_limit.is_some())
}

/// A pod's scope: its valid completion index for an Indexed Job, the Job (`None`) otherwise.
fn scope(job: &Job, pod: &Pod) -> Option<i32> {
    if job.spec.is_indexed() {
        valid_index(job, pod)
    } else {
        None
    }
}

/// Raises each failed pod's ordinal of a limited rule to its rank among its
/// scope's visible failures of the rule, and applies `whenRetriesExhausted`
/// where the ordinal passes the limit. The sync calls this once it has all its pods.
pub(crate) fn apply_retry_limits(job: &Job, pods: &mut [SyncPod<'_>]) {
    let Some(policy) = job.extended_failure_policy.as_deref() else {
        return;
    };
    if !has_limits(policy) {
        return;
    }
    // (scope, rule, finish time, name) of each failed pod of a limited rule, and where it is.
    let mut failures = Vec::new();
    for (at, p) in pods.iter().enumerate() {
        let Some(m) = p.failed_document_match() else {
            continue;
        };
        if retry_limit(policy, m.rule).is_none() {
            continue;
        }
        let pod = p.pod();
        failures.push((
            (
                scope(job, pod),
                m.rule,
                finished_time(pod),
                pod.name.as_str(),
            ),
            at,
        ));
    }
    failures.sort_unstable();
    let mut rank = 0u32;
    let mut previous = None;
    let mut judged = Vec::with_capacity(failures.len());
    for ((scope, rule, _, _), at) in failures {
        if previous != Some((scope, rule)) {
            previous = Some((scope, rule));
            rank = 0;
        }
        rank = rank.saturating_add(1);
        judged.push((at, judge(policy, rule, pods[at].pod(), rank)));
    }
    for (at, m) in judged {
        pods[at].set_document_match(m);
    }
}

/// How the document handles the failed pod named `uid` among `pods` (the Job's
/// pods, as a sync would claim them), its retry limit judged with its rank among
/// its scope's failures exactly as the sync judges it; `None` when the document
/// does not handle it. For callers that narrate one pod's failure (the simulator).
pub fn document_match_among(job: &Job, pods: &[Pod], uid: &str) -> Option<DocumentMatch> {
    let mut sync_pods: Vec<SyncPod<'_>> = pods.iter().map(|p| SyncPod::new(job, p)).collect();
    apply_retry_limits(job, &mut sync_pods);
    sync_pods
        .iter()
        .find(|p| p.uid == uid)
        .and_then(SyncPod::failed_document_match)
}

/// `count_R(S)` for each named limited rule R over the pods of one scope S,
/// sorted by name, only counts above 0.
pub(crate) fn scope_counts<'p>(
    policy: &'p ExtendedFailurePolicy,
    pods: impl IntoIterator<Item = &'p SyncPod<'p>>,
) -> Vec<(&'p str, i32)> {
    let limited: Vec<(DocumentRule, &str)> = policy
        .rules
        .iter()
        .enumerate()
        .filter(|(_, r)| r.retry_limit.is_some())
        .filter_map(|(i, r)| {
            Some((
                DocumentRule::Rule(u16::try_from(i).ok()?),
                r.name.as_deref()?,
            ))
        })
        .collect();
    if limited.is_empty() {
        return Vec::new();
    }
    let mut matched = vec![0i32; limited.len()];
    let mut carried_max = vec![0i32; limited.len()];
    for p in pods {
        let failed_rule = p.failed_document_match().map(|m| m.rule);
        for (k, (rule, name)) in limited.iter().enumerate() {
            let this = failed_rule == Some(*rule);
            let c = carried(p, name).saturating_add(i32::from(this));
            carried_max[k] = carried_max[k].max(c);
            matched[k] = matched[k].saturating_add(i32::from(this));
        }
    }
    let mut counts: Vec<(&str, i32)> = limited
        .iter()
        .zip(matched.iter().zip(&carried_max))
        .map(|((_, name), (m, c))| (*name, (*m).max(*c)))
        .filter(|(_, c)| *c > 0)
        .collect();
    counts.sort_unstable();
    counts.dedup_by(|a, b| a.0 == b.0);
    counts
}

/// The annotation value: `name=count` pairs joined by commas, in the given (sorted) order.
pub fn format_rule_match_counts(counts: &[(&str, i32)]) -> String {
    let pairs: Vec<String> = counts.iter().map(|(n, c)| format!("{n}={c}")).collect();
    pairs.join(",")
}

/// Puts the [`RULE_MATCH_COUNTS_ANNOTATION`] on the pods a sync creates: each
/// carries its scope's counts (absent when every count is 0).
pub(crate) fn annotate_creations(job: &Job, pods: &[SyncPod<'_>], creations: &mut [PodCreation]) {
    let Some(policy) = job.extended_failure_policy.as_deref() else {
        return;
    };
    if !has_limits(policy) || creations.is_empty() {
        return;
    }
    if !job.spec.is_indexed() {
        let value = format_rule_match_counts(&scope_counts(policy, pods));
        if value.is_empty() {
            return;
        }
        for c in creations {
            c.annotations
                .insert(RULE_MATCH_COUNTS_ANNOTATION.into(), value.clone());
        }
        return;
    }
    let wanted: BTreeSet<i32> = creations
        .iter()
        .filter_map(|c| c.completion_index)
        .collect();
    let mut by_index: BTreeMap<i32, Vec<&SyncPod<'_>>> = BTreeMap::new();
    for p in pods {
        if let Some(ix) = valid_index(job, p).filter(|ix| wanted.contains(ix)) {
            by_index.entry(ix).or_default().push(p);
        }
    }
    for c in creations {
        let Some(scope_pods) = c.completion_index.and_then(|ix| by_index.get(&ix)) else {
            continue;
        };
        let value = format_rule_match_counts(&scope_counts(policy, scope_pods.iter().copied()));
        if !value.is_empty() {
            c.annotations
                .insert(RULE_MATCH_COUNTS_ANNOTATION.into(), value);
        }
    }
}

#[cfg(test)]
mod tests;
