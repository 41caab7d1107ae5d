//! Body collection: the whole request body is read before any later layer
//! runs, so a decision slot is never held by an upload in progress.
//!
//! - The read has its own timeout (`--body-read-timeout`), answered
//!   DEADLINE_EXCEEDED with REQUEST_BODY_TIMEOUT and a message that says the
//!   upload was too slow, not the decision.
//! - Its bytes are taken from one byte-weighted semaphore shared by every
//!   call (`--max-request-bytes-in-flight`): all of a declared
//!   `content-length` up front, otherwise each frame as it arrives. A call
//!   that would pass the budget is answered RESOURCE_EXHAUSTED
//!   (REQUEST_BYTES_BUDGET) at once; it never waits for bytes to free up.
//! - The bytes stay taken until the call's response body is finished or
//!   dropped: the decoded request, the domain model and the plan built from
//!   them are what the budget stands for.
//! - A body longer than `--max-message-size` (plus gRPC's 5-byte prefix) is
//!   RESOURCE_EXHAUSTED (MESSAGE_TOO_LARGE) as soon as it is seen to be.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body::{Body as _, Frame};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tonic::body::Body;
use tower::{Layer, Service};

use super::{Holding, HttpRequest, HttpResponse, ResponseFuture, error_response, take_ready};
use crate::server::metrics;
use job_decider_api::ApiError;

/// gRPC's length prefix before each message: a compression flag and a u32 length.
const GRPC_PREFIX_BYTES: usize = 5;

/// Adds [`CollectBody`]; one budget shared by every call of the server.
#[derive(Clone, Debug)]
pub struct BodyLayer {
    budget: Arc<Semaphore>,
    budget_bytes: usize,
    max_body: usize,
    read_timeout: Duration,
}

impl BodyLayer {
    /// A budget of `budget_bytes` request bytes in flight, messages of at
    /// most `max_message` bytes, bodies read within `read_timeout`.
    pub fn new(budget_bytes: usize, max_message: usize, read_timeout: Duration) -> Self {
        let max_body = max_message.saturating_add(GRPC_PREFIX_BYTES);
        // At least one largest body always fits, its 5-byte prefix included.
        let permits = budget_bytes.max(max_body).min(Semaphore::MAX_PERMITS);
        BodyLayer {
            budget: Arc::new(Semaphore::new(permits)),
            budget_bytes: permits,
            max_body,
            read_timeout,
        }
    }
}

impl<S> Layer<S> for BodyLayer {
    type Service = CollectBody<S>;
    fn layer(&self, inner: S) -> CollectBody<S> {
        CollectBody {
            inner,
            limits: self.clone(),
        }
    }
}

/// See the module documentation.
#[derive(Clone, Debug)]
pub struct CollectBody<S> {
    inner: S,
    limits: BodyLayer,
}

/// Request bytes taken from the budget; given back (and the gauge lowered) on drop.
#[derive(Debug, Default)]
struct HeldBytes {
    permit: Option<OwnedSemaphorePermit>,
    bytes: usize,
}

impl HeldBytes {
    /// Takes `more` bytes without waiting; false when the budget cannot give them now.
    fn take(&mut self, budget: &Arc<Semaphore>, more: usize) -> bool {
        if more == 0 {
            return true;
        }
        let Ok(n) = u32::try_from(more) else {
            return false;
        };
        let Ok(permit) = budget.clone().try_acquire_many_owned(n) else {
            return false;
        };
        match &mut self.permit {
            Some(held) => held.merge(permit),
            None => self.permit = Some(permit),
        }
        self.bytes += more;
        // Precision loss only above 2^52 bytes.
        #[allow(clippy::cast_precision_loss)]
        ::metrics::gauge!(metrics::REQUEST_BYTES_IN_FLIGHT).increment(more as f64);
        true
    }
}

impl Drop for HeldBytes {
    fn drop(&mut self) {
        #[allow(clippy::cast_precision_loss)]
        ::metrics::gauge!(metrics::REQUEST_BYTES_IN_FLIGHT).decrement(self.bytes as f64);
    }
}

