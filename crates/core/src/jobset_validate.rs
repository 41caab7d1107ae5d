//! JobSet failure-policy validation, as JobSet's admission webhook checks it on create
//! (`validateFailurePolicy`, v0.12 line), after its defaulting of empty rule names.
//!
//! Upstream returns plain errors without field paths; here each carries the path of the field
//! it is about and upstream's message as its detail. Differences, on purpose:
//! - `onJobFailureMessagePatterns` entries must compile (RE2 syntax, counted repetition at
//!   most 1000, via [`crate::message_pattern`]). Upstream admits any string and only logs an
//!   invalid pattern at reconcile time, where it never matches; rejecting it here catches the
//!   mistake before a failure does. A valid RE2 pattern past this service's own limits (1 KiB
//!   of source, a 32 KiB DFA) is rejected too, saying so.
//! - The uniqueness errors come in order of the first rule carrying the name (upstream ranges
//!   over a Go map, in random order).
//! - The feature gate `RestartJob` is on, so `RestartJob*` actions are allowed (subject to the
//!   1024-replica cap): with v0.12.0's default (gate off) the actions could not be used at all.
//!
//! The feature gate `InPlaceRestart` is off, v0.12.0's default, so `restartStrategy:
//! InPlaceRestart` is rejected with ValidateCreate's message (its template requirements, checked
//! only with the gate on, need Job templates the contract does not carry).
//!
//! Not validated, as upstream: the sign of `maxRestarts`, duplicate reasons or patterns.

use regex::Regex;

use crate::go_text::go_quote;
use std::sync::LazyLock;

use crate::jobset::{FailurePolicy, JobSet, KNOWN_JOB_FAILURE_REASONS, RestartStrategy};
use crate::validate::{Severity, Violation, ViolationKind};

/// Shortest rule name.
const MIN_RULE_NAME_LENGTH: usize = 1;
/// Longest rule name.
const MAX_RULE_NAME_LENGTH: usize = 128;
/// Pattern every rule name must match.
const RULE_NAME_FMT: &str = "^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$";
/// Replicas cap of every replicatedJob when a rule uses `RestartJob*` (the status arrays'
/// `maxItems`).
pub const MAX_REPLICAS_FOR_RESTART_JOB: i32 = 1024;

// The pattern is a constant known to compile; a failure would be a bug caught by the tests.
static RULE_NAME_RE: LazyLock<Option<Regex>> = LazyLock::new(|| Regex::new(RULE_NAME_FMT).ok());

/// The webhook's defaulting: an empty rule name becomes `failurePolicyRule<index>`, where the
/// index is the rule's position in the list.
pub fn default_rule_names(policy: &mut FailurePolicy) {
    for (i, rule) in policy.rules.iter_mut().enumerate() {
        if rule.name.is_empty() {
            rule.name = format!("failurePolicyRule{i}");
        }
    }
}

