//! API validation of a Job's decision-relevant fields, as the API server checks them.
//!
//! This follows upstream's `ValidateJobCreate` (pkg/apis/batch/validation, v1.37.2) with the
//! options the Job strategy sets on create (`RequirePrefixedLabels` on, invalid label values in
//! selectors rejected), in upstream's order, with its field paths and messages. Values are
//! rendered as upstream renders them: numbers bare, plain strings Go-quoted, named string
//! types, lists, maps and structs as JSON.
//!
//! Left out, because the domain model does not carry the fields:
//! - object metadata beyond name, namespace and uid: generateName, generation, the Job's own
//!   labels and annotations, owner references, finalizers, managed fields;
//! - `spec.selector` being absent (the model always holds a selector, so upstream's
//!   `spec.selector: Required value` cannot arise);
//! - `spec.scheduling` (gang minCount, scheduling policy and disruption mode);
//! - most of the pod template: only its labels, the names of its containers and init
//!   containers, "at least one container" and its restartPolicy are checked; images,
//!   resources, probes, volumes, ports, security context, annotations and the rest are not;
//! - update-only and status rules (immutability, counters, conditions).
//!
//! Known differences in value rendering, where the model loses a distinction Go keeps:
//! empty template labels render as `null` (a nil map), an empty exit-code list as `[]` and an
//! empty success-policy rule list as `[]`. Go ranges over label maps in random order; labels
//! here are checked in key order. Go-quoting of exotic non-printable Unicode is approximate.
//! Upstream panics when an Indexed Job without completions has a success policy; here the
//! completions-dependent success-policy checks are skipped instead.

use std::collections::{BTreeMap, HashSet};
use std::fmt;
use std::fmt::Write as _;

use crate::model::{
    CompletionMode, ConditionStatus, ExitCodeOperator, Job, JobSpec, LabelSelector, OnExitCodes,
    OnPodConditionsPattern, PodFailurePolicy, PodFailurePolicyAction, PodFailurePolicyRule,
    PodReplacementPolicy, RestartPolicy, SelectorOperator, SuccessPolicy, SuccessPolicyRule,
};
use crate::selector;

/// The kind of a validation error, as the Kubernetes API names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ViolationKind {
    /// A required field is missing.
    Required,
    /// A value is malformed or out of range.
    Invalid,
    /// A value is not one of the supported values.
    NotSupported,
    /// A list has too many items.
    TooMany,
    /// A value is too long.
    TooLong,
    /// A value is repeated.
    Duplicate,
    /// A field may not be set in this context.
    Forbidden,
}

impl ViolationKind {
    /// The machine-readable reason, e.g. `FieldValueRequired`.
    pub fn reason(self) -> &'static str {
        match self {
            ViolationKind::Required => "FieldValueRequired",
            ViolationKind::Invalid => "FieldValueInvalid",
            ViolationKind::NotSupported => "FieldValueNotSupported",
            ViolationKind::TooMany => "FieldValueTooMany",
            ViolationKind::TooLong => "FieldValueTooLong",
            ViolationKind::Duplicate => "FieldValueDuplicate",
            ViolationKind::Forbidden => "FieldValueForbidden",
        }
    }

    /// The phrase upstream puts in its messages, e.g. `Required value`.
    pub fn phrase(self) -> &'static str {
        match self {
            ViolationKind::Required => "Required value",
            ViolationKind::Invalid => "Invalid value",
            ViolationKind::NotSupported => "Unsupported value",
            ViolationKind::TooMany => "Too many",
            ViolationKind::TooLong => "Too long",
            ViolationKind::Duplicate => "Duplicate value",
            ViolationKind::Forbidden => "Forbidden",
        }
    }
}

/// One broken validation rule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    /// Path of the offending field, e.g. `spec.podFailurePolicy.rules[0].action`.
    pub field: String,
    /// What kind of error.
    pub kind: ViolationKind,
    /// The offending value as upstream prints it (quoted strings, bare numbers), when it names one.
    pub value: Option<String>,
    /// The explanation, e.g. `must be greater than or equal to 0`.
    pub detail: String,
}

impl Violation {
    /// The full message, as upstream formats a field error.
    pub fn description(&self) -> String {
        self.to_string()
    }
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.field, self.kind.phrase())?;
        if let Some(value) = &self.value {
            write!(f, ": {value}")?;
        }
        if !self.detail.is_empty() {
            write!(f, ": {}", self.detail)?;
        }
        Ok(())
    }
}

// Upstream's limits (validation.go constants).
const MAX_PARALLELISM_FOR_INDEXED_JOB: i32 = 100_000;
const MAX_FAILED_INDEXES_FOR_INDEXED_JOB: i32 = 100_000;
const COMPLETIONS_SOFT_LIMIT: i32 = 100_000;
const PARALLELISM_LIMIT_FOR_HIGH_COMPLETIONS: i32 = 10_000;
const MAX_FAILED_INDEXES_LIMIT_FOR_HIGH_COMPLETIONS: i32 = 10_000;
const MAX_POD_FAILURE_POLICY_RULES: usize = 20;
const MAX_ON_EXIT_CODES_VALUES: usize = 255;
const MAX_ON_POD_CONDITIONS_PATTERNS: usize = 20;
const MAX_MANAGED_BY_LENGTH: usize = 63;
const MAX_SUCCEEDED_INDEXES_LENGTH: usize = 64 * 1024;
const MAX_SUCCESS_POLICY_RULES: usize = 20;

// Limits and names from apimachinery's format checks.
const DNS1123_LABEL_MAX_LENGTH: usize = 63;
const DNS1123_SUBDOMAIN_MAX_LENGTH: usize = 253;
const LABEL_KEY_NAME_MAX_LENGTH: usize = 63;
const LABEL_VALUE_MAX_LENGTH: usize = 63;
const NEGATIVE_MESSAGE: &str = "must be greater than or equal to 0";

// Label keys of the generated selector (batch/v1 constants).
const LEGACY_CONTROLLER_UID_LABEL: &str = "controller-uid";
const LEGACY_JOB_NAME_LABEL: &str = "job-name";
const CONTROLLER_UID_LABEL: &str = "batch.kubernetes.io/controller-uid";
const JOB_NAME_LABEL: &str = "batch.kubernetes.io/job-name";

const DNS1123_LABEL_FMT: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
const DNS1123_LABEL_ERR: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character";
const DNS1123_SUBDOMAIN_FMT: &str =
    "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
const DNS1123_SUBDOMAIN_ERR: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";
const LABEL_KEY_FMT: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const LABEL_KEY_ERR: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const LABEL_VALUE_FMT: &str = "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?";
const LABEL_VALUE_ERR: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const HTTP_PATH_FMT: &str = "[A-Za-z0-9/\\-._~%!$&'()*+,;=:]+";

/// Every rule the Job breaks, in the order upstream checks them; empty when valid.
///
/// The Job is checked as on create, with the options the v1.37.2 strategy uses there.
pub fn validate_job(job: &Job) -> Vec<Violation> {
    let mut errs = Vec::new();
    validate_object_meta(job, &mut errs);
    // Upstream only matches selectors that convert; invalid ones are reported under spec.selector.
    let selector_errs = label_selector_violations(&job.spec.selector, "spec.selector");
    let selector_converts = selector_errs.is_empty();
    validate_generated_selector(job, selector_converts, &mut errs);
    validate_job_spec(&job.spec, &mut errs);
    errs.extend(selector_errs);
    if selector_converts && !selector::matches(&job.spec.selector, &job.spec.template.labels) {
        errs.push(invalid(
            "spec.template.metadata.labels",
            labels_json(&job.spec.template.labels),
            "`selector` does not match template `labels`",
        ));
    }
    validate_name_allows_completions(job, &mut errs);
    errs
}

// ---------------------------------------------------------------------------------------------
// Constructors in the shape of apimachinery's field errors.

fn required(field: impl Into<String>, detail: impl Into<String>) -> Violation {
    Violation {
        field: field.into(),
        kind: ViolationKind::Required,
        value: None,
        detail: detail.into(),
    }
}

fn invalid(field: impl Into<String>, value: String, detail: impl Into<String>) -> Violation {
    Violation {
        field: field.into(),
        kind: ViolationKind::Invalid,
        value: Some(value),
        detail: detail.into(),
    }
}

/// An Invalid error about a whole object, where upstream omits the value.
fn invalid_omit_value(field: impl Into<String>, detail: impl Into<String>) -> Violation {
    Violation {
        field: field.into(),
        kind: ViolationKind::Invalid,
        value: None,
        detail: detail.into(),
    }
}

fn not_supported(field: impl Into<String>, value: String, supported: &[&str]) -> Violation {
    let quoted: Vec<String> = supported.iter().map(|s| go_quote(s)).collect();
    Violation {
        field: field.into(),
        kind: ViolationKind::NotSupported,
        value: Some(value),
        detail: format!("supported values: {}", quoted.join(", ")),
    }
}

fn too_many(field: impl Into<String>, actual: usize, max: usize) -> Violation {
    let noun = if max == 1 { "item" } else { "items" };
    Violation {
        field: field.into(),
        kind: ViolationKind::TooMany,
        value: Some(actual.to_string()),
        detail: format!("must have at most {max} {noun}"),
    }
}

fn too_long(field: impl Into<String>, max: usize) -> Violation {
    let noun = if max == 1 { "byte" } else { "bytes" };
    Violation {
        field: field.into(),
        kind: ViolationKind::TooLong,
        value: None,
        detail: format!("may not be more than {max} {noun}"),
    }
}

fn duplicate(field: impl Into<String>, value: String) -> Violation {
    Violation {
        field: field.into(),
        kind: ViolationKind::Duplicate,
        value: Some(value),
        detail: String::new(),
    }
}

fn non_negative(value: i64, field: &str, errs: &mut Vec<Violation>) {
    if value < 0 {
        errs.push(invalid(field, value.to_string(), NEGATIVE_MESSAGE));
    }
}

// ---------------------------------------------------------------------------------------------
// Metadata and the generated selector.

fn validate_object_meta(job: &Job, errs: &mut Vec<Violation>) {
    if job.name.is_empty() {
        errs.push(required(
            "metadata.name",
            "name or generateName is required",
        ));
    } else {
        for msg in dns1123_subdomain_errors(&job.name) {
            errs.push(invalid("metadata.name", go_quote(&job.name), msg));
        }
    }
    if job.namespace.is_empty() {
        errs.push(required("metadata.namespace", ""));
    } else {
        for msg in dns1123_label_errors(&job.namespace) {
            errs.push(invalid("metadata.namespace", go_quote(&job.namespace), msg));
        }
    }
}