impl BodyLayer {
    fn too_large(&self, seen: usize) -> ApiError {
        ApiError::TooLarge {
            detail: format!(
                "request body of at least {seen} bytes, the limit is {} bytes",
                self.max_body
            ),
        }
    }

    fn exhausted(&self) -> ApiError {
        ApiError::ByteBudgetExhausted {
            budget: self.budget_bytes,
        }
    }

    /// Reads the whole body, taking its bytes from the budget as they come.
    async fn collect(
        &self,
        mut body: Body,
        held: &mut HeldBytes,
    ) -> Result<VecDeque<Bytes>, ApiError> {
        let mut chunks = VecDeque::new();
        let mut total = 0usize;
        while let Some(frame) = std::future::poll_fn(|cx| Pin::new(&mut body).poll_frame(cx)).await
        {
            let frame = frame.map_err(|status| ApiError::BodyFailed(status.to_string()))?;
            // Request trailers carry nothing gRPC uses.
            let Ok(data) = frame.into_data() else {
                continue;
            };
            total = total.saturating_add(data.len());
            if total > self.max_body {
                return Err(self.too_large(total));
            }
            if total > held.bytes && !held.take(&self.budget, total - held.bytes) {
                return Err(self.exhausted());
            }
            if !data.is_empty() {
                chunks.push_back(data);
            }
        }
        Ok(chunks)
    }

    /// The request with its body read in full, and the bytes it holds.
    async fn buffer(&self, request: HttpRequest) -> Result<(HttpRequest, HeldBytes), ApiError> {
        let mut held = HeldBytes::default();
        let declared = request
            .headers()
            .get(http::header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u64>().ok());
        if let Some(declared) = declared {
            let declared = usize::try_from(declared).unwrap_or(usize::MAX);
            if declared > self.max_body {
                return Err(self.too_large(declared));
            }
            // The whole declared body up front: a call the budget cannot take never starts reading.
            if !held.take(&self.budget, declared) {
                return Err(self.exhausted());
            }
        }
        let (parts, body) = request.into_parts();
        let chunks = tokio::time::timeout(self.read_timeout, self.collect(body, &mut held))
            .await
            .map_err(|_| ApiError::BodyTimeout(self.read_timeout))??;
        Ok((
            HttpRequest::from_parts(parts, Body::new(Buffered { chunks })),
            held,
        ))
    }
}

impl<S> Service<HttpRequest> for CollectBody<S>
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
        let mut inner = take_ready(&mut self.inner);
        let limits = self.limits.clone();
        Box::pin(async move {
            match limits.buffer(request).await {
                Ok((request, held)) => {
                    let response = inner.call(request).await?;
                    Ok(Holding::response(response, held))
                }
                Err(err) => Ok(error_response(err)),
            }
        })
    }
}

/// A body already read: its chunks handed on one by one, each freed once the
/// decoder has copied it, so the copy never doubles the request's memory.
struct Buffered {
    chunks: VecDeque<Bytes>,
}

impl http_body::Body for Buffered {
    type Data = Bytes;
    type Error = tonic::Status;

    fn poll_frame(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        Poll::Ready(
            self.get_mut()
                .chunks
                .pop_front()
                .map(|c| Ok(Frame::data(c))),
        )
    }

    fn is_end_stream(&self) -> bool {
        self.chunks.is_empty()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        let total: usize = self.chunks.iter().map(Bytes::len).sum();
        http_body::SizeHint::with_exact(u64::try_from(total).unwrap_or(u64::MAX))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn held_bytes_merge_and_give_back() {
        let budget = Arc::new(Semaphore::new(10));
        let mut held = HeldBytes::default();
        assert!(held.take(&budget, 4));
        assert!(held.take(&budget, 6));
        assert!(!held.take(&budget, 1), "the budget is spent");
        assert_eq!(budget.available_permits(), 0);
        drop(held);
        assert_eq!(budget.available_permits(), 10);
    }
}
