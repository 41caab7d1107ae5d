//! Why a Job's plan is what it is, built from the sync's own facts and
//! decisions (never by applying the rules a second time): what the sync
//! concluded about each pod, why each action, the backoff that holds pods
//! back, and the condition that comes next.
//!
//! Built only when asked for ([`crate::sync::decide_explained`]): a caller
//! that does not ask pays nothing. Bounded however large the Job: pods with
//! the same verdict are grouped, every list keeps its first entries and counts
//! the rest, every index list its first intervals, every text its first bytes.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::fmt::Write as _;
use std::time::Duration;

use crate::extended::retry_limits;
use crate::extended::rules::{self, DocumentMatch, DocumentRule};
use crate::index_set::IndexSet;
use crate::indexed::{index_failed, valid_index};
use crate::manage::{BackoffHold, MAX_POD_CREATE_DELETE_PER_SYNC, ManageWhy};
use crate::model::ExtendedFailurePolicy;
use crate::model::{
    ConditionStatus, JobCondition, JobConditionType, JobStatus, Pod, PodFailurePolicy,
    PodFailurePolicyAction, PodPhase, Snapshot,
};
use crate::plan::{Action, Plan, PodRef};
use crate::pod_failure_policy::{MatchedOn, match_pod_failure_policy};
use crate::sync_pod::SyncPod;
use crate::time::Time;
use crate::text::{Capped, human_duration, ordinal, truncated};

use crate::text::{MAX_EXPLANATION_ENTRIES, MAX_MESSAGE_BYTES, MAX_TEXT_BYTES};
/// Most pod names one group lists.
pub const MAX_PODS_PER_GROUP: usize = 10;
/// Most intervals an index list keeps.
pub const MAX_INDEX_INTERVALS: usize = 100;

/// What a terminal condition waits for when nothing else holds it back.
const NEXT_SYNC: &str = "the next sync";

/// Why one sync's plan is what it is.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct JobExplanation {
    /// One line saying what happens.
    pub summary: String,
    /// The pods, grouped by verdict, rule and detail, in the order of each group's first pod.
    pub pods: Capped<PodGroup>,
    /// Why each action, in plan order.
    pub action_reasons: Capped<ActionReason>,
    /// The completed indexes after this sync (Indexed Jobs).
    pub completed_indexes: Option<IndexSummary>,
    /// The failed indexes after this sync (backoffLimitPerIndex).
    pub failed_indexes: Option<IndexSummary>,
    /// The backoff that holds pod creation back.
    pub backoff: Option<BackoffWait>,
    /// The condition the Job is finishing with, or its active deadline ahead.
    pub coming_condition: Option<ComingCondition>,
    /// Why the plan is empty: another controller manages the Job.
    pub not_managed: Option<NotManaged>,
    /// Why the plan asks to decide again; empty when it does not.
    pub requeue_reason: String,
}

/// What the sync concluded about a pod.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Verdict {
    /// It succeeded: it counts towards completions.
    Succeeded,
    /// It failed and counts towards backoffLimit (or its index's backoffLimitPerIndex).
    FailedCounted,
    /// It failed and an Ignore rule matched: not counted.
    FailedIgnored,
    /// It failed and a FailJob rule matched: the Job fails.
    FailsJob,
    /// It failed its index: a FailIndex rule, or the index reached backoffLimitPerIndex.
    FailsIndex,
    /// Pending or running.
    Running,
    /// Being deleted, not yet finished, and not counted as failed.
    Terminating,
    /// Owned, but its labels no longer match the selector: released.
    Released,
    /// Not the Job's: another controller's, or an orphan it does not adopt.
    NotClaimed,
}

impl Verdict {
    /// The name the API uses.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Succeeded => "Succeeded",
            Verdict::FailedCounted => "FailedCounted",
            Verdict::FailedIgnored => "FailedIgnored",
            Verdict::FailsJob => "FailsJob",
            Verdict::FailsIndex => "FailsIndex",
            Verdict::Running => "Running",
            Verdict::Terminating => "Terminating",
            Verdict::Released => "Released",
            Verdict::NotClaimed => "NotClaimed",
        }
    }
}