/// Every failure-policy rule the JobSet breaks, after defaulting empty rule names; empty when
/// valid.
pub fn validate_jobset(js: &JobSet) -> Vec<Violation> {
    let mut out = Vec::new();
    let Some(policy) = &js.spec.failure_policy else {
        return out;
    };
    let mut policy = policy.clone();
    default_rule_names(&mut policy);

    // ValidateCreate checks this before anything else.
    if policy.restart_strategy == RestartStrategy::InPlaceRestart {
        out.push(invalid(
            "spec.failurePolicy.restartStrategy".to_string(),
            ViolationKind::Forbidden,
            "InPlaceRestart restart strategy cannot be set when InPlaceRestart feature gate is \
             disabled"
                .to_string(),
        ));
    }

    if policy.rules.iter().any(|r| r.action.is_per_job()) {
        // Upstream reports the first offending replicatedJob only.
        if let Some((i, _)) = js
            .spec
            .replicated_jobs
            .iter()
            .enumerate()
            .find(|(_, rj)| rj.replicas > MAX_REPLICAS_FOR_RESTART_JOB)
        {
            out.push(invalid(
                format!("spec.replicatedJobs[{i}].replicas"),
                ViolationKind::Invalid,
                format!(
                    "JobSet cannot have a failure policy rule with RestartJob or \
                     RestartJobAndIgnoreMaxRestarts action and a replicated job with replicas > \
                     {MAX_REPLICAS_FOR_RESTART_JOB}"
                ),
            ));
        }
    }

    let mut names: Vec<(&str, Vec<usize>)> = Vec::new();
    for (i, rule) in policy.rules.iter().enumerate() {
        let path = format!("spec.failurePolicy.rules[{i}]");
        let len = rule.name.len();
        if !(MIN_RULE_NAME_LENGTH..=MAX_RULE_NAME_LENGTH).contains(&len) {
            out.push(invalid(
                format!("{path}.name"),
                ViolationKind::TooLong,
                format!(
                    "invalid failure policy rule name of length {len}, the rule name must be at \
                     least {MIN_RULE_NAME_LENGTH} characters long and at most \
                     {MAX_RULE_NAME_LENGTH} characters long"
                ),
            ));
        }
        match names.iter_mut().find(|(n, _)| *n == rule.name) {
            Some((_, idx)) => idx.push(i),
            None => names.push((&rule.name, vec![i])),
        }
        if !is_valid_rule_name(&rule.name) {
            out.push(invalid(
                format!("{path}.name"),
                ViolationKind::Invalid,
                format!(
                    "invalid failure policy rule name '{}', a failure policy rule name must \
                     start with an alphabetic character, optionally followed by a string of \
                     alphanumeric characters or '_,:', and must end with an alphanumeric \
                     character or '_'",
                    rule.name
                ),
            ));
        }
        for (j, target) in rule.target_replicated_jobs.iter().enumerate() {
            if !js.spec.replicated_jobs.iter().any(|rj| &rj.name == target) {
                out.push(invalid(
                    format!("{path}.targetReplicatedJobs[{j}]"),
                    ViolationKind::Invalid,
                    format!(
                        "invalid replicatedJob name '{target}' in failure policy does not \
                         appear in .spec.ReplicatedJobs"
                    ),
                ));
            }
        }
        for (j, reason) in rule.on_job_failure_reasons.iter().enumerate() {
            if !KNOWN_JOB_FAILURE_REASONS.contains(&reason.as_str()) {
                out.push(invalid(
                    format!("{path}.onJobFailureReasons[{j}]"),
                    ViolationKind::NotSupported,
                    format!(
                        "invalid job failure reason '{reason}' in failure policy is not a \
                         recognized job failure reason"
                    ),
                ));
            }
        }
        for (j, pattern) in rule.on_job_failure_message_patterns.iter().enumerate() {
            if let Some(err) = pattern.error() {
                out.push(Violation {
                    severity: Severity::Rejected,
                    field: format!("{path}.onJobFailureMessagePatterns[{j}]"),
                    kind: ViolationKind::Invalid,
                    value: Some(go_quote(pattern.source())),
                    detail: if err.invalid_in_re2() {
                        format!("must be a valid RE2 regular expression: {err}")
                    } else {
                        format!("valid RE2, but refused by this service's pattern limits: {err}")
                    },
                });
            }
        }
    }

    for (name, idx) in names.iter().filter(|(_, idx)| idx.len() > 1) {
        let list = idx
            .iter()
            .map(|i| i.to_string())
            .collect::<Vec<_>>()
            .join(" ");
        // The path names the second rule carrying the name: the first duplicate.
        let at = idx.get(1).copied().unwrap_or_default();
        out.push(invalid(
            format!("spec.failurePolicy.rules[{at}].name"),
            ViolationKind::Duplicate,
            format!(
                "rule names are not unique, rules with indices [{list}] all have the same name \
                 '{name}'"
            ),
        ));
    }
    out
}

/// Whether `name` matches `^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$`.
pub fn is_valid_rule_name(name: &str) -> bool {
    RULE_NAME_RE.as_ref().is_some_and(|re| re.is_match(name))
}

fn invalid(field: String, kind: ViolationKind, detail: String) -> Violation {
    Violation {
        severity: Severity::Rejected,
        field,
        kind,
        value: None,
        detail,
    }
}

#[cfg(test)]
mod tests;
