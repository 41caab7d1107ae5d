//! The JobDecider gRPC service: run the shared pipeline and hand back its
//! answer — small snapshots on the reactor thread, where a hop to the blocking
//! pool would cost more than the decision, large ones off it. Nothing here
//! decides anything; the layers ([`crate::server::stack`]) admit, log and count
//! calls, and the handlers hold what those layers hand them (a [`Lease`]),
//! charge the pods' models to it and stop at the deadline. The handlers add what
//! only they know to the call's span: the Job's identity and the size of
//! what was decided.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use tonic::{Request, Response, Status};
use tracing::Span;

use crate::server::layer::body::{CallCharge, FreeAfterResponse, RequestBodyBytes};
use crate::server::layer::slot::DecisionSlot;
use crate::server::layer::timeout::CallDeadline;
use crate::server::metrics;
use crate::server::priority;
use job_decider_api::{self as api, ApiError, pb};
use job_decider_core::cancel::Interrupt;
use job_decider_core::extended::FAILURE_POLICY_ANNOTATION;

/// Snapshots of at most this many pods are decided on the reactor thread
/// (with [`INLINE_MAX_BODY_BYTES`], and without a failure-policy document):
/// their decision takes about as long as the hand-off to the blocking pool
/// and back (docs/performance.md, "Small calls and large messages").
pub const INLINE_MAX_PODS: usize = 32;

/// ... and only when the request body is at most this large, since one pod
/// or the Job's template can be large on its own.
pub const INLINE_MAX_BODY_BYTES: usize = 64 * 1024;

/// ValidateJob and ValidateJobSet requests of at most this many body bytes
/// (and, for ValidateJob, without a failure-policy document) are validated on
/// the reactor; larger ones (100,000 containers) on the blocking pool.
pub const VALIDATE_INLINE_MAX_BODY_BYTES: usize = 8 * 1024;

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

/// What a DecideJob request carries that sets the cost of deciding it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DecideCost {
    /// Pods, in either encoding.
    pub pods: usize,
    /// The request body's bytes (`None`: unknown, as when the service is called
    /// without the body layer).
    pub body_bytes: Option<usize>,
    /// The Job has an extended failure-policy document (the annotation or the
    /// request's field): its patterns make a small request's cost unbounded.
    pub document: bool,
}

/// Where to decide a DecideJob: inline only when its cost is bounded by
/// construction — few pods, a small body, no document to match.
pub fn placement(cost: DecideCost) -> Placement {
    match cost.body_bytes {
        Some(bytes)
            if cost.pods <= INLINE_MAX_PODS && bytes <= INLINE_MAX_BODY_BYTES && !cost.document =>
        {
            Placement::Inline
        }
        _ => Placement::Blocking,
    }
}

/// Where to validate a request of `body_bytes` bytes (`document`: it carries
/// a failure-policy document, whose patterns compiling is not cheap).
pub fn validation_placement(body_bytes: Option<usize>, document: bool) -> Placement {
    match body_bytes {
        Some(bytes) if bytes <= VALIDATE_INLINE_MAX_BODY_BYTES && !document => Placement::Inline,
        _ => Placement::Blocking,
    }
}

/// Whether a Job (and its request's `failure_policy` field) carries an extended policy document.
fn has_document(job: Option<&pb::Job>, failure_policy: &str) -> bool {
    !failure_policy.is_empty()
        || job
            .and_then(|j| j.metadata.as_ref())
            .is_some_and(|m| m.annotations.contains_key(FAILURE_POLICY_ANNOTATION))
}

/// What a call's work holds until it has really stopped: the call's decision
/// slot and a share of its byte charge. The handler takes both out of the
/// request (so nothing else holds them) and moves them into the work; the
/// body layer's share of the charge covers the response, and the bytes come
/// back when both have let go — never while the work still holds its request
/// or its snapshot.
#[derive(Debug, Default)]
pub struct Lease {
    // Held, never read: dropping it frees the slot.
    _slot: Option<DecisionSlot>,
    charge: Option<CallCharge>,
}

impl Lease {
    /// Takes the call's slot and charge out of `request`'s extensions.
    pub fn take<T>(request: &mut Request<T>) -> Lease {
        Lease {
            _slot: request.extensions_mut().remove::<DecisionSlot>(),
            charge: request.extensions_mut().remove::<CallCharge>(),
        }
    }

    /// Charges `bytes` more to the call, without waiting.
    pub fn charge_more(&self, bytes: usize) -> Result<(), ApiError> {
        match &self.charge {
            Some(charge) => charge.take(bytes),
            None => Ok(()),
        }
    }
}

/// What the call's work asks between pods: whether the call has ended (its
/// handler was dropped: the timeout answered or the client left) or its
/// deadline has passed (work on the reactor, which no timer can stop).
#[derive(Clone, Debug)]
pub struct CallInterrupt {
    ended: Arc<AtomicBool>,
    deadline: Option<Instant>,
}

impl CallInterrupt {
    /// An interrupt for a call due by `deadline`, and the guard that ends it when dropped.
    pub fn new(deadline: Option<Instant>) -> (CallInterrupt, EndOnDrop) {
        let ended = Arc::new(AtomicBool::new(false));
        let guard = EndOnDrop(Arc::clone(&ended));
        (CallInterrupt { ended, deadline }, guard)
    }
}