/// Pods with the same verdict, matched rule and detail.
#[derive(Clone, Debug, PartialEq)]
pub struct PodGroup {
    /// What the sync concluded.
    pub verdict: Verdict,
    /// How many pods.
    pub count: usize,
    /// The first of them, by name, in request order.
    pub pods: Capped<String>,
    /// Their completion indexes (Indexed Jobs).
    pub indexes: Option<IndexSummary>,
    /// The pod failure policy rule that matched, and its action.
    pub rule: Option<(usize, PodFailurePolicyAction)>,
    /// The extended failure policy document's rule that handled the pods
    /// (then `rule` is `None`): its name, `rules[i]` when unnamed, or
    /// `PendingTimeout` for pods failed for their pending timeout.
    pub extended_rule: Option<String>,
    /// What the rule matched, e.g. `exit code 42 of container "main" (In [42])`.
    pub matched: String,
    /// Why, in words, and where the pods stand in the status.
    pub detail: String,
    /// Orphans the Job adopts in this plan.
    pub adopted: bool,
}

/// A set of completion indexes, its first intervals written out.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IndexSummary {
    /// The first [`MAX_INDEX_INTERVALS`] intervals, as the status writes them.
    pub text: String,
    /// How many indexes the whole set holds.
    pub count: u64,
    /// Intervals left out of `text`.
    pub intervals_omitted: usize,
}

impl IndexSummary {
    /// The summary of `set`.
    pub fn of(set: &IndexSet) -> Self {
        let intervals = set.intervals();
        let kept = intervals.len().min(MAX_INDEX_INTERVALS);
        let text = if kept == intervals.len() {
            set.to_string()
        } else {
            IndexSet::from_intervals(intervals[..kept].iter().copied()).to_string()
        };
        IndexSummary {
            text,
            count: set.total(),
            intervals_omitted: intervals.len() - kept,
        }
    }
}

/// Why the plan has one of its actions.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ActionReason {
    /// Position of the action in the plan.
    pub action: usize,
    /// Machine-readable cause.
    pub reason: &'static str,
    /// For people.
    pub message: String,
    /// How many of the action's pods this cause covers.
    pub pods: usize,
}

/// The pod-failure backoff that holds pod creation back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BackoffWait {
    /// When pods may be created again.
    pub until: Time,
    /// The whole delay.
    pub delay: Duration,
    /// The failures it counts.
    pub failures: i32,
    /// When the last of them happened.
    pub last_failure: Time,
    /// The index whose replacement waits (backoffLimitPerIndex).
    pub index: Option<i32>,
}

/// The condition that follows.
#[derive(Clone, Debug, PartialEq)]
pub struct ComingCondition {
    /// FailureTarget or SuccessCriteriaMet, when one comes first.
    pub interim: Option<JobConditionType>,
    /// Failed or Complete.
    pub terminal: JobConditionType,
    /// The conditions' reason.
    pub reason: String,
    /// The conditions' message.
    pub message: String,
    /// Whether this plan writes the terminal condition.
    pub terminal_now: bool,
    /// What the terminal condition waits for, when not now.
    pub waits_for: String,
    /// For an active deadline ahead: when it passes.
    pub at: Option<Time>,
}

/// Another controller manages the Job.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NotManaged {
    /// The Job's spec.managedBy.
    pub managed_by: String,
    /// The controller the request decided for.
    pub controller_name: String,
    /// For people.
    pub message: String,
}

