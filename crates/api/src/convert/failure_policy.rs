//! The extended failure policy document (`docs/failure-policy.md`): YAML or
//! JSON text → [`ExtendedFailurePolicy`], defaulted and checked.
//!
//! The document is read as a generic YAML tree and walked by hand rather than
//! through serde's derive: strictness (every unknown field an error) and
//! errors naming the exact path (`….rules[2].onExitCodes.ranges[0]`) come out
//! of one walk, and every problem is reported, not only the first.

use serde_yaml::{Mapping, Value};

use job_decider_core::extended::rules::message_scan_bound;
use job_decider_core::extended::{
    FAILURE_POLICY_ANNOTATION, FAILURE_POLICY_API_VERSION, FAILURE_POLICY_KIND,
};
use job_decider_core::go_text::go_quote;
use job_decider_core::model::{
    AttemptDeadline, BackoffSettings, ConditionMatcher, ContainerReasonMatcher, ExitCodeMatcher,
    ExtendedAction, ExtendedFailurePolicy, ExtendedRule, FailureMessage, IgnoredFailureDelay,
    MessagePattern, NodeAvoidance, NodeAvoidanceMode, PendingTimeout, ReadyTimeout, RetryLimit,
    TerminatingNodes, TerminatingTimeout,
};
use job_decider_core::model::{ConditionStatus, ExitCodeOperator, Job, Pod, RestartPolicy};
use job_decider_core::validate::ViolationKind;
use job_decider_core::violation::{MAX_VIOLATION_VALUE_BYTES, truncated};

use crate::violations::Violations;

/// Largest document read, in bytes (an annotation may hold 256 KiB; a policy needs far less).
pub const MAX_DOCUMENT_BYTES: usize = 32 * 1024;
/// Most rules a document may hold.
pub const MAX_RULES: usize = 20;
/// Most entries of each list of a matcher (reasons, conditions, ranges).
pub const MAX_MATCHER_ITEMS: usize = 20;
/// Most exit-code values of one matcher (upstream's limit for `onExitCodes.values`).
pub const MAX_EXIT_CODE_VALUES: usize = 255;
/// Longest message pattern, in bytes. What else bounds a pattern (RE2's repetition limit, the
/// size of its DFA) is `job_decider_core::message_pattern`'s.
pub const MAX_PATTERN_BYTES: usize = job_decider_core::message_pattern::MAX_SOURCE_BYTES;
/// Most pod-message bytes one DecideJob's `onMessage` patterns may search (message bytes ×
/// rules with a pattern, [`message_scan_bound`]): about a second of matching at ~2 ns a
/// byte. 100,000 failed pods with 300-byte messages and three pattern rules need 90 MB.
pub const MAX_MESSAGE_SCAN_BYTES: u64 = job_decider_core::message_pattern::MAX_SCAN_BYTES;
/// Largest `maxRetries`.
pub const MAX_RETRIES: i64 = 1000;
/// Longest rule name: KEP-4443's reason `PodFailurePolicy_{name}` has at most 128 characters.
pub const MAX_RULE_NAME: usize = job_decider_core::extended::MAX_RULE_NAME_BYTES;
/// Longest reason or condition type written in a matcher.
pub const MAX_REASON_BYTES: usize = 316;
/// The reasons a `pendingTimeout` covers when it names none.
pub const DEFAULT_PENDING_REASONS: [&str; 4] = [
    "ImagePullBackOff",
    "ErrImagePull",
    "CreateContainerConfigError",
    "InvalidImageName",
];
/// The rule name reserved for failures the pending timeout causes.
pub const RESERVED_RULE_NAME: &str = "PendingTimeout";
/// Every reserved rule name (the implicit rules of the timeouts), with the field whose
/// failures it names.
pub const RESERVED_RULE_NAMES: [(&str, &str); 4] = [
    (RESERVED_RULE_NAME, "pendingTimeout"),
    ("ReadyTimeout", "readyTimeout"),
    ("AttemptDeadline", "attemptDeadline"),
    ("TerminatingTimeout", "terminatingTimeout"),
];
/// Largest `attemptDeadline.seconds`: 30 days.
pub const MAX_ATTEMPT_DEADLINE_SECONDS: i64 = 2_592_000;
/// Largest `readyTimeout.seconds`: 7 days.
pub const MAX_READY_TIMEOUT_SECONDS: i64 = 604_800;

/// The path of the document when it comes from the Job's annotation.
pub fn annotation_path() -> String {
    format!("metadata.annotations[{FAILURE_POLICY_ANNOTATION}]")
}

/// The path of the document when it comes from the request's field.
pub const REQUEST_FIELD_PATH: &str = "failurePolicy";

/// Linux signal names and numbers (the exit code of a container killed by one is 128 + n).
const SIGNALS: [(&str, i32); 31] = [
    ("SIGHUP", 1),
    ("SIGINT", 2),
    ("SIGQUIT", 3),
    ("SIGILL", 4),
    ("SIGTRAP", 5),
    ("SIGABRT", 6),
    ("SIGBUS", 7),
    ("SIGFPE", 8),
    ("SIGKILL", 9),
    ("SIGUSR1", 10),
    ("SIGSEGV", 11),
    ("SIGUSR2", 12),
    ("SIGPIPE", 13),
    ("SIGALRM", 14),
    ("SIGTERM", 15),
    ("SIGSTKFLT", 16),
    ("SIGCHLD", 17),
    ("SIGCONT", 18),
    ("SIGSTOP", 19),
    ("SIGTSTP", 20),
    ("SIGTTIN", 21),
    ("SIGTTOU", 22),
    ("SIGURG", 23),
    ("SIGXCPU", 24),
    ("SIGXFSZ", 25),
    ("SIGVTALRM", 26),
    ("SIGPROF", 27),
    ("SIGWINCH", 28),
    ("SIGIO", 29),
    ("SIGPWR", 30),
    ("SIGSYS", 31),
];

