//! Pod failure policy matching (KEP-3329): which rule, if any, a failed pod matches.

use crate::matched_on::{Asked, MatchedOn, subject};
use crate::model::{
    ContainerStatus, ExitCodeOperator, Pod, PodCondition, PodFailurePolicy, PodFailurePolicyAction,
    PodFailurePolicyRule,
};

/// The outcome of matching a failed pod against a policy.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PolicyDecision {
    /// Index of the first matching rule with a known action; `None` when no rule matched.
    pub rule_index: Option<usize>,
    /// That rule's action (never `Unknown`).
    pub action: Option<PodFailurePolicyAction>,
    /// What the rule matched on.
    pub matched_on: Option<MatchedOn>,
    /// For FailJob, the message upstream writes on the FailureTarget condition.
    pub fail_job_message: Option<String>,
}

impl PolicyDecision {
    /// Whether the failure counts towards backoffLimit (everything but Ignore).
    pub fn counts_failure(&self) -> bool {
        counts_failure(self.action.as_ref())
    }
}

/// Whether a failure handled by `action` (`None`: no rule matched) counts
/// towards backoffLimit: every action but Ignore.
pub fn counts_failure(action: Option<&PodFailurePolicyAction>) -> bool {
    action != Some(&PodFailurePolicyAction::Ignore)
}

/// Where in the pod a rule matched: positions, not copies, so that the sync can
/// keep a match for every failed pod at the cost of a few bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum MatchedAt {
    /// `container_statuses[i]`, or `init_container_statuses[i]` when `init`.
    Container { i: u32, init: bool },
    /// `conditions[i]`.
    Condition { i: u32 },
}

/// The first rule of `spec.podFailurePolicy` a failed pod matches and where:
/// the sync keeps it for each failed pod ([`crate::sync_pod`]), and the FailJob
/// message and the explanation read it rather than match again. It names the
/// rule and the pod's status by position, so read it with the same policy and pod.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RuleMatch {
    /// The rule's index in the policy.
    rule: u32,
    /// What it matched on.
    at: MatchedAt,
}

impl RuleMatch {
    /// The rule's index in the policy.
    pub fn rule_index(&self) -> usize {
        self.rule as usize
    }

    /// The rule's action (never `Unknown`), from the policy it was matched against.
    pub fn action<'p>(&self, policy: &'p PodFailurePolicy) -> Option<&'p PodFailurePolicyAction> {
        policy.rules.get(self.rule_index()).map(|r| &r.action)
    }

    /// What the rule matched on, copied out of the pod it was matched against.
    pub fn matched_on(&self, pod: &Pod) -> Option<MatchedOn> {
        Some(match self.at {
            MatchedAt::Container { i, init } => {
                let statuses = if init {
                    &pod.init_container_statuses
                } else {
                    &pod.container_statuses
                };
                let status = statuses.get(i as usize)?;
                MatchedOn::ExitCode {
                    container: status.name.to_string(),
                    exit_code: status.terminated.as_ref()?.exit_code,
                    init_container: init,
                }
            }
            MatchedAt::Condition { i } => {
                let condition = pod.conditions.get(i as usize)?;
                MatchedOn::Condition {
                    condition_type: condition.condition_type.to_string(),
                    status: condition.status.clone(),
                }
            }
        })
    }

    /// The whole decision, for the policy and pod it was matched against;
    /// `namespace` is the pod's (for the FailJob message).
    pub fn decision(
        &self,
        policy: &PodFailurePolicy,
        namespace: &str,
        pod: &Pod,
    ) -> PolicyDecision {
        let action = self.action(policy).cloned();
        let matched_on = self.matched_on(pod);
        let fail_job_message = matched_on
            .as_ref()
            .filter(|_| action == Some(PodFailurePolicyAction::FailJob))
            .map(|on| fail_job_message(on, namespace, &pod.name, self.rule_index()));
        PolicyDecision {
            rule_index: Some(self.rule_index()),
            action,
            matched_on,
            fail_job_message,
        }
    }
}