/// The facts of one sync the explanation reads, all of them the sync's own.
pub(crate) struct ExplainFacts<'a> {
    /// The snapshot.
    pub snapshot: &'a Snapshot,
    /// The claimed pods, with the sync's conclusions about them.
    pub pods: &'a [SyncPod<'a>],
    /// Succeeded UIDs in `uncountedTerminatedPods` before the sync.
    pub initially_uncounted_succeeded: &'a BTreeSet<&'a str>,
    /// Failed UIDs in `uncountedTerminatedPods` before the sync.
    pub initially_uncounted_failed: &'a BTreeSet<&'a str>,
    /// Completed indexes after the sync.
    pub succeeded_indexes: &'a IndexSet,
    /// Failed indexes after the sync.
    pub failed_indexes: Option<&'a IndexSet>,
    /// Per index, the failed pod kept until its replacement exists.
    pub delayed: &'a BTreeMap<i32, SyncPod<'a>>,
    /// Succeeded pods or indexes, counted or not.
    pub succeeded: i32,
    /// Failed pods that count, counted or not.
    pub failed: i32,
    /// The condition the sync found the Job finishing with.
    pub finishing: Option<&'a JobCondition>,
    /// The sync deleted the active pods because the Job is finishing (not manage's doing).
    pub finishing_deletes: bool,
    /// No earlier creation or deletion is unobserved.
    pub expectations_satisfied: bool,
    /// What manage decided on, when the sync called it.
    pub manage: Option<ManageWhy>,
    /// When the active deadline passes, when it is ahead.
    pub deadline: Option<Time>,
}

/// Text from the request, cut for an explanation.
fn text(s: &str) -> String {
    truncated(s, MAX_TEXT_BYTES).into_owned()
}

/// The explanation of an empty plan for a Job another controller manages.
pub(crate) fn not_managed(managed_by: &str, deciding_for: &str) -> JobExplanation {
    let message = format!(
        "spec.managedBy is {:?}: that controller manages the Job, and this request decides for {:?}; \
         to decide as that controller, send controller_name {:?}",
        text(managed_by),
        text(deciding_for),
        text(managed_by)
    );
    JobExplanation {
        summary: truncated(
            &format!(
                "Nothing to do: the Job is managed by {:?}",
                text(managed_by)
            ),
            MAX_MESSAGE_BYTES,
        )
        .into_owned(),
        not_managed: Some(NotManaged {
            managed_by: text(managed_by),
            controller_name: text(deciding_for),
            message: truncated(&message, MAX_MESSAGE_BYTES).into_owned(),
        }),
        ..JobExplanation::default()
    }
}

/// The explanation of a finished Job's plan: only finalizers are left to remove.
pub(crate) fn finished(snapshot: &Snapshot, plan: &Plan) -> JobExplanation {
    let status = &snapshot.job.status;
    let condition = status
        .conditions
        .iter()
        .find(|c| {
            c.status == ConditionStatus::True
                && matches!(
                    c.condition_type,
                    JobConditionType::Complete | JobConditionType::Failed
                )
        })
        .map(|c| format!("{} ({})", c.condition_type.as_str(), text(&c.reason)))
        .unwrap_or_default();
    let mut explanation = JobExplanation {
        summary: format!(
            "The Job has finished {condition}: it is never changed again; only the tracking finalizers left on its pods are removed"
        ),
        ..JobExplanation::default()
    };
    for (i, action) in plan.actions.iter().enumerate() {
        if let Action::RemoveFinalizers(pods) = action {
            explanation.action_reasons.push_with(|| ActionReason {
                action: i,
                reason: "JobFinished",
                message:
                    "the Job has finished: its pods' tracking finalizers go, so they can be removed"
                        .into(),
                pods: pods.len(),
            });
        }
    }
    explanation
}

/// The explanation of the warning a Job of an unknown completion mode gets.
pub(crate) fn unknown_mode(plan: &Plan) -> JobExplanation {
    let mut explanation = JobExplanation {
        summary: "The Job's completion mode is unknown to this version: the sync is skipped".into(),
        ..JobExplanation::default()
    };
    for i in 0..plan.actions.len() {
        explanation.action_reasons.push_with(|| ActionReason {
            action: i,
            reason: "UnknownCompletionMode",
            message: "upstream records this warning and skips the sync".into(),
            pods: 0,
        });
    }
    explanation
}

