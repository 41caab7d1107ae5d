//! job-decider for Rust controllers (kube-rs): decide on `k8s-openapi`'s
//! [`Job`] and [`Pod`] in process, with no server.
//!
//! The objects are mapped field by field onto the wire contract's messages
//! ([`job_to_pb`], [`pod_to_pb`]) and then converted, validated and decided by
//! exactly the path every DecideJob call takes ([`job_decider_api::decide`]).
//! So a Job or pod the server would reject is rejected here with the same
//! field-named violations (`job.metadata.uid`, `pods[2].status.phase`), and
//! an accepted one gets the same plan: there is one conversion, not two to
//! keep in step.
//!
//! This crate does not choose k8s-openapi's Kubernetes version: as
//! k8s-openapi requires of libraries, the final binary enables exactly one
//! `v1_*` feature on its own `k8s-openapi` dependency (a kube-rs controller
//! already does). The fields read here exist in every version k8s-openapi
//! 0.29 supports (`v1_33` to `v1_37`).
//!
//! ```no_run
//! use job_decider_core::model::ControllerState;
//! use job_decider_k8s::{Error, Inputs, Job, Pod};
//!
//! /// One sync of one Job: `last` is the state the previous plan returned.
//! fn sync(job: &Job, pods: &[Pod], last: ControllerState) -> Result<ControllerState, Error> {
//!     let mut inputs = Inputs::at(job_decider_k8s::now()?);
//!     inputs.state = last;
//!     let decision = job_decider_k8s::decide(job, pods, &inputs)?;
//!     for action in &decision.plan.actions {
//!         // adopt or release pods, create or delete them, write the status, record events
//!     }
//!     Ok(decision.plan.state)
//! }
//! ```

use std::time::{SystemTime, UNIX_EPOCH};

use k8s_openapi::api::batch::v1 as batch;
use k8s_openapi::api::core::v1 as core_v1;
use k8s_openapi::apimachinery::pkg::apis::meta::v1 as meta;

use job_decider_api::convert::state_to_pb;
use job_decider_api::wire_time::time_to_pb;
use job_decider_api::{ApiError, pb};
use job_decider_core::model::Snapshot;
use job_decider_core::validate::Violation;
use pbjson_types::Timestamp;

#[cfg(feature = "kube")]
pub mod apply;
pub mod client;

pub use job_decider_api::Decision;
/// The model types a controller names ([`Inputs::state`], a plan's actions):
/// re-exported so that this crate alone is enough to depend on.
pub use job_decider_core::model::{ControllerState, Expectations};
pub use job_decider_core::time::Time;
pub use k8s_openapi::api::batch::v1::Job;
pub use k8s_openapi::api::core::v1::Pod;
/// The core (the plan's actions are `job_decider_core::plan`'s) and the wire
/// contract (`job_decider_api::pb`: the messages and the generated client).
pub use {job_decider_api, job_decider_core};

/// What a decision needs besides the Job and its pods.
#[derive(Clone, Debug)]
pub struct Inputs {
    /// The current time: decisions never read a clock.
    pub now: Time,
    /// The state the previous decision for this Job returned (`Plan::state`);
    /// the default for a controller that just started.
    pub state: ControllerState,
    /// The controller deciding (a `spec.managedBy` value); empty means upstream's own.
    pub controller_name: String,
    /// The caller's writes its caches do not show yet.
    pub expectations: Expectations,
    /// Ask the service why the plan is what it is (`DecideJobResponse.explanation`).
    pub explain: bool,
    /// The nodes of the Job's pods that are being deleted and not yet terminal, as
    /// your node cache shows them: what the failure policy's `terminatingTimeout`
    /// with `onNodes: Unhealthy` reads (`DecideJobRequest.nodes`); each node once.
    pub nodes: Vec<core_v1::Node>,
    /// Names of such pods' nodes that your synced node cache does not hold (deleted).
    pub missing_nodes: Vec<String>,
}