fn validate_generated_selector(job: &Job, selector_converts: bool, errs: &mut Vec<Violation>) {
    if job.spec.manual_selector {
        return;
    }
    if job.uid.is_empty() {
        errs.push(required("metadata.uid", ""));
    }
    let labels = &job.spec.template.labels;
    // RequirePrefixedLabels is on for every create in the v1.37.2 strategy.
    let expected = [
        (LEGACY_CONTROLLER_UID_LABEL, job.uid.as_str()),
        (LEGACY_JOB_NAME_LABEL, job.name.as_str()),
        (CONTROLLER_UID_LABEL, job.uid.as_str()),
        (JOB_NAME_LABEL, job.name.as_str()),
    ];
    for (key, want) in expected {
        let field = format!("spec.template.metadata.labels[{key}]");
        match labels.get(key) {
            None => errs.push(required(field, format!("must be '{want}'"))),
            Some(got) if got != want => errs.push(invalid(
                field,
                labels_json(labels),
                format!("must be '{want}'"),
            )),
            Some(_) => {}
        }
    }
    let expected_labels: BTreeMap<String, String> = expected
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    if selector_converts && !selector::matches(&job.spec.selector, &expected_labels) {
        errs.push(invalid(
            "spec.selector",
            selector_json(&job.spec.selector),
            "`selector` not auto-generated",
        ));
    }
}

fn validate_name_allows_completions(job: &Job, errs: &mut Vec<Violation>) {
    let Some(completions) = job.spec.completions else {
        return;
    };
    if !job.spec.is_indexed() || completions <= 0 {
        return;
    }
    // The last pod's hostname is "<name>-<completions-1>"; it must be a DNS label.
    let hostname = format!("{}-{}", job.name, i64::from(completions) - 1);
    if !dns1123_label_errors(&hostname).is_empty() {
        errs.push(invalid(
            "metadata.name",
            go_quote(&job.name),
            format!("will not able to create pod with invalid DNS label: {hostname}"),
        ));
    }
}

// ---------------------------------------------------------------------------------------------
// The spec.

fn validate_job_spec(spec: &JobSpec, errs: &mut Vec<Violation>) {
    non_negative(spec.parallelism.into(), "spec.parallelism", errs);
    if let Some(completions) = spec.completions {
        non_negative(completions.into(), "spec.completions", errs);
    }
    if let Some(deadline) = spec.active_deadline_seconds {
        non_negative(deadline, "spec.activeDeadlineSeconds", errs);
    }
    non_negative(spec.backoff_limit.into(), "spec.backoffLimit", errs);
    if let Some(ttl) = spec.ttl_seconds_after_finished {
        non_negative(ttl.into(), "spec.ttlSecondsAfterFinished", errs);
    }
    if let Some(per_index) = spec.backoff_limit_per_index {
        non_negative(per_index.into(), "spec.backoffLimitPerIndex", errs);
    }
    if let Some(max_failed) = spec.max_failed_indexes {
        non_negative(max_failed.into(), "spec.maxFailedIndexes", errs);
        if spec.backoff_limit_per_index.is_none() {
            errs.push(required(
                "spec.backoffLimitPerIndex",
                "when maxFailedIndexes is specified",
            ));
        }
    }
    if let Some(managed_by) = &spec.managed_by {
        domain_prefixed_path("spec.managedBy", managed_by, errs);
        if managed_by.len() > MAX_MANAGED_BY_LENGTH {
            errs.push(too_long("spec.managedBy", MAX_MANAGED_BY_LENGTH));
        }
    }
    match &spec.completion_mode {
        CompletionMode::Unknown(mode) => errs.push(not_supported(
            "spec.completionMode",
            json_quote(mode),
            &["NonIndexed", "Indexed"],
        )),
        CompletionMode::Indexed => validate_indexed_limits(spec, errs),
        CompletionMode::NonIndexed => {
            if let Some(per_index) = spec.backoff_limit_per_index {
                errs.push(invalid(
                    "spec.backoffLimitPerIndex",
                    per_index.to_string(),
                    "requires indexed completion mode",
                ));
            }
            if let Some(max_failed) = spec.max_failed_indexes {
                errs.push(invalid(
                    "spec.maxFailedIndexes",
                    max_failed.to_string(),
                    "requires indexed completion mode",
                ));
            }
        }
    }
    if let Some(policy) = &spec.pod_failure_policy {
        validate_pod_failure_policy(spec, policy, errs);
    }
    if let Some(policy) = &spec.success_policy {
        if spec.is_indexed() {
            validate_success_policy(spec, policy, errs);
        } else {
            errs.push(invalid(
                "spec.successPolicy",
                success_policy_json(policy),
                "requires indexed completion mode",
            ));
        }
    }
    validate_pod_replacement_policy(spec, errs);
    validate_pod_template(spec, errs);
    validate_job_restart_policy(spec, errs);
}

fn validate_indexed_limits(spec: &JobSpec, errs: &mut Vec<Violation>) {
    if spec.completions.is_none() {
        errs.push(required(
            "spec.completions",
            "when completion mode is Indexed",
        ));
    }
    if spec.parallelism > MAX_PARALLELISM_FOR_INDEXED_JOB {
        errs.push(invalid(
            "spec.parallelism",
            spec.parallelism.to_string(),
            format!(
                "must be less than or equal to {MAX_PARALLELISM_FOR_INDEXED_JOB} when completion mode is Indexed"
            ),
        ));
    }
    if let (Some(completions), Some(max_failed)) = (spec.completions, spec.max_failed_indexes)
        && max_failed > completions
    {
        errs.push(invalid(
            "spec.maxFailedIndexes",
            max_failed.to_string(),
            "must be less than or equal to completions",
        ));
    }
    if let Some(max_failed) = spec.max_failed_indexes
        && max_failed > MAX_FAILED_INDEXES_FOR_INDEXED_JOB
    {
        errs.push(invalid(
            "spec.maxFailedIndexes",
            max_failed.to_string(),
            format!("must be less than or equal to {MAX_FAILED_INDEXES_FOR_INDEXED_JOB}"),
        ));
    }
    let high_completions = spec.completions.is_some_and(|c| c > COMPLETIONS_SOFT_LIMIT);
    if high_completions && spec.backoff_limit_per_index.is_some() {
        let suffix = format!(
            "when completions are above {COMPLETIONS_SOFT_LIMIT} and used with backoff limit per index"
        );
        if spec.max_failed_indexes.is_none() {
            errs.push(required(
                "spec.maxFailedIndexes",
                format!("must be specified when completions is above {COMPLETIONS_SOFT_LIMIT}"),
            ));
        }
        if spec.parallelism > PARALLELISM_LIMIT_FOR_HIGH_COMPLETIONS {
            errs.push(invalid(
                "spec.parallelism",
                spec.parallelism.to_string(),
                format!("must be less than or equal to {PARALLELISM_LIMIT_FOR_HIGH_COMPLETIONS} {suffix}"),
            ));
        }
        if let Some(max_failed) = spec.max_failed_indexes
            && max_failed > MAX_FAILED_INDEXES_LIMIT_FOR_HIGH_COMPLETIONS
        {
            errs.push(invalid(
                "spec.maxFailedIndexes",
                max_failed.to_string(),
                format!(
                    "must be less than or equal to {MAX_FAILED_INDEXES_LIMIT_FOR_HIGH_COMPLETIONS} {suffix}"
                ),
            ));
        }
    }
}

fn validate_pod_replacement_policy(spec: &JobSpec, errs: &mut Vec<Violation>) {
    const FIELD: &str = "spec.podReplacementPolicy";
    let value = match &spec.pod_replacement_policy {
        PodReplacementPolicy::Failed => return,
        PodReplacementPolicy::TerminatingOrFailed => "TerminatingOrFailed",
        PodReplacementPolicy::Unknown(value) => value.as_str(),
    };
    if spec.pod_failure_policy.is_some() {
        // A pod failure policy needs to see the final state of every pod it replaces.
        errs.push(not_supported(FIELD, json_quote(value), &["Failed"]));
    } else if matches!(
        spec.pod_replacement_policy,
        PodReplacementPolicy::Unknown(_)
    ) {
        errs.push(not_supported(
            FIELD,
            json_quote(value),
            &["Failed", "TerminatingOrFailed"],
        ));
    }
}

fn validate_pod_template(spec: &JobSpec, errs: &mut Vec<Violation>) {
    let template = &spec.template;
    validate_labels(&template.labels, "spec.template.metadata.labels", errs);
    if template.containers.is_empty() {
        errs.push(required("spec.template.spec.containers", ""));
    } else {
        let mut seen = HashSet::new();
        for (i, name) in template.containers.iter().enumerate() {
            let field = format!("spec.template.spec.containers[{i}].name");
            container_name(name, &field, errs);
            if !seen.insert(name.as_str()) {
                errs.push(duplicate(field, go_quote(name)));
            }
        }
    }
    // Init containers share one namespace of names with the regular containers.
    let mut seen: HashSet<&str> = template.containers.iter().map(String::as_str).collect();
    for (i, name) in template.init_containers.iter().enumerate() {
        let field = format!("spec.template.spec.initContainers[{i}].name");
        container_name(name, &field, errs);
        if seen.contains(name.as_str()) {
            errs.push(duplicate(field, go_quote(name)));
        } else if !name.is_empty() {
            seen.insert(name.as_str());
        }
    }
    // The pod-level check runs first and knows Always; the Job-level check below rejects it.
    const FIELD: &str = "spec.template.spec.restartPolicy";
    match &template.restart_policy {
        RestartPolicy::Never | RestartPolicy::OnFailure | RestartPolicy::Always => {}
        RestartPolicy::Other(value) if value.is_empty() => errs.push(required(FIELD, "")),
        RestartPolicy::Other(value) => errs.push(not_supported(
            FIELD,
            json_quote(value),
            &["Always", "OnFailure", "Never"],
        )),
    }
}

fn container_name(name: &str, field: &str, errs: &mut Vec<Violation>) {
    if name.is_empty() {
        errs.push(required(field, ""));
    } else {
        for msg in dns1123_label_errors(name) {
            errs.push(invalid(field, go_quote(name), msg));
        }
    }
}

fn validate_job_restart_policy(spec: &JobSpec, errs: &mut Vec<Violation>) {
    const FIELD: &str = "spec.template.spec.restartPolicy";
    match &spec.template.restart_policy {
        RestartPolicy::Always => {
            errs.push(required(FIELD, "valid values: \"OnFailure\", \"Never\""));
        }
        RestartPolicy::Other(value) if value.is_empty() => {
            errs.push(required(FIELD, "valid values: \"OnFailure\", \"Never\""));
        }
        RestartPolicy::Other(value) => {
            errs.push(not_supported(
                FIELD,
                json_quote(value),
                &["OnFailure", "Never"],
            ));
        }
        RestartPolicy::OnFailure if spec.pod_failure_policy.is_some() => {
            errs.push(invalid(
                FIELD,
                json_quote("OnFailure"),
                "only \"Never\" is supported when podFailurePolicy is specified",
            ));
        }
        RestartPolicy::OnFailure | RestartPolicy::Never => {}
    }
}

// ---------------------------------------------------------------------------------------------
// Pod failure policy.

fn validate_pod_failure_policy(
    spec: &JobSpec,
    policy: &PodFailurePolicy,
    errs: &mut Vec<Violation>,
) {
    const RULES: &str = "spec.podFailurePolicy.rules";
    if policy.rules.len() > MAX_POD_FAILURE_POLICY_RULES {
        errs.push(too_many(
            RULES,
            policy.rules.len(),
            MAX_POD_FAILURE_POLICY_RULES,
        ));
    }
    let template = &spec.template;
    let container_names: HashSet<&str> = template
        .containers
        .iter()
        .chain(template.init_containers.iter())
        .map(String::as_str)
        .collect();
    for (i, rule) in policy.rules.iter().enumerate() {
        validate_pod_failure_policy_rule(
            spec,
            rule,
            &format!("{RULES}[{i}]"),
            &container_names,
            errs,
        );
    }
}