/// The explanation of one sync of a running Job.
pub(crate) fn sync(facts: &ExplainFacts<'_>, plan: &Plan) -> JobExplanation {
    let job = &facts.snapshot.job;
    let mut explanation = JobExplanation {
        pods: pod_groups(facts, plan),
        ..JobExplanation::default()
    };
    if job.spec.is_indexed() {
        explanation.completed_indexes = Some(IndexSummary::of(facts.succeeded_indexes));
        explanation.failed_indexes = facts.failed_indexes.map(IndexSummary::of);
    }
    let waiting = plan.requeue_after.is_some()
        && !plan
            .actions
            .iter()
            .any(|a| matches!(a, Action::CreatePods(_)));
    explanation.backoff = facts
        .manage
        .and_then(|m| m.backoff)
        .filter(|_| waiting)
        .map(|hold: BackoffHold| BackoffWait {
            until: hold.last_failure.saturating_add(hold.delay),
            delay: hold.delay,
            failures: hold.failures,
            last_failure: hold.last_failure,
            index: hold.index,
        });
    explanation.coming_condition = coming_condition(facts, plan);
    explanation.action_reasons = action_reasons(facts, plan);
    explanation.requeue_reason = requeue_reason(facts, &explanation, plan);
    explanation.summary =
        truncated(&summary(facts, &explanation, plan), MAX_MESSAGE_BYTES).into_owned();
    explanation
}

/// A group of pods being built: the indexes are gathered, then made a set.
struct GroupBuilder {
    group: PodGroup,
    indexes: Vec<i32>,
}

/// What tells two groups apart.
type GroupKey = (Verdict, Option<usize>, Option<String>, String, String, bool);

