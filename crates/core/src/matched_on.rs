//! What a failure policy rule matched on a failed pod — one type for upstream's
//! `spec.podFailurePolicy` (`pod_failure_policy`) and the extended document's
//! rules (`extended::rules`) — the start of the FailJob message a match gives,
//! and the match described for people. Each policy fills in what its rule asked
//! for ([`Asked`]); the words around it are written here once.

use crate::extended::PENDING_TIMEOUT_CONDITION;
use crate::model::ConditionStatus;
use crate::text::{MAX_TEXT_BYTES, truncated};

/// What a rule matched on, for messages and explanations.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MatchedOn {
    /// The pod carries the pending-timeout condition this controller sets (the
    /// extended document's implicit `PendingTimeout` rule).
    PendingTimeout,
    /// A terminated container's exit code (`onExitCodes`).
    ExitCode {
        /// The container's name.
        container: String,
        /// Its exit code.
        exit_code: i32,
        /// Whether it is an init container.
        init_container: bool,
    },
    /// A pod condition (`onPodConditions`).
    Condition {
        /// The condition's type.
        condition_type: String,
        /// Its status, equal to the status of the pattern that matched it.
        status: ConditionStatus,
    },
    /// The pod's `status.reason` (the document's `onPodReasons`).
    PodReason {
        /// The reason.
        reason: String,
    },
    /// A container's termination reason (the document's `onContainerReasons`).
    ContainerReason {
        /// The container's name.
        container: String,
        /// The reason.
        reason: String,
        /// Whether it is an init container.
        init_container: bool,
    },
    /// A message the pattern was found in (the document's `onMessage`).
    Message {
        /// The terminated container whose message it is; `None` for the pod's own.
        container: Option<String>,
    },
}

/// What the matching rule asked for, in its policy's own notation, shown in a
/// description beside what the pod had. Empty parts are left out.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Asked {
    /// The exit-code requirement, e.g. `In [1, 2]` (upstream) or `In 42, 128-255` (the document).
    pub exit_codes: Option<String>,
    /// The message pattern's source (the document's `onMessage`).
    pub message_pattern: Option<String>,
}

/// The start of a FailJob message: what failed, as the first matcher saw it.
/// Upstream's two subjects (exit code, condition) are its words exactly
/// (`pkg/controller/job/pod_failure_policy.go`); the rest follow their pattern.
pub fn subject(on: Option<&MatchedOn>, namespace: &str, pod: &str) -> String {
    match on {
        Some(MatchedOn::ExitCode {
            container,
            exit_code,
            ..
        }) => format!(
            "Container {container} for pod {namespace}/{pod} failed with exit code {exit_code}"
        ),
        Some(MatchedOn::Condition { condition_type, .. }) => {
            format!("Pod {namespace}/{pod} has condition {condition_type}")
        }
        Some(MatchedOn::PendingTimeout) => {
            format!("Pod {namespace}/{pod} has condition {PENDING_TIMEOUT_CONDITION}")
        }
        Some(MatchedOn::PodReason { reason }) => {
            format!("Pod {namespace}/{pod} failed with reason {reason}")
        }
        Some(MatchedOn::ContainerReason {
            container, reason, ..
        }) => format!(
            "Container {container} for pod {namespace}/{pod} terminated with reason {reason}"
        ),
        Some(MatchedOn::Message {
            container: Some(container),
        }) => format!("Container {container} for pod {namespace}/{pod} failed with a message"),
        Some(MatchedOn::Message { container: None }) => {
            format!("Pod {namespace}/{pod} failed with a message")
        }
        None => format!("Pod {namespace}/{pod} failed"),
    }
}

