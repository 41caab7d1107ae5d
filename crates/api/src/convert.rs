//! Wire ⇄ domain.
//!
//! Wire → domain applies what the API server would have applied before a
//! controller ever sees a Job (`SetDefaults_Job`), reads pod annotations as
//! leniently as upstream reads them, and turns everything the decision cannot
//! work with into field violations whose paths use the proto3 JSON names of
//! the request (`pods[3].metadata.uid`). Values of Kubernetes enumerations in
//! the Job's spec are not judged here: unknown ones pass through as the model's
//! `Unknown`/`Other` variants and `validate_job` reports them.
//!
//! Domain → wire turns a [`Plan`] into a `DecideJobResponse`.

use std::collections::hash_map::{Entry, HashMap, RandomState};
use std::hash::BuildHasher;
use std::sync::Arc;

use pbjson_types::Timestamp;

use bytes::Bytes;

use crate::lazy::LazyDecideJobRequest;
use crate::lean_decode;
use crate::pb;
use crate::pod_decode;
use crate::pod_fields::{PodAt, ReadFields, SharedNames};
use crate::status::MAX_DETAIL_VIOLATIONS;
use crate::violations::{Violations, violation_to_pb};
use crate::wire_time::{duration_to_pb, time_to_pb};
use job_decider_core::cancel::{Interrupt, Never};
use job_decider_core::defaults;
use job_decider_core::extended::FAILURE_POLICY_ANNOTATION;
use job_decider_core::model::ExtendedFailurePolicy;
use job_decider_core::model::{
    BackoffRecord, COMPLETION_INDEX_ENV, ConditionStatus, ControllerState, ExitCodeOperator,
    Expectations, JOB_API_VERSION, JOB_KIND, Job, JobCondition, JobConditionType, JobSpec,
    JobStatus, LabelSelector, OnExitCodes, OnPodConditionsPattern, OwnerRef, Pod, PodFailurePolicy,
    PodFailurePolicyAction, PodFailurePolicyRule, PodTemplate, RestartPolicy, SelectorOperator,
    SelectorRequirement, Snapshot, SuccessPolicy, SuccessPolicyRule, UncountedTerminatedPods,
};
use job_decider_core::plan::{Action, Event, Plan, PodCreation, PodDeletion, PodRef};
use job_decider_core::validate::{Violation, ViolationKind};

/// Whether the job is being converted for a decision (identity required) or for validation only.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Purpose {
    Decide,
    Validate,
}

impl TryFrom<pb::DecideJobRequest> for Snapshot {
    type Error = Vec<Violation>;

    /// Through the server's own path: each pod encoded again and read by the
    /// same decoders (one reading of a pod, whichever the caller holds).
    fn try_from(req: pb::DecideJobRequest) -> Result<Self, Self::Error> {
        Snapshot::try_from(LazyDecideJobRequest::from(req))
    }
}

impl TryFrom<LazyDecideJobRequest> for Snapshot {
    type Error = Vec<Violation>;

    fn try_from(req: LazyDecideJobRequest) -> Result<Self, Self::Error> {
        snapshot_until(req, &Never).map_err(|unconverted| match unconverted {
            Unconverted::Invalid(violations) => violations,
            // `Never` never interrupts; an empty list is never returned.
            Unconverted::Cancelled => Vec::new(),
        })
    }
}

/// Why [`snapshot_until`] returned no snapshot.
#[derive(Debug)]
pub enum Unconverted {
    /// The request is not a snapshot that can be decided.
    Invalid(Vec<Violation>),
    /// The interrupt was set before every pod was converted.
    Cancelled,
}

