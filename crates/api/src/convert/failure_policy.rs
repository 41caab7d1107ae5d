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
    BackoffSettings, ConditionMatcher, ContainerReasonMatcher, ExitCodeMatcher, ExtendedAction,
    ExtendedFailurePolicy, ExtendedRule, IgnoredFailureDelay, MessagePattern, NodeAvoidance,
    NodeAvoidanceMode, PendingTimeout, RetryLimit,
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
/// Longest rule name (a Kubernetes label value's length).
pub const MAX_RULE_NAME: usize = 63;
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

const ACTIONS: [&str; 4] = ["FailJob", "FailIndex", "Ignore", "Count"];

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
    let mut walk = Walk { errs };
    let policy = walk.document(&value, path, job);
    (walk.errs.len() == before).then_some(policy).flatten()
}

/// The offending value as a short, bounded text.
fn echo(value: &Value) -> String {
    let text = match value {
        Value::Null => "null".to_string(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => go_quote(s),
        Value::Sequence(_) => "[...]".to_string(),
        Value::Mapping(_) => "{...}".to_string(),
        Value::Tagged(t) => format!("!{} ...", t.tag),
    };
    truncated(&text, MAX_VIOLATION_VALUE_BYTES).into_owned()
}

/// The walk of one document: each method checks one part and reports under its path.
struct Walk<'e> {
    errs: &'e mut Violations,
}

