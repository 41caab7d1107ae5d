//! The load suite's requests: realistic Indexed and NonIndexed Jobs whose pods
//! give a sync real work (counting, finalizer removal, replacements, a pod
//! failure policy or per-index backoff), in both pod encodings.
//!
//! Pods start from `fixtures::realistic_pod` (as the API server returns them)
//! and are then moved to a state by their position, so a file of any size has
//! the same mix.

use std::fmt;
use std::path::Path;

use job_decider_api::fixtures::{NOW_SECONDS, realistic_job, realistic_pod};
use job_decider_api::lean::{NotLean, lean_request};
use job_decider_api::pb;
use job_decider_core::model::{COMPLETION_INDEX_KEY, INDEX_FAILURE_COUNT_KEY};
use pbjson_types::Timestamp;
use prost::Message;
use serde::{Deserialize, Serialize};

use crate::Error;

/// The sizes `make load` generates and measures.
pub const SIZES: [usize; 4] = [10, 1_000, 10_000, 100_000];

/// The Job's completion mode; each carries the failure handling that fits it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Mode {
    /// Indexed, with backoffLimitPerIndex and maxFailedIndexes.
    Indexed,
    /// NonIndexed, with a pod failure policy.
    NonIndexed,
}

/// How the request carries its pods.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Encoding {
    /// `pods`: Kubernetes-shaped, as `kubectl get -o json` prints them.
    Pods,
    /// `lean_pods`: only what decisions read (`lean::lean_request`).
    Lean,
}

impl Mode {
    /// Both modes, in the order tables list them.
    pub const ALL: [Mode; 2] = [Mode::Indexed, Mode::NonIndexed];

    /// The lower-case name used in file names.
    pub fn slug(self) -> &'static str {
        match self {
            Mode::Indexed => "indexed",
            Mode::NonIndexed => "nonindexed",
        }
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Mode::Indexed => "Indexed",
            Mode::NonIndexed => "NonIndexed",
        })
    }
}

impl Encoding {
    /// Both encodings, in the order tables list them.
    pub const ALL: [Encoding; 2] = [Encoding::Pods, Encoding::Lean];

    /// The name used in file names and tables.
    pub fn slug(self) -> &'static str {
        match self {
            Encoding::Pods => "pods",
            Encoding::Lean => "lean",
        }
    }
}

impl fmt::Display for Encoding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.slug())
    }
}

/// One request file: which Job, how many pods, which encoding.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Case {
    /// The Job's mode.
    pub mode: Mode,
    /// Its pods.
    pub pods: usize,
    /// How they are sent.
    pub encoding: Encoding,
}

impl Case {
    /// The file's name, e.g. `indexed-1000-lean.bin`.
    pub fn file_name(&self) -> String {
        format!(
            "{}-{}-{}.bin",
            self.mode.slug(),
            self.pods,
            self.encoding.slug()
        )
    }

    /// Every case for the given sizes, size first.
    pub fn all(sizes: &[usize]) -> Vec<Case> {
        let mut cases = Vec::new();
        for &pods in sizes {
            for mode in Mode::ALL {
                for encoding in Encoding::ALL {
                    cases.push(Case {
                        mode,
                        pods,
                        encoding,
                    });
                }
            }
        }
        cases
    }
}

/// What a pod is doing; chosen by its position so every size has the same mix.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum PodState {
    /// Exited 0, still carrying the tracking finalizer: counted, finalizer removed.
    Succeeded,
    /// Exited 1, finalizer still on: counted as a failure (or its index's failure).
    Failed,
    /// Failed with a DisruptionTarget condition: the NonIndexed Job's policy ignores it.
    Disrupted,
    /// Not scheduled yet.
    Pending,
    /// Running but being deleted: terminating.
    Terminating,
    /// Running and ready.
    Running,
}

fn state_of(i: usize) -> PodState {
    match (i % 10, i % 20, i % 40, i % 50, i % 100) {
        (0, _, _, _, _) => PodState::Succeeded,
        (_, _, 1, _, _) => PodState::Disrupted,
        (_, 1, _, _, _) => PodState::Failed,
        (_, _, _, 7, _) => PodState::Pending,
        (_, _, _, _, 3) => PodState::Terminating,
        _ => PodState::Running,
    }
}

fn ts(seconds: i64) -> Timestamp {
    Timestamp { seconds, nanos: 0 }
}

fn condition(kind: &str, status: &str, reason: &str, at: i64) -> pb::PodCondition {
    pb::PodCondition {
        r#type: kind.into(),
        status: status.into(),
        reason: reason.into(),
        last_transition_time: Some(ts(at)),
        ..Default::default()
    }
}

fn terminated(name: &str, exit_code: i32, finished: i64) -> pb::ContainerStatus {
    pb::ContainerStatus {
        name: name.into(),
        state: Some(pb::ContainerState {
            terminated: Some(pb::ContainerStateTerminated {
                exit_code,
                reason: if exit_code == 0 { "Completed" } else { "Error" }.into(),
                started_at: Some(ts(NOW_SECONDS - 595)),
                finished_at: Some(ts(finished)),
                ..Default::default()
            }),
            ..Default::default()
        }),
        restart_count: 0,
        ready: false,
    }
}