fn validate_pod_failure_policy_rule(
    spec: &JobSpec,
    rule: &PodFailurePolicyRule,
    path: &str,
    container_names: &HashSet<&str>,
    errs: &mut Vec<Violation>,
) {
    const ACTIONS: [&str; 4] = ["Count", "FailIndex", "FailJob", "Ignore"];
    let action_path = format!("{path}.action");
    match &rule.action {
        PodFailurePolicyAction::Unknown(action) if action.is_empty() => errs.push(required(
            action_path,
            "valid values: [\"Count\" \"FailIndex\" \"FailJob\" \"Ignore\"]",
        )),
        PodFailurePolicyAction::Unknown(action) => {
            errs.push(not_supported(action_path, json_quote(action), &ACTIONS))
        }
        PodFailurePolicyAction::FailIndex if spec.backoff_limit_per_index.is_none() => {
            errs.push(invalid(
                action_path,
                json_quote("FailIndex"),
                "requires the backoffLimitPerIndex to be set",
            ))
        }
        _ => {}
    }
    if let Some(on_exit_codes) = &rule.on_exit_codes {
        validate_on_exit_codes(
            on_exit_codes,
            &format!("{path}.onExitCodes"),
            container_names,
            errs,
        );
    }
    if !rule.on_pod_conditions.is_empty() {
        validate_on_pod_conditions(
            &rule.on_pod_conditions,
            &format!("{path}.onPodConditions"),
            errs,
        );
    }
    // An empty onPodConditions list counts as absent, as upstream checks its length.
    match (
        rule.on_exit_codes.is_some(),
        !rule.on_pod_conditions.is_empty(),
    ) {
        (true, true) => errs.push(invalid_omit_value(
            path,
            "specifying both OnExitCodes and OnPodConditions is not supported",
        )),
        (false, false) => errs.push(invalid_omit_value(
            path,
            "specifying one of OnExitCodes and OnPodConditions is required",
        )),
        _ => {}
    }
}

fn validate_on_exit_codes(
    requirement: &OnExitCodes,
    path: &str,
    container_names: &HashSet<&str>,
    errs: &mut Vec<Violation>,
) {
    let operator_path = format!("{path}.operator");
    match &requirement.operator {
        ExitCodeOperator::Unknown(op) if op.is_empty() => {
            errs.push(required(operator_path, "valid values: [\"In\" \"NotIn\"]"))
        }
        ExitCodeOperator::Unknown(op) => errs.push(not_supported(
            operator_path,
            json_quote(op),
            &["In", "NotIn"],
        )),
        ExitCodeOperator::In | ExitCodeOperator::NotIn => {}
    }
    if let Some(name) = &requirement.container_name
        && !container_names.contains(name.as_str())
    {
        errs.push(invalid(
            format!("{path}.containerName"),
            go_quote(name),
            "must be one of the container or initContainer names in the pod template",
        ));
    }
    let values_path = format!("{path}.values");
    let values = &requirement.values;
    if values.is_empty() {
        errs.push(invalid(
            &values_path,
            int_list_json(values),
            "at least one value is required",
        ));
    } else if values.len() > MAX_ON_EXIT_CODES_VALUES {
        errs.push(too_many(
            &values_path,
            values.len(),
            MAX_ON_EXIT_CODES_VALUES,
        ));
    }
    let is_in = requirement.operator == ExitCodeOperator::In;
    let mut seen = HashSet::with_capacity(values.len());
    for (j, &value) in values.iter().enumerate() {
        // Paths are built only on error: the list can be long and is usually fine.
        let value_path = || format!("{values_path}[{j}]");
        if is_in && value == 0 {
            errs.push(invalid(
                value_path(),
                "0".to_string(),
                "must not be 0 for the In operator",
            ));
        }
        if !seen.insert(value) {
            errs.push(duplicate(value_path(), value.to_string()));
        }
    }
    if values.windows(2).any(|pair| pair[0] > pair[1]) {
        errs.push(invalid(
            values_path,
            int_list_json(values),
            "must be ordered",
        ));
    }
}

fn validate_on_pod_conditions(
    patterns: &[OnPodConditionsPattern],
    path: &str,
    errs: &mut Vec<Violation>,
) {
    if patterns.len() > MAX_ON_POD_CONDITIONS_PATTERNS {
        errs.push(too_many(
            path,
            patterns.len(),
            MAX_ON_POD_CONDITIONS_PATTERNS,
        ));
    }
    for (j, pattern) in patterns.iter().enumerate() {
        let type_path = format!("{path}[{j}].type");
        for msg in qualified_name_errors(&pattern.condition_type) {
            errs.push(invalid(&type_path, go_quote(&pattern.condition_type), msg));
        }
        let status_path = format!("{path}[{j}].status");
        match &pattern.status {
            ConditionStatus::True | ConditionStatus::False | ConditionStatus::Unknown => {}
            ConditionStatus::Other(status) if status.is_empty() => errs.push(required(
                status_path,
                "valid values: [\"False\" \"True\" \"Unknown\"]",
            )),
            ConditionStatus::Other(status) => errs.push(not_supported(
                status_path,
                json_quote(status),
                &["False", "True", "Unknown"],
            )),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Success policy.

fn validate_success_policy(spec: &JobSpec, policy: &SuccessPolicy, errs: &mut Vec<Violation>) {
    const RULES: &str = "spec.successPolicy.rules";
    if policy.rules.is_empty() {
        errs.push(required(
            RULES,
            "at least one rules must be specified when the successPolicy is specified",
        ));
    }
    if policy.rules.len() > MAX_SUCCESS_POLICY_RULES {
        errs.push(too_many(
            RULES,
            policy.rules.len(),
            MAX_SUCCESS_POLICY_RULES,
        ));
    }
    for (i, rule) in policy.rules.iter().enumerate() {
        validate_success_policy_rule(spec, rule, &format!("{RULES}[{i}]"), errs);
    }
}

fn validate_success_policy_rule(
    spec: &JobSpec,
    rule: &SuccessPolicyRule,
    path: &str,
    errs: &mut Vec<Violation>,
) {
    if rule.succeeded_count.is_none() && rule.succeeded_indexes.is_none() {
        errs.push(required(
            path,
            "at least one of succeededCount or succeededIndexes must be specified",
        ));
    }
    // A failed parse counts as zero indexes, as upstream's does.
    let mut total_indexes: i64 = 0;
    if let Some(indexes) = &rule.succeeded_indexes {
        let indexes_path = format!("{path}.succeededIndexes");
        if indexes.len() > MAX_SUCCEEDED_INDEXES_LENGTH {
            errs.push(too_long(&indexes_path, MAX_SUCCEEDED_INDEXES_LENGTH));
        }
        if let Some(completions) = spec.completions {
            match strict_index_total(indexes, completions) {
                Ok(total) => total_indexes = total,
                Err(reason) => errs.push(invalid(
                    indexes_path,
                    go_quote(indexes),
                    format!("error parsing succeededIndexes: {reason}"),
                )),
            }
        }
    }
    if let Some(count) = rule.succeeded_count {
        let count_path = format!("{path}.succeededCount");
        non_negative(count.into(), &count_path, errs);
        if let Some(completions) = spec.completions {
            if count > completions {
                errs.push(invalid(
                    &count_path,
                    count.to_string(),
                    format!(
                        "must be less than or equal to {completions} (the number of specified completions)"
                    ),
                ));
            }
            if rule.succeeded_indexes.is_some() && i64::from(count) > total_indexes {
                errs.push(invalid(
                    &count_path,
                    count.to_string(),
                    format!(
                        "must be less than or equal to {total_indexes} (the number of indexes in the specified succeededIndexes field)"
                    ),
                ));
            }
        }
    }
}

/// How many indexes a strictly formatted interval list (`"1,3-5"`) names, or why it is malformed.
///
/// Strict means: each piece is `x` or `x-y` with `x < y`, every index is below `completions`,
/// and pieces strictly increase. The empty string names no index.
fn strict_index_total(text: &str, completions: i32) -> Result<i64, String> {
    if text.is_empty() {
        return Ok(0);
    }
    let mut last: Option<i64> = None;
    let mut total: i64 = 0;
    for piece in text.split(',') {
        let (first, end) = strict_interval(piece, completions)?;
        if let Some(previous) = last
            && previous >= first
        {
            return Err(format!(
                "non-increasing order, previous: {previous}, current: {first}"
            ));
        }
        total += end - first + 1;
        last = Some(end);
    }
    Ok(total)
}

fn strict_interval(piece: &str, completions: i32) -> Result<(i64, i64), String> {
    let parts: Vec<&str> = piece.split('-').collect();
    if parts.len() > 2 {
        return Err(format!(
            "the fragment {} violates the requirement that an index interval can have at most two parts separated by '-'",
            go_quote(piece)
        ));
    }
    let first = strict_index(parts[0], completions)?;
    let Some(second) = parts.get(1) else {
        return Ok((first, first));
    };
    let end = strict_index(second, completions)?;
    if first >= end {
        return Err(format!(
            "non-increasing order, previous: {first}, current: {end}"
        ));
    }
    Ok((first, end))
}

fn strict_index(part: &str, completions: i32) -> Result<i64, String> {
    // Rust's i64 parsing accepts exactly what Go's strconv.Atoi does: an optional sign, digits.
    let index: i64 = part.parse().map_err(|_| {
        format!(
            "cannot convert string to integer for index: {}",
            go_quote(part)
        )
    })?;
    if index >= i64::from(completions) {
        return Err(format!("too large index: {}", go_quote(part)));
    }
    Ok(index)
}

// ---------------------------------------------------------------------------------------------
// Labels and selectors.

fn validate_labels(labels: &BTreeMap<String, String>, field: &str, errs: &mut Vec<Violation>) {
    for (key, value) in labels {
        for msg in qualified_name_errors(key) {
            errs.push(invalid(field, go_quote(key), msg));
        }
        for msg in label_value_errors(value) {
            errs.push(invalid(field, go_quote(value), msg));
        }
    }
}

/// Upstream's ValidateLabelSelector; empty exactly when the selector converts to a matcher.
fn label_selector_violations(selector: &LabelSelector, field: &str) -> Vec<Violation> {
    let mut errs = Vec::new();
    validate_labels(
        &selector.match_labels,
        &format!("{field}.matchLabels"),
        &mut errs,
    );
    for (i, requirement) in selector.match_expressions.iter().enumerate() {
        let path = format!("{field}.matchExpressions[{i}]");
        match &requirement.operator {
            SelectorOperator::In | SelectorOperator::NotIn => {
                if requirement.values.is_empty() {
                    errs.push(required(
                        format!("{path}.values"),
                        "must be specified when `operator` is 'In' or 'NotIn'",
                    ));
                }
            }
            SelectorOperator::Exists | SelectorOperator::DoesNotExist => {
                if !requirement.values.is_empty() {
                    errs.push(Violation {
                        field: format!("{path}.values"),
                        kind: ViolationKind::Forbidden,
                        value: None,
                        detail:
                            "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"
                                .into(),
                    });
                }
            }
            SelectorOperator::Unknown(op) => errs.push(invalid(
                format!("{path}.operator"),
                json_quote(op),
                "not a valid selector operator",
            )),
        }
        let key_path = format!("{path}.key");
        for msg in qualified_name_errors(&requirement.key) {
            errs.push(invalid(&key_path, go_quote(&requirement.key), msg));
        }
        for (j, value) in requirement.values.iter().enumerate() {
            for msg in label_value_errors(value) {
                errs.push(invalid(format!("{path}.values[{j}]"), go_quote(value), msg));
            }
        }
    }
    errs
}

// ---------------------------------------------------------------------------------------------
// Name formats (apimachinery's IsDNS1123Label, IsDNS1123Subdomain, IsQualifiedName...).

fn regex_error(message: &str, format: &str, examples: &[&str]) -> String {
    if examples.is_empty() {
        return format!("{message} (regex used for validation is '{format}')");
    }
    let mut out = format!("{message} (e.g. ");
    for (i, example) in examples.iter().enumerate() {
        if i > 0 {
            out.push_str(" or ");
        }
        let _ = write!(out, "'{example}', ");
    }
    let _ = write!(out, "regex used for validation is '{format}')");
    out
}

fn max_len_error(max: usize) -> String {
    format!("must be no more than {max} characters")
}

fn is_dns1123_label(s: &str) -> bool {
    let bytes = s.as_bytes();
    let alnum = |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    match (bytes.first(), bytes.last()) {
        (Some(&first), Some(&last)) => {
            alnum(first) && alnum(last) && bytes.iter().all(|&b| alnum(b) || b == b'-')
        }
        _ => false,
    }
}

fn is_dns1123_subdomain(s: &str) -> bool {
    s.split('.').all(is_dns1123_label)
}

fn dns1123_label_errors(s: &str) -> Vec<String> {
    let mut msgs = Vec::new();
    if s.len() > DNS1123_LABEL_MAX_LENGTH {
        msgs.push(max_len_error(DNS1123_LABEL_MAX_LENGTH));
    }
    if !is_dns1123_label(s) {
        if is_dns1123_subdomain(s) {
            msgs.push("must not contain dots".to_string());
        } else {
            msgs.push(regex_error(
                DNS1123_LABEL_ERR,
                DNS1123_LABEL_FMT,
                &["my-name", "123-abc"],
            ));
        }
    }
    msgs
}

fn dns1123_subdomain_errors(s: &str) -> Vec<String> {
    let mut msgs = Vec::new();
    if s.len() > DNS1123_SUBDOMAIN_MAX_LENGTH {
        msgs.push(max_len_error(DNS1123_SUBDOMAIN_MAX_LENGTH));
    }
    if !is_dns1123_subdomain(s) {
        msgs.push(regex_error(
            DNS1123_SUBDOMAIN_ERR,
            DNS1123_SUBDOMAIN_FMT,
            &["example.com"],
        ));
    }
    msgs
}

/// The name part of a label key: alphanumerics at both ends, `-_.` allowed inside.
fn is_label_key_name(s: &str) -> bool {
    let bytes = s.as_bytes();
    match (bytes.first(), bytes.last()) {
        (Some(&first), Some(&last)) => {
            first.is_ascii_alphanumeric()
                && last.is_ascii_alphanumeric()
                && bytes
                    .iter()
                    .all(|&b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
        }
        _ => false,
    }
}

fn qualified_name_errors(value: &str) -> Vec<String> {
    let examples = ["MyName", "my.name", "123-abc"];
    let mut msgs = Vec::new();
    let name = match value.split_once('/') {
        None => value,
        Some((_, rest)) if rest.contains('/') => {
            msgs.push(format!(
                "a valid label key {} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
                regex_error(LABEL_KEY_ERR, LABEL_KEY_FMT, &examples)
            ));
            return msgs;
        }
        Some((prefix, rest)) => {
            if prefix.is_empty() {
                msgs.push("prefix part must be non-empty".to_string());
            } else {
                msgs.extend(
                    dns1123_subdomain_errors(prefix)
                        .into_iter()
                        .map(|m| format!("prefix part {m}")),
                );
            }
            rest
        }
    };
    if name.is_empty() {
        msgs.push("name part must be non-empty".to_string());
    } else if name.len() > LABEL_KEY_NAME_MAX_LENGTH {
        msgs.push(format!(
            "name part {}",
            max_len_error(LABEL_KEY_NAME_MAX_LENGTH)
        ));
    }
    if !is_label_key_name(name) {
        msgs.push(format!(
            "name part {}",
            regex_error(LABEL_KEY_ERR, LABEL_KEY_FMT, &examples)
        ));
    }
    msgs
}

fn label_value_errors(value: &str) -> Vec<String> {
    let mut msgs = Vec::new();
    if value.len() > LABEL_VALUE_MAX_LENGTH {
        msgs.push(max_len_error(LABEL_VALUE_MAX_LENGTH));
    }
    if !value.is_empty() && !is_label_key_name(value) {
        msgs.push(regex_error(
            LABEL_VALUE_ERR,
            LABEL_VALUE_FMT,
            &["MyValue", "my_value", "12345"],
        ));
    }
    msgs
}

/// apimachinery's IsDomainPrefixedPath, e.g. `acme.io/foo`.
fn domain_prefixed_path(field: &str, value: &str, errs: &mut Vec<Violation>) {
    if value.is_empty() {
        errs.push(required(field, ""));
        return;
    }
    let Some((host, path)) = value
        .split_once('/')
        .filter(|(h, p)| !h.is_empty() && !p.is_empty())
    else {
        errs.push(invalid(
            field,
            go_quote(value),
            "must be a domain-prefixed path (such as \"acme.io/foo\")",
        ));
        return;
    };
    for msg in dns1123_subdomain_errors(host) {
        errs.push(invalid(field, go_quote(host), msg));
    }
    let path_ok = path
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b"/-._~%!$&'()*+,;=:".contains(&b));
    if !path_ok {
        errs.push(invalid(
            field,
            go_quote(path),
            regex_error("Invalid path", HTTP_PATH_FMT, &[]),
        ));
    }
}

// ---------------------------------------------------------------------------------------------
// Value rendering: Go's %q for plain strings, encoding/json for everything else.

/// A string as Go's strconv.Quote writes it.
fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{b}' => out.push_str("\\v"),
            c if go_printable(c) => out.push(c),
            c if u32::from(c) < 0x80 => {
                let _ = write!(out, "\\x{:02x}", u32::from(c));
            }
            c if u32::from(c) < 0x1_0000 => {
                let _ = write!(out, "\\u{:04x}", u32::from(c));
            }
            c => {
                let _ = write!(out, "\\U{:08x}", u32::from(c));
            }
        }
    }
    out.push('"');
    out
}

