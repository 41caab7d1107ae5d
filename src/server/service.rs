//! The JobDecider gRPC service: run the shared pipeline and hand back its
//! answer — small snapshots on the reactor thread, where a hop to the blocking
//! pool would cost more than the decision, large ones off it. Nothing here
//! decides anything, and nothing here limits, times, logs or counts calls:
//! the layers around it do ([`crate::server::stack`]). The handlers add what
//! only they know to the call's span: the Job's identity and the size of
//! what was decided.

use std::time::Instant;

use tonic::{Request, Response, Status};
use tracing::Span;

use crate::server::layer::body::{FreeAfterResponse, MoreBytes, RequestBodyBytes};
use crate::server::layer::slot::DecisionSlot;
use crate::server::metrics;
use job_decider_api::{self as api, ApiError, pb};

/// Snapshots of at most this many pods are decided on the reactor thread
/// (with [`INLINE_MAX_BODY_BYTES`]): their decision takes about as long as
/// the hand-off to the blocking pool and back (README, "Small calls").
pub const INLINE_MAX_PODS: usize = 32;

/// ... and only when the request body is at most this large, since one pod
/// or the Job's template can be large on its own.
pub const INLINE_MAX_BODY_BYTES: usize = 64 * 1024;

/// Decided snapshots of at least this many pods are freed after the response
/// has been sent, on the blocking pool, instead of before it (freeing a
/// 100,000-pod snapshot takes tens of milliseconds).
pub const FREE_AFTER_RESPONSE_PODS: usize = 1_000;

/// The service implementation; stateless, as the design requires.
#[derive(Clone, Copy, Debug, Default)]
pub struct DeciderService;

/// Where a call's work runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Placement {
    /// On the reactor thread that polls the call: cheaper than a hand-off.
    Inline,
    /// On the blocking pool, so a long decision never stalls the reactor.
    Blocking,
}

/// Where to decide a snapshot of `pods` pods sent in `body_bytes` bytes
/// (`None`: unknown, as when the service is called without the body layer).
pub fn placement(pods: usize, body_bytes: Option<usize>) -> Placement {
    match body_bytes {
        Some(bytes) if pods <= INLINE_MAX_PODS && bytes <= INLINE_MAX_BODY_BYTES => {
            Placement::Inline
        }
        _ => Placement::Blocking,
    }
}

/// Runs `work` where `placement` says, holding the call's decision slot until
/// the work really ends: a caller that stops waiting (the timeout, a cancel)
/// does not free the slot while the CPU is still busy with its request.
async fn run<T: Send + 'static>(
    placement: Placement,
    slot: Option<DecisionSlot>,
    work: impl FnOnce() -> Result<T, ApiError> + Send + 'static,
) -> Result<T, ApiError> {
    match placement {
        Placement::Inline => {
            let _slot = slot;
            work()
        }
        Placement::Blocking => tokio::task::spawn_blocking(move || {
            let _slot = slot;
            work()
        })
        .await
        .map_err(|join| ApiError::Internal(format!("decision task failed: {join}")))?,
    }
}

/// The byte budget each pod of a DecideJob takes beyond its request bytes: the
/// domain pod's fixed part (a 328-byte struct, its lists and strings). With it,
/// a call peaks under 3× what it is charged in either encoding, however small
/// its pods (README, "Memory").
pub const MODEL_BYTES_PER_POD: usize = 400;

#[tonic::async_trait]
impl pb::job_decider_server::JobDecider for DeciderService {
    async fn decide_job(
        &self,
        request: Request<api::LazyDecideJobRequest>,
    ) -> Result<Response<pb::DecideJobResponse>, Status> {
        let slot = request.extensions().get::<DecisionSlot>().cloned();
        let body_bytes = request.extensions().get::<RequestBodyBytes>().map(|b| b.0);
        let more_bytes = request.extensions().get::<MoreBytes>().cloned();
        let request = request.into_inner();
        let span = Span::current();
        let (namespace, name, uid) = api::job_identity(&request);
        span.record("job.namespace", namespace);
        span.record("job.name", name);
        span.record("job.uid", uid);
        let pods = request.pods.len() + request.lean_pods.len();
        span.record("pods", pods);
        // The budget stands for the call's memory: charge what the pods' domain
        // model takes beyond their bytes (a lean pod is a fraction of its model).
        if let Some(more) = more_bytes {
            more.take(pods.saturating_mul(MODEL_BYTES_PER_POD))?;
        }
        let (response, decision) = run(placement(pods, body_bytes), slot, move || {
            let started = Instant::now();
            let decision = api::decide(request)?;
            metrics::record_decision(&decision, started.elapsed());
            let response = decision.response();
            // A large snapshot is freed once the answer is out; a small one here.
            let keep =
                (decision.snapshot.pods.len() >= FREE_AFTER_RESPONSE_PODS).then_some(decision);
            Ok((response, keep))
        })
        .await?;
        span.record("actions", response.actions.len());
        let mut response = Response::new(response);
        if let Some(decision) = decision {
            response
                .extensions_mut()
                .insert(FreeAfterResponse::new(decision));
        }
        Ok(response)
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
        let response = run(Placement::Blocking, slot, move || {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_snapshots_are_decided_inline_and_large_ones_off_the_reactor() {
        assert_eq!(placement(0, Some(100)), Placement::Inline);
        assert_eq!(
            placement(INLINE_MAX_PODS, Some(INLINE_MAX_BODY_BYTES)),
            Placement::Inline
        );
        assert_eq!(
            placement(INLINE_MAX_PODS + 1, Some(100)),
            Placement::Blocking
        );
        // Few pods but a large body (a huge pod, a large template): off the reactor.
        assert_eq!(
            placement(1, Some(INLINE_MAX_BODY_BYTES + 1)),
            Placement::Blocking
        );
        // Without the body layer's count, nothing is known: off the reactor.
        assert_eq!(placement(0, None), Placement::Blocking);
    }
}
