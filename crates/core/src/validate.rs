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
//! here are checked in key order.
//! Upstream panics when an Indexed Job without completions has a success policy; here the
//! completions-dependent success-policy checks are skipped instead.

use std::collections::{BTreeMap, HashSet};
use std::fmt::Write as _;

use crate::go_text::{go_quote, int_list_json, json_quote, string_list_json, string_map_json};
use crate::index_set::IndexSet;
use crate::k8s_names::*;
use crate::model::{
    CompletionMode, ConditionStatus, ExitCodeOperator, Job, JobSpec, LabelSelector, OnExitCodes,
    OnPodConditionsPattern, PodFailurePolicy, PodFailurePolicyAction, PodFailurePolicyRule,
    PodReplacementPolicy, RestartPolicy, SelectorOperator, SuccessPolicy, SuccessPolicyRule,
};
use crate::selector;
pub use crate::violation::{
    MAX_VIOLATION_DETAIL_BYTES, MAX_VIOLATION_VALUE_BYTES, Severity, Violation, ViolationKind,
    truncated,
};
use crate::violation::{
    duplicate, invalid, invalid_omit_value, not_supported, required, too_long, too_many,
};

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
/// Longest Job uid a decision copies into its plans (ours: upstream never sees a long one).
const MAX_UID_LENGTH: usize = 128;

const NEGATIVE_MESSAGE: &str = "must be greater than or equal to 0";

// Label keys of the generated selector (batch/v1 constants).
const LEGACY_CONTROLLER_UID_LABEL: &str = "controller-uid";
const LEGACY_JOB_NAME_LABEL: &str = "job-name";
const CONTROLLER_UID_LABEL: &str = "batch.kubernetes.io/controller-uid";
const JOB_NAME_LABEL: &str = "batch.kubernetes.io/job-name";

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
    // Not an upstream rule (the API server sets the uid, a 36-byte UUID). Every pod a plan
    // creates names the Job's uid in its owner reference, so a megabyte uid, which only a
    // manual selector leaves unchecked, would be repeated 500 times in one answer.
    if job.uid.len() > MAX_UID_LENGTH {
        errs.push(too_long("metadata.uid", MAX_UID_LENGTH));
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
        CompletionMode::Unknown(mode) => errs.push(
            not_supported(
                "spec.completionMode",
                json_quote(mode),
                &["NonIndexed", "Indexed"],
            )
            .tolerated_at_sync(),
        ),
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
    if spec.pod_replacement_policy == PodReplacementPolicy::Failed {
        return;
    }
    let value = spec.pod_replacement_policy.as_str();
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
            errs.push(not_supported(action_path, json_quote(action), &ACTIONS).tolerated_at_sync())
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
        ExitCodeOperator::Unknown(op) => errs.push(
            not_supported(operator_path, json_quote(op), &["In", "NotIn"]).tolerated_at_sync(),
        ),
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
            match IndexSet::parse_strict(indexes, completions) {
                Ok(set) => total_indexes = i64::try_from(set.total()).unwrap_or(i64::MAX),
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
                        severity: Severity::Rejected,
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
// Value rendering: Go's %q for plain strings, encoding/json for everything else.

/// Labels as upstream prints a label map; an empty one prints as a nil map would.
fn labels_json(labels: &BTreeMap<String, String>) -> String {
    if labels.is_empty() {
        "null".to_string()
    } else {
        string_map_json(labels)
    }
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
mod tests;
