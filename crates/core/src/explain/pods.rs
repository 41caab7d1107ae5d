//! The pods of an explanation: each claimed pod's verdict as the sync reached
//! it (the rule it matched is the one the sync kept, never matched again),
//! grouped by verdict, rule and detail.

use std::collections::{HashMap, HashSet};

use crate::extended::rules::{self, DocumentMatch, DocumentRule};
use crate::index_set::IndexSet;
use crate::indexed::{index_failed, valid_index};
use crate::model::ExtendedFailurePolicy;
use crate::model::{Pod, PodFailurePolicyAction, PodPhase};
use crate::plan::{Action, Plan, PodRef};
use crate::pod_failure_policy;
use crate::sync_pod::SyncPod;
use crate::text::{Capped, ordinal, truncated};
use crate::text::{MAX_EXPLANATION_ENTRIES, MAX_MESSAGE_BYTES};

use super::*;

/// A group of pods being built: the indexes are gathered, then made a set.
struct GroupBuilder {
    group: PodGroup,
    indexes: Vec<i32>,
}

/// What tells two groups apart.
type GroupKey = (Verdict, Option<usize>, Option<String>, String, String, bool);

/// The pods grouped by what the sync concluded about them.
pub(super) fn pod_groups(facts: &ExplainFacts<'_>, plan: &Plan) -> Capped<PodGroup> {
    let job = &facts.snapshot.job;
    let mut builders: Vec<GroupBuilder> = Vec::new();
    let mut by_key: HashMap<GroupKey, usize> = HashMap::new();
    let mut omitted: HashSet<GroupKey> = HashSet::new();
    let mut add = |key: GroupKey, rule: Option<&PodFailurePolicyAction>, pod: &Pod| {
        if let Some(&at) = by_key.get(&key) {
            let builder: &mut GroupBuilder = &mut builders[at];
            builder.group.count += 1;
            builder.group.pods.push_with(|| text(&pod.name));
            builder.indexes.extend(pod.completion_index);
            return;
        }
        if builders.len() >= MAX_EXPLANATION_ENTRIES {
            omitted.insert(key);
            return;
        }
        let mut pods = Capped::new(MAX_PODS_PER_GROUP);
        pods.push_with(|| text(&pod.name));
        let (verdict, rule_index, extended_rule, matched, detail, adopted) = key.clone();
        by_key.insert(key, builders.len());
        builders.push(GroupBuilder {
            group: PodGroup {
                verdict,
                count: 1,
                pods,
                indexes: None,
                rule: rule_index.zip(rule.cloned()),
                extended_rule,
                matched,
                detail,
                adopted,
            },
            indexes: pod.completion_index.into_iter().collect(),
        });
    };

    let mut claimed: HashSet<&str> = HashSet::with_capacity(facts.pods.len());
    for pod in facts.pods {
        claimed.insert(pod.uid.as_str());
        let (verdict, rule, extended_rule, matched, detail) = pod_verdict(facts, pod);
        let rule_index = rule.as_ref().map(|(i, _)| *i);
        let adopted = pod.controller.is_none();
        add(
            (verdict, rule_index, extended_rule, matched, detail, adopted),
            rule.as_ref().map(|(_, a)| *a),
            pod,
        );
    }
    let released: HashSet<&str> = plan
        .actions
        .iter()
        .filter_map(|a| match a {
            Action::ReleasePods(pods) => Some(pods),
            _ => None,
        })
        .flatten()
        .map(|p: &PodRef| p.uid.as_str())
        .collect();
    for pod in &facts.snapshot.pods {
        if claimed.contains(pod.uid.as_str()) {
            continue;
        }
        let (verdict, detail) = if released.contains(pod.uid.as_str()) {
            (
                Verdict::Released,
                "owned, but its labels no longer match the selector",
            )
        } else if pod.controller.is_some() {
            (Verdict::NotClaimed, "controlled by another owner")
        } else if job.being_deleted {
            (
                Verdict::NotClaimed,
                "orphan: the Job is being deleted, so it adopts nothing",
            )
        } else if pod.deletion.is_some() {
            (Verdict::NotClaimed, "orphan being deleted: not adopted")
        } else {
            (
                Verdict::NotClaimed,
                "orphan whose labels do not match the selector",
            )
        };
        add(
            (verdict, None, None, String::new(), detail.into(), false),
            None,
            pod,
        );
    }

    let mut groups = Capped::new(MAX_EXPLANATION_ENTRIES);
    for builder in builders {
        let mut group = builder.group;
        if job.spec.is_indexed() && !builder.indexes.is_empty() {
            group.indexes = Some(IndexSummary::of(&IndexSet::from_indexes(builder.indexes)));
        }
        groups.push_with(|| group);
    }
    groups.omitted = omitted.len();
    groups
}

