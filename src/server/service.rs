//! The JobDecider gRPC service: decode, run the shared pipeline off the
//! reactor, encode. Nothing here decides anything.

use std::time::Instant;

use tonic::{Request, Response, Status};
use tracing::{Instrument, info, info_span, warn};

use crate::api::{self, ApiError, pb};
use crate::server::guard::DecisionSlot;
use crate::server::metrics;

/// The service implementation; stateless, as the design requires.
#[derive(Clone, Copy, Debug, Default)]
pub struct DeciderService;

#[tonic::async_trait]
impl pb::job_decider_server::JobDecider for DeciderService {
    async fn decide_job(
        &self,
        request: Request<api::LazyDecideJobRequest>,
    ) -> Result<Response<pb::DecideJobResponse>, Status> {
        let slot = request.extensions().get::<DecisionSlot>().cloned();
        let request = request.into_inner();
        let (namespace, name, uid) = api::job_identity(&request);
        let span = info_span!(
            "decide_job",
            job.namespace = namespace,
            job.name = name,
            job.uid = uid,
            pods = request.pods.len(),
        );
        async move {
            // A decision on a large job is CPU work: it must not stall the reactor.
            let decided = tokio::task::spawn_blocking(move || {
                // The slot is released when the work ends, not when the caller stops waiting.
                let _slot = slot;
                let started = Instant::now();
                let decision = api::decide(request)?;
                metrics::record_decision(&decision, started.elapsed());
                Ok::<_, ApiError>((decision.response(), started.elapsed()))
            })
            .await
            .map_err(|join| ApiError::Internal(format!("decision task failed: {join}")));
            match decided.and_then(|inner| inner) {
                Ok((response, elapsed)) => {
                    info!(
                        actions = response.actions.len(),
                        elapsed_us = u64::try_from(elapsed.as_micros()).unwrap_or(u64::MAX),
                        "decided"
                    );
                    Ok(Response::new(response))
                }
                Err(err) => {
                    warn!(error = %err, "not decided");
                    Err(err.into())
                }
            }
        }
        .instrument(span)
        .await
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
        // Bounded by the replica cap; still CPU work, so off the reactor like DecideJob.
        let request = request.into_inner();
        let decided = tokio::task::spawn_blocking(move || api::decide_jobset(request))
            .await
            .map_err(|join| ApiError::Internal(format!("decision task failed: {join}")))?;
        Ok(Response::new(decided?))
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