/// The exit code a signal's name stands for (128 + its number), if it is one.
pub fn signal_exit_code(name: &str) -> Option<i32> {
    SIGNALS
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, number)| 128 + number)
}

/// The Job's document from its two possible sources, checked against the Job.
///
/// `annotation` is the Job's `job-decider.dev/failure-policy` annotation,
/// `field` the request's `failurePolicy` (empty: unset). Violations go to
/// `errs`; `None` when there is no document or it is not valid.
pub(crate) fn from_sources(
    annotation: Option<&str>,
    field: &str,
    job: &Job,
    errs: &mut Violations,
) -> Option<ExtendedFailurePolicy> {
    match (annotation, field.is_empty()) {
        (None, true) => None,
        (Some(text), true) => parse(text, &annotation_path(), job, errs),
        (None, false) => parse(field, REQUEST_FIELD_PATH, job, errs),
        (Some(text), false) if text == field => parse(text, &annotation_path(), job, errs),
        (Some(text), false) => {
            let from_annotation = parse(text, &annotation_path(), job, errs);
            let from_field = parse(field, REQUEST_FIELD_PATH, job, errs);
            match (from_annotation, from_field) {
                (Some(a), Some(f)) if a == f => Some(a),
                (Some(_), Some(_)) => {
                    errs.invalid(
                        REQUEST_FIELD_PATH,
                        "\"...\"",
                        &format!(
                            "differs from the Job's {FAILURE_POLICY_ANNOTATION} annotation; set one of the two"
                        ),
                    );
                    None
                }
                _ => None,
            }
        }
    }
}

/// Refuses a decision whose document's `onMessage` patterns would search more than
/// [`MAX_MESSAGE_SCAN_BYTES`] of the pods' messages, naming the document (its annotation, or
/// the request's `failurePolicy` when that was sent) and the limit.
pub(crate) fn check_match_budget(
    job: &Job,
    pods: &[Pod],
    request_field: &str,
    errs: &mut Violations,
) {
    let Some(policy) = job.extended_failure_policy.as_deref() else {
        return;
    };
    let cost = message_scan_bound(policy, pods);
    if cost <= MAX_MESSAGE_SCAN_BYTES {
        return;
    }
    let path = if request_field.is_empty() {
        annotation_path()
    } else {
        REQUEST_FIELD_PATH.to_string()
    };
    errs.push(
        path,
        ViolationKind::TooMany,
        None,
        format!(
            "the document's onMessage patterns would search {cost} bytes of pod messages \
             (message bytes × rules with a pattern); one decision may search at most \
             {MAX_MESSAGE_SCAN_BYTES}"
        ),
    );
}

thread_local! {
    /// Documents [`parse`] has read on this thread (tests read it).
    static READ: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// How many failure policy documents have been read (parsed, their patterns compiled) on this
/// thread so far: tests count a caller's reads without timing it.
pub fn documents_read() -> u64 {
    READ.with(std::cell::Cell::get)
}

/// One document's text → the policy, or violations under `path`.
pub(crate) fn parse(
    text: &str,
    path: &str,
    job: &Job,
    errs: &mut Violations,
) -> Option<ExtendedFailurePolicy> {
    READ.with(|n| n.set(n.get() + 1));
    if text.len() > MAX_DOCUMENT_BYTES {
        errs.push(
            path.to_string(),
            ViolationKind::TooLong,
            None,
            format!(
                "the document is {} bytes; it may have at most {MAX_DOCUMENT_BYTES}",
                text.len()
            ),
        );
        return None;
    }
    if text.trim().is_empty() {
        errs.required(
            path,
            "an empty failure policy document; remove it or write one",
        );
        return None;
    }
    if let Err(e) = crate::yaml_bounds::check(text, MAX_DOCUMENT_BYTES) {
        // Bounded before libyaml, whose cost grows with nesting times length.
        errs.push(
            path.to_string(),
            ViolationKind::Invalid,
            None,
            format!("the document: {e}"),
        );
        return None;
    }
    let value: Value = match serde_yaml::from_str(text) {
        Ok(value) => value,
        Err(err) => {
            let at = err
                .location()
                .map(|l| format!(" (line {}, column {})", l.line(), l.column()))
                .unwrap_or_default();
            let msg = err.to_string();
            errs.push(
                path.to_string(),
                ViolationKind::Invalid,
                None,
                format!(
                    "not a YAML or JSON document{at}: {}",
                    truncated(&msg, MAX_VIOLATION_VALUE_BYTES)
                ),
            );
            return None;
        }
    };
    let before = errs.len();
    let mut walk = Walk::new(errs);
    let policy = walk.document(&value, path, job);
    (walk.errs.len() == before).then_some(policy).flatten()
}

mod walk;
use walk::Walk;

#[cfg(test)]
mod tests;