/// Pod `i` of a Job in `mode`, in the state its position gives it.
fn pod(mode: Mode, i: usize) -> pb::Pod {
    let mut pod = realistic_pod(i);
    let state = state_of(i);
    let meta = pod.metadata.get_or_insert_with(Default::default);
    match mode {
        Mode::NonIndexed => {
            meta.labels.remove(COMPLETION_INDEX_KEY);
            meta.annotations.remove(COMPLETION_INDEX_KEY);
        }
        Mode::Indexed => {
            if matches!(state, PodState::Failed | PodState::Disrupted) {
                // Earlier failures of this index: a third of the failing indexes reach
                // backoffLimitPerIndex (2) with this failure and fail.
                let earlier = (i / 20) % 3;
                meta.annotations
                    .insert(INDEX_FAILURE_COUNT_KEY.into(), earlier.to_string());
            }
        }
    }
    let finished = NOW_SECONDS - 300 - (i % 200) as i64;
    let status = pod.status.get_or_insert_with(Default::default);
    let not_ready = |at| {
        vec![
            condition("PodReadyToStartContainers", "False", "", at),
            condition("Initialized", "True", "PodCompleted", NOW_SECONDS - 598),
            condition("Ready", "False", "PodCompleted", at),
            condition("ContainersReady", "False", "PodCompleted", at),
            condition("PodScheduled", "True", "", NOW_SECONDS - 599),
        ]
    };
    match state {
        PodState::Running => {}
        PodState::Terminating => {
            meta.deletion_timestamp = Some(ts(NOW_SECONDS - 5));
            meta.deletion_grace_period_seconds = Some(30);
        }
        PodState::Pending => {
            status.phase = "Pending".into();
            status.conditions = vec![pb::PodCondition {
                message: "0/1000 nodes are available: 1000 Insufficient nvidia.com/gpu.".into(),
                ..condition("PodScheduled", "False", "Unschedulable", NOW_SECONDS - 590)
            }];
            status.container_statuses.clear();
            if let Some(spec) = pod.spec.as_mut() {
                spec.node_name.clear();
            }
        }
        PodState::Succeeded => {
            status.phase = "Succeeded".into();
            status.conditions = not_ready(finished);
            status.container_statuses = vec![
                terminated("trainer", 0, finished),
                terminated("log-shipper", 0, finished),
            ];
        }
        PodState::Failed | PodState::Disrupted => {
            status.phase = "Failed".into();
            status.conditions = not_ready(finished);
            if state == PodState::Disrupted {
                status.conditions.push(pb::PodCondition {
                    message: "Taint manager: deleting due to NoExecute taint".into(),
                    ..condition(
                        "DisruptionTarget",
                        "True",
                        "DeletionByTaintManager",
                        finished,
                    )
                });
            }
            status.container_statuses = vec![
                terminated("trainer", 1, finished),
                terminated("log-shipper", 137, finished),
            ];
        }
    }
    pod
}

/// The NonIndexed Job's pod failure policy: fail on the trainer's exit code 42
/// (no pod has it, so every failed pod is matched against every rule), ignore
/// disruptions, count any other non-zero exit.
fn pod_failure_policy() -> pb::PodFailurePolicy {
    let exit_codes = |container: Option<&str>, operator: &str, values: Vec<i32>| {
        Some(pb::PodFailurePolicyOnExitCodesRequirement {
            container_name: container.map(Into::into),
            operator: operator.into(),
            values,
        })
    };
    pb::PodFailurePolicy {
        rules: vec![
            pb::PodFailurePolicyRule {
                action: "FailJob".into(),
                on_exit_codes: exit_codes(Some("trainer"), "In", vec![42]),
                on_pod_conditions: vec![],
            },
            pb::PodFailurePolicyRule {
                action: "Ignore".into(),
                on_exit_codes: None,
                on_pod_conditions: vec![pb::PodFailurePolicyOnPodConditionsPattern {
                    r#type: "DisruptionTarget".into(),
                    status: "True".into(),
                }],
            },
            pb::PodFailurePolicyRule {
                action: "Count".into(),
                on_exit_codes: exit_codes(None, "NotIn", vec![0]),
                on_pod_conditions: vec![],
            },
        ],
    }
}

/// The Job of `pods` pods in `mode`, running for 10 minutes, whose status does
/// not count its pods yet (so the sync counts them and writes the status).
fn job(mode: Mode, pods: usize) -> pb::Job {
    let mut job = realistic_job(pods);
    let n = i32::try_from(pods).unwrap_or(i32::MAX).max(1);
    if let Some(spec) = job.spec.as_mut() {
        match mode {
            Mode::Indexed => {
                // backoffLimit defaults to the largest int32 beside backoffLimitPerIndex.
                spec.backoff_limit = None;
                spec.backoff_limit_per_index = Some(2);
                spec.max_failed_indexes = Some((n / 10).max(1));
            }
            Mode::NonIndexed => {
                spec.completion_mode = Some("NonIndexed".into());
                spec.backoff_limit = Some(n);
                spec.pod_failure_policy = Some(pod_failure_policy());
            }
        }
    }
    job
}

