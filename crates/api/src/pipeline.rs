//! The one pipeline the server and the CLI share: convert, validate, decide
//! (`decide`, `validate`, `decide_jobset`, `validate_jobset_request`), and what
//! logs read of a request.

use job_decider_core::cancel::{Interrupt, Never};
use job_decider_core::explain::JobExplanation;
use job_decider_core::jobset::decide_jobset_until as decide_jobset_core;
use job_decider_core::jobset_validate::validate_jobset;
use job_decider_core::model::Snapshot;
use job_decider_core::plan::Plan;
use job_decider_core::sync;
use job_decider_core::validate::{Severity, Violation, validate_job};

use crate::lazy::LazyDecideJobRequest;
use crate::status::ApiError;
use crate::{convert, convert_jobset, explanation, pb};

/// One decided snapshot: what was decided on and what was decided.
#[derive(Debug)]
pub struct Decision {
    /// The snapshot, converted and defaulted.
    pub snapshot: Snapshot,
    /// The core's plan for it.
    pub plan: Plan,
    /// Why the plan is what it is, when the request asked (`explain`).
    pub explanation: Option<JobExplanation>,
}

impl Decision {
    /// The plan on the wire, with the explanation when one was asked for.
    pub fn response(&self) -> pb::DecideJobResponse {
        let mut response = convert::response_from_plan(&self.plan);
        response.explanation = self.explanation.as_ref().map(explanation::to_pb);
        response
    }
}

/// A DecideJob request that may ask for an explanation.
pub trait ExplainFlag {
    /// Whether the request set `explain`.
    fn explain(&self) -> bool;
}

impl ExplainFlag for pb::DecideJobRequest {
    fn explain(&self) -> bool {
        self.explain
    }
}

impl ExplainFlag for LazyDecideJobRequest {
    fn explain(&self) -> bool {
        self.explain
    }
}

/// Converts, validates and decides one request: the path every DecideJob takes.
///
/// The request is either a decoded `pb::DecideJobRequest` (the CLI, tests) or the
/// server's [`LazyDecideJobRequest`]; either is consumed while it is converted,
/// so it is gone before the decision starts.
pub fn decide<R>(request: R) -> Result<Decision, ApiError>
where
    R: ExplainFlag,
    Snapshot: TryFrom<R, Error = Vec<Violation>>,
{
    let explain = request.explain();
    let snapshot = Snapshot::try_from(request).map_err(ApiError::invalid_snapshot)?;
    decide_snapshot(snapshot, explain, &Never)
}

/// [`decide`] for the server's request, asking `interrupt` between pods while
/// it converts and while it decides: once the call's deadline has passed or
/// its client has left, it stops with [`ApiError::Cancelled`] and frees what
/// it built instead of finishing a plan nobody will read.
pub fn decide_until(
    request: LazyDecideJobRequest,
    interrupt: &dyn Interrupt,
) -> Result<Decision, ApiError> {
    let explain = request.explain;
    let snapshot = convert::snapshot_until(request, interrupt).map_err(unconverted_error)?;
    decide_snapshot(snapshot, explain, interrupt)
}

/// The error for a request that was not converted, for DecideJob and DecideJobSet alike.
fn unconverted_error(unconverted: convert::Unconverted) -> ApiError {
    match unconverted {
        convert::Unconverted::Invalid(violations) => ApiError::invalid_snapshot(violations),
        convert::Unconverted::Cancelled => ApiError::Cancelled,
    }
}

/// The violations of the object at `field` of a request, named by their path in the request
/// (as every other DecideJob and DecideJobSet error is); ValidateJob keeps the object's own paths.
fn under(field: &str, violations: Vec<Violation>) -> Vec<Violation> {
    violations.into_iter().map(|v| v.under(field)).collect()
}

