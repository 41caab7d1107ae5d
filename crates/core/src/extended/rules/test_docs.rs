//! Builders for tests of the extended policy: documents built as the domain
//! value (parsing is the wire crate's), rules built matcher by matcher, and
//! the pod details the wire conversion fills when a Job carries a document.

use std::sync::Arc;

use crate::extended::*;
use crate::fixtures::{PodExt, pod, t};
use crate::model::{
    ConditionMatcher, ContainerReasonMatcher, ContainerTermination, ExitCodeMatcher,
    ExtendedAction, ExtendedFailurePolicy, ExtendedRule, MessagePattern, RetryLimit,
};
use crate::model::{ConditionStatus, ExitCodeOperator, Job, Pod, PodCondition, PodPhase};

/// A rule with this action and no matchers yet.
pub fn rule(action: ExtendedAction) -> ExtendedRule {
    ExtendedRule {
        name: None,
        action,
        on_exit_codes: None,
        on_pod_conditions: vec![],
        on_pod_reasons: vec![],
        on_container_reasons: None,
        on_message: None,
        retry_limit: None,
    }
}

/// A document holding only these rules.
pub fn document(rules: Vec<ExtendedRule>) -> Arc<ExtendedFailurePolicy> {
    Arc::new(ExtendedFailurePolicy {
        rules,
        ..ExtendedFailurePolicy::default()
    })
}

/// `job` carrying the document.
pub fn with_document(mut job: Job, doc: Arc<ExtendedFailurePolicy>) -> Job {
    job.extended_failure_policy = Some(doc);
    job
}

/// Chainable matchers and settings of a rule.
pub trait RuleExt: Sized {
    /// Name the rule.
    fn named(self, name: &str) -> Self;
    /// `onExitCodes` In these intervals.
    fn exit_in(self, codes: &[(i32, i32)]) -> Self;
    /// `onExitCodes` NotIn these intervals.
    fn exit_not_in(self, codes: &[(i32, i32)]) -> Self;
    /// Restrict `onExitCodes` to one container.
    fn exit_container(self, name: &str) -> Self;
    /// Add an `onPodConditions` pattern.
    fn on_condition(self, condition_type: &str, status: ConditionStatus) -> Self;
    /// `onPodReasons`.
    fn pod_reasons(self, reasons: &[&str]) -> Self;
    /// `onContainerReasons`.
    fn container_reasons(self, container: Option<&str>, reasons: &[&str]) -> Self;
    /// `onMessage`.
    fn message(self, pattern: &str) -> Self;
    /// `maxRetries` and `whenRetriesExhausted`.
    fn max_retries(self, max: i32, then: ExtendedAction) -> Self;
}

impl RuleExt for ExtendedRule {
    fn named(mut self, name: &str) -> Self {
        self.name = Some(name.into());
        self
    }
    fn exit_in(mut self, codes: &[(i32, i32)]) -> Self {
        self.on_exit_codes = Some(ExitCodeMatcher {
            container_name: None,
            operator: ExitCodeOperator::In,
            codes: codes.to_vec(),
        });
        self
    }
    fn exit_not_in(mut self, codes: &[(i32, i32)]) -> Self {
        self.on_exit_codes = Some(ExitCodeMatcher {
            container_name: None,
            operator: ExitCodeOperator::NotIn,
            codes: codes.to_vec(),
        });
        self
    }
    fn exit_container(mut self, name: &str) -> Self {
        if let Some(m) = self.on_exit_codes.as_mut() {
            m.container_name = Some(name.into());
        }
        self
    }
    fn on_condition(mut self, condition_type: &str, status: ConditionStatus) -> Self {
        self.on_pod_conditions.push(ConditionMatcher {
            condition_type: condition_type.into(),
            status,
        });
        self
    }
    fn pod_reasons(mut self, reasons: &[&str]) -> Self {
        self.on_pod_reasons = reasons.iter().map(|r| r.to_string()).collect();
        self
    }
    fn container_reasons(mut self, container: Option<&str>, reasons: &[&str]) -> Self {
        self.on_container_reasons = Some(ContainerReasonMatcher {
            container_name: container.map(Into::into),
            reasons: reasons.iter().map(|r| r.to_string()).collect(),
        });
        self
    }
    fn message(mut self, pattern: &str) -> Self {
        self.on_message = Some(MessagePattern::new(pattern).expect("a test pattern compiles"));
        self
    }
    fn max_retries(mut self, max: i32, then: ExtendedAction) -> Self {
        self.retry_limit = Some(RetryLimit {
            max_retries: max,
            then,
        });
        self
    }
}

/// Chainable failure details of a fixture pod.
pub trait DetailsExt: Sized {
    /// Set `status.reason`.
    fn pod_reason(self, reason: &str) -> Self;
    /// Set `status.message`.
    fn pod_message(self, message: &str) -> Self;
    /// Add a container termination's reason and message (its exit code is set with `exit`).
    fn termination(self, container: &str, init: bool, reason: &str, message: &str) -> Self;
    /// Set the carried rule-match counts.
    fn carried(self, counts: &[(&str, i32)]) -> Self;
    /// Add the pending-timeout condition (status True).
    fn pending_timed_out(self) -> Self;
}

impl DetailsExt for Pod {
    fn pod_reason(mut self, reason: &str) -> Self {
        self.failure_details.get_or_insert_default().reason = reason.into();
        self
    }
    fn pod_message(mut self, message: &str) -> Self {
        self.failure_details.get_or_insert_default().message = message.into();
        self
    }
    fn termination(mut self, container: &str, init: bool, reason: &str, message: &str) -> Self {
        self.failure_details
            .get_or_insert_default()
            .terminations
            .push(ContainerTermination {
                container: container.into(),
                init_container: init,
                reason: reason.into(),
                message: message.into(),
            });
        self
    }
    fn carried(mut self, counts: &[(&str, i32)]) -> Self {
        self.failure_details
            .get_or_insert_default()
            .rule_match_counts = counts.iter().map(|(n, c)| (n.to_string(), *c)).collect();
        self
    }
    fn pending_timed_out(mut self) -> Self {
        self.conditions.push(PodCondition {
            condition_type: PENDING_TIMEOUT_CONDITION.into(),
            status: ConditionStatus::True,
            last_transition_time: Some(t(0)),
        });
        self
    }
}

/// A Failed pod whose container "main" exited with `code` at `at`.
pub fn failed_with(name: &str, code: i32, at: i64) -> Pod {
    pod(name).phase(PodPhase::Failed).exit("main", code, t(at))
}