impl Inputs {
    /// The inputs of a first decision at `now`: no state, upstream's controller, nothing pending.
    pub fn at(now: Time) -> Self {
        Inputs {
            now,
            state: ControllerState::default(),
            controller_name: String::new(),
            expectations: Expectations::default(),
            explain: false,
            nodes: Vec::new(),
            missing_nodes: Vec::new(),
        }
    }
}

/// Why objects were not decided on.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The Job or a pod cannot be decided on. Each violation names its field
    /// as the server's INVALID_ARGUMENT does (`job.metadata.uid`,
    /// `pods[2].status.phase`); `reason` is the server's `ErrorInfo.reason`
    /// (`INVALID_SNAPSHOT`, `INVALID_JOB`).
    #[error("{message}")]
    Invalid {
        /// The stable reason, as the service's `ErrorInfo` gives it.
        reason: &'static str,
        /// The offending fields, in the order the server lists them.
        violations: Vec<Violation>,
        /// The one-line summary the server's status message carries.
        message: String,
    },
    /// The system clock is before 1970 or after 2262 (only [`now`] returns it).
    #[error("the system clock cannot be read as a time between 1970 and 2262")]
    Clock,
}

impl Error {
    /// The field violations (empty for [`Error::Clock`]).
    pub fn violations(&self) -> &[Violation] {
        match self {
            Error::Invalid { violations, .. } => violations,
            Error::Clock => &[],
        }
    }
}

impl From<ApiError> for Error {
    fn from(err: ApiError) -> Self {
        let message = err.to_string();
        let reason = err.reason();
        // The decision path only answers BadRequest; any other error keeps its reason and message.
        let violations = match err {
            ApiError::BadRequest { violations, .. } => violations,
            _ => Vec::new(),
        };
        Error::Invalid {
            reason,
            violations,
            message,
        }
    }
}

/// The system clock as a domain time, for [`Inputs::now`].
pub fn now() -> Result<Time, Error> {
    let since = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_err(|_| Error::Clock)?;
    let nanos = i64::try_from(since.as_nanos()).map_err(|_| Error::Clock)?;
    Ok(Time::from_unix_nanos(nanos))
}

/// Converts, validates and decides: the server's DecideJob, in process.
///
/// `pods` are the pods the Job owns or whose labels match its selector, as the
/// API server returns them; a pod's violations name it by its position here.
pub fn decide<'a>(
    job: &Job,
    pods: impl IntoIterator<Item = &'a Pod>,
    inputs: &Inputs,
) -> Result<Decision, Error> {
    Ok(job_decider_api::decide(request(job, pods, inputs))?)
}

/// The domain snapshot of these objects (defaulted and checked as the server
/// does), for a caller that calls the core itself.
pub fn snapshot<'a>(
    job: &Job,
    pods: impl IntoIterator<Item = &'a Pod>,
    inputs: &Inputs,
) -> Result<Snapshot, Error> {
    Snapshot::try_from(request(job, pods, inputs))
        .map_err(|violations| ApiError::invalid_snapshot(violations).into())
}

/// The DecideJobRequest these objects make: what a client sends the service,
/// field for field.
pub fn request<'a>(
    job: &Job,
    pods: impl IntoIterator<Item = &'a Pod>,
    inputs: &Inputs,
) -> pb::DecideJobRequest {
    let expectations = &inputs.expectations;
    pb::DecideJobRequest {
        job: Some(job_to_pb(job)),
        pods: pods.into_iter().map(pod_to_pb).collect(),
        now: Some(time_to_pb(inputs.now)),
        // No state and an empty one mean the same (a controller that just started).
        state: (inputs.state != ControllerState::default()).then(|| state_to_pb(&inputs.state)),
        controller_name: inputs.controller_name.clone(),
        // A Job carries its extended failure policy in its annotation, copied with its metadata.
        failure_policy: String::new(),
        expectations: (*expectations != Expectations::default()).then(|| pb::Expectations {
            pod_changes_pending: expectations.pod_changes_pending,
            finalizer_removals_pending: expectations
                .finalizer_removals_pending
                .iter()
                .cloned()
                .collect(),
        }),
        lean_pods: Vec::new(),
        explain: inputs.explain,
        nodes: inputs.nodes.iter().map(node_to_pb).collect(),
        missing_nodes: inputs.missing_nodes.clone(),
    }
}

