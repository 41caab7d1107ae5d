//! Once shutdown has begun, new calls are answered UNAVAILABLE (SHUTTING_DOWN)
//! at once, so a client retries on another replica instead of waiting here.

use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};

use tower::{Layer, Service};

use super::{HttpRequest, HttpResponse, ResponseFuture, error_response, take_ready};
use job_decider_api::ApiError;

/// Adds [`Drain`].
#[derive(Clone, Debug)]
pub struct DrainLayer {
    draining: Arc<AtomicBool>,
}

impl DrainLayer {
    /// Sheds every call once `draining` is set.
    pub fn new(draining: Arc<AtomicBool>) -> Self {
        DrainLayer { draining }
    }
}

impl<S> Layer<S> for DrainLayer {
    type Service = Drain<S>;
    fn layer(&self, inner: S) -> Drain<S> {
        Drain {
            inner,
            draining: self.draining.clone(),
        }
    }
}

/// See the module documentation.
#[derive(Clone, Debug)]
pub struct Drain<S> {
    inner: S,
    draining: Arc<AtomicBool>,
}

impl<S> Service<HttpRequest> for Drain<S>
where
    S: Service<HttpRequest, Response = HttpResponse, Error = Infallible> + Clone + Send + 'static,
    S::Future: Send + 'static,
{
    type Response = HttpResponse;
    type Error = Infallible;
    type Future = ResponseFuture;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: HttpRequest) -> ResponseFuture {
        if self.draining.load(Ordering::Acquire) {
            return Box::pin(async { Ok(error_response(ApiError::ShuttingDown)) });
        }
        Box::pin(take_ready(&mut self.inner).call(request))
    }
}