impl MatchedOn {
    /// The match as an explanation shows it, with what the rule asked for:
    /// e.g. `exit code 137 of container "main" (In 42, 128-255)`. Bounded.
    pub fn describe(&self, asked: &Asked) -> String {
        let described = match self {
            MatchedOn::PendingTimeout => format!(
                "condition {PENDING_TIMEOUT_CONDITION}=True (stuck in Pending past pendingTimeout)"
            ),
            MatchedOn::ExitCode {
                container,
                exit_code,
                init_container,
            } => {
                let requirement = asked
                    .exit_codes
                    .as_ref()
                    .map(|r| format!(" ({r})"))
                    .unwrap_or_default();
                format!(
                    "exit code {exit_code} of {} {container:?}{requirement}",
                    container_kind(*init_container)
                )
            }
            MatchedOn::Condition {
                condition_type,
                status,
            } => format!("condition {condition_type}={}", status.as_str()),
            MatchedOn::PodReason { reason } => format!("pod reason {reason:?}"),
            MatchedOn::ContainerReason {
                container,
                reason,
                init_container,
            } => format!(
                "termination reason {reason:?} of {} {container:?}",
                container_kind(*init_container)
            ),
            MatchedOn::Message { container } => {
                let pattern = asked.message_pattern.as_deref().unwrap_or_default();
                match container {
                    Some(c) => format!("message of container {c:?} matching /{pattern}/"),
                    None => format!("the pod's message matching /{pattern}/"),
                }
            }
        };
        truncated(&described, MAX_TEXT_BYTES).into_owned()
    }
}

/// `container` or `init container`.
fn container_kind(init: bool) -> &'static str {
    if init { "init container" } else { "container" }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::extended::rules::test_docs::{RuleExt, document, rule, with_document};
    use crate::extended::rules::{self, DocumentRule};
    use crate::fixtures::{PodExt, job, pod, t};
    use crate::model::{
        ExitCodeOperator, ExtendedAction, OnExitCodes, PodFailurePolicy, PodFailurePolicyAction,
        PodFailurePolicyRule, PodPhase,
    };
    use crate::pod_failure_policy::{self, match_pod_failure_policy};

    fn upstream_rule(values: Vec<i32>) -> PodFailurePolicyRule {
        PodFailurePolicyRule {
            action: PodFailurePolicyAction::FailJob,
            on_exit_codes: Some(OnExitCodes {
                container_name: None,
                operator: ExitCodeOperator::In,
                values,
            }),
            on_pod_conditions: vec![],
        }
    }

    /// Upstream's FailJob message and the document's start with the same
    /// subject, written once; upstream's words stay its own exactly.
    #[test]
    fn one_subject_starts_both_fail_job_messages() {
        let p = pod("p").phase(PodPhase::Failed).exit("main", 137, t(0));
        let policy = PodFailurePolicy {
            rules: vec![upstream_rule(vec![137])],
        };
        let upstream = match_pod_failure_policy(Some(&policy), "default", &p);
        let on = upstream.matched_on.clone().expect("a match");
        let want = "Container main for pod default/p failed with exit code 137";
        assert_eq!(subject(Some(&on), "default", "p"), want);
        assert_eq!(
            upstream.fail_job_message.as_deref(),
            Some(format!("{want} matching FailJob rule at index 0").as_str())
        );
        let doc = document(vec![rule(ExtendedAction::FailJob).exit_in(&[(137, 137)])]);
        let job = with_document(job(), doc.clone());
        let m = rules::match_document(&doc, &p).expect("a document match");
        assert_eq!(rules::matched_on(&doc, m.rule, &p), vec![on]);
        assert_eq!(
            rules::fail_job_message(&job, &m, &p),
            format!("{want} matching FailJob rule at index 0 of the failure policy document")
        );
    }

    /// One description; each policy writes its own requirement.
    #[test]
    fn each_policy_describes_its_requirement_in_its_own_notation() {
        let on = MatchedOn::ExitCode {
            container: "main".into(),
            exit_code: 2,
            init_container: true,
        };
        let upstream = pod_failure_policy::asked(&upstream_rule(vec![1, 2, 3]));
        assert_eq!(
            on.describe(&upstream),
            "exit code 2 of init container \"main\" (In [1, 2, 3])"
        );
        let doc = document(vec![rule(ExtendedAction::Count).exit_in(&[(1, 3)])]);
        let extended = rules::asked(&doc, DocumentRule::Rule(0));
        assert_eq!(
            on.describe(&extended),
            "exit code 2 of init container \"main\" (In 1-3)"
        );
        assert_eq!(
            on.describe(&Asked::default()),
            "exit code 2 of init container \"main\""
        );
    }
}