/// A node as the request carries it: its name, taints and conditions (the
/// service reads the Ready and MaintenanceInProgress ones).
pub fn node_to_pb(node: &core_v1::Node) -> pb::Node {
    pb::Node {
        name: node.metadata.name.clone().unwrap_or_default(),
        taints: node
            .spec
            .as_ref()
            .and_then(|s| s.taints.as_ref())
            .into_iter()
            .flatten()
            .map(|t| pb::Taint {
                key: t.key.clone(),
                effect: t.effect.clone(),
            })
            .collect(),
        conditions: node
            .status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .into_iter()
            .flatten()
            .map(|c| pb::NodeCondition {
                r#type: c.type_.clone(),
                status: c.status.clone(),
            })
            .collect(),
    }
}

/// A string field that some Kubernetes versions make optional: absent reads as
/// the wire's empty string, so the server's path sees what a JSON client sends.
trait Text {
    /// The value, empty when absent.
    fn text(&self) -> String;
}

impl Text for String {
    fn text(&self) -> String {
        self.clone()
    }
}

impl Text for Option<String> {
    fn text(&self) -> String {
        self.clone().unwrap_or_default()
    }
}

/// A Kubernetes time on the wire: seconds and non-negative nanoseconds.
fn time(t: &meta::Time) -> Timestamp {
    const NANOS_PER_SEC: i128 = 1_000_000_000;
    let nanos = t.0.as_nanosecond();
    Timestamp {
        // jiff's range (years -9999 to 9999) always fits i64 seconds.
        seconds: i64::try_from(nanos.div_euclid(NANOS_PER_SEC)).unwrap_or(i64::MAX),
        // rem_euclid of 1e9 is in 0..1e9, which fits an i32.
        nanos: i32::try_from(nanos.rem_euclid(NANOS_PER_SEC)).unwrap_or(0),
    }
}

fn opt_time(t: Option<&meta::Time>) -> Option<Timestamp> {
    t.map(time)
}

fn metadata(m: &meta::ObjectMeta) -> pb::ObjectMeta {
    pb::ObjectMeta {
        name: m.name.clone().unwrap_or_default(),
        generate_name: m.generate_name.clone().unwrap_or_default(),
        namespace: m.namespace.clone().unwrap_or_default(),
        uid: m.uid.clone().unwrap_or_default(),
        resource_version: m.resource_version.clone().unwrap_or_default(),
        generation: m.generation.unwrap_or_default(),
        creation_timestamp: opt_time(m.creation_timestamp.as_ref()),
        deletion_timestamp: opt_time(m.deletion_timestamp.as_ref()),
        deletion_grace_period_seconds: m.deletion_grace_period_seconds,
        labels: m.labels.clone().unwrap_or_default(),
        annotations: m.annotations.clone().unwrap_or_default(),
        owner_references: m
            .owner_references
            .iter()
            .flatten()
            .map(|o| pb::OwnerReference {
                api_version: o.api_version.clone(),
                kind: o.kind.clone(),
                name: o.name.clone(),
                uid: o.uid.clone(),
                controller: o.controller,
                block_owner_deletion: o.block_owner_deletion,
            })
            .collect(),
        finalizers: m.finalizers.clone().unwrap_or_default(),
    }
}

fn selector(s: &meta::LabelSelector) -> pb::LabelSelector {
    pb::LabelSelector {
        match_labels: s.match_labels.clone().unwrap_or_default(),
        match_expressions: s
            .match_expressions
            .iter()
            .flatten()
            .map(|r| pb::LabelSelectorRequirement {
                key: r.key.clone(),
                operator: r.operator.clone(),
                values: r.values.clone().unwrap_or_default(),
            })
            .collect(),
    }
}

