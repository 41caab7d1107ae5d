//! What a failure policy rule matched on a failed pod — one type for upstream's
//! `spec.podFailurePolicy` (`pod_failure_policy`) and the extended document's
//! rules (`extended::rules`) — the start of the FailJob message a match gives,
//! and the match described for people. Each policy fills in what its rule asked
//! for ([`Asked`]); the words around it are written here once.

use crate::extended::timeouts::Timeout;
use crate::model::ConditionStatus;
use crate::text::{MAX_TEXT_BYTES, truncated};

/// What a rule matched on, for messages and explanations.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MatchedOn {
    /// The pod carries the condition this controller sets when the timeout
    /// fails a pod (the extended document's implicit rule of that timeout).
    Timeout(Timeout),
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
        Some(MatchedOn::Timeout(t)) => {
            format!("Pod {namespace}/{pod} has condition {}", t.condition_type())
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
            MatchedOn::Timeout(t) => format!(
                "condition {}=True ({} {})",
                t.condition_type(),
                t.failing(),
                t.field()
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
mod tests;