/// The first rule with a known action that the pod matches, and where.
///
/// Rules are tried in order and the first one that matches with a known action
/// wins. A rule with `onExitCodes` looks only at exit codes; otherwise its
/// `onPodConditions` are consulted. A rule whose action this version does not
/// know is skipped, as upstream's action switch falls through for it.
pub fn first_match(policy: Option<&PodFailurePolicy>, pod: &Pod) -> Option<RuleMatch> {
    policy?
        .rules
        .iter()
        .enumerate()
        .filter(|(_, rule)| !matches!(rule.action, PodFailurePolicyAction::Unknown(_)))
        .find_map(|(rule_index, rule)| {
            let at = match &rule.on_exit_codes {
                Some(requirement) => {
                    let (i, _, init) = first_exit_code(
                        pod,
                        requirement.container_name.as_deref(),
                        &requirement.operator,
                        |code| requirement.values.contains(&code),
                    )?;
                    MatchedAt::Container { i, init }
                }
                None => {
                    let (i, _) = first_condition(pod, |c| {
                        rule.on_pod_conditions
                            .iter()
                            .any(|p| *p.condition_type == *c.condition_type && p.status == c.status)
                    })?;
                    MatchedAt::Condition { i }
                }
            };
            Some(RuleMatch {
                // A policy of more than 2^32 rules cannot be decoded; such a rule never matches.
                rule: u32::try_from(rule_index).ok()?,
                at,
            })
        })
}

/// Matches a failed pod against the policy; `namespace` is the pod's (for FailJob messages).
///
/// The first rule with a known action that matches wins (see [`first_match`]).
pub fn match_pod_failure_policy(
    policy: Option<&PodFailurePolicy>,
    namespace: &str,
    pod: &Pod,
) -> PolicyDecision {
    match (policy, first_match(policy, pod)) {
        (Some(policy), Some(m)) => m.decision(policy, namespace, pod),
        _ => PolicyDecision::default(),
    }
}

/// Upstream's FailureTarget message for a FailJob match, word for word.
fn fail_job_message(matched_on: &MatchedOn, namespace: &str, pod: &str, rule: usize) -> String {
    let subject = subject(Some(matched_on), namespace, pod);
    format!("{subject} matching FailJob rule at index {rule}")
}

/// What an upstream rule asked for, as a description of its match shows it:
/// the exit-code requirement as `In [1, 2]`.
pub fn asked(rule: &PodFailurePolicyRule) -> Asked {
    Asked {
        exit_codes: rule
            .on_exit_codes
            .as_ref()
            .map(|c| format!("{} {:?}", c.operator.as_str(), c.values)),
        message_pattern: None,
    }
}

/// The first terminated container, regular containers before init ones, that
/// `container_name` admits (any, when `None`), whose exit code is not 0 and is
/// In (or NotIn) the set `listed` tests: its position in its list, its status
/// and whether it is an init container. The one exit-code matcher of upstream's
/// `onExitCodes` and of the extended rules' (which list intervals, not values).
pub fn first_exit_code<'a>(
    pod: &'a Pod,
    container_name: Option<&str>,
    operator: &ExitCodeOperator,
    listed: impl Fn(i32) -> bool,
) -> Option<(u32, &'a ContainerStatus, bool)> {
    let regular = pod
        .container_statuses
        .iter()
        .enumerate()
        .map(|(i, s)| (i, s, false));
    let init = pod
        .init_container_statuses
        .iter()
        .enumerate()
        .map(|(i, s)| (i, s, true));
    regular.chain(init).find_map(|(i, status, init_container)| {
        // Running or waiting containers have no exit code to match yet.
        let terminated = status.terminated.as_ref()?;
        if container_name.is_some_and(|name| name != &*status.name) {
            return None;
        }
        // A successful container never explains a pod failure, whatever the operator.
        if terminated.exit_code == 0 {
            return None;
        }
        let holds = match operator {
            ExitCodeOperator::In => listed(terminated.exit_code),
            ExitCodeOperator::NotIn => !listed(terminated.exit_code),
            ExitCodeOperator::Unknown(_) => false,
        };
        // Past 2^32 containers a pod cannot be decoded; such a container never matches.
        holds
            .then(|| u32::try_from(i).ok())
            .flatten()
            .map(|i| (i, status, init_container))
    })
}

/// The first pod condition, in pod order, that `wanted` accepts, and its
/// position (upstream's `onPodConditions`: equal in type and status to any
/// pattern). Shared with the extended rules' `onPodConditions`.
pub fn first_condition(
    pod: &Pod,
    wanted: impl Fn(&PodCondition) -> bool,
) -> Option<(u32, &PodCondition)> {
    let (i, condition) = pod.conditions.iter().enumerate().find(|(_, c)| wanted(c))?;
    Some((u32::try_from(i).ok()?, condition))
}

#[cfg(test)]
mod tests;