impl Interrupt for CallInterrupt {
    fn interrupted(&self) -> bool {
        self.ended.load(Ordering::Relaxed) || self.deadline.is_some_and(|d| Instant::now() >= d)
    }
}

/// Ends the call's work when dropped: held by the handler's future, which is
/// dropped when the timeout answers for it or when the client goes away.
#[derive(Debug)]
pub struct EndOnDrop(Arc<AtomicBool>);

impl Drop for EndOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// Runs `work` where `placement` says, with the call's `lease` moved into it
/// and given back only once the work has returned and dropped what it held.
/// The work is told to stop (through its [`CallInterrupt`]) when this future
/// is dropped before it ends, or when the call's deadline passes.
async fn run<T: Send + 'static>(
    placement: Placement,
    lease: Lease,
    deadline: Option<CallDeadline>,
    work: impl FnOnce(&CallInterrupt) -> Result<T, ApiError> + Send + 'static,
) -> Result<T, ApiError> {
    let (interrupt, _end_on_drop) = CallInterrupt::new(deadline.map(|d| d.0));
    match placement {
        Placement::Inline => {
            // Declared first, dropped last: after everything the work built.
            let _lease = lease;
            work(&interrupt)
        }
        Placement::Blocking => tokio::task::spawn_blocking(move || {
            let _lease = lease;
            priority::lower_this_thread();
            work(&interrupt)
        })
        .await
        .map_err(|join| ApiError::Internal(format!("decision task failed: {join}")))?,
    }
}

/// The byte budget each pod of a DecideJob takes beyond its request bytes: the
/// domain pod's fixed part (a 328-byte struct, its lists and strings). With it,
/// a call peaks under 3× what it is charged in either encoding, however small
/// its pods (docs/performance.md, "Memory").
pub const MODEL_BYTES_PER_POD: usize = 400;

#[tonic::async_trait]
impl pb::job_decider_server::JobDecider for DeciderService {
    async fn decide_job(
        &self,
        mut request: Request<api::LazyDecideJobRequest>,
    ) -> Result<Response<pb::DecideJobResponse>, Status> {
        let lease = Lease::take(&mut request);
        let deadline = request.extensions().get::<CallDeadline>().copied();
        let body_bytes = request.extensions().get::<RequestBodyBytes>().map(|b| b.0);
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
        lease.charge_more(pods.saturating_mul(MODEL_BYTES_PER_POD))?;
        let cost = DecideCost {
            pods,
            body_bytes,
            document: has_document(request.job.as_ref(), &request.failure_policy),
        };
        let (response, decision) = run(placement(cost), lease, deadline, move |interrupt| {
            let started = Instant::now();
            let decision = api::decide_until(request, interrupt)?;
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
        mut request: Request<pb::ValidateJobRequest>,
    ) -> Result<Response<pb::ValidateJobResponse>, Status> {
        let lease = Lease::take(&mut request);
        let deadline = request.extensions().get::<CallDeadline>().copied();
        let body_bytes = request.extensions().get::<RequestBodyBytes>().map(|b| b.0);
        let request = request.into_inner();
        let document = has_document(request.job.as_ref(), &request.failure_policy);
        let placement = validation_placement(body_bytes, document);
        let response = run(placement, lease, deadline, move |_| api::validate(request)).await?;
        Ok(Response::new(response))
    }

    async fn decide_job_set(
        &self,
        mut request: Request<pb::DecideJobSetRequest>,
    ) -> Result<Response<pb::DecideJobSetResponse>, Status> {
        // The same hand-off as DecideJob: the lease goes with the blocking work.
        let lease = Lease::take(&mut request);
        let deadline = request.extensions().get::<CallDeadline>().copied();
        let request = request.into_inner();
        let span = Span::current();
        if let Some(meta) = request.job_set.as_ref().and_then(|s| s.metadata.as_ref()) {
            span.record("job.namespace", meta.namespace.as_str());
            span.record("job.name", meta.name.as_str());
            span.record("job.uid", meta.uid.as_str());
        }
        let jobs = request.jobs.len();
        span.record("jobs", jobs);
        let response = run(Placement::Blocking, lease, deadline, move |interrupt| {
            let started = Instant::now();
            let decided = api::decide_jobset_until(request, interrupt)?;
            metrics::record_jobset_decision(jobs, started.elapsed());
            Ok(decided)
        })
        .await?;
        span.record("actions", response.actions.len());
        Ok(Response::new(response))
    }

    async fn validate_job_set(
        &self,
        mut request: Request<pb::ValidateJobSetRequest>,
    ) -> Result<Response<pb::ValidateJobSetResponse>, Status> {
        let lease = Lease::take(&mut request);
        let deadline = request.extensions().get::<CallDeadline>().copied();
        let body_bytes = request.extensions().get::<RequestBodyBytes>().map(|b| b.0);
        let request = request.into_inner();
        let placement = validation_placement(body_bytes, false);
        let response = run(placement, lease, deadline, move |_| {
            api::validate_jobset_request(request)
        })
        .await?;
        Ok(Response::new(response))
    }
}

#[cfg(test)]
mod tests;