/// The snapshot of a request, asking `interrupt` before each pod: converting
/// 10^5 pods takes long enough that a caller who left should not wait for it.
pub fn snapshot_until(
    req: LazyDecideJobRequest,
    interrupt: &dyn Interrupt,
) -> Result<Snapshot, Unconverted> {
    let parts = RequestParts {
        job: req.job,
        now: req.now,
        state: req.state,
        controller_name: req.controller_name,
        expectations: req.expectations,
        both_encodings: !req.pods.is_empty() && !req.lean_pods.is_empty(),
        failure_policy: req.failure_policy,
        nodes: req.nodes,
        missing_nodes: req.missing_nodes,
    };
    // One pod decoded at a time; the body's bytes go when the last slice of them does.
    let count = req.pods.len() + req.lean_pods.len();
    let full = req.pods.into_iter().map(WirePod::Full);
    let lean = req.lean_pods.into_iter().map(WirePod::Lean);
    let stopped = std::cell::Cell::new(false);
    let pods = PodAt::number(full, lean).take_while(|_| {
        stopped.set(interrupt.interrupted());
        !stopped.get()
    });
    let converted = snapshot_from_parts(parts, count, pods);
    // Cut short, the pods seen so far say nothing about the request.
    if stopped.get() {
        return Err(Unconverted::Cancelled);
    }
    converted.map_err(Unconverted::Invalid)
}

/// A DecideJobRequest's fields other than its pods.
struct RequestParts {
    job: Option<pb::Job>,
    now: Option<Timestamp>,
    state: Option<pb::ControllerState>,
    controller_name: String,
    expectations: Option<pb::Expectations>,
    /// Both `pods` and `leanPods` hold pods: which order is the caller's is unknown.
    both_encodings: bool,
    /// The request's extended failure policy document (empty: none).
    failure_policy: String,
    /// The nodes of the Job's terminating pods.
    nodes: Vec<pb::Node>,
    /// Nodes such pods name that the caller's cache does not hold.
    missing_nodes: Vec<String>,
}

/// A Job's extended failure policy document (its annotation or the request's
/// `failurePolicy`), read and its patterns compiled once, for a caller that asks
/// about many pods of the same Job and document ([`JobForPods`]): the simulator
/// narrates each failed pod with one, and reading the document each time made
/// that quadratic (issue 22, item 7).
#[derive(Clone, Debug, Default)]
pub struct CompiledDocument(Option<Arc<ExtendedFailurePolicy>>);

impl CompiledDocument {
    /// Reads the document of `job` (or the request field `failure_policy`) as a
    /// decision reads it, checked against the Job's spec; the Job's or the
    /// document's violations when either is bad.
    pub fn compile(
        job: &pb::Job,
        failure_policy: &str,
    ) -> Result<CompiledDocument, Vec<Violation>> {
        let mut errs = Violations::default();
        let job = job_with_policy(job.clone(), Purpose::Decide, failure_policy, &mut errs);
        errs.into_result(CompiledDocument(job.extended_failure_policy))
    }

    /// The policy read; `None` when the Job has no document.
    pub fn policy(&self) -> Option<&ExtendedFailurePolicy> {
        self.0.as_deref()
    }
}

/// A Job converted once, whose pods are then converted one at a time: for a caller that
/// asks about single pods of a Job it holds on the wire (the simulator narrates each failed
/// pod), where converting the whole request per question was quadratic in pods.
#[derive(Clone, Debug)]
pub struct JobForPods {
    job: Job,
    own: Arc<OwnerRef>,
}

impl JobForPods {
    /// The Job as a decision converts it, with its document from `document` (compiled from a
    /// Job of the same spec and document text), not read again.
    pub fn convert(job: &pb::Job, document: &CompiledDocument) -> Result<Self, Vec<Violation>> {
        let mut errs = Violations::default();
        let job = job_with_document(job.clone(), document, &mut errs);
        let own = Arc::new(OwnerRef {
            api_version: JOB_API_VERSION.to_string(),
            kind: JOB_KIND.to_string(),
            name: job.name.clone(),
            uid: job.uid.clone(),
        });
        errs.into_result(JobForPods { job, own })
    }

    /// The converted Job.
    pub fn job(&self) -> &Job {
        &self.job
    }

    /// One pod of the Job as a snapshot converts it (the same decoder, the same checks).
    pub fn pod(&self, pod: &pb::Pod) -> Result<Pod, Vec<Violation>> {
        use prost::Message;
        PODS_CONVERTED.with(|c| c.set(c.get() + 1));
        let mut errs = Violations::default();
        let bytes = pod.encode_to_vec();
        let read = ReadFields::of(&self.job);
        let at = PodAt::first(false);
        match pod_decode::pod(
            &bytes,
            at,
            &self.own,
            &read,
            &mut SharedNames::default(),
            &mut errs,
        ) {
            Ok(pod) => errs.into_result(pod),
            Err(err) => {
                errs.push(
                    at.path(),
                    ViolationKind::Invalid,
                    None,
                    format!("not a valid Pod message: {err}"),
                );
                Err(errs.into_vec())
            }
        }
    }