/// Validates and decides a converted snapshot (explained when asked).
fn decide_snapshot(
    snapshot: Snapshot,
    explain: bool,
    interrupt: &dyn Interrupt,
) -> Result<Decision, ApiError> {
    let mut violations = validate_job(&snapshot.job);
    // Each rule marks what upstream's sync tolerates (version skew); the rest rejects.
    violations.retain(|v| v.severity == Severity::Rejected);
    if !violations.is_empty() {
        return Err(ApiError::invalid_job(under("job", violations)));
    }
    // Only a caller who asks pays for the explanation.
    let (plan, explanation) = if explain {
        let (plan, explanation) = sync::decide_explained_until(&snapshot, interrupt)?;
        (plan, Some(explanation))
    } else {
        (sync::decide_until(&snapshot, interrupt)?, None)
    };
    Ok(Decision {
        snapshot,
        plan,
        explanation,
    })
}

/// Validates one Job: every violation of the conversion or the API rules, in the response.
///
/// Only a request without a Job is an error; a broken Job is the answer's content.
pub fn validate(request: pb::ValidateJobRequest) -> Result<pb::ValidateJobResponse, ApiError> {
    let has_job = request.job.is_some();
    // The document's violations follow the Job's, whichever way the Job converts.
    let (job, document) = convert::job_and_document_for_validation(request);
    match job {
        Ok(job) => {
            let mut violations = validate_job(&job);
            violations.extend(document);
            Ok(convert::validation_response(&violations))
        }
        Err(mut violations) if has_job => {
            violations.extend(document);
            Ok(convert::validation_response(&violations))
        }
        Err(violations) => Err(ApiError::invalid_request(violations)),
    }
}

/// Converts, validates and decides one JobSet request: the path every DecideJobSet takes.
/// A JobSet that JobSet's webhook would reject is answered with its violations.
pub fn decide_jobset(
    request: pb::DecideJobSetRequest,
) -> Result<pb::DecideJobSetResponse, ApiError> {
    decide_jobset_until(request, &Never)
}

/// [`decide_jobset`] for the server, asking `interrupt` between child Jobs, patterns and rule
/// evaluations while it converts and decides: once the call's deadline has passed or its
/// client has left, it stops with [`ApiError::Cancelled`], as [`decide_until`] does.
pub fn decide_jobset_until(
    request: pb::DecideJobSetRequest,
    interrupt: &dyn Interrupt,
) -> Result<pb::DecideJobSetResponse, ApiError> {
    let explain = request.explain;
    let snapshot = convert_jobset::snapshot_until(request, interrupt).map_err(unconverted_error)?;
    let violations = validate_jobset(&snapshot.job_set);
    if !violations.is_empty() {
        return Err(ApiError::invalid_job(under("jobSet", violations)));
    }
    Ok(convert_jobset::plan_to_pb(
        &decide_jobset_core(&snapshot, interrupt)?,
        explain,
    ))
}

/// Validates one JobSet's failure policy; only an unusable request is an error.
pub fn validate_jobset_request(
    request: pb::ValidateJobSetRequest,
) -> Result<pb::ValidateJobSetResponse, ApiError> {
    let mut response =
        convert_jobset::validate_jobset_request(request).map_err(ApiError::invalid_request)?;
    // Bounded like ValidateJob's: a policy of many bad rules lists 100 and counts the rest.
    let total = response.violations.len();
    response.violations =
        convert::with_count_of_the_rest(std::mem::take(&mut response.violations), total);
    Ok(response)
}

/// A DecideJob request in either form, as far as logs need it.
pub trait JobRequest {
    /// The request's Job, if it has one.
    fn job(&self) -> Option<&pb::Job>;
}

impl JobRequest for pb::DecideJobRequest {
    fn job(&self) -> Option<&pb::Job> {
        self.job.as_ref()
    }
}

impl JobRequest for LazyDecideJobRequest {
    fn job(&self) -> Option<&pb::Job> {
        self.job.as_ref()
    }
}

/// The job's namespace, name and uid as the request names them, for logs.
pub fn job_identity<R: JobRequest>(request: &R) -> (&str, &str, &str) {
    request
        .job()
        .and_then(|j| j.metadata.as_ref())
        .map_or(("", "", ""), |m| {
            (m.namespace.as_str(), m.name.as_str(), m.uid.as_str())
        })
}