/// Approximates Go's unicode.IsPrint: no controls, no spaces but ' ', no format or private chars.
fn go_printable(c: char) -> bool {
    let code = u32::from(c);
    if code < 0x80 {
        return (0x20..0x7f).contains(&code);
    }
    !(c.is_control()
        || c.is_whitespace()
        || matches!(code, 0xAD | 0x600..=0x605 | 0x61C | 0x6DD | 0x70F | 0x180E)
        || matches!(code, 0x200B..=0x200F | 0x202A..=0x202E | 0x2060..=0x206F)
        || matches!(code, 0xE000..=0xF8FF | 0xFEFF | 0xFFF9..=0xFFFB | 0xFFFE | 0xFFFF)
        || code >= 0xF_0000)
}

/// A string as Go's encoding/json writes it (HTML-safe escaping included).
fn json_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if u32::from(c) < 0x20 || matches!(c, '<' | '>' | '&' | '\u{2028}' | '\u{2029}') => {
                let _ = write!(out, "\\u{:04x}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn string_map_json(map: &BTreeMap<String, String>) -> String {
    let pairs: Vec<String> = map
        .iter()
        .map(|(k, v)| format!("{}:{}", json_quote(k), json_quote(v)))
        .collect();
    format!("{{{}}}", pairs.join(","))
}

/// Labels as upstream prints a label map; an empty one prints as a nil map would.
fn labels_json(labels: &BTreeMap<String, String>) -> String {
    if labels.is_empty() {
        "null".to_string()
    } else {
        string_map_json(labels)
    }
}

fn string_list_json(values: &[String]) -> String {
    let items: Vec<String> = values.iter().map(|v| json_quote(v)).collect();
    format!("[{}]", items.join(","))
}

fn int_list_json(values: &[i32]) -> String {
    let items: Vec<String> = values.iter().map(i32::to_string).collect();
    format!("[{}]", items.join(","))
}

/// A selector as the metav1.LabelSelector JSON form, empty fields omitted.
fn selector_json(selector: &LabelSelector) -> String {
    let mut fields = Vec::new();
    if !selector.match_labels.is_empty() {
        fields.push(format!(
            "\"matchLabels\":{}",
            string_map_json(&selector.match_labels)
        ));
    }
    if !selector.match_expressions.is_empty() {
        let items: Vec<String> = selector
            .match_expressions
            .iter()
            .map(|r| {
                let mut item = format!(
                    "{{\"key\":{},\"operator\":{}",
                    json_quote(&r.key),
                    json_quote(r.operator.as_str())
                );
                if !r.values.is_empty() {
                    let _ = write!(item, ",\"values\":{}", string_list_json(&r.values));
                }
                item.push('}');
                item
            })
            .collect();
        fields.push(format!("\"matchExpressions\":[{}]", items.join(",")));
    }
    format!("{{{}}}", fields.join(","))
}

/// A success policy as upstream prints its internal (untagged) struct.
fn success_policy_json(policy: &SuccessPolicy) -> String {
    let rules: Vec<String> = policy
        .rules
        .iter()
        .map(|rule| {
            let indexes = rule
                .succeeded_indexes
                .as_deref()
                .map_or("null".to_string(), json_quote);
            let count = rule
                .succeeded_count
                .map_or("null".to_string(), |c| c.to_string());
            format!("{{\"SucceededIndexes\":{indexes},\"SucceededCount\":{count}}}")
        })
        .collect();
    format!("{{\"Rules\":[{}]}}", rules.join(","))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::{indexed_job, job};
    use crate::model::{PodFailurePolicyRule, SelectorRequirement};

    /// A case: its name, a change to `fixtures::job()`, and every message expected, in order.
    type Case = (&'static str, fn(&mut Job), &'static [&'static str]);

    /// Runs `mutate` on a fresh `fixtures::job()` and returns the violations.
    fn messages(mutate: fn(&mut Job)) -> Vec<Violation> {
        let mut j = job();
        mutate(&mut j);
        validate_job(&j)
    }

    /// Asserts, case by case, the exact field path and full message of every violation, in order.
    fn check(cases: &[Case]) {
        for (name, mutate, want) in cases {
            let got = messages(*mutate);
            let got_messages: Vec<String> = got.iter().map(Violation::to_string).collect();
            assert_eq!(got_messages, *want, "case {name:?}");
            for (violation, expected) in got.iter().zip(want.iter()) {
                let expected_field = expected.split_once(": ").map_or(*expected, |(f, _)| f);
                assert_eq!(violation.field, expected_field, "case {name:?}");
            }
        }
    }

    fn exit_codes(
        action: PodFailurePolicyAction,
        op: ExitCodeOperator,
        values: &[i32],
    ) -> PodFailurePolicyRule {
        PodFailurePolicyRule {
            action,
            on_exit_codes: Some(OnExitCodes {
                container_name: None,
                operator: op,
                values: values.to_vec(),
            }),
            on_pod_conditions: vec![],
        }
    }

    fn on_condition(
        action: PodFailurePolicyAction,
        condition_type: &str,
        status: ConditionStatus,
    ) -> PodFailurePolicyRule {
        PodFailurePolicyRule {
            action,
            on_exit_codes: None,
            on_pod_conditions: vec![OnPodConditionsPattern {
                condition_type: condition_type.into(),
                status,
            }],
        }
    }

    /// Sets a pod failure policy, with the replacement policy the API defaults alongside it.
    fn with_policy(j: &mut Job, rules: Vec<PodFailurePolicyRule>) {
        j.spec.pod_failure_policy = Some(PodFailurePolicy { rules });
        j.spec.pod_replacement_policy = PodReplacementPolicy::Failed;
    }

    fn with_success(j: &mut Job, rules: &[(Option<&str>, Option<i32>)]) {
        let rules = rules
            .iter()
            .map(|(indexes, count)| SuccessPolicyRule {
                succeeded_indexes: indexes.map(str::to_string),
                succeeded_count: *count,
            })
            .collect();
        j.spec.success_policy = Some(SuccessPolicy { rules });
    }

    /// A manual selector `a=b` with the given template labels.
    fn manual(j: &mut Job, labels: &[(&str, &str)]) {
        j.spec.manual_selector = true;
        j.spec.selector = LabelSelector::default();
        j.spec.selector.match_labels.insert("a".into(), "b".into());
        j.spec.template.labels = labels
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
    }

    /// Renames the Job and keeps its generated labels consistent with the new name.
    fn rename(j: &mut Job, name: &str) {
        j.name = name.into();
        for key in [LEGACY_JOB_NAME_LABEL, JOB_NAME_LABEL] {
            j.spec.template.labels.insert(key.into(), name.into());
        }
    }

    fn indexed(j: &mut Job, completions: i32, parallelism: i32) {
        *j = indexed_job(completions, parallelism);
    }

    #[test]
    fn fixtures_are_valid() {
        assert_eq!(validate_job(&job()), vec![]);
        assert_eq!(validate_job(&indexed_job(5, 2)), vec![]);
        assert_eq!(validate_job(&indexed_job(1, 1)), vec![]);
        assert_eq!(validate_job(&indexed_job(100_000, 100_000)), vec![]);
    }

    #[test]
    fn valid_jobs_from_upstream() {
        let cases: &[Case] = &[
            (
                "valid success policy",
                |j| {
                    indexed(j, 10, 1);
                    j.spec.template.restart_policy = RestartPolicy::Never;
                    with_success(j, &[(Some("0,2,4"), Some(1)), (Some("1,3,5-9"), None)]);
                },
                &[],
            ),
            (
                "negative exit codes for Windows",
                |j| {
                    with_policy(
                        j,
                        vec![exit_codes(
                            PodFailurePolicyAction::FailJob,
                            ExitCodeOperator::NotIn,
                            &[-1073741819, -1073741676, -1073741510],
                        )],
                    );
                },
                &[],
            ),
            (
                "valid pod failure policy",
                |j| {
                    j.spec.template.containers = vec!["ctr".into()];
                    j.spec.template.init_containers = vec!["def".into()];
                    let mut count = exit_codes(
                        PodFailurePolicyAction::Count,
                        ExitCodeOperator::In,
                        &[1, 2, 3],
                    );
                    if let Some(req) = count.on_exit_codes.as_mut() {
                        req.container_name = Some("ctr".into());
                    }
                    let mut ignore =
                        exit_codes(PodFailurePolicyAction::Ignore, ExitCodeOperator::In, &[4]);
                    if let Some(req) = ignore.on_exit_codes.as_mut() {
                        req.container_name = Some("def".into());
                    }
                    with_policy(
                        j,
                        vec![
                            on_condition(
                                PodFailurePolicyAction::Ignore,
                                "DisruptionTarget",
                                ConditionStatus::True,
                            ),
                            on_condition(
                                PodFailurePolicyAction::FailJob,
                                "CustomConditionType",
                                ConditionStatus::False,
                            ),
                            count,
                            ignore,
                            exit_codes(
                                PodFailurePolicyAction::FailJob,
                                ExitCodeOperator::NotIn,
                                &[5, 6, 7],
                            ),
                        ],
                    );
                },
                &[],
            ),
            (
                "FailIndex with backoffLimitPerIndex",
                |j| {
                    indexed(j, 2, 1);
                    j.spec.backoff_limit_per_index = Some(1);
                    with_policy(
                        j,
                        vec![exit_codes(
                            PodFailurePolicyAction::FailIndex,
                            ExitCodeOperator::In,
                            &[10],
                        )],
                    );
                },
                &[],
            ),
            ("manual selector", |j| manual(j, &[("a", "b")]), &[]),
            (
                "manual selector ignores generated labels and uid",
                |j| {
                    manual(j, &[("a", "b")]);
                    j.uid.clear();
                },
                &[],
            ),
            (
                "replacement TerminatingOrFailed",
                |j| {
                    j.spec.pod_replacement_policy = PodReplacementPolicy::TerminatingOrFailed;
                },
                &[],
            ),
            (
                "replacement Failed",
                |j| j.spec.pod_replacement_policy = PodReplacementPolicy::Failed,
                &[],
            ),
            (
                "restartPolicy OnFailure",
                |j| j.spec.template.restart_policy = RestartPolicy::OnFailure,
                &[],
            ),
            (
                "Indexed with parallelism 100000",
                |j| indexed(j, 2, 100_000),
                &[],
            ),
            (
                "high completions with per-index limits at the limits",
                |j| {
                    indexed(j, 100_000, 100_000);
                    j.spec.max_failed_indexes = Some(100_000);
                    j.spec.backoff_limit_per_index = Some(1);
                },
                &[],
            ),
            (
                "unlimited completions with per-index limits",
                |j| {
                    indexed(j, 1_000_000_000, 10_000);
                    j.spec.max_failed_indexes = Some(10_000);
                    j.spec.backoff_limit_per_index = Some(1);
                },
                &[],
            ),
            (
                "managedBy",
                |j| j.spec.managed_by = Some("example.com/foo".into()),
                &[],
            ),
            (
                "managedBy of the built-in controller",
                |j| {
                    j.spec.managed_by = Some(BUILT_IN.into());
                },
                &[],
            ),
            ("empty pod failure policy", |j| with_policy(j, vec![]), &[]),
            (
                "selector expressions",
                |j| {
                    j.spec.selector.match_expressions = vec![
                        SelectorRequirement {
                            key: "job-name".into(),
                            operator: SelectorOperator::In,
                            values: vec!["job".into()],
                        },
                        SelectorRequirement {
                            key: "other".into(),
                            operator: SelectorOperator::DoesNotExist,
                            values: vec![],
                        },
                        SelectorRequirement {
                            key: "controller-uid".into(),
                            operator: SelectorOperator::Exists,
                            values: vec![],
                        },
                        SelectorRequirement {
                            key: "x".into(),
                            operator: SelectorOperator::NotIn,
                            values: vec!["y".into()],
                        },
                    ];
                },
                &[],
            ),
            (
                "succeededIndexes with an adjacent interval",
                |j| {
                    indexed(j, 10, 1);
                    with_success(j, &[(Some("1-3,4"), Some(4))]);
                },
                &[],
            ),
        ];
        check(cases);
    }

    const BUILT_IN: &str = crate::model::BUILT_IN_CONTROLLER;

    #[test]
    fn spec_numbers_and_modes() {
        let cases: &[Case] = &[
            (
                "negative parallelism",
                |j| j.spec.parallelism = -1,
                &["spec.parallelism: Invalid value: -1: must be greater than or equal to 0"],
            ),
            (
                "i32::MIN parallelism",
                |j| j.spec.parallelism = i32::MIN,
                &[
                    "spec.parallelism: Invalid value: -2147483648: must be greater than or equal to 0",
                ],
            ),
            (
                "negative completions",
                |j| j.spec.completions = Some(-1),
                &["spec.completions: Invalid value: -1: must be greater than or equal to 0"],
            ),
            (
                "negative activeDeadlineSeconds",
                |j| j.spec.active_deadline_seconds = Some(i64::MIN),
                &[
                    "spec.activeDeadlineSeconds: Invalid value: -9223372036854775808: must be greater than or equal to 0",
                ],
            ),
            (
                "negative backoffLimit",
                |j| j.spec.backoff_limit = -1,
                &["spec.backoffLimit: Invalid value: -1: must be greater than or equal to 0"],
            ),
            (
                "negative ttlSecondsAfterFinished",
                |j| j.spec.ttl_seconds_after_finished = Some(-1),
                &[
                    "spec.ttlSecondsAfterFinished: Invalid value: -1: must be greater than or equal to 0",
                ],
            ),
            (
                "backoffLimitPerIndex on NonIndexed",
                |j| j.spec.backoff_limit_per_index = Some(1),
                &["spec.backoffLimitPerIndex: Invalid value: 1: requires indexed completion mode"],
            ),
            (
                "maxFailedIndexes on NonIndexed",
                |j| {
                    j.spec.backoff_limit_per_index = Some(1);
                    j.spec.max_failed_indexes = Some(1);
                },
                &[
                    "spec.backoffLimitPerIndex: Invalid value: 1: requires indexed completion mode",
                    "spec.maxFailedIndexes: Invalid value: 1: requires indexed completion mode",
                ],
            ),
            (
                "negative backoffLimitPerIndex",
                |j| {
                    indexed(j, 5, 1);
                    j.spec.backoff_limit_per_index = Some(-1);
                },
                &[
                    "spec.backoffLimitPerIndex: Invalid value: -1: must be greater than or equal to 0",
                ],
            ),
            (
                "maxFailedIndexes above completions",
                |j| {
                    indexed(j, 10, 1);
                    j.spec.backoff_limit_per_index = Some(1);
                    j.spec.max_failed_indexes = Some(11);
                },
                &[
                    "spec.maxFailedIndexes: Invalid value: 11: must be less than or equal to completions",
                ],
            ),
            (
                "high completions need maxFailedIndexes",
                |j| {
                    indexed(j, 100_001, 1);
                    j.spec.backoff_limit_per_index = Some(1);
                },
                &[
                    "spec.maxFailedIndexes: Required value: must be specified when completions is above 100000",
                ],
            ),
            (
                "high completions cap parallelism",
                |j| {
                    indexed(j, 100_001, 50_000);
                    j.spec.backoff_limit_per_index = Some(1);
                    j.spec.max_failed_indexes = Some(1);
                },
                &[
                    "spec.parallelism: Invalid value: 50000: must be less than or equal to 10000 when completions are above 100000 and used with backoff limit per index",
                ],
            ),
            (
                "maxFailedIndexes above both limits",
                |j| {
                    indexed(j, 100_001, 1);
                    j.spec.backoff_limit_per_index = Some(1);
                    j.spec.max_failed_indexes = Some(100_001);
                },
                &[
                    "spec.maxFailedIndexes: Invalid value: 100001: must be less than or equal to 100000",
                    "spec.maxFailedIndexes: Invalid value: 100001: must be less than or equal to 10000 when completions are above 100000 and used with backoff limit per index",
                ],
            ),
            (
                "maxFailedIndexes above the high-completions limit",
                |j| {
                    indexed(j, 100_001, 1);
                    j.spec.backoff_limit_per_index = Some(1);
                    j.spec.max_failed_indexes = Some(50_000);
                },
                &[
                    "spec.maxFailedIndexes: Invalid value: 50000: must be less than or equal to 10000 when completions are above 100000 and used with backoff limit per index",
                ],
            ),
            (
                "high completions without per-index limits are not capped",
                |j| {
                    indexed(j, 1_000_000, 100_000);
                },
                &[],
            ),
            (
                "negative maxFailedIndexes",
                |j| {
                    indexed(j, 5, 1);
                    j.spec.backoff_limit_per_index = Some(1);
                    j.spec.max_failed_indexes = Some(-1);
                },
                &["spec.maxFailedIndexes: Invalid value: -1: must be greater than or equal to 0"],
            ),
            (
                "maxFailedIndexes without backoffLimitPerIndex",
                |j| {
                    indexed(j, 5, 1);
                    j.spec.max_failed_indexes = Some(1);
                },
                &["spec.backoffLimitPerIndex: Required value: when maxFailedIndexes is specified"],
            ),
            (
                "Indexed without completions",
                |j| {
                    indexed(j, 5, 1);
                    j.spec.completions = None;
                },
                &["spec.completions: Required value: when completion mode is Indexed"],
            ),
            (
                "Indexed parallelism above 100000",
                |j| indexed(j, 2, 100_001),
                &[
                    "spec.parallelism: Invalid value: 100001: must be less than or equal to 100000 when completion mode is Indexed",
                ],
            ),
            (
                "Indexed with i32::MIN completions",
                |j| indexed(j, i32::MIN, 1),
                &[
                    "spec.completions: Invalid value: -2147483648: must be greater than or equal to 0",
                ],
            ),
            (
                "unknown completion mode",
                |j| j.spec.completion_mode = CompletionMode::Unknown("Sparse".into()),
                &[
                    r#"spec.completionMode: Unsupported value: "Sparse": supported values: "NonIndexed", "Indexed""#,
                ],
            ),
            (
                "unknown completion mode skips the NonIndexed checks",
                |j| {
                    j.spec.completion_mode = CompletionMode::Unknown(String::new());
                    j.spec.backoff_limit_per_index = Some(1);
                },
                &[
                    r#"spec.completionMode: Unsupported value: "": supported values: "NonIndexed", "Indexed""#,
                ],
            ),
            (
                "managedBy too long",
                |j| j.spec.managed_by = Some(format!("example.com/{}", "x".repeat(60))),
                &["spec.managedBy: Too long: may not be more than 63 bytes"],
            ),
            (
                "managedBy not a path",
                |j| j.spec.managed_by = Some("invalid custom controller name".into()),
                &[
                    r#"spec.managedBy: Invalid value: "invalid custom controller name": must be a domain-prefixed path (such as "acme.io/foo")"#,
                ],
            ),
            (
                "managedBy empty",
                |j| j.spec.managed_by = Some(String::new()),
                &["spec.managedBy: Required value"],
            ),
            (
                "managedBy with a bad host and path",
                |j| j.spec.managed_by = Some("Example.com/a b".into()),
                &[
                    r#"spec.managedBy: Invalid value: "Example.com": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"#,
                    r#"spec.managedBy: Invalid value: "a b": Invalid path (regex used for validation is '[A-Za-z0-9/\-._~%!$&'()*+,;=:]+')"#,
                ],
            ),
            (
                "unknown pod replacement policy",
                |j| j.spec.pod_replacement_policy = PodReplacementPolicy::Unknown(String::new()),
                &[
                    r#"spec.podReplacementPolicy: Unsupported value: "": supported values: "Failed", "TerminatingOrFailed""#,
                ],
            ),
            (
                "TerminatingOrFailed with a pod failure policy",
                |j| {
                    with_policy(
                        j,
                        vec![on_condition(
                            PodFailurePolicyAction::Ignore,
                            "DisruptionTarget",
                            ConditionStatus::True,
                        )],
                    );
                    j.spec.pod_replacement_policy = PodReplacementPolicy::TerminatingOrFailed;
                },
                &[
                    r#"spec.podReplacementPolicy: Unsupported value: "TerminatingOrFailed": supported values: "Failed""#,
                ],
            ),
            (
                "unknown replacement with a pod failure policy",
                |j| {
                    with_policy(j, vec![]);
                    j.spec.pod_replacement_policy = PodReplacementPolicy::Unknown("Never".into());
                },
                &[
                    r#"spec.podReplacementPolicy: Unsupported value: "Never": supported values: "Failed""#,
                ],
            ),
        ];
        check(cases);
    }

    #[test]
    fn restart_policy_and_template() {
        let cases: &[Case] = &[
            (
                "OnFailure with a pod failure policy",
                |j| {
                    j.spec.template.restart_policy = RestartPolicy::OnFailure;
                    with_policy(j, vec![]);
                },
                &[
                    r#"spec.template.spec.restartPolicy: Invalid value: "OnFailure": only "Never" is supported when podFailurePolicy is specified"#,
                ],
            ),
            (
                "Always",
                |j| j.spec.template.restart_policy = RestartPolicy::Always,
                &[
                    r#"spec.template.spec.restartPolicy: Required value: valid values: "OnFailure", "Never""#,
                ],
            ),
            (
                "empty restart policy fails the pod and the Job checks",
                |j| {
                    j.spec.template.restart_policy = RestartPolicy::Other(String::new());
                },
                &[
                    "spec.template.spec.restartPolicy: Required value",
                    r#"spec.template.spec.restartPolicy: Required value: valid values: "OnFailure", "Never""#,
                ],
            ),
            (
                "unknown restart policy fails the pod and the Job checks",
                |j| {
                    j.spec.template.restart_policy = RestartPolicy::Other("Invalid".into());
                },
                &[
                    r#"spec.template.spec.restartPolicy: Unsupported value: "Invalid": supported values: "Always", "OnFailure", "Never""#,
                    r#"spec.template.spec.restartPolicy: Unsupported value: "Invalid": supported values: "OnFailure", "Never""#,
                ],
            ),
            (
                "no containers",
                |j| j.spec.template.containers.clear(),
                &["spec.template.spec.containers: Required value"],
            ),
            (
                "bad and duplicate container names",
                |j| {
                    j.spec.template.containers =
                        vec!["main".into(), "Main".into(), "main".into(), String::new()];
                    j.spec.template.init_containers =
                        vec!["main".into(), "init".into(), "init".into()];
                },
                &[
                    r#"spec.template.spec.containers[1].name: Invalid value: "Main": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"#,
                    r#"spec.template.spec.containers[2].name: Duplicate value: "main""#,
                    "spec.template.spec.containers[3].name: Required value",
                    r#"spec.template.spec.initContainers[0].name: Duplicate value: "main""#,
                    r#"spec.template.spec.initContainers[2].name: Duplicate value: "init""#,
                ],
            ),
            (
                "container name with dots",
                |j| j.spec.template.containers = vec!["a.b".into()],
                &[
                    r#"spec.template.spec.containers[0].name: Invalid value: "a.b": must not contain dots"#,
                ],
            ),
            (
                "invalid template label",
                |j| manual(j, &[("a", "b"), ("bad key", "-v")]),
                &[
                    r#"spec.template.metadata.labels: Invalid value: "bad key": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"#,
                    r#"spec.template.metadata.labels: Invalid value: "-v": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"#,
                ],
            ),
        ];
        check(cases);
    }

    #[test]
    fn metadata_and_selectors() {
        let cases: &[Case] = &[
            (
                "template labels do not match a manual selector",
                |j| manual(j, &[("y", "z")]),
                &[
                    r#"spec.template.metadata.labels: Invalid value: {"y":"z"}: `selector` does not match template `labels`"#,
                ],
            ),
            (
                "template labels with a foreign uid",
                |j| manual(j, &[("controller-uid", "4d5e6f")]),
                &[
                    r#"spec.template.metadata.labels: Invalid value: {"controller-uid":"4d5e6f"}: `selector` does not match template `labels`"#,
                ],
            ),
            (
                "no template labels",
                |j| manual(j, &[]),
                &[
                    "spec.template.metadata.labels: Invalid value: null: `selector` does not match template `labels`",
                ],
            ),
            (
                "missing legacy uid label",
                |j| {
                    j.spec.template.labels.remove("controller-uid");
                },
                &[
                    "spec.template.metadata.labels[controller-uid]: Required value: must be 'job-uid'",
                ],
            ),
            (
                "missing legacy name label",
                |j| {
                    j.spec.template.labels.remove("job-name");
                },
                &["spec.template.metadata.labels[job-name]: Required value: must be 'job'"],
            ),
            (
                "missing prefixed uid label",
                |j| {
                    j.spec.template.labels.remove(CONTROLLER_UID_LABEL);
                },
                &[
                    "spec.template.metadata.labels[batch.kubernetes.io/controller-uid]: Required value: must be 'job-uid'",
                    r#"spec.template.metadata.labels: Invalid value: {"batch.kubernetes.io/job-name":"job","controller-uid":"job-uid","job-name":"job"}: `selector` does not match template `labels`"#,
                ],
            ),
            (
                "wrong prefixed name label",
                |j| {
                    j.spec
                        .template
                        .labels
                        .insert(JOB_NAME_LABEL.into(), "other".into());
                },
                &[
                    r#"spec.template.metadata.labels[batch.kubernetes.io/job-name]: Invalid value: {"batch.kubernetes.io/controller-uid":"job-uid","batch.kubernetes.io/job-name":"other","controller-uid":"job-uid","job-name":"job"}: must be 'job'"#,
                ],
            ),
            (
                "missing uid",
                |j| j.uid.clear(),
                &[
                    "metadata.uid: Required value",
                    r#"spec.template.metadata.labels[controller-uid]: Invalid value: {"batch.kubernetes.io/controller-uid":"job-uid","batch.kubernetes.io/job-name":"job","controller-uid":"job-uid","job-name":"job"}: must be ''"#,
                    r#"spec.template.metadata.labels[batch.kubernetes.io/controller-uid]: Invalid value: {"batch.kubernetes.io/controller-uid":"job-uid","batch.kubernetes.io/job-name":"job","controller-uid":"job-uid","job-name":"job"}: must be ''"#,
                    r#"spec.selector: Invalid value: {"matchLabels":{"batch.kubernetes.io/controller-uid":"job-uid"}}: `selector` not auto-generated"#,
                ],
            ),
            (
                "selector not generated",
                |j| {
                    j.spec.selector = LabelSelector::default();
                    j.spec.selector.match_labels.insert("a".into(), "b".into());
                },
                &[
                    r#"spec.selector: Invalid value: {"matchLabels":{"a":"b"}}: `selector` not auto-generated"#,
                    r#"spec.template.metadata.labels: Invalid value: {"batch.kubernetes.io/controller-uid":"job-uid","batch.kubernetes.io/job-name":"job","controller-uid":"job-uid","job-name":"job"}: `selector` does not match template `labels`"#,
                ],
            ),
            (
                "expression selector not generated",
                |j| {
                    j.spec.selector = LabelSelector::default();
                    j.spec.selector.match_expressions = vec![
                        SelectorRequirement {
                            key: "a".into(),
                            operator: SelectorOperator::In,
                            values: vec!["b".into(), "c".into()],
                        },
                        SelectorRequirement {
                            key: "job-name".into(),
                            operator: SelectorOperator::Exists,
                            values: vec![],
                        },
                    ];
                },
                &[
                    r#"spec.selector: Invalid value: {"matchExpressions":[{"key":"a","operator":"In","values":["b","c"]},{"key":"job-name","operator":"Exists"}]}: `selector` not auto-generated"#,
                    r#"spec.template.metadata.labels: Invalid value: {"batch.kubernetes.io/controller-uid":"job-uid","batch.kubernetes.io/job-name":"job","controller-uid":"job-uid","job-name":"job"}: `selector` does not match template `labels`"#,
                ],
            ),
            (
                "invalid selector value",
                |j| {
                    j.spec.selector.match_expressions = vec![SelectorRequirement {
                        key: "a".into(),
                        operator: SelectorOperator::NotIn,
                        values: vec!["b".into(), "<c>".into()],
                    }];
                },
                &[
                    r#"spec.selector.matchExpressions[0].values[1]: Invalid value: "<c>": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"#,
                ],
            ),
            (
                "invalid selector requirements skip the matching checks",
                |j| {
                    j.spec.selector.match_expressions = vec![
                        SelectorRequirement {
                            key: "a".into(),
                            operator: SelectorOperator::In,
                            values: vec![],
                        },
                        SelectorRequirement {
                            key: "b".into(),
                            operator: SelectorOperator::Exists,
                            values: vec!["x".into()],
                        },
                        SelectorRequirement {
                            key: "c/d/e".into(),
                            operator: SelectorOperator::Unknown("Has".into()),
                            values: vec![],
                        },
                    ];
                },
                &[
                    "spec.selector.matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn'",
                    "spec.selector.matchExpressions[1].values: Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
                    r#"spec.selector.matchExpressions[2].operator: Invalid value: "Has": not a valid selector operator"#,
                    r#"spec.selector.matchExpressions[2].key: Invalid value: "c/d/e": a valid label key must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"#,
                ],
            ),
            (
                "invalid matchLabels key",
                |j| {
                    j.spec.manual_selector = true;
                    j.spec.selector.match_labels.insert("/x".into(), "y".into());
                },
                &[
                    r#"spec.selector.matchLabels: Invalid value: "/x": prefix part must be non-empty"#,
                ],
            ),
            (
                "empty name",
                |j| {
                    manual(j, &[("a", "b")]);
                    j.name.clear();
                },
                &["metadata.name: Required value: name or generateName is required"],
            ),
            (
                "name not a subdomain",
                |j| {
                    manual(j, &[("a", "b")]);
                    j.name = "My_Job".into();
                },
                &[
                    r#"metadata.name: Invalid value: "My_Job": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"#,
                ],
            ),
            (
                "empty namespace",
                |j| j.namespace.clear(),
                &["metadata.namespace: Required value"],
            ),
            (
                "namespace with dots",
                |j| j.namespace = "a.b".into(),
                &[r#"metadata.namespace: Invalid value: "a.b": must not contain dots"#],
            ),
            (
                "Indexed name with dots",
                |j| {
                    indexed(j, 5, 1);
                    rename(j, "my.job");
                },
                &[
                    r#"metadata.name: Invalid value: "my.job": will not able to create pod with invalid DNS label: my.job-4"#,
                ],
            ),
            (
                "Indexed hostname too long",
                |j| {
                    indexed(j, 1000, 1);
                    j.spec.manual_selector = true;
                    j.name = "a".repeat(60);
                },
                &[
                    r#"metadata.name: Invalid value: "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa": will not able to create pod with invalid DNS label: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa-999"#,
                ],
            ),
            (
                "NonIndexed name with dots is fine",
                |j| rename(j, "my.job"),
                &[],
            ),
            (
                "Indexed with zero completions skips the hostname check",
                |j| {
                    indexed(j, 0, 1);
                    rename(j, "my.job");
                },
                &[],
            ),
        ];
        check(cases);
    }

    #[test]
    fn pod_failure_policy() {
        use ExitCodeOperator::{In, NotIn};
        use PodFailurePolicyAction::{Count, FailIndex, FailJob, Ignore};
        let cases: &[Case] = &[
            (
                "neither requirement",
                |j| {
                    with_policy(
                        j,
                        vec![PodFailurePolicyRule {
                            action: FailJob,
                            on_exit_codes: None,
                            on_pod_conditions: vec![],
                        }],
                    )
                },
                &[
                    "spec.podFailurePolicy.rules[0]: Invalid value: specifying one of OnExitCodes and OnPodConditions is required",
                ],
            ),
            (
                "both requirements",
                |j| {
                    let mut rule = exit_codes(FailJob, In, &[1, 2, 3]);
                    if let Some(req) = rule.on_exit_codes.as_mut() {
                        req.container_name = Some("main".into());
                    }
                    rule.on_pod_conditions = vec![OnPodConditionsPattern {
                        condition_type: "DisruptionTarget".into(),
                        status: ConditionStatus::True,
                    }];
                    with_policy(j, vec![rule]);
                },
                &[
                    "spec.podFailurePolicy.rules[0]: Invalid value: specifying both OnExitCodes and OnPodConditions is not supported",
                ],
            ),
            (
                "duplicate exit code",
                |j| with_policy(j, vec![exit_codes(FailJob, In, &[11, 11])]),
                &["spec.podFailurePolicy.rules[0].onExitCodes.values[1]: Duplicate value: 11"],
            ),
            (
                "repeated duplicates",
                |j| with_policy(j, vec![exit_codes(FailJob, In, &[12, 13, 13, 13])]),
                &[
                    "spec.podFailurePolicy.rules[0].onExitCodes.values[2]: Duplicate value: 13",
                    "spec.podFailurePolicy.rules[0].onExitCodes.values[3]: Duplicate value: 13",
                ],
            ),
            (
                "too many exit codes",
                |j| {
                    let values: Vec<i32> = (0..=255).collect();
                    with_policy(j, vec![exit_codes(FailJob, In, &values)]);
                },
                &[
                    "spec.podFailurePolicy.rules[0].onExitCodes.values: Too many: 256: must have at most 255 items",
                    "spec.podFailurePolicy.rules[0].onExitCodes.values[0]: Invalid value: 0: must not be 0 for the In operator",
                ],
            ),
            (
                "too many rules",
                |j| {
                    let rules = (1..=21).map(|i| exit_codes(FailJob, In, &[i])).collect();
                    with_policy(j, rules);
                },
                &["spec.podFailurePolicy.rules: Too many: 21: must have at most 20 items"],
            ),
            (
                "too many condition patterns",
                |j| {
                    let patterns = (0..21)
                        .map(|i| OnPodConditionsPattern {
                            condition_type: format!("CustomType_{i}"),
                            status: ConditionStatus::True,
                        })
                        .collect();
                    with_policy(
                        j,
                        vec![PodFailurePolicyRule {
                            action: FailJob,
                            on_exit_codes: None,
                            on_pod_conditions: patterns,
                        }],
                    );
                },
                &[
                    "spec.podFailurePolicy.rules[0].onPodConditions: Too many: 21: must have at most 20 items",
                ],
            ),
            (
                "unordered exit codes",
                |j| with_policy(j, vec![exit_codes(FailJob, In, &[19, 11])]),
                &[
                    "spec.podFailurePolicy.rules[0].onExitCodes.values: Invalid value: [19,11]: must be ordered",
                ],
            ),
            (
                "no exit codes",
                |j| with_policy(j, vec![exit_codes(FailJob, In, &[])]),
                &[
                    "spec.podFailurePolicy.rules[0].onExitCodes.values: Invalid value: []: at least one value is required",
                ],
            ),
            (
                "empty action",
                |j| {
                    with_policy(
                        j,
                        vec![exit_codes(
                            PodFailurePolicyAction::Unknown(String::new()),
                            In,
                            &[1, 2, 3],
                        )],
                    )
                },
                &[
                    r#"spec.podFailurePolicy.rules[0].action: Required value: valid values: ["Count" "FailIndex" "FailJob" "Ignore"]"#,
                ],
            ),
            (
                "empty operator",
                |j| {
                    with_policy(
                        j,
                        vec![exit_codes(
                            FailJob,
                            ExitCodeOperator::Unknown(String::new()),
                            &[1, 2, 3],
                        )],
                    )
                },
                &[
                    r#"spec.podFailurePolicy.rules[0].onExitCodes.operator: Required value: valid values: ["In" "NotIn"]"#,
                ],
            ),
            (
                "zero with In, also unordered",
                |j| with_policy(j, vec![exit_codes(Ignore, In, &[1, 0, 2])]),
                &[
                    "spec.podFailurePolicy.rules[0].onExitCodes.values[1]: Invalid value: 0: must not be 0 for the In operator",
                    "spec.podFailurePolicy.rules[0].onExitCodes.values: Invalid value: [1,0,2]: must be ordered",
                ],
            ),
            (
                "zero with NotIn is fine",
                |j| with_policy(j, vec![exit_codes(Count, NotIn, &[0])]),
                &[],
            ),
            (
                "unknown container",
                |j| {
                    let mut first = exit_codes(Ignore, In, &[1, 2, 3]);
                    let mut second = exit_codes(FailJob, In, &[5, 6, 7]);
                    if let Some(req) = first.on_exit_codes.as_mut() {
                        req.container_name = Some("main".into());
                    }
                    if let Some(req) = second.on_exit_codes.as_mut() {
                        req.container_name = Some("xyz".into());
                    }
                    with_policy(j, vec![first, second]);
                },
                &[
                    r#"spec.podFailurePolicy.rules[1].onExitCodes.containerName: Invalid value: "xyz": must be one of the container or initContainer names in the pod template"#,
                ],
            ),
            (
                "unknown action",
                |j| {
                    with_policy(
                        j,
                        vec![exit_codes(
                            PodFailurePolicyAction::Unknown("UnknownAction".into()),
                            In,
                            &[1, 2, 3],
                        )],
                    )
                },
                &[
                    r#"spec.podFailurePolicy.rules[0].action: Unsupported value: "UnknownAction": supported values: "Count", "FailIndex", "FailJob", "Ignore""#,
                ],
            ),
            (
                "unknown operator",
                |j| {
                    with_policy(
                        j,
                        vec![exit_codes(
                            Ignore,
                            ExitCodeOperator::Unknown("UnknownOperator".into()),
                            &[1, 2, 3],
                        )],
                    )
                },
                &[
                    r#"spec.podFailurePolicy.rules[0].onExitCodes.operator: Unsupported value: "UnknownOperator": supported values: "In", "NotIn""#,
                ],
            ),
            (
                "FailIndex without backoffLimitPerIndex",
                |j| {
                    indexed(j, 2, 1);
                    with_policy(j, vec![exit_codes(FailIndex, In, &[10])]);
                },
                &[
                    r#"spec.podFailurePolicy.rules[0].action: Invalid value: "FailIndex": requires the backoffLimitPerIndex to be set"#,
                ],
            ),
            (
                "empty status",
                |j| {
                    with_policy(
                        j,
                        vec![on_condition(
                            Ignore,
                            "DisruptionTarget",
                            ConditionStatus::Other(String::new()),
                        )],
                    )
                },
                &[
                    r#"spec.podFailurePolicy.rules[0].onPodConditions[0].status: Required value: valid values: ["False" "True" "Unknown"]"#,
                ],
            ),
            (
                "unknown status",
                |j| {
                    with_policy(
                        j,
                        vec![on_condition(
                            Ignore,
                            "DisruptionTarget",
                            ConditionStatus::Other("UnknownStatus".into()),
                        )],
                    )
                },
                &[
                    r#"spec.podFailurePolicy.rules[0].onPodConditions[0].status: Unsupported value: "UnknownStatus": supported values: "False", "True", "Unknown""#,
                ],
            ),
            (
                "empty condition type",
                |j| with_policy(j, vec![on_condition(Ignore, "", ConditionStatus::True)]),
                &[
                    r#"spec.podFailurePolicy.rules[0].onPodConditions[0].type: Invalid value: "": name part must be non-empty"#,
                    r#"spec.podFailurePolicy.rules[0].onPodConditions[0].type: Invalid value: "": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"#,
                ],
            ),
            (
                "invalid condition type",
                |j| {
                    with_policy(
                        j,
                        vec![on_condition(
                            Ignore,
                            "Invalid Condition Type",
                            ConditionStatus::True,
                        )],
                    )
                },
                &[
                    r#"spec.podFailurePolicy.rules[0].onPodConditions[0].type: Invalid value: "Invalid Condition Type": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"#,
                ],
            ),
            (
                "prefixed condition type",
                |j| {
                    with_policy(
                        j,
                        vec![on_condition(
                            Ignore,
                            "example.com/Ready",
                            ConditionStatus::True,
                        )],
                    )
                },
                &[],
            ),
            (
                "condition type with a bad prefix",
                |j| {
                    with_policy(
                        j,
                        vec![on_condition(
                            Ignore,
                            "Example.com/Ready",
                            ConditionStatus::True,
                        )],
                    )
                },
                &[
                    r#"spec.podFailurePolicy.rules[0].onPodConditions[0].type: Invalid value: "Example.com/Ready": prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"#,
                ],
            ),
        ];
        check(cases);
    }

    #[test]
    fn success_policy() {
        let cases: &[Case] = &[
            (
                "NonIndexed",
                |j| with_success(j, &[]),
                &[
                    r#"spec.successPolicy: Invalid value: {"Rules":[]}: requires indexed completion mode"#,
                ],
            ),
            (
                "NonIndexed with rules",
                |j| with_success(j, &[(Some("0"), None), (None, Some(1))]),
                &[
                    r#"spec.successPolicy: Invalid value: {"Rules":[{"SucceededIndexes":"0","SucceededCount":null},{"SucceededIndexes":null,"SucceededCount":1}]}: requires indexed completion mode"#,
                ],
            ),
            (
                "no rules",
                |j| {
                    indexed(j, 5, 1);
                    with_success(j, &[]);
                },
                &[
                    "spec.successPolicy.rules: Required value: at least one rules must be specified when the successPolicy is specified",
                ],
            ),
            (
                "empty rule",
                |j| {
                    indexed(j, 5, 1);
                    with_success(j, &[(None, None)]);
                },
                &[
                    "spec.successPolicy.rules[0]: Required value: at least one of succeededCount or succeededIndexes must be specified",
                ],
            ),
            (
                "bad indexes",
                |j| {
                    indexed(j, 5, 1);
                    with_success(j, &[(Some("invalid-format"), None)]);
                },
                &[
                    r#"spec.successPolicy.rules[0].succeededIndexes: Invalid value: "invalid-format": error parsing succeededIndexes: cannot convert string to integer for index: "invalid""#,
                ],
            ),
            (
                "bad indexes count as zero",
                |j| {
                    indexed(j, 5, 1);
                    with_success(j, &[(Some("3-1"), Some(1))]);
                },
                &[
                    r#"spec.successPolicy.rules[0].succeededIndexes: Invalid value: "3-1": error parsing succeededIndexes: non-increasing order, previous: 3, current: 1"#,
                    "spec.successPolicy.rules[0].succeededCount: Invalid value: 1: must be less than or equal to 0 (the number of indexes in the specified succeededIndexes field)",
                ],
            ),
            (
                "negative count",
                |j| {
                    indexed(j, 5, 1);
                    with_success(j, &[(None, Some(-1))]);
                },
                &[
                    "spec.successPolicy.rules[0].succeededCount: Invalid value: -1: must be greater than or equal to 0",
                ],
            ),
            (
                "count above completions",
                |j| {
                    indexed(j, 5, 1);
                    with_success(j, &[(None, Some(6))]);
                },
                &[
                    "spec.successPolicy.rules[0].succeededCount: Invalid value: 6: must be less than or equal to 5 (the number of specified completions)",
                ],
            ),
            (
                "count above the named indexes",
                |j| {
                    indexed(j, 5, 1);
                    with_success(j, &[(Some("0-2"), Some(4))]);
                },
                &[
                    "spec.successPolicy.rules[0].succeededCount: Invalid value: 4: must be less than or equal to 3 (the number of indexes in the specified succeededIndexes field)",
                ],
            ),
            (
                "too many rules",
                |j| {
                    indexed(j, 5, 1);
                    let rules = vec![(None, Some(5)); 21];
                    with_success(j, &rules);
                },
                &["spec.successPolicy.rules: Too many: 21: must have at most 20 items"],
            ),
            (
                "Indexed without completions does not panic",
                |j| {
                    indexed(j, 5, 1);
                    j.spec.completions = None;
                    with_success(j, &[(Some("0"), Some(9))]);
                },
                &["spec.completions: Required value: when completion mode is Indexed"],
            ),
            (
                "empty indexes name no index",
                |j| {
                    indexed(j, 5, 1);
                    with_success(j, &[(Some(""), Some(1))]);
                },
                &[
                    "spec.successPolicy.rules[0].succeededCount: Invalid value: 1: must be less than or equal to 0 (the number of indexes in the specified succeededIndexes field)",
                ],
            ),
        ];
        check(cases);
    }

    #[test]
    fn succeeded_indexes_too_long() {
        let mut j = indexed_job(5, 1);
        let text = "1".repeat(MAX_SUCCEEDED_INDEXES_LENGTH + 1);
        with_success(&mut j, &[(Some(&text), None)]);
        let got: Vec<String> = validate_job(&j).iter().map(Violation::to_string).collect();
        let quoted = format!("\"{text}\"");
        assert_eq!(got, vec![
            "spec.successPolicy.rules[0].succeededIndexes: Too long: may not be more than 65536 bytes".to_string(),
            format!("spec.successPolicy.rules[0].succeededIndexes: Invalid value: {quoted}: error parsing succeededIndexes: cannot convert string to integer for index: {quoted}"),
        ]);
    }

    #[test]
    fn strict_index_format() {
        let cases: &[(&str, i32, Result<i64, &str>)] = &[
            ("", 6, Ok(0)),
            ("1", 6, Ok(1)),
            ("1-3", 6, Ok(3)),
            ("0,1-3,5,7-10", 12, Ok(9)),
            ("1-3,4", 6, Ok(4)),
            ("+1", 6, Ok(1)),
            ("007", 8, Ok(1)),
            ("0-2147483646", i32::MAX, Ok(2_147_483_647)),
            (
                "0,1-3, 5",
                6,
                Err(r#"cannot convert string to integer for index: " 5""#),
            ),
            ("0,1-3,5", 5, Err(r#"too large index: "5""#)),
            (
                "1-3,0,5",
                6,
                Err("non-increasing order, previous: 3, current: 0"),
            ),
            (
                "0,0,5",
                6,
                Err("non-increasing order, previous: 0, current: 0"),
            ),
            (
                "0,1-1,5",
                6,
                Err("non-increasing order, previous: 1, current: 1"),
            ),
            (
                "-1,0",
                6,
                Err(r#"cannot convert string to integer for index: """#),
            ),
            (
                "0,1-",
                6,
                Err(r#"cannot convert string to integer for index: """#),
            ),
            (
                "0,1--3",
                6,
                Err(
                    r#"the fragment "1--3" violates the requirement that an index interval can have at most two parts separated by '-'"#,
                ),
            ),
            (
                "0,,1,3",
                6,
                Err(r#"cannot convert string to integer for index: """#),
            ),
            (
                "1,",
                6,
                Err(r#"cannot convert string to integer for index: """#),
            ),
            ("0", 0, Err(r#"too large index: "0""#)),
            ("0", -5, Err(r#"too large index: "0""#)),
            ("1-9", 5, Err(r#"too large index: "9""#)),
            (
                "9223372036854775807",
                i32::MAX,
                Err(r#"too large index: "9223372036854775807""#),
            ),
            (
                "9223372036854775808",
                i32::MAX,
                Err(r#"cannot convert string to integer for index: "9223372036854775808""#),
            ),
            (
                "a\u{7}\"",
                6,
                Err(r#"cannot convert string to integer for index: "a\a\"""#),
            ),
        ];
        for (text, completions, want) in cases {
            let got = strict_index_total(text, *completions);
            assert_eq!(
                got,
                want.map_err(str::to_string),
                "{text:?} with completions {completions}"
            );
        }
    }

    #[test]
    fn value_rendering() {
        let quoted: &[(&str, &str)] = &[
            ("plain", r#""plain""#),
            ("q\"b\\", r#""q\"b\\""#),
            ("tab\tnl\n\u{1}\u{7f}", r#""tab\tnl\n\x01\x7f""#),
            ("é<&>", "\"é<&>\""),
            ("\u{a0}\u{200b}\u{85}", r#""\u00a0\u200b\u0085""#),
            ("\u{10ffff}", r#""\U0010ffff""#),
        ];
        for (raw, want) in quoted {
            assert_eq!(go_quote(raw), *want, "go_quote({raw:?})");
        }
        let json: &[(&str, &str)] = &[
            ("plain", r#""plain""#),
            ("q\"b\\", r#""q\"b\\""#),
            ("<&>\u{2028}", r#""\u003c\u0026\u003e\u2028""#),
            ("\u{8}\u{c}\u{1}é", r#""\b\f\u0001é""#),
        ];
        for (raw, want) in json {
            assert_eq!(json_quote(raw), *want, "json_quote({raw:?})");
        }
    }

    #[test]
    fn violation_kinds_and_reasons() {
        let v = too_many("spec.podFailurePolicy.rules", 21, 20);
        assert_eq!(v.kind.reason(), "FieldValueTooMany");
        assert_eq!(
            v.description(),
            "spec.podFailurePolicy.rules: Too many: 21: must have at most 20 items"
        );
        assert_eq!(too_many("x", 2, 1).detail, "must have at most 1 item");
        assert_eq!(too_long("x", 1).detail, "may not be more than 1 byte");
        assert_eq!(required("x", "").to_string(), "x: Required value");
    }
}