/// A pod's verdict, spec rule, document rule, what matched, and the detail.
type VerdictParts<'a> = (
    Verdict,
    Option<(usize, &'a PodFailurePolicyAction)>,
    Option<String>,
    String,
    String,
);

/// A claimed pod's verdict, the `spec.podFailurePolicy` rule it matched, the
/// extended policy document's rule that handled it, what the rule matched and why.
fn pod_verdict<'a>(facts: &ExplainFacts<'a>, pod: &SyncPod<'a>) -> VerdictParts<'a> {
    let job = &facts.snapshot.job;
    if pod.phase == PodPhase::Succeeded {
        return (
            Verdict::Succeeded,
            None,
            None,
            String::new(),
            format!("counts towards completions; {}", tracking_note(facts, pod)),
        );
    }
    if !pod.failed {
        if pod.deletion.is_some() {
            return (
                Verdict::Terminating,
                None,
                None,
                String::new(),
                "being deleted; with podReplacementPolicy Failed it is replaced only once it has failed".into(),
            );
        }
        // The verdict says running; the detail adds a phase other than Running, and readiness.
        let mut detail = Vec::new();
        if pod.phase != PodPhase::Running {
            detail.push(pod.phase.as_str());
        }
        if pod.is_ready() {
            detail.push("ready");
        }
        return (
            Verdict::Running,
            None,
            None,
            String::new(),
            detail.join(", "),
        );
    }
    let per_index = job.spec.uses_backoff_limit_per_index();
    let per_index_limit = job.spec.backoff_limit_per_index.filter(|_| per_index);
    let limit = match per_index_limit {
        Some(l) => format!("its index's backoffLimitPerIndex ({l})"),
        _ => format!(
            "backoffLimit ({}; {} failure(s) count so far)",
            job.spec.backoff_limit, facts.failed
        ),
    };
    // The rule the sync matched, and what it matched on, as the sync kept them.
    let action = pod.policy_action(job);
    let document = job
        .extended_failure_policy
        .as_deref()
        .zip(pod.failed_document_match());
    let (rule, extended_rule, matched, handled_by) = match (document, action) {
        (Some((policy, m)), _) => {
            let (name, matched, handled_by) = describe_document_match(job, policy, &m, pod);
            (None, Some(name), matched, handled_by)
        }
        // Upstream's rule, as the sync matched it when it gathered the pod.
        (None, Some(action)) => {
            match (job.spec.pod_failure_policy.as_ref(), pod.upstream_match()) {
                (Some(policy), Some(m)) => (
                    Some((m.rule_index(), action)),
                    None,
                    m.matched_on(pod)
                        .map(|on| {
                            let rule = policy.rules.get(m.rule_index());
                            on.describe(&rule.map(pod_failure_policy::asked).unwrap_or_default())
                        })
                        .unwrap_or_default(),
                    String::new(),
                ),
                _ => (None, None, String::new(), String::new()),
            }
        }
        (None, None) => (None, None, String::new(), String::new()),
    };
    let deleted = if pod.phase == PodPhase::Failed {
        ""
    } else {
        "deleted before it finished, so it counts as failed; "
    };
    let (verdict, effect) = match action {
        Some(PodFailurePolicyAction::Ignore) => (
            Verdict::FailedIgnored,
            format!("not counted towards {limit}"),
        ),
        Some(PodFailurePolicyAction::FailJob) => (Verdict::FailsJob, "fails the Job".into()),
        Some(PodFailurePolicyAction::FailIndex) => (Verdict::FailsIndex, "fails its index".into()),
        _ if per_index && index_failed(job, pod) => (
            Verdict::FailsIndex,
            format!(
                "its index had already failed backoffLimitPerIndex ({}) time(s): the index fails",
                per_index_limit.unwrap_or_default()
            ),
        ),
        None if job.extended_failure_policy.is_some() => (
            Verdict::FailedCounted,
            format!(
                "no rule of the failure policy document or spec.podFailurePolicy matched: counts towards {limit}"
            ),
        ),
        None if job.spec.pod_failure_policy.is_some() => (
            Verdict::FailedCounted,
            format!("no pod failure policy rule matched: counts towards {limit}"),
        ),
        _ => (Verdict::FailedCounted, format!("counts towards {limit}")),
    };
    let kept = pod
        .completion_index
        .and_then(|ix| facts.delayed.get(&ix))
        .is_some_and(|k| k.uid == pod.uid);
    let note = if kept {
        "keeps its finalizer until its index's replacement exists".to_string()
    } else {
        tracking_note(facts, pod).to_string()
    };
    let detail = truncated(
        &format!("{deleted}{handled_by}{effect}; {note}"),
        MAX_MESSAGE_BYTES,
    )
    .into_owned();
    (verdict, rule, extended_rule, matched, detail)
}

