//! Manifests as written: a Job without `metadata.uid`, as one would
//! `kubectl apply` it, taken as the API server would store it on create.
//!
//! What the API server adds on create and a decision needs is filled in here
//! (upstream v1.37.2: the registry's system fields, the Job strategy's
//! `PrepareForCreate` and `generateSelector`, `SetDefaults_Job`'s copy of the
//! template labels onto the Job): the uid, the namespace `default`, a name for
//! `generateName`, `creationTimestamp` (the decision's now), `generation` 1,
//! an empty status, and, unless `spec.manualSelector` is true, the selector on
//! `batch.kubernetes.io/controller-uid` and the four labels of the template.
//! `SetDefaults_Job`'s spec defaults are not written: the conversion applies
//! them to every Job (`job_decider_core::defaults`), and the note only says
//! which ones a field left unset gets.
//!
//! The uid is derived, not random, so the same manifest always decides alike:
//! a version-8 UUID (RFC 9562's custom form) whose bits are the 128-bit FNV-1a
//! hash of `job-decider/<namespace>/<name>`.
//!
//! Pods given with such a Job are the Job's only if they say so as pods of a
//! stored Job do: an owner reference with the derived uid, or (orphans) labels
//! the generated selector matches. Pods without them are not the Job's: the
//! decision neither counts nor adopts them; a pod whose controller is another
//! uid is rejected, as for any Job.

use std::fmt::Write as _;

use job_decider_api::pb;
use job_decider_core::defaults;

/// The label the generated selector matches (batch/v1 `ControllerUidLabel`).
pub const CONTROLLER_UID_LABEL: &str = "batch.kubernetes.io/controller-uid";
/// The older spelling the API server also writes on the template.
pub const LEGACY_CONTROLLER_UID_LABEL: &str = "controller-uid";
/// The Job's name on its pods (batch/v1 `JobNameLabel`).
pub const JOB_NAME_LABEL: &str = "batch.kubernetes.io/job-name";
/// The older spelling the API server also writes on the template.
pub const LEGACY_JOB_NAME_LABEL: &str = "job-name";

/// The namespace a manifest without one is created in (kubectl's default context).
const DEFAULT_NAMESPACE: &str = "default";
/// Characters of a generated name's suffix (apimachinery's `names.SimpleNameGenerator`).
const NAME_SUFFIX_ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
/// Length of that suffix, and the longest base kept before it (63 - 5).
const NAME_SUFFIX_LEN: usize = 5;
const MAX_GENERATED_NAME_BASE: usize = 58;

/// 128-bit FNV-1a: a fixed, published hash, so uids never change between builds.
fn fnv1a_128(bytes: &[u8]) -> u128 {
    const OFFSET: u128 = 0x6c62_272e_07bb_0142_62b8_2175_6295_c58d;
    const PRIME: u128 = 0x0000_0000_0100_0000_0000_0000_0000_013b;
    bytes.iter().fold(OFFSET, |hash, b| {
        (hash ^ u128::from(*b)).wrapping_mul(PRIME)
    })
}

/// The uid a Job written without one gets: a version-8 UUID from the hash of
/// its namespace and name.
pub fn derived_uid(namespace: &str, name: &str) -> String {
    let hash = fnv1a_128(format!("job-decider/{namespace}/{name}").as_bytes());
    // Version 8 in bits 48-51, variant 0b10 in bits 64-65 (RFC 9562 §5.8).
    let bits = (hash & !(0xf << 76) & !(0x3 << 62)) | (0x8 << 76) | (0x2 << 62);
    let hex = format!("{bits:032x}");
    format!(
        "{}-{}-{}-{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..32]
    )
}

/// `generateName` plus a five-character suffix derived from it and the namespace.
fn generated_name(namespace: &str, base: &str) -> String {
    let cut = (0..=base.len().min(MAX_GENERATED_NAME_BASE))
        .rev()
        .find(|&i| base.is_char_boundary(i))
        .unwrap_or(0);
    let mut hash = fnv1a_128(format!("job-decider-name/{namespace}/{base}").as_bytes());
    let mut name = base[..cut].to_string();
    let radix = NAME_SUFFIX_ALPHABET.len() as u128;
    for _ in 0..NAME_SUFFIX_LEN {
        // The remainder is below the alphabet's length, so the index is in range.
        let i = usize::try_from(hash % radix).unwrap_or(0);
        name.push(char::from(
            NAME_SUFFIX_ALPHABET[i % NAME_SUFFIX_ALPHABET.len()],
        ));
        hash /= radix;
    }
    name
}

/// RFC 3339 (UTC) of a wire timestamp, for the note.
fn rfc3339(t: &pbjson_types::Timestamp) -> String {
    chrono::DateTime::from_timestamp(t.seconds, u32::try_from(t.nanos).unwrap_or(0))
        .map(|d| d.to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true))
        .unwrap_or_else(|| format!("{}s", t.seconds))
}

