//! Matching a failed pod against the extended failure policy document.
//!
//! The order: a pod this controller failed for one of the document's timeouts
//! takes that timeout's `action` (an implicit first rule named after it,
//! [`Timeout::rule_name`]); then the document's rules in order, a rule holding only
//! when every matcher it has holds (within a matcher, any one container,
//! condition or reason suffices, as in upstream's rules). When none holds the
//! sync falls through to the Job's own `spec.podFailurePolicy`, unchanged.
//!
//! Matching borrows from the pod and allocates nothing: the sync matches
//! every failed pod. Only messages and explanations copy what matched.

use std::cmp::Ordering;

use super::{NAMED_RULE_REASON_PREFIX, PENDING_TIMEOUT_CONDITION};
use crate::matched_on::{Asked, MatchedOn, subject};
use crate::model::{
    ConditionMatcher, ContainerReasonMatcher, ContainerTermination, ExitCodeMatcher,
    ExtendedAction, ExtendedFailurePolicy, ExtendedRule,
};
use crate::model::{ConditionStatus, Job, Pod, PodFailurePolicyAction, RetryLimit};
use crate::pod_failure_policy::{first_condition, first_exit_code};
use crate::text::{ordinal, truncated};

use super::timeouts::Timeout;
// The implicit rules' names live with the timeouts, which name their FailPods after them.
pub use super::timeouts::{
    ATTEMPT_DEADLINE_RULE, PENDING_TIMEOUT_RULE, READY_TIMEOUT_RULE, TERMINATING_TIMEOUT_RULE,
};
/// The Failed reason of a FailJob from an unnamed rule (upstream's).
pub const UNNAMED_RULE_REASON: &str = "PodFailurePolicy";
/// Longest text a message quotes from the pod (a reason, a container name), in bytes.
pub const MAX_QUOTED_BYTES: usize = 128;
/// Longest FailJob message, in bytes.
pub const MAX_FAIL_JOB_MESSAGE_BYTES: usize = 1024;

/// Which part of the document handled a failed pod.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DocumentRule {
    /// The implicit rule of pods this timeout failed (before the document's
    /// rules; its name is [`Timeout::rule_name`]).
    Timeout(Timeout),
    /// `rules[i]` of the document.
    Rule(u16),
}

impl DocumentRule {
    /// The index in the document's `rules`, for an explicit rule.
    pub fn index(self) -> Option<usize> {
        match self {
            DocumentRule::Timeout(_) => None,
            DocumentRule::Rule(i) => Some(usize::from(i)),
        }
    }
}

/// How the document handles a failed pod: the rule, and the action it takes
/// once the rule's retry limit (if any) is applied.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DocumentMatch {
    /// The rule that matched.
    pub rule: DocumentRule,
    /// The action the pod takes: the rule's, or its `whenRetriesExhausted`.
    pub action: ExtendedAction,
    /// For a rule with a retry limit, which match of the rule in the pod's
    /// scope this is (1 for the first); 0 for a rule without one.
    pub ordinal: u32,
    /// The rule's retry limit was used up: `action` is `whenRetriesExhausted`.
    pub exhausted: bool,
}