    /// Whether a decision could read these pods with the Job's document: the bound on the
    /// message bytes its patterns may search, as a snapshot checks it.
    pub fn within_match_budget(&self, pods: &[Pod]) -> bool {
        let mut errs = Violations::default();
        failure_policy::check_match_budget(&self.job, pods, "", &mut errs);
        errs.is_empty()
    }
}

/// One pod of a request, in the encoding it came in.
enum WirePod {
    /// An encoded Kubernetes-shaped `Pod` (the request's `pods`), decoded as it is converted.
    Full(Bytes),
    /// An encoded `LeanPod` (the request's `leanPods`), decoded as it is converted.
    Lean(Bytes),
}

/// The snapshot of a request whose pods arrive one at a time (decoded, or failing to decode).
fn snapshot_from_parts<I>(
    req: RequestParts,
    count: usize,
    pods: I,
) -> Result<Snapshot, Vec<Violation>>
where
    I: Iterator<Item = (PodAt, WirePod)>,
{
    CONVERTED.with(|c| c.set(c.get() + 1));
    let mut errs = Violations::default();
    if req.both_encodings {
        errs.invalid(
            "leanPods",
            "[...]",
            "send the pods as pods or as leanPods, not both",
        );
    }
    let job = match req.job {
        Some(job) => Some(job_with_policy(
            job,
            Purpose::Decide,
            &req.failure_policy,
            &mut errs,
        )),
        None => {
            errs.required("job", "a DecideJobRequest needs the Job to decide");
            None
        }
    };
    let now = match &req.now {
        Some(ts) => errs.time(Some(ts), || "now".to_string()),
        None => {
            errs.required("now", "decisions never read a clock; send the current time");
            None
        }
    };
    let state = state_from_pb(req.state, &mut errs);
    let expectations = req
        .expectations
        .map(|e| Expectations {
            pod_changes_pending: e.pod_changes_pending,
            finalizer_removals_pending: e.finalizer_removals_pending.into_iter().collect(),
        })
        .unwrap_or_default();
    let nodes = nodes::nodes_from_wire(req.nodes, req.missing_nodes, &mut errs);
    let pods = match &job {
        Some(job) => pods_from_wire(count, pods, job, &mut errs),
        None => Vec::new(),
    };
    if let Some(job) = &job {
        failure_policy::check_match_budget(job, &pods, &req.failure_policy, &mut errs);
    }
    // Empty means upstream's own controller; the core reads it so (`sync::decide`).
    let controller_name = req.controller_name;
    match (job, now) {
        (Some(job), Some(now)) if errs.is_empty() => Ok(Snapshot {
            job,
            pods,
            now,
            state,
            controller_name,
            expectations,
            nodes,
        }),
        _ => Err(errs.into_vec()),
    }
}

