//! The per-call decision timeout. It starts once the body is in and a slot is
//! held, so it measures the server's own work; a slow upload is the body
//! layer's timeout, with its own message.
//!
//! A decision that outlives the timeout keeps its slot until its blocking work
//! really ends (the handler holds the slot), so timed-out work still counts
//! against `--max-concurrent-requests`.

use std::convert::Infallible;
use std::task::{Context, Poll};
use std::time::Duration;

use tower::{Layer, Service};

use super::{HttpRequest, HttpResponse, ResponseFuture, error_response, take_ready};
use job_decider_api::ApiError;

/// Adds [`Timeout`].
#[derive(Clone, Copy, Debug)]
pub struct TimeoutLayer {
    timeout: Duration,
}

impl TimeoutLayer {
    /// Answers DEADLINE_EXCEEDED when the inner service takes longer than `timeout`.
    pub fn new(timeout: Duration) -> Self {
        TimeoutLayer { timeout }
    }
}

impl<S> Layer<S> for TimeoutLayer {
    type Service = Timeout<S>;
    fn layer(&self, inner: S) -> Timeout<S> {
        Timeout {
            inner,
            timeout: self.timeout,
        }
    }
}

/// See the module documentation.
#[derive(Clone, Debug)]
pub struct Timeout<S> {
    inner: S,
    timeout: Duration,
}

impl<S> Service<HttpRequest> for Timeout<S>
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
        let call = take_ready(&mut self.inner).call(request);
        let timeout = self.timeout;
        Box::pin(async move {
            match tokio::time::timeout(timeout, call).await {
                Ok(answer) => answer,
                Err(_) => Ok(error_response(ApiError::Timeout(timeout))),
            }
        })
    }
}