/// What a matcher matched on, borrowed from the pod.
#[derive(Clone, Copy)]
enum Hit<'a> {
    ExitCode(&'a str, i32, bool),
    Condition(&'a str, &'a ConditionStatus),
    PodReason(&'a str),
    ContainerReason(&'a ContainerTermination),
    Message(Option<&'a ContainerTermination>),
}

impl Hit<'_> {
    /// The owned description, its pod-supplied texts bounded.
    fn to_owned(self) -> MatchedOn {
        let quoted = |s: &str| truncated(s, MAX_QUOTED_BYTES).into_owned();
        match self {
            Hit::ExitCode(container, exit_code, init_container) => MatchedOn::ExitCode {
                container: quoted(container),
                exit_code,
                init_container,
            },
            Hit::Condition(condition_type, status) => MatchedOn::Condition {
                condition_type: quoted(condition_type),
                status: status.clone(),
            },
            Hit::PodReason(reason) => MatchedOn::PodReason {
                reason: quoted(reason),
            },
            Hit::ContainerReason(t) => MatchedOn::ContainerReason {
                container: quoted(&t.container),
                reason: quoted(&t.reason),
                init_container: t.init_container,
            },
            Hit::Message(t) => MatchedOn::Message {
                container: t.map(|t| quoted(&t.container)),
            },
        }
    }
}

/// The static upstream action equal to a document action, so the sync's steps
/// read a document's decision exactly as they read a `spec.podFailurePolicy` one.
pub fn policy_action_of(action: ExtendedAction) -> &'static PodFailurePolicyAction {
    static FAIL_JOB: PodFailurePolicyAction = PodFailurePolicyAction::FailJob;
    static FAIL_INDEX: PodFailurePolicyAction = PodFailurePolicyAction::FailIndex;
    static IGNORE: PodFailurePolicyAction = PodFailurePolicyAction::Ignore;
    static COUNT: PodFailurePolicyAction = PodFailurePolicyAction::Count;
    match action {
        ExtendedAction::FailJob => &FAIL_JOB,
        ExtendedAction::FailIndex => &FAIL_INDEX,
        ExtendedAction::Ignore => &IGNORE,
        ExtendedAction::Count => &COUNT,
    }
}

/// The first part of the document that handles the failed pod (steps 1 and 2),
/// before any retry limit; `None` sends the pod on to `spec.podFailurePolicy`.
pub fn first_document_rule(policy: &ExtendedFailurePolicy, pod: &Pod) -> Option<DocumentRule> {
    if let Some(timeout) = super::timeouts::failed_by(policy, pod) {
        return Some(DocumentRule::Timeout(timeout));
    }
    let index = policy.rules.iter().position(|rule| rule_holds(rule, pod))?;
    // Validation allows 20 rules; an index past u16 cannot come from a valid document.
    u16::try_from(index).ok().map(DocumentRule::Rule)
}

/// The retry limit of a part of the document, if it has one.
pub fn retry_limit(policy: &ExtendedFailurePolicy, rule: DocumentRule) -> Option<RetryLimit> {
    policy.rules.get(rule.index()?)?.retry_limit
}

/// The `maxRetries` of a part of the document, if it has a limit.
pub fn max_retries(policy: &ExtendedFailurePolicy, rule: DocumentRule) -> Option<i32> {
    retry_limit(policy, rule).map(|l| l.max_retries)
}

/// Rule `name`'s count in the pod's [`RULE_MATCH_COUNTS_ANNOTATION`]; 0 when absent.
pub fn carried(pod: &Pod, name: &str) -> i32 {
    pod.failure_details
        .as_ref()
        .and_then(|d| {
            d.rule_match_counts
                .iter()
                .filter(|(n, _)| n == name)
                .map(|(_, c)| *c)
                .max()
        })
        .unwrap_or(0)
        .max(0)
}

/// How the document handles a failed pod that matched `rule`, given the pod's
/// `rank` among its scope's failures of the rule (0 when unknown; the
/// counting is `retry_limits`'s): the rule's
/// action, or `whenRetriesExhausted` once the ordinal passes `maxRetries`.
pub fn judge(
    policy: &ExtendedFailurePolicy,
    rule: DocumentRule,
    pod: &Pod,
    rank: u32,
) -> DocumentMatch {
    let action = rule_action(policy, rule);
    let Some(limit) = retry_limit(policy, rule) else {
        return DocumentMatch {
            rule,
            action,
            ordinal: 0,
            exhausted: false,
        };
    };
    let name = rule_name(policy, rule);
    let carried = name.map_or(0, |n| carried(pod, n));
    let from_pod = u32::try_from(carried).unwrap_or(0).saturating_add(1);
    let ordinal = from_pod.max(rank);
    let exhausted = i64::from(ordinal) > i64::from(limit.max_retries);
    DocumentMatch {
        rule,
        action: if exhausted { limit.then } else { action },
        ordinal,
        exhausted,
    }
}

/// How the document handles the failed pod, its retry limit judged from what
/// the pod itself carries (the sync raises the ordinal with the pod's rank
/// among its scope's failures: `retry_limits::apply_retry_limits`).
pub fn match_document(policy: &ExtendedFailurePolicy, pod: &Pod) -> Option<DocumentMatch> {
    let rule = first_document_rule(policy, pod)?;
    Some(judge(policy, rule, pod, 0))
}

/// The action of a part of the document, before any retry limit.
pub fn rule_action(policy: &ExtendedFailurePolicy, rule: DocumentRule) -> ExtendedAction {
    match rule {
        DocumentRule::Timeout(t) => t.action(policy).unwrap_or(ExtendedAction::Count),
        DocumentRule::Rule(i) => policy
            .rules
            .get(usize::from(i))
            .map_or(ExtendedAction::Count, |r| r.action),
    }
}

/// The rule's name: the implicit rule's, an explicit rule's own, or `None`.
pub fn rule_name(policy: &ExtendedFailurePolicy, rule: DocumentRule) -> Option<&str> {
    match rule {
        DocumentRule::Timeout(t) => Some(t.rule_name()),
        DocumentRule::Rule(i) => policy.rules.get(usize::from(i))?.name.as_deref(),
    }
}

/// The rule as messages name it: `"oom"`, or `at index 2 of the failure policy document`.
pub fn rule_label(policy: &ExtendedFailurePolicy, rule: DocumentRule) -> String {
    match (rule_name(policy, rule), rule) {
        (Some(name), _) => format!("{:?}", truncated(name, MAX_QUOTED_BYTES)),
        (None, DocumentRule::Rule(i)) => {
            format!("at index {i} of the failure policy document")
        }
        (None, DocumentRule::Timeout(t)) => format!("{:?}", t.rule_name()),
    }
}

/// The FailureTarget/Failed reason of a FailJob the rule causes:
/// `PodFailurePolicy_{name}` for a named rule (KEP-4443), `PodFailurePolicy` otherwise.
pub fn fail_job_reason(policy: &ExtendedFailurePolicy, rule: DocumentRule) -> String {
    match rule_name(policy, rule) {
        Some(name) => format!("{NAMED_RULE_REASON_PREFIX}{name}"),
        None => UNNAMED_RULE_REASON.into(),
    }
}

/// What each matcher of the rule matched on the pod, in the document's matcher
/// order (exit codes, conditions, pod reasons, container reasons, message);
/// empty when the rule does not hold.
pub fn matched_on(policy: &ExtendedFailurePolicy, rule: DocumentRule, pod: &Pod) -> Vec<MatchedOn> {
    match rule {
        DocumentRule::Timeout(t) => vec![MatchedOn::Timeout(t)],
        DocumentRule::Rule(i) => policy
            .rules
            .get(usize::from(i))
            .and_then(|r| rule_hits(r, pod))
            .map(|hits| hits.into_iter().flatten().map(Hit::to_owned).collect())
            .unwrap_or_default(),
    }
}

/// The FailureTarget message of a FailJob the document decided, in upstream's
/// words where upstream has them, naming the rule and, when a retry limit ran
/// out, which match it was and in which scope. Bounded.
pub fn fail_job_message(job: &Job, m: &DocumentMatch, pod: &Pod) -> String {
    let Some(policy) = job.extended_failure_policy.as_deref() else {
        return String::new();
    };
    let on = matched_on(policy, m.rule, pod);
    let subject = subject(on.first(), &job.namespace, &pod.name);
    let label = rule_label(policy, m.rule);
    let message = if m.exhausted {
        let max = max_retries(policy, m.rule).unwrap_or(0);
        format!(
            "{subject} matching rule {label} for the {} time in {}: its {max} retries are used up",
            ordinal(i64::from(m.ordinal)),
            scope_text(job, pod)
        )
    } else {
        format!("{subject} matching FailJob rule {label}")
    };
    truncated(&message, MAX_FAIL_JOB_MESSAGE_BYTES).into_owned()
}

/// `index 3` for an Indexed Job's pod, `the Job` otherwise.
pub fn scope_text(job: &Job, pod: &Pod) -> String {
    match (job.spec.is_indexed(), pod.completion_index) {
        (true, Some(ix)) => format!("index {ix}"),
        (true, None) => "no valid index".into(),
        (false, _) => "the Job".into(),
    }
}

/// What a part of the document asked for, as a description of its match shows
/// it: the exit codes as the document writes them (`In 42, 128-255`) and the
/// message pattern, bounded.
pub fn asked(policy: &ExtendedFailurePolicy, rule: DocumentRule) -> Asked {
    let r = rule.index().and_then(|i| policy.rules.get(i));
    Asked {
        exit_codes: r
            .and_then(|r| r.on_exit_codes.as_ref())
            .map(|m| format!("{} {}", m.operator.as_str(), codes_text(&m.codes))),
        message_pattern: r
            .and_then(|r| r.on_message.as_ref())
            .map(|m| truncated(m.source(), MAX_QUOTED_BYTES).into_owned()),
    }
}

/// Intervals as the document could write them: `42, 128-255`.
pub fn codes_text(codes: &[(i32, i32)]) -> String {
    let parts: Vec<String> = codes
        .iter()
        .map(|&(lo, hi)| {
            if lo == hi {
                lo.to_string()
            } else {
                format!("{lo}-{hi}")
            }
        })
        .collect();
    parts.join(", ")
}

/// The most message bytes one sync's `onMessage` patterns can search: each pod's own message
/// and its containers' termination messages, once per rule with a pattern. A sync matches a
/// pod against the document once (`SyncPod`), and re-reads what matched only for the one pod
/// a FailJob message or an explanation names, so this bounds its matching up to a small
/// constant; the wire crate refuses a call above its budget before deciding.
pub fn message_scan_bound(policy: &ExtendedFailurePolicy, pods: &[Pod]) -> u64 {
    let patterns = policy
        .rules
        .iter()
        .filter(|r| r.on_message.is_some())
        .count();
    if patterns == 0 {
        return 0;
    }
    let bytes = pods
        .iter()
        .filter_map(|p| p.failure_details.as_ref())
        .map(|d| {
            let own = d.message.len();
            let containers = d.terminations.iter().map(|t| t.message.len());
            containers.fold(own, usize::saturating_add)
        })
        .fold(0u64, |sum, b| {
            sum.saturating_add(u64::try_from(b).unwrap_or(u64::MAX))
        });
    bytes.saturating_mul(u64::try_from(patterns).unwrap_or(u64::MAX))
}

/// Whether the pod carries this controller's pending-timeout condition with status True.
pub fn has_pending_timeout_condition(pod: &Pod) -> bool {
    pod.conditions.iter().any(|c| {
        &*c.condition_type == PENDING_TIMEOUT_CONDITION && c.status == ConditionStatus::True
    })
}

/// Whether every matcher the rule has holds; a rule without matchers holds for nothing.
fn rule_holds(rule: &ExtendedRule, pod: &Pod) -> bool {
    rule_hits(rule, pod).is_some()
}

/// Each matcher's first hit, in matcher order (`None` for a matcher the rule
/// does not have), when the rule has at least one matcher and all of them hold.
fn rule_hits<'a>(rule: &ExtendedRule, pod: &'a Pod) -> Option<[Option<Hit<'a>>; 5]> {
    let mut hits = [None; 5];
    let mut any = false;
    if let Some(m) = &rule.on_exit_codes {
        hits[0] = Some(exit_code_hit(m, pod)?);
        any = true;
    }
    if !rule.on_pod_conditions.is_empty() {
        hits[1] = Some(condition_hit(&rule.on_pod_conditions, pod)?);
        any = true;
    }
    if !rule.on_pod_reasons.is_empty() {
        let reason = pod.failure_details.as_ref().map(|d| d.reason.as_str())?;
        if reason.is_empty() || !rule.on_pod_reasons.iter().any(|r| r == reason) {
            return None;
        }
        hits[2] = Some(Hit::PodReason(reason));
        any = true;
    }
    if let Some(m) = &rule.on_container_reasons {
        hits[3] = Some(container_reason_hit(m, pod)?);
        any = true;
    }
    if let Some(m) = &rule.on_message {
        let details = pod.failure_details.as_ref()?;
        let found = |text: &str| !text.is_empty() && m.is_match(text);
        let hit = if found(&details.message) {
            Hit::Message(None)
        } else {
            let t = terminations_in_order(&details.terminations).find(|t| found(&t.message))?;
            Hit::Message(Some(t))
        };
        hits[4] = Some(hit);
        any = true;
    }
    any.then_some(hits)
}

