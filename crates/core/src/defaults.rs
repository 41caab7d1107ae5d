//! What the API server fills in before any controller sees a Job
//! (`SetDefaults_Job`, pkg/apis/batch/v1/defaults.go), and how upstream's
//! controller reads the annotations it writes on pods. Whoever builds a
//! [`crate::model::Snapshot`] — the wire conversion, or a Rust controller that
//! holds Kubernetes objects — applies these, so the core decides on what the
//! API server would have stored.

use crate::model::{CompletionMode, ConditionStatus, PodReplacementPolicy};

/// Upstream's default backoffLimit when the Job has no per-index limit.
pub const DEFAULT_BACKOFF_LIMIT: i32 = 6;

/// `parallelism` and `completions` as stored: both unset is a non-parallel
/// Job (one pod, one completion); otherwise an unset parallelism is 1.
pub fn parallelism_and_completions(
    parallelism: Option<i32>,
    completions: Option<i32>,
) -> (i32, Option<i32>) {
    match (parallelism, completions) {
        (None, None) => (1, Some(1)),
        (parallelism, completions) => (parallelism.unwrap_or(1), completions),
    }
}

/// `backoffLimit` as stored: unset is 6, or unlimited with a per-index limit.
pub fn backoff_limit(backoff_limit: Option<i32>, backoff_limit_per_index: Option<i32>) -> i32 {
    backoff_limit.unwrap_or(if backoff_limit_per_index.is_some() {
        i32::MAX
    } else {
        DEFAULT_BACKOFF_LIMIT
    })
}

/// `completionMode` as stored: unset is NonIndexed.
pub fn completion_mode(mode: Option<String>) -> CompletionMode {
    mode.map_or(CompletionMode::NonIndexed, CompletionMode::from)
}

/// `podReplacementPolicy` as stored: unset is Failed with a pod failure
/// policy (it must see every pod's final state), TerminatingOrFailed without.
pub fn pod_replacement_policy(
    policy: Option<String>,
    has_pod_failure_policy: bool,
) -> PodReplacementPolicy {
    match policy {
        Some(policy) => PodReplacementPolicy::from(policy),
        None if has_pod_failure_policy => PodReplacementPolicy::Failed,
        None => PodReplacementPolicy::TerminatingOrFailed,
    }
}

/// An onPodConditions pattern's status as stored: empty is True.
pub fn pattern_status(status: String) -> ConditionStatus {
    if status.is_empty() {
        ConditionStatus::True
    } else {
        ConditionStatus::from(status)
    }
}

/// Upstream's `getCompletionIndex` on the index annotation: missing, not an
/// integer, or negative is no index. Go's `strconv.Atoi` takes any 64-bit
/// integer, and an index beyond i32 can never be below `completions`, so it is
/// as unusable as an unparsable one.
pub fn completion_index(annotation: Option<&str>) -> Option<i32> {
    let index: i64 = annotation?.parse().ok()?;
    i32::try_from(index).ok().filter(|i| *i >= 0)
}

/// Upstream's `getIndexAbsoluteFailureCount` on a failure-count annotation:
/// missing, unparsable, negative or beyond i32 is 0.
pub fn failure_count(annotation: Option<&str>) -> i32 {
    annotation
        .and_then(|v| v.parse::<i64>().ok())
        .and_then(|n| i32::try_from(n).ok())
        .filter(|n| *n >= 0)
        .unwrap_or(0)
}

#[cfg(test)]
mod tests;