/// The pods grouped by what the sync concluded about them.
fn pod_groups(facts: &ExplainFacts<'_>, plan: &Plan) -> Capped<PodGroup> {
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
    // The rule the sync matched; what it matched on is read from the same matcher.
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
        (None, Some(action)) => match job.spec.pod_failure_policy.as_ref() {
            Some(policy) => {
                let decision = match_pod_failure_policy(Some(policy), &job.namespace, pod);
                let matched = decision
                    .rule_index
                    .zip(decision.matched_on.as_ref())
                    .map(|(i, on)| describe_match(policy, i, on))
                    .unwrap_or_default();
                (
                    decision.rule_index.map(|i| (i, action)),
                    None,
                    matched,
                    String::new(),
                )
            }
            None => (None, None, String::new(), String::new()),
        },
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
    let on = rules::matched_on(policy, m.rule, pod);
    let matched: Vec<String> = on
        .iter()
        .map(|o| rules::describe_matched_on(policy, m.rule, o))
        .collect();
    let matched = text(&matched.join(" and "));
    let which = match m.rule {
        DocumentRule::PendingTimeout => {
            "the failure policy document's pendingTimeout (rule \"PendingTimeout\")".to_string()
        }
        DocumentRule::Rule(i) => match rules::rule_name(policy, m.rule) {
            Some(_) => format!(
                "failure policy document rule {}",
                rules::rule_label(policy, m.rule)
            ),
            None => format!("rule at index {i} of the failure policy document"),
        },
    };
    let own_action = rules::rule_action(policy, m.rule).as_str();
    let limit = match retry_limits::max_retries(policy, m.rule) {
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

/// What a rule matched, with the rule's own requirement.
fn describe_match(policy: &PodFailurePolicy, rule_index: usize, on: &MatchedOn) -> String {
    let rule = policy.rules.get(rule_index);
    let described = match on {
        MatchedOn::ExitCode {
            container,
            exit_code,
            init_container,
        } => {
            let kind = if *init_container {
                "init container"
            } else {
                "container"
            };
            let requirement = rule
                .and_then(|r| r.on_exit_codes.as_ref())
                .map(|c| format!(" ({} {:?})", c.operator.as_str(), c.values))
                .unwrap_or_default();
            format!("exit code {exit_code} of {kind} {container:?}{requirement}")
        }
        MatchedOn::Condition { condition_type } => {
            let status = rule
                .and_then(|r| {
                    r.on_pod_conditions
                        .iter()
                        .find(|p| p.condition_type == *condition_type)
                })
                .map_or("True", |p| p.status.as_str());
            format!("condition {condition_type}={status}")
        }
    };
    text(&described)
}

/// The condition that follows: the one the Job is finishing with, or its deadline ahead.
fn coming_condition(facts: &ExplainFacts<'_>, plan: &Plan) -> Option<ComingCondition> {
    let job = &facts.snapshot.job;
    let Some(cond) = facts.finishing else {
        let at = facts.deadline?;
        return Some(ComingCondition {
            interim: Some(JobConditionType::FailureTarget),
            terminal: JobConditionType::Failed,
            reason: "DeadlineExceeded".into(),
            message: "Job was active longer than specified deadline".into(),
            terminal_now: false,
            waits_for: "the active deadline passes, unless the Job finishes first".into(),
            at: Some(at),
        });
    };
    let (interim, terminal) = match &cond.condition_type {
        JobConditionType::FailureTarget | JobConditionType::Failed => (
            Some(JobConditionType::FailureTarget),
            JobConditionType::Failed,
        ),
        JobConditionType::SuccessCriteriaMet | JobConditionType::Complete => (
            Some(JobConditionType::SuccessCriteriaMet),
            JobConditionType::Complete,
        ),
        other => (None, other.clone()),
    };
    let last_status = plan.actions.iter().rev().find_map(|a| match a {
        Action::UpdateStatus(s) => Some(&**s),
        _ => None,
    });
    let terminal_now = last_status.is_some_and(|s| s.has_true_condition(&terminal))
        && !job.status.has_true_condition(&terminal);
    let waits_for = if terminal_now {
        String::new()
    } else if !facts.expectations_satisfied {
        "earlier pod creations and deletions are observed".into()
    } else {
        let status = last_status.unwrap_or(&job.status);
        let terminating = status.terminating.unwrap_or(0);
        let uncounted = status
            .uncounted_terminated_pods
            .as_ref()
            .map_or(0, |u| u.succeeded.len() + u.failed.len());
        let mut parts = Vec::new();
        if terminating > 0 {
            parts.push(format!("the {terminating} terminating pod(s) are gone"));
        }
        if uncounted > 0 {
            parts.push(format!(
                "the {uncounted} finished pod(s) in uncountedTerminatedPods are counted (after their finalizers are removed)"
            ));
        }
        if parts.is_empty() {
            NEXT_SYNC.into()
        } else {
            parts.join(" and ")
        }
    };
    Some(ComingCondition {
        interim,
        terminal,
        reason: text(&cond.reason),
        message: truncated(&cond.message, MAX_MESSAGE_BYTES).into_owned(),
        terminal_now,
        waits_for,
        at: None,
    })
}

/// Why each action, in plan order.
fn action_reasons(facts: &ExplainFacts<'_>, plan: &Plan) -> Capped<ActionReason> {
    let job = &facts.snapshot.job;
    let mut reasons = Capped::new(MAX_EXPLANATION_ENTRIES);
    let mut previous: &JobStatus = &job.status;
    let why = facts.manage.unwrap_or_default();
    for (i, action) in plan.actions.iter().enumerate() {
        let mut push = |reason: &'static str, message: String, pods: usize| {
            reasons.push_with(|| ActionReason {
                action: i,
                reason,
                message: truncated(&message, MAX_MESSAGE_BYTES).into_owned(),
                pods,
            });
        };
        match action {
            Action::FailPods(pods) => push(
                "PendingTimeout",
                crate::extended::pending_timeout::describe(
                    job,
                    facts.snapshot.now,
                    &facts.snapshot.pods,
                    pods,
                ),
                pods.len(),
            ),
            Action::AdoptPods(pods) => push(
                "OrphansMatch",
                "orphan pods whose labels match the Job's selector: the Job becomes their controller and adds its tracking finalizer".into(),
                pods.len(),
            ),
            Action::ReleasePods(pods) => push(
                "SelectorMismatch",
                "pods the Job controls whose labels no longer match its selector: released".into(),
                pods.len(),
            ),
            Action::CreatePods(pods) => {
                let (reason, mut message) = creation_reason(facts, &why, pods);
                message.push_str(&crate::extended::node_avoidance::describe(pods));
                push(reason, message, pods.len());
            }
            Action::DeletePods(pods) => {
                let n = pods.len();
                if let Some(cond) = facts.finishing.filter(|_| facts.finishing_deletes) {
                    let counted = if cond.condition_type == JobConditionType::SuccessCriteriaMet {
                        ""
                    } else {
                        "; they keep their finalizer and count as failed"
                    };
                    push(
                        "JobFinishing",
                        format!(
                            "the Job is finishing ({}, reason {}): its active pods are deleted{counted}",
                            cond.condition_type.as_str(),
                            text(&cond.reason)
                        ),
                        n,
                    );
                } else if why.suspended {
                    push(
                        "JobSuspended",
                        "the Job is suspended: its active pods are deleted, their finalizer removed first so they are not counted as failed".into(),
                        n,
                    );
                } else {
                    let conflicts = why.index_conflicts.min(n);
                    if conflicts > 0 {
                        push(
                            "DuplicateIndex",
                            "a second active pod for the same completion index, or an index outside completions: all but the most valuable go".into(),
                            conflicts,
                        );
                    }
                    if n > conflicts {
                        push(
                            "ExcessPods",
                            format!(
                                "the Job wants {} active pod(s) and has {}: the least valuable go, their finalizer removed first so they are not counted as failed",
                                why.want_active, why.active
                            ),
                            n - conflicts,
                        );
                    }
                }
            }
            Action::RemoveFinalizers(pods) => push(
                "FinishedPods",
                if facts.finishing.is_some() || job.being_deleted {
                    "the Job is finishing or being deleted: its pods' tracking finalizers go, the status having recorded them".into()
                } else {
                    "finished pods, recorded in the status or never counted (an Ignore rule): their tracking finalizer goes, so they can be removed".into()
                },
                pods.len(),
            ),
            Action::UpdateStatus(status) => {
                push("StatusChanged", describe_status_change(previous, status), 0);
                previous = status;
            }
            Action::RecordEvent(event) => {
                let message = match event.reason.as_str() {
                    "Suspended" | "Resumed" => "the Job's Suspended condition changes".to_string(),
                    _ if facts.finishing.is_some() => {
                        "recorded with the Job's terminal condition".to_string()
                    }
                    _ => text(&event.message),
                };
                push(
                    match event.reason.as_str() {
                        "Suspended" => "Suspended",
                        "Resumed" => "Resumed",
                        "TooManySucceededPods" => "TooManySucceededPods",
                        _ => "JobFinished",
                    },
                    message,
                    0,
                );
            }
        }
    }
    reasons
}

/// Why pods are created.
fn creation_reason(
    facts: &ExplainFacts<'_>,
    why: &ManageWhy,
    pods: &[crate::plan::PodCreation],
) -> (&'static str, String) {
    let job = &facts.snapshot.job;
    let capped = if pods.len() >= MAX_POD_CREATE_DELETE_PER_SYNC {
        format!(" (at most {MAX_POD_CREATE_DELETE_PER_SYNC} a sync)")
    } else {
        String::new()
    };
    if job.spec.is_indexed() {
        let indexes = IndexSummary::of(&IndexSet::from_indexes(
            pods.iter().filter_map(|p| p.completion_index),
        ));
        let more = if indexes.intervals_omitted > 0 {
            format!(" and {} more intervals", indexes.intervals_omitted)
        } else {
            String::new()
        };
        let plural = indexes.count != 1;
        let (noun, has) = if plural {
            ("indexes", "each have")
        } else {
            ("index", "has")
        };
        let rest = match (job.spec.uses_backoff_limit_per_index(), plural) {
            (true, true) => ", have neither succeeded nor failed, and no backoff holds them back",
            (true, false) => ", has neither succeeded nor failed, and no backoff holds it back",
            (false, true) => " and have not succeeded",
            (false, false) => " and has not succeeded",
        };
        return (
            "PendingIndexes",
            format!(
                "{noun} {}{more} {has} no active pod{rest}{capped}",
                indexes.text
            ),
        );
    }
    let basis = match job.spec.completions {
        None => format!("parallelism {}", job.spec.parallelism),
        Some(c) => format!(
            "the lesser of parallelism {} and completions {c} less {} succeeded",
            job.spec.parallelism, facts.succeeded
        ),
    };
    let terminating = if why.terminating > 0 {
        format!(
            " and {} terminating (replaced only once failed)",
            why.terminating
        )
    } else {
        String::new()
    };
    (
        "MissingPods",
        format!(
            "the Job wants {} active pod(s) ({basis}) and has {}{terminating}{capped}",
            why.want_active, why.active
        ),
    )
}

/// What a status write changes, in words.
fn describe_status_change(before: &JobStatus, after: &JobStatus) -> String {
    let mut parts: Vec<String> = Vec::new();
    let empty = Default::default();
    let (b, a) = (
        before.uncounted_terminated_pods.as_ref().unwrap_or(&empty),
        after.uncounted_terminated_pods.as_ref().unwrap_or(&empty),
    );
    let added = |old: &[String], new: &[String]| {
        let old: HashSet<&str> = old.iter().map(String::as_str).collect();
        new.iter().filter(|u| !old.contains(u.as_str())).count()
    };
    let (new_succeeded, new_failed) = (
        added(&b.succeeded, &a.succeeded),
        added(&b.failed, &a.failed),
    );
    let recorded: Vec<String> = [(new_succeeded, "succeeded"), (new_failed, "failed")]
        .iter()
        .filter(|(n, _)| *n > 0)
        .map(|(n, what)| format!("{n} {what}"))
        .collect();
    if !recorded.is_empty() {
        parts.push(format!(
            "records {} pod(s) in uncountedTerminatedPods",
            recorded.join(" and ")
        ));
    }
    let counter =
        |name: &str, old: i32, new: i32| (old != new).then(|| format!("{name} {old}→{new}"));
    parts.extend(counter("succeeded", before.succeeded, after.succeeded));
    parts.extend(counter("failed", before.failed, after.failed));
    parts.extend(counter("active", before.active, after.active));
    parts.extend(counter(
        "ready",
        before.ready.unwrap_or(0),
        after.ready.unwrap_or(0),
    ));
    parts.extend(counter(
        "terminating",
        before.terminating.unwrap_or(0),
        after.terminating.unwrap_or(0),
    ));
    if before.completed_indexes != after.completed_indexes {
        parts.push(format!(
            "completedIndexes {:?}",
            text(&after.completed_indexes)
        ));
    }
    if before.failed_indexes != after.failed_indexes {
        parts.push(format!(
            "failedIndexes {:?}",
            text(after.failed_indexes.as_deref().unwrap_or(""))
        ));
    }
    for c in &after.conditions {
        let same = before
            .conditions
            .iter()
            .any(|p| p.condition_type == c.condition_type && p.status == c.status);
        if !same {
            parts.push(format!(
                "condition {}={} ({})",
                c.condition_type.as_str(),
                c.status.as_str(),
                text(&c.reason)
            ));
        }
    }
    if before.start_time != after.start_time {
        parts.push(if after.start_time.is_some() {
            "sets startTime".into()
        } else {
            "clears startTime".into()
        });
    }
    if before.completion_time != after.completion_time && after.completion_time.is_some() {
        parts.push("sets completionTime".into());
    }
    if parts.is_empty() {
        if before.uncounted_terminated_pods.is_none() && after.uncounted_terminated_pods.is_some() {
            return "writes uncountedTerminatedPods for the first time".into();
        }
        // Upstream writes the status here although none of the fields above changed
        // (e.g. ready and terminating counted for the first time).
        return "writes the status as upstream does here; no count, index list or condition changes".into();
    }
    parts.join(", ")
}

/// Why the plan asks to decide again.
fn requeue_reason(facts: &ExplainFacts<'_>, explanation: &JobExplanation, plan: &Plan) -> String {
    let Some(after) = plan.requeue_after else {
        return String::new();
    };
    let now = facts.snapshot.now;
    let deadline_wait = facts.deadline.map(|d| d.saturating_since(now));
    let job = &facts.snapshot.job;
    if crate::extended::pending_timeout::next_timeout(job, &facts.snapshot.pods, now) == Some(after)
    {
        return "a pod stuck in Pending reaches the extended policy's pendingTimeout then".into();
    }
    match (&explanation.backoff, deadline_wait) {
        (Some(b), deadline) if deadline.is_none_or(|d| b.until.saturating_since(now) <= d) => {
            let index = b
                .index
                .map(|i| format!(" of index {i}"))
                .unwrap_or_default();
            format!(
                "the pod-failure backoff{index} ends then: {} after the {} failure{}",
                human_duration(b.delay),
                ordinal(i64::from(b.failures)),
                crate::extended::backoff_schedule::describe(job)
            )
        }
        (_, Some(d)) if d <= after => "the active deadline passes then".into(),
        _ => "to look again".into(),
    }
}

/// One line saying what happens.
fn summary(facts: &ExplainFacts<'_>, explanation: &JobExplanation, plan: &Plan) -> String {
    let job = &facts.snapshot.job;
    if let Some(c) = explanation
        .coming_condition
        .as_ref()
        .filter(|c| c.at.is_none())
    {
        let terminal = c.terminal.as_str();
        if c.terminal_now {
            return format!("The Job is {terminal} now (reason {}).", c.reason);
        }
        let interim = c
            .interim
            .as_ref()
            .map(|i| format!("{} (reason {}) now; ", i.as_str(), c.reason))
            .unwrap_or_default();
        let when = if c.waits_for == NEXT_SYNC {
            format!("at {NEXT_SYNC}")
        } else {
            format!("once {}", c.waits_for)
        };
        return format!("The Job is finishing: {interim}{terminal} {when}.");
    }
    if job.being_deleted {
        return "The Job is being deleted: no pods are created or deleted.".into();
    }
    if !facts.expectations_satisfied {
        return "Earlier pod creations or deletions are not yet observed: no pods are created or deleted in this sync.".into();
    }
    let mut line = if job.spec.suspend {
        "The Job is suspended".to_string()
    } else {
        "The Job keeps running".to_string()
    };
    for action in &plan.actions {
        match action {
            Action::CreatePods(p) => {
                let _ = write!(line, "; creates {} pod(s)", p.len());
            }
            Action::DeletePods(p) => {
                let _ = write!(line, "; deletes {} pod(s)", p.len());
            }
            _ => {}
        }
    }
    if let Some(b) = &explanation.backoff {
        let _ = write!(
            line,
            "; pod creation waits for the backoff ({} after the {} failure{})",
            human_duration(b.delay),
            ordinal(i64::from(b.failures)),
            crate::extended::backoff_schedule::describe(job)
        );
    }
    line.push('.');
    line
}

#[cfg(test)]
#[path = "explain_tests.rs"]
mod tests;