thread_local! {
    /// DecideJob requests converted into snapshots on this thread (tests read it).
    static CONVERTED: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
    /// Pods converted into the domain on this thread (tests read it).
    static PODS_CONVERTED: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// How many DecideJob requests (the Job and its pods) have been converted on this thread so
/// far: tests count a caller's conversions without timing it.
pub fn snapshots_converted() -> u64 {
    CONVERTED.with(std::cell::Cell::get)
}

/// How many pods have been converted into the domain on this thread so far, by a snapshot or
/// one at a time ([`JobForPods::pod`]).
pub fn pods_converted() -> u64 {
    PODS_CONVERTED.with(std::cell::Cell::get)
}

/// The Job of a ValidateJobRequest (no identity needed: a manifest not yet created has none),
/// with its extended failure policy; a bad document's violations are among the errors.
pub fn job_for_validation(req: pb::ValidateJobRequest) -> Result<Job, Vec<Violation>> {
    let (job, mut document) = job_and_document_for_validation(req);
    match job {
        Ok(job) if document.is_empty() => Ok(job),
        Ok(_) => Err(document),
        Err(mut errs) => {
            errs.append(&mut document);
            Err(errs)
        }
    }
}

/// The Job of a ValidateJobRequest, or its conversion's violations, and apart
/// from them the violations of its extended failure policy document (the Job
/// converts without the document when it is bad, so the rest can be checked).
pub fn job_and_document_for_validation(
    req: pb::ValidateJobRequest,
) -> (Result<Job, Vec<Violation>>, Vec<Violation>) {
    let mut errs = Violations::default();
    let Some(mut job) = req.job else {
        errs.required("job", "a ValidateJobRequest needs the Job to validate");
        return (Err(errs.into_vec()), Vec::new());
    };
    let mut document = Violations::default();
    let annotation = job
        .metadata
        .as_mut()
        .and_then(|m| m.annotations.remove(FAILURE_POLICY_ANNOTATION));
    let job = job_from_pb(job, "job", Purpose::Validate, &mut errs);
    let policy = failure_policy::from_sources(
        annotation.as_deref(),
        &req.failure_policy,
        &job,
        &mut document,
    );
    let job = Job {
        extended_failure_policy: policy.map(Arc::new),
        ..job
    };
    (errs.into_result(job), document.into_vec())
}

/// The Job with its extended failure policy (from its annotation or the
/// request's field), the document's violations among the others.
fn job_with_policy(
    mut job: pb::Job,
    purpose: Purpose,
    request_field: &str,
    errs: &mut Violations,
) -> Job {
    let annotation = job
        .metadata
        .as_mut()
        .and_then(|m| m.annotations.remove(FAILURE_POLICY_ANNOTATION));
    let mut job = job_from_pb(job, "job", purpose, errs);
    // Without either source nothing is read: the Job converts as it always has.
    if annotation.is_some() || !request_field.is_empty() {
        let policy = failure_policy::from_sources(annotation.as_deref(), request_field, &job, errs);
        job.extended_failure_policy = policy.map(Arc::new);
    }
    job
}

/// The Job with a document read before ([`CompiledDocument`]), not read again.
fn job_with_document(mut job: pb::Job, document: &CompiledDocument, errs: &mut Violations) -> Job {
    // Removed as `job_with_policy` removes it: the document is not one of the Job's labels.
    if let Some(m) = job.metadata.as_mut() {
        m.annotations.remove(FAILURE_POLICY_ANNOTATION);
    }
    let mut job = job_from_pb(job, "job", Purpose::Decide, errs);
    job.extended_failure_policy.clone_from(&document.0);
    job
}

/// The violations of a validated Job, on the wire.
pub fn validation_response(violations: &[Violation]) -> pb::ValidateJobResponse {
    let listed = violations
        .iter()
        .take(MAX_LISTED_VIOLATIONS)
        .map(violation_to_pb)
        .collect();
    pb::ValidateJobResponse {
        violations: with_count_of_the_rest(listed, violations.len()),
    }
}

/// Most violations a ValidateJob or ValidateJobSet response lists, as error
/// details list them: the rest are counted in one last entry, so a response
/// stays bounded however many violations the request makes (3 million
/// containers with one name once answered 395.6 MiB).
pub const MAX_LISTED_VIOLATIONS: usize = MAX_DETAIL_VIOLATIONS;

/// The `field` of the last entry of a capped list: it names no field, it counts the rest.
pub const OMITTED_VIOLATIONS_FIELD: &str = "<omitted>";

/// `listed` cut to [`MAX_LISTED_VIOLATIONS`], with one more entry counting the
/// rest of `total` when any were left out. The contract's response has no
/// count field, so the count travels as a violation of its own (reason
/// `FieldValueTooMany`, field [`OMITTED_VIOLATIONS_FIELD`]).
pub fn with_count_of_the_rest(
    mut listed: Vec<pb::FieldViolation>,
    total: usize,
) -> Vec<pb::FieldViolation> {
    listed.truncate(MAX_LISTED_VIOLATIONS);
    let omitted = total.saturating_sub(listed.len());
    if omitted > 0 {
        listed.push(pb::FieldViolation {
            field: OMITTED_VIOLATIONS_FIELD.to_string(),
            reason: ViolationKind::TooMany.reason().to_string(),
            description: format!(
                "{omitted} more violations not listed: a response lists the first {MAX_LISTED_VIOLATIONS} of {total}"
            ),
        });
    }
    listed
}

fn state_from_pb(state: Option<pb::ControllerState>, errs: &mut Violations) -> ControllerState {
    let Some(backoff) = state.and_then(|s| s.backoff) else {
        return ControllerState::default();
    };
    errs.non_negative(backoff.failures_after_last_success, || {
        "state.backoff.failuresAfterLastSuccess".to_string()
    });
    ControllerState {
        backoff: BackoffRecord {
            failures_after_last_success: backoff.failures_after_last_success,
            last_failure_time: errs.time(backoff.last_failure_time.as_ref(), || {
                "state.backoff.lastFailureTime".to_string()
            }),
        },
    }
}

fn job_from_pb(job: pb::Job, path: &str, purpose: Purpose, errs: &mut Violations) -> Job {
    let metadata = job.metadata.unwrap_or_default();
    if purpose == Purpose::Decide {
        if metadata.uid.is_empty() {
            errs.required(
                format!("{path}.metadata.uid"),
                "a decision needs the Job as stored by the API server",
            );
        }
        if metadata.name.is_empty() {
            errs.required(format!("{path}.metadata.name"), "");
        }
    }
    errs.time(metadata.deletion_timestamp.as_ref(), || {
        format!("{path}.metadata.deletionTimestamp")
    });
    let being_deleted = metadata.deletion_timestamp.is_some();
    let spec = spec_from_pb(job.spec.unwrap_or_default());
    let status = job_status_from_pb(job.status.unwrap_or_default(), path, errs);
    Job {
        namespace: metadata.namespace,
        name: metadata.name,
        uid: metadata.uid,
        being_deleted,
        spec,
        status,
        // Set by the request conversion once the document is read.
        extended_failure_policy: None,
    }
}

/// Applies `SetDefaults_Job` (`job_decider_core::defaults`) while converting.
fn spec_from_pb(spec: pb::JobSpec) -> JobSpec {
    let (parallelism, completions) =
        defaults::parallelism_and_completions(spec.parallelism, spec.completions);
    let backoff_limit = defaults::backoff_limit(spec.backoff_limit, spec.backoff_limit_per_index);
    let completion_mode = defaults::completion_mode(spec.completion_mode);
    let pod_failure_policy = spec.pod_failure_policy.map(pod_failure_policy_from_pb);
    let pod_replacement_policy =
        defaults::pod_replacement_policy(spec.pod_replacement_policy, pod_failure_policy.is_some());
    JobSpec {
        parallelism,
        completions,
        active_deadline_seconds: spec.active_deadline_seconds,
        pod_failure_policy,
        success_policy: spec.success_policy.map(|p| SuccessPolicy {
            rules: p
                .rules
                .into_iter()
                .map(|r| SuccessPolicyRule {
                    succeeded_indexes: r.succeeded_indexes,
                    succeeded_count: r.succeeded_count,
                })
                .collect(),
        }),
        backoff_limit,
        backoff_limit_per_index: spec.backoff_limit_per_index,
        max_failed_indexes: spec.max_failed_indexes,
        selector: spec.selector.map(selector_from_pb).unwrap_or_default(),
        manual_selector: spec.manual_selector.unwrap_or(false),
        completion_mode,
        suspend: spec.suspend.unwrap_or(false),
        pod_replacement_policy,
        managed_by: spec.managed_by,
        ttl_seconds_after_finished: spec.ttl_seconds_after_finished,
        template: template_from_pb(spec.template.unwrap_or_default()),
    }
}

fn pod_failure_policy_from_pb(policy: pb::PodFailurePolicy) -> PodFailurePolicy {
    PodFailurePolicy {
        rules: policy
            .rules
            .into_iter()
            .map(|rule| PodFailurePolicyRule {
                action: PodFailurePolicyAction::from(rule.action),
                on_exit_codes: rule.on_exit_codes.map(|req| OnExitCodes {
                    container_name: req.container_name,
                    operator: ExitCodeOperator::from(req.operator),
                    values: req.values,
                }),
                on_pod_conditions: rule
                    .on_pod_conditions
                    .into_iter()
                    .map(|pattern| OnPodConditionsPattern {
                        condition_type: pattern.r#type,
                        status: defaults::pattern_status(pattern.status),
                    })
                    .collect(),
            })
            .collect(),
    }
}

fn selector_from_pb(selector: pb::LabelSelector) -> LabelSelector {
    LabelSelector {
        match_labels: selector.match_labels.into_iter().collect(),
        match_expressions: selector
            .match_expressions
            .into_iter()
            .map(|req| SelectorRequirement {
                key: req.key,
                operator: SelectorOperator::from(req.operator),
                values: req.values,
            })
            .collect(),
    }
}

fn template_from_pb(template: pb::PodTemplateSpec) -> PodTemplate {
    let spec = template.spec.unwrap_or_default();
    let metadata = template.metadata.unwrap_or_default();
    let defines_index_env =
        |c: &pb::Container| c.env.iter().any(|e| e.name == COMPLETION_INDEX_ENV);
    PodTemplate {
        labels: metadata.labels,
        finalizers: metadata.finalizers,
        completion_index_env_everywhere: spec
            .containers
            .iter()
            .chain(&spec.init_containers)
            .all(defines_index_env),
        restart_policy: RestartPolicy::from(spec.restart_policy),
        containers: spec.containers.into_iter().map(|c| c.name).collect(),
        init_containers: spec.init_containers.into_iter().map(|c| c.name).collect(),
    }
}

fn job_status_from_pb(status: pb::JobStatus, path: &str, errs: &mut Violations) -> JobStatus {
    let conditions = status
        .conditions
        .into_iter()
        .enumerate()
        .map(|(i, c)| {
            let condition_type = JobConditionType::from(c.r#type);
            let status = ConditionStatus::from(c.status);
            // Decisions read the status of every condition type they know.
            if let (ConditionStatus::Other(value), false) = (
                &status,
                matches!(condition_type, JobConditionType::Other(_)),
            ) {
                errs.not_supported(
                    format!("{path}.status.conditions[{i}].status"),
                    value,
                    ConditionStatus::NAMES,
                );
            }
            JobCondition {
                condition_type,
                status,
                last_probe_time: errs.time(c.last_probe_time.as_ref(), || {
                    format!("{path}.status.conditions[{i}].lastProbeTime")
                }),
                last_transition_time: errs.time(c.last_transition_time.as_ref(), || {
                    format!("{path}.status.conditions[{i}].lastTransitionTime")
                }),
                reason: c.reason,
                message: c.message,
            }
        })
        .collect();
    errs.non_negative(status.active, || format!("{path}.status.active"));
    errs.non_negative(status.succeeded, || format!("{path}.status.succeeded"));
    errs.non_negative(status.failed, || format!("{path}.status.failed"));
    if let Some(terminating) = status.terminating {
        errs.non_negative(terminating, || format!("{path}.status.terminating"));
    }
    if let Some(ready) = status.ready {
        errs.non_negative(ready, || format!("{path}.status.ready"));
    }
    JobStatus {
        conditions,
        start_time: errs.time(status.start_time.as_ref(), || {
            format!("{path}.status.startTime")
        }),
        completion_time: errs.time(status.completion_time.as_ref(), || {
            format!("{path}.status.completionTime")
        }),
        active: status.active,
        succeeded: status.succeeded,
        failed: status.failed,
        terminating: status.terminating,
        // A corrupted interval list is the core's to read leniently, as upstream does.
        completed_indexes: status.completed_indexes,
        failed_indexes: status.failed_indexes,
        uncounted_terminated_pods: status.uncounted_terminated_pods.map(|u| {
            UncountedTerminatedPods {
                succeeded: u.succeeded,
                failed: u.failed,
            }
        }),
        ready: status.ready,
    }
}

fn pods_from_wire<I>(count: usize, pods: I, job: &Job, errs: &mut Violations) -> Vec<Pod>
where
    I: Iterator<Item = (PodAt, WirePod)>,
{
    let read = ReadFields::of(job);
    let mut names = SharedNames::default();
    // The controller reference of most pods: built once, shared by every pod that has it.
    let own = Arc::new(OwnerRef {
        api_version: JOB_API_VERSION.to_string(),
        kind: JOB_KIND.to_string(),
        name: job.name.clone(),
        uid: job.uid.clone(),
    });
    let mut converted: Vec<Pod> = Vec::with_capacity(count);
    // Duplicate UIDs, found through a hash of each UID and the first converted pod
    // with that hash, rather than a set of copied UIDs (a 100,000-pod request's worth).
    let hasher = RandomState::new();
    let mut first_with_hash: HashMap<u64, usize> = HashMap::with_capacity(count);
    for (at, pod) in pods {
        PODS_CONVERTED.with(|c| c.set(c.get() + 1));
        let (decoded, kind) = match pod {
            WirePod::Full(bytes) => (
                pod_decode::pod(&bytes, at, &own, &read, &mut names, errs),
                "Pod",
            ),
            WirePod::Lean(bytes) => (
                lean_decode::lean_pod(&bytes, at, &own, &read, &mut names, errs),
                "LeanPod",
            ),
        };
        let pod = match decoded {
            Ok(pod) => pod,
            Err(err) => {
                errs.push(
                    at.path(),
                    ViolationKind::Invalid,
                    None,
                    format!("not a valid {kind} message: {err}"),
                );
                continue;
            }
        };
        if !pod.uid.is_empty() {
            let duplicate = match first_with_hash.entry(hasher.hash_one(&pod.uid)) {
                Entry::Vacant(slot) => {
                    slot.insert(converted.len());
                    false
                }
                // Two UIDs with one 64-bit hash: compare against every pod before it.
                Entry::Occupied(first) => {
                    converted[*first.get()].uid == pod.uid
                        || converted.iter().any(|p| p.uid == pod.uid)
                }
            };
            if duplicate {
                errs.push(
                    at.field("metadata.uid", "uid"),
                    ViolationKind::Duplicate,
                    Some(format!("\"{}\"", pod.uid)),
                    "each pod may appear once",
                );
            }
        }
        converted.push(pod);
    }
    converted
}

#[cfg(test)]
use crate::wire::WireError;

/// A decoder of one encoded pod into the domain (`pod_decode::pod`, `lean_decode::lean_pod`).
#[cfg(test)]
pub(crate) type PodDecoder = fn(
    &[u8],
    PodAt,
    &Arc<OwnerRef>,
    &ReadFields<'_>,
    &mut SharedNames,
    &mut Violations,
) -> Result<Pod, WireError>;

/// Test support: one pod's bytes through a pod decoder, for the realistic Job
/// (`fixtures::realistic_job`): the pod and the violations' field paths.
#[cfg(test)]
pub(crate) fn decode_for_tests(
    bytes: &[u8],
    lean: bool,
    decoder: PodDecoder,
) -> Result<(Pod, Vec<String>), WireError> {
    decode_for_tests_with(bytes, lean, decoder, "")
}

/// [`decode_for_tests`] for the realistic Job with this extended failure policy document (empty: none).
#[cfg(test)]
pub(crate) fn decode_for_tests_with(
    bytes: &[u8],
    lean: bool,
    decoder: PodDecoder,
    document: &str,
) -> Result<(Pod, Vec<String>), WireError> {
    let Ok(job) = job_for_validation(pb::ValidateJobRequest {
        job: Some(crate::fixtures::realistic_job(10)),
        failure_policy: document.to_string(),
    }) else {
        panic!("the realistic job is valid");
    };
    let read = ReadFields::of(&job);
    let own = Arc::new(OwnerRef {
        api_version: JOB_API_VERSION.into(),
        kind: JOB_KIND.into(),
        name: job.name.clone(),
        uid: job.uid.clone(),
    });
    let mut errs = Violations::default();
    let pod = decoder(
        bytes,
        PodAt::first(lean),
        &own,
        &read,
        &mut SharedNames::default(),
        &mut errs,
    )?;
    Ok((pod, errs.fields()))
}

mod to_wire;
pub use to_wire::{job_status_to_pb, response_from_plan, state_to_pb};

pub mod failure_policy;
mod nodes;

#[cfg(test)]
mod tests;