/// Upstream's onExitCodes over the interval set (the shared matcher,
/// [`first_exit_code`], with the document's intervals for upstream's values).
fn exit_code_hit<'a>(m: &ExitCodeMatcher, pod: &'a Pod) -> Option<Hit<'a>> {
    let (_, status, init) =
        first_exit_code(pod, m.container_name.as_deref(), &m.operator, |code| {
            codes_contain(&m.codes, code)
        })?;
    let exit_code = status.terminated.as_ref()?.exit_code;
    Some(Hit::ExitCode(&status.name, exit_code, init))
}

/// Whether the sorted, disjoint, inclusive intervals hold `code`.
pub fn codes_contain(codes: &[(i32, i32)], code: i32) -> bool {
    codes
        .binary_search_by(|&(lo, hi)| {
            if hi < code {
                Ordering::Less
            } else if lo > code {
                Ordering::Greater
            } else {
                Ordering::Equal
            }
        })
        .is_ok()
}

/// The first pod condition, in pod order, equal in type and status to any pattern
/// (the shared matcher, [`first_condition`]).
fn condition_hit<'a>(patterns: &[ConditionMatcher], pod: &'a Pod) -> Option<Hit<'a>> {
    let (_, c) = first_condition(pod, |c| {
        patterns
            .iter()
            .any(|p| *p.condition_type == *c.condition_type && p.status == c.status)
    })?;
    Some(Hit::Condition(&c.condition_type, &c.status))
}

/// The first terminated container the name admits whose reason is listed.
fn container_reason_hit<'a>(m: &ContainerReasonMatcher, pod: &'a Pod) -> Option<Hit<'a>> {
    let details = pod.failure_details.as_ref()?;
    terminations_in_order(&details.terminations)
        .find(|t| {
            m.container_name
                .as_deref()
                .is_none_or(|name| name == &*t.container)
                && !t.reason.is_empty()
                && m.reasons.contains(&t.reason)
        })
        .map(Hit::ContainerReason)
}

/// Terminated containers as exit codes are searched: regular ones, then init ones.
fn terminations_in_order(
    terminations: &[ContainerTermination],
) -> impl Iterator<Item = &ContainerTermination> {
    let regular = terminations.iter().filter(|t| !t.init_container);
    regular.chain(terminations.iter().filter(|t| t.init_container))
}

#[cfg(test)]
mod tests;

#[cfg(test)]
pub(crate) mod test_docs;