/// A Job as the contract's `Job`: every field the contract names, nothing else.
pub fn job_to_pb(job: &Job) -> pb::Job {
    use k8s_openapi::Resource;
    pb::Job {
        api_version: Job::API_VERSION.to_string(),
        kind: Job::KIND.to_string(),
        metadata: Some(metadata(&job.metadata)),
        spec: job.spec.as_ref().map(job_spec),
        status: job.status.as_ref().map(job_status),
    }
}

fn job_spec(s: &batch::JobSpec) -> pb::JobSpec {
    pb::JobSpec {
        parallelism: s.parallelism,
        completions: s.completions,
        active_deadline_seconds: s.active_deadline_seconds,
        pod_failure_policy: s.pod_failure_policy.as_ref().map(pod_failure_policy),
        success_policy: s.success_policy.as_ref().map(|p| pb::SuccessPolicy {
            rules: p
                .rules
                .iter()
                .map(|r| pb::SuccessPolicyRule {
                    succeeded_indexes: r.succeeded_indexes.clone(),
                    succeeded_count: r.succeeded_count,
                })
                .collect(),
        }),
        backoff_limit: s.backoff_limit,
        backoff_limit_per_index: s.backoff_limit_per_index,
        max_failed_indexes: s.max_failed_indexes,
        selector: s.selector.as_ref().map(selector),
        manual_selector: s.manual_selector,
        template: Some(template(&s.template)),
        ttl_seconds_after_finished: s.ttl_seconds_after_finished,
        completion_mode: s.completion_mode.clone(),
        suspend: s.suspend,
        pod_replacement_policy: s.pod_replacement_policy.clone(),
        managed_by: s.managed_by.clone(),
    }
}

fn pod_failure_policy(p: &batch::PodFailurePolicy) -> pb::PodFailurePolicy {
    pb::PodFailurePolicy {
        rules: p
            .rules
            .iter()
            .map(|r| pb::PodFailurePolicyRule {
                action: r.action.clone(),
                on_exit_codes: r.on_exit_codes.as_ref().map(|e| {
                    pb::PodFailurePolicyOnExitCodesRequirement {
                        container_name: e.container_name.clone(),
                        operator: e.operator.clone(),
                        values: e.values.clone(),
                    }
                }),
                on_pod_conditions: r
                    .on_pod_conditions
                    .iter()
                    .flatten()
                    .map(|c| pb::PodFailurePolicyOnPodConditionsPattern {
                        r#type: c.type_.clone(),
                        // Optional from Kubernetes 1.35; absent reads as on the wire (empty).
                        status: c.status.text(),
                    })
                    .collect(),
            })
            .collect(),
    }
}

fn template(t: &core_v1::PodTemplateSpec) -> pb::PodTemplateSpec {
    pb::PodTemplateSpec {
        metadata: t.metadata.as_ref().map(metadata),
        spec: t.spec.as_ref().map(|s| pb::PodSpec {
            restart_policy: s.restart_policy.clone().unwrap_or_default(),
            containers: s.containers.iter().map(container).collect(),
            init_containers: s.init_containers.iter().flatten().map(container).collect(),
        }),
    }
}

fn container(c: &core_v1::Container) -> pb::Container {
    pb::Container {
        name: c.name.clone(),
        env: c
            .env
            .iter()
            .flatten()
            .map(|e| pb::EnvVar {
                name: e.name.clone(),
                value: e.value.clone().unwrap_or_default(),
                value_from: e.value_from.as_ref().map(|v| pb::EnvVarSource {
                    field_ref: v.field_ref.as_ref().map(|f| pb::ObjectFieldSelector {
                        api_version: f.api_version.clone().unwrap_or_default(),
                        field_path: f.field_path.clone(),
                    }),
                }),
            })
            .collect(),
    }
}