/// How the extended policy document handled a failed pod, for its group: the
/// rule's short name (`oom`, `rules[2]`, `PendingTimeout`), what each of its
/// matchers matched, and the start of the detail: which rule, its action and,
/// for a limited rule, which match this is and whether the limit is used up.
fn describe_document_match(
    job: &crate::model::Job,
    policy: &ExtendedFailurePolicy,
    m: &DocumentMatch,
    pod: &Pod,
) -> (String, String, String) {
    let name = match (rules::rule_name(policy, m.rule), m.rule.index()) {
        (Some(name), _) => text(name),
        (None, Some(i)) => format!("rules[{i}]"),
        (None, None) => rules::PENDING_TIMEOUT_RULE.into(),
    };
    let asked = rules::asked(policy, m.rule);
    let matched: Vec<String> = rules::matched_on(policy, m.rule, pod)
        .iter()
        .map(|o| o.describe(&asked))
        .collect();
    let matched = text(&matched.join(" and "));
    let which = match m.rule {
        DocumentRule::Timeout(t) => format!(
            "the failure policy document's {} (rule {:?})",
            t.field(),
            t.rule_name()
        ),
        DocumentRule::Rule(i) => match rules::rule_name(policy, m.rule) {
            Some(_) => format!(
                "failure policy document rule {}",
                rules::rule_label(policy, m.rule)
            ),
            None => format!("rule at index {i} of the failure policy document"),
        },
    };
    let own_action = rules::rule_action(policy, m.rule).as_str();
    let limit = match rules::max_retries(policy, m.rule) {
        Some(max) if m.exhausted => format!(
            ", for the {} time in {}: its maxRetries ({max}) are used up, so whenRetriesExhausted ({}) applies",
            ordinal(i64::from(m.ordinal)),
            rules::scope_text(job, pod),
            m.action.as_str()
        ),
        Some(max) => format!(
            ", match {} of maxRetries {max} in {}",
            m.ordinal,
            rules::scope_text(job, pod)
        ),
        None => String::new(),
    };
    let handled_by = format!("{which} ({own_action}) matched {matched}{limit}: ");
    (name, matched, handled_by)
}

/// Where a finished pod stands in the status.
fn tracking_note(facts: &ExplainFacts<'_>, pod: &Pod) -> &'static str {
    let job = &facts.snapshot.job;
    let uid = pod.uid.as_str();
    if !pod.has_tracking_finalizer {
        "counted already (no tracking finalizer)"
    } else if facts
        .snapshot
        .expectations
        .finalizer_removals_pending
        .contains(uid)
    {
        "its finalizer removal is not yet observed"
    } else if facts.initially_uncounted_succeeded.contains(uid)
        || facts.initially_uncounted_failed.contains(uid)
    {
        "in uncountedTerminatedPods: counted once its finalizer is gone"
    } else if job.spec.is_indexed() && valid_index(job, pod).is_none() {
        "its completion index is missing or out of range: never counted"
    } else {
        "newly finished: this plan records it"
    }
}