impl Walk<'_> {
    /// The fields of an object, every name checked against `known`.
    fn object<'v>(&mut self, value: &'v Value, path: &str, known: &[&str]) -> Option<&'v Mapping> {
        let Value::Mapping(map) = value else {
            self.errs
                .invalid(path, echo(value), "must be an object (a mapping of fields)");
            return None;
        };
        for key in map.keys() {
            match key {
                Value::String(name) if known.contains(&name.as_str()) => {}
                Value::String(name) => self.errs.push(
                    format!("{path}.{}", truncated(name, MAX_VIOLATION_VALUE_BYTES)),
                    ViolationKind::Forbidden,
                    None,
                    format!("unknown field; known fields: {}", known.join(", ")),
                ),
                other => self
                    .errs
                    .invalid(path, echo(other), "field names must be strings"),
            }
        }
        Some(map)
    }

    fn string<'v>(&mut self, value: &'v Value, path: &str) -> Option<&'v str> {
        match value {
            Value::String(s) => Some(s),
            other => {
                self.errs.invalid(path, echo(other), "must be a string");
                None
            }
        }
    }

    /// A string of at most `max` bytes, not empty.
    fn bounded_string(&mut self, value: &Value, path: &str, max: usize) -> Option<String> {
        let s = self.string(value, path)?;
        if s.is_empty() {
            self.errs.required(path, "must not be empty");
            return None;
        }
        if s.len() > max {
            self.errs.push(
                path.to_string(),
                ViolationKind::TooLong,
                Some(echo(value)),
                format!("may have at most {max} bytes"),
            );
            return None;
        }
        Some(s.to_string())
    }

    fn integer(&mut self, value: &Value, path: &str, min: i64, max: i64) -> Option<i64> {
        let Some(n) = value.as_i64() else {
            self.errs.invalid(path, echo(value), "must be an integer");
            return None;
        };
        if !(min..=max).contains(&n) {
            self.errs.invalid(
                path,
                n,
                &format!("must be between {min} and {max}, inclusive"),
            );
            return None;
        }
        Some(n)
    }

    fn list<'v>(&mut self, value: &'v Value, path: &str, max: usize) -> Option<&'v [Value]> {
        let Value::Sequence(items) = value else {
            self.errs.invalid(path, echo(value), "must be a list");
            return None;
        };
        if items.is_empty() {
            self.errs.required(path, "must have at least one item");
            return None;
        }
        if items.len() > max {
            self.errs.push(
                path.to_string(),
                ViolationKind::TooMany,
                Some(items.len().to_string()),
                format!("may have at most {max} items"),
            );
            return None;
        }
        Some(items)
    }

    /// A list of distinct non-empty strings.
    fn string_list(&mut self, value: &Value, path: &str, max: usize) -> Option<Vec<String>> {
        let items = self.list(value, path, max)?;
        let mut out: Vec<String> = Vec::with_capacity(items.len());
        let mut ok = true;
        for (i, item) in items.iter().enumerate() {
            let at = format!("{path}[{i}]");
            match self.bounded_string(item, &at, MAX_REASON_BYTES) {
                Some(s) if out.contains(&s) => {
                    self.errs
                        .push(at, ViolationKind::Duplicate, Some(echo(item)), "");
                    ok = false;
                }
                Some(s) => out.push(s),
                None => ok = false,
            }
        }
        ok.then_some(out)
    }

    fn one_of<'a>(&mut self, value: &Value, path: &str, supported: &[&'a str]) -> Option<&'a str> {
        let s = self.string(value, path)?;
        match supported.iter().find(|v| **v == s) {
            Some(v) => Some(v),
            None => {
                self.errs
                    .not_supported(path, &truncated(s, MAX_VIOLATION_VALUE_BYTES), supported);
                None
            }
        }
    }

    fn action(&mut self, value: &Value, path: &str) -> Option<ExtendedAction> {
        Some(match self.one_of(value, path, &ACTIONS)? {
            "FailJob" => ExtendedAction::FailJob,
            "FailIndex" => ExtendedAction::FailIndex,
            "Ignore" => ExtendedAction::Ignore,
            _ => ExtendedAction::Count,
        })
    }

    /// FailIndex only where the Job has per-index backoff limits.
    fn check_fail_index(&mut self, action: ExtendedAction, path: &str, job: &Job) {
        if action == ExtendedAction::FailIndex && job.spec.backoff_limit_per_index.is_none() {
            self.errs.invalid(
                path,
                "\"FailIndex\"",
                "FailIndex needs spec.backoffLimitPerIndex to be set",
            );
        }
    }

    /// A container name a matcher filters on: one of the template's containers.
    fn container_name(&mut self, value: &Value, path: &str, job: &Job) -> Option<String> {
        let name = self.bounded_string(value, path, MAX_REASON_BYTES)?;
        let template = &job.spec.template;
        if !template.containers.contains(&name) && !template.init_containers.contains(&name) {
            self.errs.invalid(
                path,
                echo(value),
                "must be one of the container or initContainer names in the pod template",
            );
            return None;
        }
        Some(name)
    }

    fn document(&mut self, value: &Value, path: &str, job: &Job) -> Option<ExtendedFailurePolicy> {
        const KNOWN: [&str; 6] = [
            "apiVersion",
            "kind",
            "rules",
            "backoff",
            "pendingTimeout",
            "nodeAvoidance",
        ];
        let map = self.object(value, path, &KNOWN)?;
        for (field, expected) in [
            ("apiVersion", FAILURE_POLICY_API_VERSION),
            ("kind", FAILURE_POLICY_KIND),
        ] {
            let at = format!("{path}.{field}");
            match map.get(field) {
                None => self.errs.required(at, &format!("must be \"{expected}\"")),
                Some(v) => {
                    self.one_of(v, &at, &[expected]);
                }
            }
        }
        let mut policy = ExtendedFailurePolicy::default();
        if let Some(rules) = map.get("rules") {
            policy.rules = self.rules(rules, &format!("{path}.rules"), job);
        }
        if let Some(backoff) = map.get("backoff") {
            policy.backoff = self.backoff(backoff, &format!("{path}.backoff"));
        }
        if let Some(pending) = map.get("pendingTimeout") {
            policy.pending_timeout =
                self.pending_timeout(pending, &format!("{path}.pendingTimeout"), job);
        }
        if let Some(avoid) = map.get("nodeAvoidance") {
            policy.node_avoidance = self.node_avoidance(avoid, &format!("{path}.nodeAvoidance"));
        }
        Some(policy)
    }

    fn rules(&mut self, value: &Value, path: &str, job: &Job) -> Vec<ExtendedRule> {
        let Some(items) = self.list(value, path, MAX_RULES) else {
            return Vec::new();
        };
        if job.spec.template.restart_policy != RestartPolicy::Never {
            self.errs.push(
                path.to_string(),
                ViolationKind::Forbidden,
                None,
                "rules need spec.template.spec.restartPolicy Never, as spec.podFailurePolicy does",
            );
        }
        let mut rules: Vec<ExtendedRule> = Vec::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            let at = format!("{path}[{i}]");
            if let Some(rule) = self.rule(item, &at, job) {
                if let Some(name) = &rule.name
                    && rules.iter().any(|r| r.name.as_ref() == Some(name))
                {
                    self.errs.push(
                        format!("{at}.name"),
                        ViolationKind::Duplicate,
                        Some(go_quote(name)),
                        "rule names must be unique",
                    );
                }
                rules.push(rule);
            }
        }
        rules
    }

    fn rule(&mut self, value: &Value, path: &str, job: &Job) -> Option<ExtendedRule> {
        const KNOWN: [&str; 9] = [
            "name",
            "action",
            "onExitCodes",
            "onPodConditions",
            "onPodReasons",
            "onContainerReasons",
            "onMessage",
            "maxRetries",
            "whenRetriesExhausted",
        ];
        let map = self.object(value, path, &KNOWN)?;
        let name = map
            .get("name")
            .and_then(|v| self.rule_name(v, &format!("{path}.name")));
        let action = match map.get("action") {
            Some(v) => self.action(v, &format!("{path}.action")),
            None => {
                self.errs.required(
                    format!("{path}.action"),
                    "one of \"FailJob\", \"FailIndex\", \"Ignore\", \"Count\"",
                );
                None
            }
        };
        if let Some(action) = action {
            self.check_fail_index(action, &format!("{path}.action"), job);
        }
        let on_exit_codes = map
            .get("onExitCodes")
            .and_then(|v| self.exit_codes(v, &format!("{path}.onExitCodes"), job));
        let on_pod_conditions = map
            .get("onPodConditions")
            .map(|v| self.conditions(v, &format!("{path}.onPodConditions")))
            .unwrap_or_default();
        let on_pod_reasons = map
            .get("onPodReasons")
            .and_then(|v| self.string_list(v, &format!("{path}.onPodReasons"), MAX_MATCHER_ITEMS))
            .unwrap_or_default();
        let on_container_reasons = map
            .get("onContainerReasons")
            .and_then(|v| self.container_reasons(v, &format!("{path}.onContainerReasons"), job));
        let on_message = map
            .get("onMessage")
            .and_then(|v| self.message(v, &format!("{path}.onMessage")));
        let matchers = [
            "onExitCodes",
            "onPodConditions",
            "onPodReasons",
            "onContainerReasons",
            "onMessage",
        ];
        if !matchers.iter().any(|m| map.contains_key(*m)) {
            self.errs.required(
                path,
                "a rule needs at least one of onExitCodes, onPodConditions, onPodReasons, onContainerReasons, onMessage",
            );
        }
        let retry_limit = self.retry_limit(map, path, name.is_some(), action, job);
        Some(ExtendedRule {
            name,
            action: action?,
            on_exit_codes,
            on_pod_conditions,
            on_pod_reasons,
            on_container_reasons,
            on_message,
            retry_limit,
        })
    }

    fn rule_name(&mut self, value: &Value, path: &str) -> Option<String> {
        let name = self.bounded_string(value, path, MAX_RULE_NAME)?;
        let well_formed = name.starts_with(|c: char| c.is_ascii_alphabetic())
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !well_formed {
            self.errs.invalid(
                path,
                echo(value),
                "must consist of letters, digits and '_', and start with a letter",
            );
            return None;
        }
        if name == RESERVED_RULE_NAME {
            self.errs.invalid(
                path,
                echo(value),
                "is reserved for the failures pendingTimeout causes",
            );
            return None;
        }
        Some(name)
    }

    fn retry_limit(
        &mut self,
        map: &Mapping,
        path: &str,
        named: bool,
        action: Option<ExtendedAction>,
        job: &Job,
    ) -> Option<RetryLimit> {
        let then = match map.get("whenRetriesExhausted") {
            None => Some(ExtendedAction::FailJob),
            Some(v) => {
                let at = format!("{path}.whenRetriesExhausted");
                if !map.contains_key("maxRetries") {
                    self.errs.push(
                        at.clone(),
                        ViolationKind::Forbidden,
                        None,
                        "only with maxRetries",
                    );
                }
                let then = match self.one_of(v, &at, &["FailJob", "FailIndex"])? {
                    "FailIndex" => ExtendedAction::FailIndex,
                    _ => ExtendedAction::FailJob,
                };
                self.check_fail_index(then, &at, job);
                Some(then)
            }
        };
        let value = map.get("maxRetries")?;
        let at = format!("{path}.maxRetries");
        let max_retries = self.integer(value, &at, 0, MAX_RETRIES)?;
        if !named {
            self.errs.required(
                format!("{path}.name"),
                "a rule with maxRetries needs a name (its count is kept under it)",
            );
        }
        if let Some(a @ (ExtendedAction::FailJob | ExtendedAction::FailIndex)) = action {
            self.errs.invalid(
                at,
                max_retries,
                &format!(
                    "only a Count or Ignore rule may have maxRetries, not {}",
                    a.as_str()
                ),
            );
        }
        Some(RetryLimit {
            max_retries: i32::try_from(max_retries).ok()?,
            then: then?,
        })
    }

    fn exit_codes(&mut self, value: &Value, path: &str, job: &Job) -> Option<ExitCodeMatcher> {
        let map = self.object(
            value,
            path,
            &["containerName", "operator", "values", "ranges", "signals"],
        )?;
        let container_name = map
            .get("containerName")
            .and_then(|v| self.container_name(v, &format!("{path}.containerName"), job));
        let operator = match map.get("operator") {
            None => {
                self.errs
                    .required(format!("{path}.operator"), "one of \"In\", \"NotIn\"");
                None
            }
            Some(v) => match self.one_of(v, &format!("{path}.operator"), &["In", "NotIn"])? {
                "In" => Some(ExitCodeOperator::In),
                _ => Some(ExitCodeOperator::NotIn),
            },
        };
        let is_in = operator == Some(ExitCodeOperator::In);
        let mut codes: Vec<(i32, i32)> = Vec::new();
        if let Some(v) = map.get("values") {
            let at = format!("{path}.values");
            if let Some(items) = self.list(v, &at, MAX_EXIT_CODE_VALUES) {
                let mut seen: Vec<i64> = Vec::with_capacity(items.len());
                for (i, item) in items.iter().enumerate() {
                    let at = format!("{at}[{i}]");
                    let Some(code) =
                        self.integer(item, &at, i64::from(i32::MIN), i64::from(i32::MAX))
                    else {
                        continue;
                    };
                    if seen.contains(&code) {
                        self.errs
                            .push(at, ViolationKind::Duplicate, Some(code.to_string()), "");
                        continue;
                    }
                    seen.push(code);
                    if code == 0 && is_in {
                        self.errs
                            .invalid(at, 0, "must not be 0 for the In operator");
                        continue;
                    }
                    // In range: checked just above.
                    let code = i32::try_from(code).unwrap_or_default();
                    codes.push((code, code));
                }
            }
        }
        if let Some(v) = map.get("ranges") {
            let at = format!("{path}.ranges");
            if let Some(items) = self.list(v, &at, MAX_MATCHER_ITEMS) {
                for (i, item) in items.iter().enumerate() {
                    if let Some(range) = self.range(item, &format!("{at}[{i}]"), is_in) {
                        codes.push(range);
                    }
                }
            }
        }
        if let Some(v) = map.get("signals") {
            let at = format!("{path}.signals");
            if let Some(names) = self.string_list(v, &at, SIGNALS.len()) {
                for (i, name) in names.iter().enumerate() {
                    match signal_exit_code(name) {
                        Some(code) => codes.push((code, code)),
                        None => self.errs.invalid(
                            format!("{at}[{i}]"),
                            go_quote(name),
                            "must be a Linux signal name, SIGHUP to SIGSYS (e.g. SIGKILL, SIGSEGV)",
                        ),
                    }
                }
            }
        }
        if !["values", "ranges", "signals"]
            .iter()
            .any(|f| map.contains_key(*f))
        {
            self.errs.required(
                format!("{path}.values"),
                "values, ranges or signals must name at least one exit code",
            );
        }
        Some(ExitCodeMatcher {
            container_name,
            operator: operator?,
            codes: merged(codes),
        })
    }

    /// `"a-b"`, inclusive, within 0..=255 (from 1 for In: exit 0 is success).
    fn range(&mut self, value: &Value, path: &str, is_in: bool) -> Option<(i32, i32)> {
        let text = self.string(value, path)?;
        let bounds = text.split_once('-').and_then(|(a, b)| {
            Some((a.trim().parse::<i32>().ok()?, b.trim().parse::<i32>().ok()?))
        });
        let low = if is_in { 1 } else { 0 };
        match bounds {
            Some((a, b)) if low <= a && a <= b && b <= 255 => Some((a, b)),
            Some(_) => {
                self.errs.invalid(
                    path,
                    echo(value),
                    &format!("must be \"a-b\" with {low} <= a <= b <= 255"),
                );
                None
            }
            None => {
                self.errs
                    .invalid(path, echo(value), "must be \"a-b\", e.g. \"128-255\"");
                None
            }
        }
    }

    fn conditions(&mut self, value: &Value, path: &str) -> Vec<ConditionMatcher> {
        let Some(items) = self.list(value, path, MAX_MATCHER_ITEMS) else {
            return Vec::new();
        };
        let mut out = Vec::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            let at = format!("{path}[{i}]");
            let Some(map) = self.object(item, &at, &["type", "status"]) else {
                continue;
            };
            let condition_type = match map.get("type") {
                Some(v) => self.bounded_string(v, &format!("{at}.type"), MAX_REASON_BYTES),
                None => {
                    self.errs.required(format!("{at}.type"), "");
                    None
                }
            };
            let status = match map.get("status") {
                None => Some(ConditionStatus::True),
                Some(v) => {
                    match self.one_of(v, &format!("{at}.status"), &["True", "False", "Unknown"]) {
                        Some("True") => Some(ConditionStatus::True),
                        Some("False") => Some(ConditionStatus::False),
                        Some(_) => Some(ConditionStatus::Unknown),
                        None => None,
                    }
                }
            };
            if let (Some(condition_type), Some(status)) = (condition_type, status) {
                out.push(ConditionMatcher {
                    condition_type,
                    status,
                });
            }
        }
        out
    }

    fn container_reasons(
        &mut self,
        value: &Value,
        path: &str,
        job: &Job,
    ) -> Option<ContainerReasonMatcher> {
        let map = self.object(value, path, &["containerName", "values"])?;
        let container_name = map
            .get("containerName")
            .and_then(|v| self.container_name(v, &format!("{path}.containerName"), job));
        let reasons = match map.get("values") {
            Some(v) => self.string_list(v, &format!("{path}.values"), MAX_MATCHER_ITEMS)?,
            None => {
                self.errs.required(
                    format!("{path}.values"),
                    "the termination reasons to match, e.g. OOMKilled",
                );
                return None;
            }
        };
        Some(ContainerReasonMatcher {
            container_name,
            reasons,
        })
    }

    fn message(&mut self, value: &Value, path: &str) -> Option<MessagePattern> {
        let map = self.object(value, path, &["pattern"])?;
        let at = format!("{path}.pattern");
        let Some(v) = map.get("pattern") else {
            self.errs
                .required(at, "a regular expression searched in the pod's messages");
            return None;
        };
        let source = self.bounded_string(v, &at, MAX_PATTERN_BYTES)?;
        match MessagePattern::new(&source) {
            Ok(pattern) => Some(pattern),
            Err(err) => {
                let what = if err.invalid_in_re2() {
                    "not a valid regular expression"
                } else {
                    "refused"
                };
                let msg = err.to_string();
                self.errs.invalid(
                    at,
                    echo(v),
                    &format!("{what}: {}", truncated(&msg, MAX_VIOLATION_VALUE_BYTES)),
                );
                None
            }
        }
    }

    fn backoff(&mut self, value: &Value, path: &str) -> Option<BackoffSettings> {
        let map = self.object(
            value,
            path,
            &[
                "baseSeconds",
                "maxSeconds",
                "factor",
                "jitterPercent",
                "afterIgnoredFailure",
            ],
        )?;
        let mut ok = true;
        let mut int =
            |walk: &mut Self, field: &str, default: i64, min: i64, max: i64| match map.get(field) {
                None => default,
                Some(v) => walk
                    .integer(v, &format!("{path}.{field}"), min, max)
                    .unwrap_or_else(|| {
                        ok = false;
                        default
                    }),
            };
        let base_seconds = int(self, "baseSeconds", 10, 1, 86_400);
        let max_seconds = int(
            self,
            "maxSeconds",
            600.max(base_seconds),
            base_seconds,
            86_400,
        );
        let factor = int(self, "factor", 2, 1, 10);
        let jitter_percent = int(self, "jitterPercent", 0, 0, 100);
        let after_ignored_failure = match map.get("afterIgnoredFailure") {
            None => IgnoredFailureDelay::Delay,
            Some(v) => match self.one_of(
                v,
                &format!("{path}.afterIgnoredFailure"),
                &["Delay", "Immediate"],
            ) {
                Some("Immediate") => IgnoredFailureDelay::Immediate,
                Some(_) => IgnoredFailureDelay::Delay,
                None => {
                    ok = false;
                    IgnoredFailureDelay::Delay
                }
            },
        };
        ok.then_some(BackoffSettings {
            base_seconds,
            max_seconds,
            // Both bounded above by 100.
            factor: i32::try_from(factor).ok()?,
            jitter_percent: i32::try_from(jitter_percent).ok()?,
            after_ignored_failure,
        })
    }

    fn pending_timeout(&mut self, value: &Value, path: &str, job: &Job) -> Option<PendingTimeout> {
        let map = self.object(value, path, &["seconds", "reasons", "action"])?;
        let seconds = match map.get("seconds") {
            Some(v) => self.integer(v, &format!("{path}.seconds"), 1, 604_800),
            None => {
                self.errs.required(
                    format!("{path}.seconds"),
                    "how long a pod may stay stuck, 1 to 604800",
                );
                None
            }
        };
        let reasons = match map.get("reasons") {
            Some(v) => self.string_list(v, &format!("{path}.reasons"), MAX_MATCHER_ITEMS),
            None => Some(
                DEFAULT_PENDING_REASONS
                    .iter()
                    .map(|r| r.to_string())
                    .collect(),
            ),
        };
        let action = match map.get("action") {
            Some(v) => {
                let action = self.action(v, &format!("{path}.action"));
                if let Some(action) = action {
                    self.check_fail_index(action, &format!("{path}.action"), job);
                }
                action
            }
            None => Some(ExtendedAction::Count),
        };
        Some(PendingTimeout {
            seconds: seconds?,
            reasons: reasons?,
            action: action?,
        })
    }

    fn node_avoidance(&mut self, value: &Value, path: &str) -> Option<NodeAvoidance> {
        let map = self.object(value, path, &["mode", "maxNodes"])?;
        let mode = match map.get("mode") {
            None => Some(NodeAvoidanceMode::Required),
            Some(v) => match self.one_of(v, &format!("{path}.mode"), &["Required", "Preferred"]) {
                Some("Preferred") => Some(NodeAvoidanceMode::Preferred),
                Some(_) => Some(NodeAvoidanceMode::Required),
                None => None,
            },
        };
        let max_nodes = match map.get("maxNodes") {
            None => Some(5),
            Some(v) => self.integer(v, &format!("{path}.maxNodes"), 1, 50),
        };
        Some(NodeAvoidance {
            mode: mode?,
            // At most 50.
            max_nodes: i32::try_from(max_nodes?).ok()?,
        })
    }
}

/// Intervals sorted and merged where they overlap or touch.
fn merged(mut codes: Vec<(i32, i32)>) -> Vec<(i32, i32)> {
    codes.sort_unstable();
    let mut out: Vec<(i32, i32)> = Vec::with_capacity(codes.len());
    for (a, b) in codes {
        match out.last_mut() {
            Some(last) if i64::from(a) <= i64::from(last.1) + 1 => last.1 = last.1.max(b),
            _ => out.push((a, b)),
        }
    }
    out
}

#[cfg(test)]
mod tests;