/// Takes a Job written without `metadata.uid` as the API server would create
/// it at `now`, and returns what was filled in, one item a line; `None` (and
/// the Job untouched) when it has a uid: a stored Job is taken as it is.
pub fn as_created(job: &mut pb::Job, now: &pbjson_types::Timestamp) -> Option<Vec<String>> {
    let metadata = job.metadata.get_or_insert_with(Default::default);
    if !metadata.uid.is_empty() {
        return None;
    }
    let mut filled = Vec::new();
    if metadata.namespace.is_empty() {
        metadata.namespace = DEFAULT_NAMESPACE.to_string();
        filled.push(format!("metadata.namespace: {DEFAULT_NAMESPACE}"));
    }
    if metadata.name.is_empty() && !metadata.generate_name.is_empty() {
        metadata.name = generated_name(&metadata.namespace, &metadata.generate_name);
        filled.push(format!(
            "metadata.name: {} (generateName and a suffix derived from it)",
            metadata.name
        ));
    }
    // Without a name there is nothing to derive from; validation names the field.
    if metadata.name.is_empty() {
        return Some(filled);
    }
    metadata.uid = derived_uid(&metadata.namespace, &metadata.name);
    filled.push(format!(
        "metadata.uid: {} (derived from {}/{}: the same name always gets it)",
        metadata.uid, metadata.namespace, metadata.name
    ));
    metadata.creation_timestamp = Some(*now);
    filled.push(format!(
        "metadata.creationTimestamp: {} (now)",
        rfc3339(now)
    ));
    metadata.generation = 1;
    let (name, uid) = (metadata.name.clone(), metadata.uid.clone());
    let written_status = job.status.take().unwrap_or_default();
    if written_status != pb::JobStatus::default() {
        filled.push("status: dropped (the API server clears a new Job's status)".to_string());
    }
    let spec = job.spec.get_or_insert_with(Default::default);
    // SetDefaults_Job gives a Job without labels its template's (the same map
    // in Go, so the selector's labels, added next, are on the Job too); a
    // template without labels gives none.
    let template_labels_written = spec
        .template
        .as_ref()
        .and_then(|t| t.metadata.as_ref())
        .is_some_and(|m| !m.labels.is_empty());
    if spec.manual_selector != Some(true) {
        generate_selector(spec, &name, &uid, &mut filled);
    }
    let template_labels = spec
        .template
        .as_ref()
        .and_then(|t| t.metadata.as_ref())
        .map(|m| m.labels.clone())
        .unwrap_or_default();
    if let Some(metadata) = job.metadata.as_mut()
        && metadata.labels.is_empty()
        && template_labels_written
    {
        metadata.labels = template_labels;
        filled.push("metadata.labels: the template's labels".to_string());
    }
    if let Some(spec) = job.spec.as_ref() {
        let defaulted = unset_defaults(spec);
        if !defaulted.is_empty() {
            filled.push(format!(
                "defaults for unset fields (as for every Job): {}",
                defaulted.join(", ")
            ));
        }
    }
    Some(filled)
}

/// The Job strategy's `generateSelector`: the template's four labels (each
/// only when absent: a conflicting one is validation's to report) and the
/// selector on the controller-uid label.
fn generate_selector(spec: &mut pb::JobSpec, name: &str, uid: &str, filled: &mut Vec<String>) {
    let template = spec.template.get_or_insert_with(Default::default);
    let labels = &mut template
        .metadata
        .get_or_insert_with(Default::default)
        .labels;
    let mut added = Vec::new();
    for (key, value) in [
        (LEGACY_JOB_NAME_LABEL, name),
        (JOB_NAME_LABEL, name),
        (LEGACY_CONTROLLER_UID_LABEL, uid),
        (CONTROLLER_UID_LABEL, uid),
    ] {
        if !labels.contains_key(key) {
            labels.insert(key.to_string(), value.to_string());
            added.push(key);
        }
    }
    if !added.is_empty() {
        filled.push(format!(
            "spec.template.metadata.labels: {}",
            added.join(", ")
        ));
    }
    let selector = spec.selector.get_or_insert_with(Default::default);
    if !selector.match_labels.contains_key(CONTROLLER_UID_LABEL) {
        selector
            .match_labels
            .insert(CONTROLLER_UID_LABEL.to_string(), uid.to_string());
        filled.push(format!(
            "spec.selector.matchLabels: {CONTROLLER_UID_LABEL}={uid}"
        ));
    }
}

/// The spec fields left unset and the value the conversion gives them, in
/// `SetDefaults_Job`'s words (read from `job_decider_core::defaults`, not
/// restated).
fn unset_defaults(spec: &pb::JobSpec) -> Vec<String> {
    let mut out = Vec::new();
    let (parallelism, completions) =
        defaults::parallelism_and_completions(spec.parallelism, spec.completions);
    if spec.parallelism.is_none() {
        out.push(format!("parallelism {parallelism}"));
    }
    if spec.completions.is_none()
        && let Some(completions) = completions
    {
        out.push(format!("completions {completions}"));
    }
    if spec.backoff_limit.is_none() {
        let limit = defaults::backoff_limit(None, spec.backoff_limit_per_index);
        let mut text = String::new();
        let _ = write!(text, "backoffLimit {limit}");
        out.push(text);
    }
    if spec.completion_mode.is_none() {
        out.push(format!(
            "completionMode {}",
            defaults::completion_mode(None).as_str()
        ));
    }
    if spec.suspend.is_none() {
        out.push("suspend false".to_string());
    }
    if spec.pod_replacement_policy.is_none() {
        let policy = defaults::pod_replacement_policy(None, spec.pod_failure_policy.is_some());
        out.push(format!("podReplacementPolicy {}", policy.as_str()));
    }
    if spec.manual_selector.is_none() {
        out.push("manualSelector false".to_string());
    }
    out
}

#[cfg(test)]
mod tests;