fn job_status(s: &batch::JobStatus) -> pb::JobStatus {
    pb::JobStatus {
        conditions: s
            .conditions
            .iter()
            .flatten()
            .map(|c| pb::JobCondition {
                r#type: c.type_.clone(),
                status: c.status.clone(),
                last_probe_time: opt_time(c.last_probe_time.as_ref()),
                last_transition_time: opt_time(c.last_transition_time.as_ref()),
                reason: c.reason.clone().unwrap_or_default(),
                message: c.message.clone().unwrap_or_default(),
            })
            .collect(),
        start_time: opt_time(s.start_time.as_ref()),
        completion_time: opt_time(s.completion_time.as_ref()),
        active: s.active.unwrap_or_default(),
        succeeded: s.succeeded.unwrap_or_default(),
        failed: s.failed.unwrap_or_default(),
        terminating: s.terminating,
        completed_indexes: s.completed_indexes.clone().unwrap_or_default(),
        failed_indexes: s.failed_indexes.clone(),
        uncounted_terminated_pods: s.uncounted_terminated_pods.as_ref().map(|u| {
            pb::UncountedTerminatedPods {
                succeeded: u.succeeded.clone().unwrap_or_default(),
                failed: u.failed.clone().unwrap_or_default(),
            }
        }),
        ready: s.ready,
    }
}

/// A pod as the contract's `Pod`: every field the contract names, nothing else.
pub fn pod_to_pb(pod: &Pod) -> pb::Pod {
    use k8s_openapi::Resource;
    pb::Pod {
        api_version: Pod::API_VERSION.to_string(),
        kind: Pod::KIND.to_string(),
        metadata: Some(metadata(&pod.metadata)),
        spec: pod.spec.as_ref().map(|s| pb::PodSpecSummary {
            node_name: s.node_name.clone().unwrap_or_default(),
            init_containers: s
                .init_containers
                .iter()
                .flatten()
                .map(|c| pb::InitContainerSummary {
                    name: c.name.clone(),
                    restart_policy: c.restart_policy.clone().unwrap_or_default(),
                })
                .collect(),
        }),
        status: pod.status.as_ref().map(|s| pb::PodStatus {
            phase: s.phase.clone().unwrap_or_default(),
            reason: s.reason.clone().unwrap_or_default(),
            message: s.message.clone().unwrap_or_default(),
            start_time: opt_time(s.start_time.as_ref()),
            conditions: s
                .conditions
                .iter()
                .flatten()
                .map(|c| pb::PodCondition {
                    r#type: c.type_.clone(),
                    status: c.status.clone(),
                    last_probe_time: opt_time(c.last_probe_time.as_ref()),
                    last_transition_time: opt_time(c.last_transition_time.as_ref()),
                    reason: c.reason.clone().unwrap_or_default(),
                    message: c.message.clone().unwrap_or_default(),
                })
                .collect(),
            container_statuses: s
                .container_statuses
                .iter()
                .flatten()
                .map(container_status)
                .collect(),
            init_container_statuses: s
                .init_container_statuses
                .iter()
                .flatten()
                .map(container_status)
                .collect(),
        }),
    }
}

fn container_status(c: &core_v1::ContainerStatus) -> pb::ContainerStatus {
    pb::ContainerStatus {
        name: c.name.clone(),
        state: c.state.as_ref().map(|s| pb::ContainerState {
            waiting: s.waiting.as_ref().map(|w| pb::ContainerStateWaiting {
                reason: w.reason.clone().unwrap_or_default(),
                message: w.message.clone().unwrap_or_default(),
            }),
            running: s.running.as_ref().map(|r| pb::ContainerStateRunning {
                started_at: opt_time(r.started_at.as_ref()),
            }),
            terminated: s.terminated.as_ref().map(|t| pb::ContainerStateTerminated {
                exit_code: t.exit_code,
                signal: t.signal.unwrap_or_default(),
                reason: t.reason.clone().unwrap_or_default(),
                message: t.message.clone().unwrap_or_default(),
                started_at: opt_time(t.started_at.as_ref()),
                finished_at: opt_time(t.finished_at.as_ref()),
            }),
        }),
        restart_count: c.restart_count,
        ready: c.ready,
    }
}
