//! The middleware around the JobDecider service: a global concurrency limit
//! that sheds instead of queueing, a per-request timeout, the request metrics,
//! and the rewrite of transport statuses the contract names differently.
//!
//! It wraps only the JobDecider service, so health checks and reflection keep
//! answering while every decision slot is busy.

use std::convert::Infallible;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body::Frame;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tonic::body::Body;
use tonic::server::NamedService;
use tower::Service;

use crate::server::metrics;
use job_decider_api::ApiError;

/// A decision slot, passed to the handler in the request's extensions so the
/// blocking decision keeps it until it really finishes, even after a timeout.
#[derive(Clone, Debug)]
pub struct DecisionSlot(#[allow(dead_code)] Arc<OwnedSemaphorePermit>);

/// The limits the guard applies.
#[derive(Clone, Debug)]
pub struct Limits {
    /// Slots shared by every connection.
    pub slots: Arc<Semaphore>,
    /// The number of slots, for the error message.
    pub max_concurrent: usize,
    /// The per-request timeout.
    pub timeout: Duration,
    /// Set once the server stops taking calls.
    pub draining: Arc<AtomicBool>,
}

/// The guarded service.
#[derive(Clone, Debug)]
pub struct Guard<S> {
    inner: S,
    limits: Limits,
}

impl<S> Guard<S> {
    /// Wraps `inner` with `limits`.
    pub fn new(inner: S, limits: Limits) -> Self {
        Guard { inner, limits }
    }
}

impl<S: NamedService> NamedService for Guard<S> {
    const NAME: &'static str = S::NAME;
}

/// The method's name for metrics: the last path segment, from a closed set.
fn method_name(path: &str) -> &'static str {
    match path.rsplit('/').next() {
        Some("DecideJob") => "DecideJob",
        Some("ValidateJob") => "ValidateJob",
        Some("DecideJobSet") => "DecideJobSet",
        Some("ValidateJobSet") => "ValidateJobSet",
        _ => "other",
    }
}

/// Keeps the in-flight gauge honest however the call ends.
struct InFlight;

impl InFlight {
    fn start() -> Self {
        ::metrics::gauge!(metrics::IN_FLIGHT).increment(1.0);
        InFlight
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        ::metrics::gauge!(metrics::IN_FLIGHT).decrement(1.0);
    }
}

fn error_response(err: ApiError, method: &'static str, started: Instant) -> http::Response<Body> {
    let status = tonic::Status::from(err);
    metrics::record_request(method, status.code(), started.elapsed());
    status.into_http()
}

impl<S> Service<http::Request<Body>> for Guard<S>
where
    S: Service<http::Request<Body>, Response = http::Response<Body>, Error = Infallible>
        + Clone
        + Send
        + 'static,
    S::Future: Send + 'static,
{
    type Response = http::Response<Body>;
    type Error = Infallible;
    type Future =
        Pin<Box<dyn std::future::Future<Output = Result<Self::Response, Infallible>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut req: http::Request<Body>) -> Self::Future {
        let started = Instant::now();
        let method = method_name(req.uri().path());
        // The clone is not ready; the ready one serves this call (tower's usual swap).
        let clone = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, clone);
        let limits = self.limits.clone();
        Box::pin(async move {
            if limits.draining.load(Ordering::Acquire) {
                return Ok(error_response(ApiError::ShuttingDown, method, started));
            }
            // try_acquire never waits: a full server answers at once rather than queueing.
            let Ok(permit) = limits.slots.clone().try_acquire_owned() else {
                return Ok(error_response(
                    ApiError::Overloaded {
                        in_flight: limits.max_concurrent,
                    },
                    method,
                    started,
                ));
            };
            let in_flight = InFlight::start();
            req.extensions_mut().insert(DecisionSlot(Arc::new(permit)));
            let response = match tokio::time::timeout(limits.timeout, inner.call(req)).await {
                Ok(Ok(response)) => response,
                Ok(Err(never)) => match never {},
                Err(_) => {
                    return Ok(error_response(
                        ApiError::Timeout(limits.timeout),
                        method,
                        started,
                    ));
                }
            };
            // A status in the headers is a trailers-only error answer.
            if let Some(status) = tonic::Status::from_header_map(response.headers()) {
                if let Some(err) = ApiError::from_transport_status(&status) {
                    return Ok(error_response(err, method, started));
                }
                metrics::record_request(method, status.code(), started.elapsed());
                return Ok(response);
            }
            Ok(response.map(|body| {
                Body::new(CodeRecordingBody {
                    inner: body,
                    method,
                    started,
                    recorded: false,
                    _in_flight: in_flight,
                })
            }))
        })
    }
}

/// A response body that records the request's final code from its trailers.
struct CodeRecordingBody {
    inner: Body,
    method: &'static str,
    started: Instant,
    recorded: bool,
    _in_flight: InFlight,
}

impl CodeRecordingBody {
    fn record(&mut self, code: tonic::Code) {
        if !self.recorded {
            self.recorded = true;
            metrics::record_request(self.method, code, self.started.elapsed());
        }
    }
}

impl http_body::Body for CodeRecordingBody {
    type Data = Bytes;
    type Error = tonic::Status;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.inner).poll_frame(cx);
        match &polled {
            Poll::Ready(Some(Ok(frame))) => {
                if let Some(code) = frame
                    .trailers_ref()
                    .and_then(tonic::Status::from_header_map)
                    .map(|s| s.code())
                {
                    this.record(code);
                }
            }
            Poll::Ready(Some(Err(status))) => this.record(status.code()),
            Poll::Ready(None) | Poll::Pending => {}
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

impl Drop for CodeRecordingBody {
    fn drop(&mut self) {
        // Trailers never read: the client went away before the call ended.
        self.record(tonic::Code::Cancelled);
    }
}
