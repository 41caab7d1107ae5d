//! The JobDecider gRPC service: run the shared pipeline off the reactor and
//! hand back its answer. Nothing here decides anything, and nothing here
//! limits, times, logs or counts calls: the layers around it do
//! ([`crate::server::stack`]). The handlers add what only they know to the
//! call's span: the Job's identity and the size of what was decided.

use std::time::Instant;

use tonic::{Request, Response, Status};
use tracing::Span;

use crate::server::layer::slot::DecisionSlot;
use crate::server::metrics;
use job_decider_api::{self as api, ApiError, pb};

/// The service implementation; stateless, as the design requires.
#[derive(Clone, Copy, Debug, Default)]
pub struct DeciderService;

/// Runs `work` on the blocking pool, holding the call's decision slot until
/// the work really ends: a caller that stops waiting (the timeout, a cancel)
/// does not free the slot while the CPU is still busy with its request.
async fn off_reactor<T: Send + 'static>(
    slot: Option<DecisionSlot>,
    work: impl FnOnce() -> Result<T, ApiError> + Send + 'static,
) -> Result<T, ApiError> {
    tokio::task::spawn_blocking(move || {
        let _slot = slot;
        work()
    })
    .await
    .map_err(|join| ApiError::Internal(format!("decision task failed: {join}")))?
}

#[tonic::async_trait]
impl pb::job_decider_server::JobDecider for DeciderService {
    async fn decide_job(
        &self,
        request: Request<api::LazyDecideJobRequest>,
    ) -> Result<Response<pb::DecideJobResponse>, Status> {
        let slot = request.extensions().get::<DecisionSlot>().cloned();
        let request = request.into_inner();
        let span = Span::current();
        let (namespace, name, uid) = api::job_identity(&request);
        span.record("job.namespace", namespace);
        span.record("job.name", name);
        span.record("job.uid", uid);
        span.record("pods", request.pods.len());
        // A decision on a large job is CPU work: it must not stall the reactor.
        let response = off_reactor(slot, move || {
            let started = Instant::now();
            let decision = api::decide(request)?;
            metrics::record_decision(&decision, started.elapsed());
            Ok(decision.response())
        })
        .await?;
        span.record("actions", response.actions.len());
        Ok(Response::new(response))
    }

    async fn validate_job(
        &self,
        request: Request<pb::ValidateJobRequest>,
    ) -> Result<Response<pb::ValidateJobResponse>, Status> {
        // Validation reads one Job's spec: cheap enough for the reactor.
        Ok(Response::new(api::validate(request.into_inner())?))
    }

    async fn decide_job_set(
        &self,
        request: Request<pb::DecideJobSetRequest>,
    ) -> Result<Response<pb::DecideJobSetResponse>, Status> {
        // The same hand-off as DecideJob: the slot goes with the blocking work.
        let slot = request.extensions().get::<DecisionSlot>().cloned();
        let request = request.into_inner();
        let span = Span::current();
        if let Some(meta) = request.job_set.as_ref().and_then(|s| s.metadata.as_ref()) {
            span.record("job.namespace", meta.namespace.as_str());
            span.record("job.name", meta.name.as_str());
            span.record("job.uid", meta.uid.as_str());
        }
        let jobs = request.jobs.len();
        span.record("jobs", jobs);
        let response = off_reactor(slot, move || {
            let started = Instant::now();
            let decided = api::decide_jobset(request)?;
            metrics::record_jobset_decision(jobs, started.elapsed());
            Ok(decided)
        })
        .await?;
        span.record("actions", response.actions.len());
        Ok(Response::new(response))
    }

    async fn validate_job_set(
        &self,
        request: Request<pb::ValidateJobSetRequest>,
    ) -> Result<Response<pb::ValidateJobSetResponse>, Status> {
        Ok(Response::new(api::validate_jobset_request(
            request.into_inner(),
        )?))
    }
}