/// The request for `mode` and `pods`, pods Kubernetes-shaped.
pub fn request(mode: Mode, pods: usize) -> pb::DecideJobRequest {
    pb::DecideJobRequest {
        job: Some(job(mode, pods)),
        pods: (0..pods).map(|i| pod(mode, i)).collect(),
        now: Some(ts(NOW_SECONDS)),
        ..Default::default()
    }
}

/// The request of a case, in its encoding.
pub fn case_request(case: Case) -> Result<pb::DecideJobRequest, Error> {
    let request = request(case.mode, case.pods);
    match case.encoding {
        Encoding::Pods => Ok(request),
        Encoding::Lean => {
            lean_request(request).map_err(|(index, source): (usize, NotLean)| Error::NotLean {
                case: case.file_name(),
                index,
                source,
            })
        }
    }
}

/// Writes every case's request for `sizes` into `dir` as binary protobuf;
/// returns each case with its file's size in bytes.
pub fn write_all(dir: &Path, sizes: &[usize]) -> Result<Vec<(Case, usize)>, Error> {
    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    let mut written = Vec::new();
    for case in Case::all(sizes) {
        let bytes = case_request(case)?.encode_to_vec();
        let path = dir.join(case.file_name());
        std::fs::write(&path, &bytes).map_err(|e| Error::io(&path, e))?;
        written.push((case, bytes.len()));
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;
    use job_decider_api::pb::action::Kind;

    /// The kinds of a plan's actions, in order, for comparing what a sync does.
    fn kinds(response: &pb::DecideJobResponse) -> Vec<&'static str> {
        response
            .actions
            .iter()
            .filter_map(|a| a.kind.as_ref())
            .map(|k| match k {
                Kind::AdoptPods(_) => "adoptPods",
                Kind::ReleasePods(_) => "releasePods",
                Kind::CreatePods(_) => "createPods",
                Kind::DeletePods(_) => "deletePods",
                Kind::RemoveFinalizers(_) => "removeFinalizers",
                Kind::UpdateStatus(_) => "updateStatus",
                Kind::RecordEvent(_) => "recordEvent",
                Kind::FailPods(_) => "failPods",
            })
            .collect()
    }

    #[test]
    fn every_pod_state_occurs_in_a_thousand_pods() {
        let states: Vec<PodState> = (0..1000).map(state_of).collect();
        for s in [
            PodState::Succeeded,
            PodState::Failed,
            PodState::Disrupted,
            PodState::Pending,
            PodState::Terminating,
            PodState::Running,
        ] {
            assert!(states.contains(&s), "{s:?} missing");
        }
    }

    #[test]
    fn both_encodings_decide_alike_and_the_sync_does_work() {
        for mode in Mode::ALL {
            for pods in [10, 1_000] {
                let decide = |encoding| {
                    let request = case_request(Case {
                        mode,
                        pods,
                        encoding,
                    })
                    .expect("the generated pods have a lean form");
                    job_decider_api::decide(request)
                        .expect("the generated request is valid")
                        .response()
                };
                let full = decide(Encoding::Pods);
                let lean = decide(Encoding::Lean);
                assert_eq!(full, lean, "{mode} {pods}: the encodings decide apart");
                let kinds = kinds(&full);
                for wanted in ["createPods", "removeFinalizers", "updateStatus"] {
                    assert!(
                        kinds.contains(&wanted),
                        "{mode} {pods}: no {wanted} in {kinds:?}"
                    );
                }
            }
        }
    }

    #[test]
    fn indexed_job_fails_some_indexes_and_nonindexed_ignores_disruptions() {
        let status_of = |mode| {
            let response = job_decider_api::decide(request(mode, 1_000))
                .expect("valid")
                .response();
            response
                .actions
                .iter()
                .filter_map(|a| match &a.kind {
                    Some(Kind::UpdateStatus(u)) => u.status.clone(),
                    _ => None,
                })
                .next_back()
                .expect("the sync writes the status")
        };
        let indexed = status_of(Mode::Indexed);
        assert!(
            indexed
                .failed_indexes
                .as_deref()
                .is_some_and(|s| !s.is_empty()),
            "no failed index in {indexed:?}"
        );
        let nonindexed = status_of(Mode::NonIndexed);
        // 1,000 pods: 25 failures, 25 disruptions the policy ignores.
        assert_eq!(nonindexed.failed, 25, "{nonindexed:?}");
        assert_eq!(nonindexed.succeeded, 100, "{nonindexed:?}");
    }

    #[test]
    fn lean_files_are_smaller_than_pod_files() {
        for mode in Mode::ALL {
            let size = |encoding| {
                case_request(Case {
                    mode,
                    pods: 100,
                    encoding,
                })
                .map(|r| r.encoded_len())
                .expect("lean form")
            };
            assert!(size(Encoding::Lean) < size(Encoding::Pods));
        }
    }
}
