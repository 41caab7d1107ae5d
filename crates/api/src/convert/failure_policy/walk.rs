//! The walk of one document's YAML tree: each part checked and defaulted, every problem
//! reported at its path. The entry points (sources, size, parsing, budgets) are the parent's.

use super::*;

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
pub(super) struct Walk<'e> {
    pub(super) errs: &'e mut Violations,
}

impl<'e> Walk<'e> {
    /// A walk reporting into `errs`.
    pub(super) fn new(errs: &'e mut Violations) -> Self {
        Walk { errs }
    }

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

    fn boolean(&mut self, value: &Value, path: &str) -> Option<bool> {
        let b = value.as_bool();
        if b.is_none() {
            self.errs
                .invalid(path, echo(value), "must be true or false");
        }
        b
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

    /// One of `choices`, each spelled as the core spells it (`name`): the document
    /// never writes an enum's names a second time.
    fn choice<T: Clone>(
        &mut self,
        value: &Value,
        path: &str,
        choices: &[T],
        name: impl Fn(&T) -> &str,
    ) -> Option<T> {
        let s = self.string(value, path)?;
        if let Some(c) = choices.iter().find(|c| name(c) == s) {
            return Some(c.clone());
        }
        let supported: Vec<&str> = choices.iter().map(&name).collect();
        self.errs
            .not_supported(path, &truncated(s, MAX_VIOLATION_VALUE_BYTES), &supported);
        None
    }

    /// An action, spelled as the core's `api_names` table spells it.
    fn action(&mut self, value: &Value, path: &str) -> Option<ExtendedAction> {
        self.one_of(value, path, ExtendedAction::NAMES)
            .and_then(ExtendedAction::parse)
    }

    /// FailIndex only where the Job has per-index backoff limits.
    fn check_fail_index(&mut self, action: ExtendedAction, path: &str, job: &Job) {
        if action == ExtendedAction::FailIndex && job.spec.backoff_limit_per_index.is_none() {
            self.errs.invalid(
                path,
                go_quote(ExtendedAction::FailIndex.as_str()),
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

    /// The whole document: its header, then each rule; the policy when nothing is wrong.
    pub(super) fn document(
        &mut self,
        value: &Value,
        path: &str,
        job: &Job,
    ) -> Option<ExtendedFailurePolicy> {
        const KNOWN: [&str; 10] = [
            "apiVersion",
            "kind",
            "rules",
            "backoff",
            "pendingTimeout",
            "nodeAvoidance",
            "failureMessage",
            "attemptDeadline",
            "readyTimeout",
            "terminatingTimeout",
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
        if let Some(v) = map.get("attemptDeadline") {
            policy.attempt_deadline = self
                .timeout(
                    v,
                    &format!("{path}.attemptDeadline"),
                    job,
                    MAX_ATTEMPT_DEADLINE_SECONDS,
                    "how long a pod may run from its start",
                )
                .map(|(seconds, action)| AttemptDeadline { seconds, action });
        }
        if let Some(v) = map.get("readyTimeout") {
            policy.ready_timeout = self
                .timeout(
                    v,
                    &format!("{path}.readyTimeout"),
                    job,
                    MAX_READY_TIMEOUT_SECONDS,
                    "how long a pod may take to become Ready from its start",
                )
                .map(|(seconds, action)| ReadyTimeout { seconds, action });
        }
        if let Some(avoid) = map.get("nodeAvoidance") {
            policy.node_avoidance = self.node_avoidance(avoid, &format!("{path}.nodeAvoidance"));
        }
        if let Some(stuck) = map.get("terminatingTimeout") {
            policy.terminating_timeout =
                self.terminating_timeout(stuck, &format!("{path}.terminatingTimeout"), job);
        }
        if let Some(v) = map.get("failureMessage") {
            let at = format!("{path}.failureMessage");
            if let Some(mode) = self
                .one_of(v, &at, FailureMessage::NAMES)
                .and_then(FailureMessage::parse)
            {
                policy.failure_message = mode;
            }
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
        self.check_index_names(items, path);
        rules
    }

    /// KEP-4443 gives an unnamed rule the reason `PodFailurePolicy_{index}` and so
    /// refuses a name that is another rule's index; the document refuses it too,
    /// so that its named rules move to `spec.podFailurePolicy` unchanged.
    fn check_index_names(&mut self, items: &[Value], path: &str) {
        for (i, item) in items.iter().enumerate() {
            let Some(Value::String(name)) = item.as_mapping().and_then(|m| m.get("name")) else {
                continue;
            };
            let other = name
                .parse::<usize>()
                .ok()
                .filter(|j| *j != i && *j < items.len() && j.to_string() == *name);
            if let Some(j) = other {
                self.errs.invalid(
                    format!("{path}[{i}].name"),
                    echo(&Value::String(name.clone())),
                    &format!(
                        "is the index of rules[{j}]; a name that is an index may only be the \
                         rule's own (KEP-4443)"
                    ),
                );
            }
        }
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
        // KEP-4443: `PodFailurePolicy_{name}` must be a condition reason
        // (`[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?`); ',' is left out because
        // the rule-match-counts annotation separates names with it.
        let well_formed = name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
            && name.ends_with(|c: char| c.is_ascii_alphanumeric() || c == '_');
        if !well_formed {
            self.errs.invalid(
                path,
                echo(value),
                "must consist of letters, digits, '_' and ':', and end with a letter, a digit or \
                 '_' (the reason PodFailurePolicy_{name} is a condition reason, KEP-4443)",
            );
            return None;
        }
        if let Some((_, field)) = RESERVED_RULE_NAMES.iter().find(|(n, _)| *n == name) {
            self.errs.invalid(
                path,
                echo(value),
                &format!("is reserved for the failures {field} causes"),
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
                let exhausted = [ExtendedAction::FailJob, ExtendedAction::FailIndex];
                let then = self.choice(v, &at, &exhausted, |a| a.as_str())?;
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
            Some(v) => Some(self.choice(
                v,
                &format!("{path}.operator"),
                &[ExitCodeOperator::In, ExitCodeOperator::NotIn],
                ExitCodeOperator::as_str,
            )?),
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
                Some(v) => self.choice(
                    v,
                    &format!("{at}.status"),
                    &[
                        ConditionStatus::True,
                        ConditionStatus::False,
                        ConditionStatus::Unknown,
                    ],
                    ConditionStatus::as_str,
                ),
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
            Some(v) => self
                .one_of(
                    v,
                    &format!("{path}.afterIgnoredFailure"),
                    IgnoredFailureDelay::NAMES,
                )
                .and_then(IgnoredFailureDelay::parse)
                .unwrap_or_else(|| {
                    ok = false;
                    IgnoredFailureDelay::Delay
                }),
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

    /// `attemptDeadline` or `readyTimeout`: `seconds` (required, 1 to `max`) and
    /// `action` (Count when unset; FailIndex needs backoffLimitPerIndex).
    fn timeout(
        &mut self,
        value: &Value,
        path: &str,
        job: &Job,
        max: i64,
        what: &str,
    ) -> Option<(i64, ExtendedAction)> {
        let map = self.object(value, path, &["seconds", "action"])?;
        let seconds = match map.get("seconds") {
            Some(v) => self.integer(v, &format!("{path}.seconds"), 1, max),
            None => {
                self.errs
                    .required(format!("{path}.seconds"), &format!("{what}, 1 to {max}"));
                None
            }
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
        Some((seconds?, action?))
    }

    fn terminating_timeout(
        &mut self,
        value: &Value,
        path: &str,
        job: &Job,
    ) -> Option<TerminatingTimeout> {
        let map = self.object(
            value,
            path,
            &["seconds", "onNodes", "action", "forceDelete"],
        )?;
        let seconds = match map.get("seconds") {
            Some(v) => self.integer(v, &format!("{path}.seconds"), 1, 604_800),
            None => {
                self.errs.required(
                    format!("{path}.seconds"),
                    "how long past its grace period a pod may stay terminating, 1 to 604800",
                );
                None
            }
        };
        let on_nodes = match map.get("onNodes") {
            None => Some(TerminatingNodes::Any),
            Some(v) => self
                .one_of(v, &format!("{path}.onNodes"), TerminatingNodes::NAMES)
                .and_then(TerminatingNodes::parse),
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
        let force_delete = match map.get("forceDelete") {
            None => Some(false),
            Some(v) => self.boolean(v, &format!("{path}.forceDelete")),
        };
        Some(TerminatingTimeout {
            seconds: seconds?,
            on_nodes: on_nodes?,
            action: action?,
            force_delete: force_delete?,
        })
    }

    fn node_avoidance(&mut self, value: &Value, path: &str) -> Option<NodeAvoidance> {
        let map = self.object(value, path, &["mode", "maxNodes"])?;
        let mode = match map.get("mode") {
            None => Some(NodeAvoidanceMode::Required),
            Some(v) => self
                .one_of(v, &format!("{path}.mode"), NodeAvoidanceMode::NAMES)
                .and_then(NodeAvoidanceMode::parse),
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
