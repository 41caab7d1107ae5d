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
//!   dropped AND the call's work has stopped ([`CallCharge`]): the decoded
//!   request, the domain model and the plan built from them are what the
//!   budget stands for, and a call answered DEADLINE_EXCEEDED may still hold them.
//! - A body longer than `--max-message-size` (plus gRPC's 5-byte prefix) is
//!   RESOURCE_EXHAUSTED (MESSAGE_TOO_LARGE) as soon as it is seen to be.
//! - What a handler leaves to be freed after the response
//!   ([`FreeAfterResponse`]: a large decided snapshot) is freed on the
//!   blocking pool once the response is over, and the call's bytes stay taken
//!   until it is: the budget still covers the memory while it is freed.
//! - Once the body is in, what prost will allocate to decode it is bounded by
//!   a pre-scan of its wire bytes (`job_decider_api::decoded_size`) and taken
//!   from the same budget, before any decoding: a message's decoded size can
//!   be 50 times its wire size (22 million empty containers, 44 MiB on the
//!   wire, past 2 GiB decoded). An estimate the budget cannot give now is
//!   RESOURCE_EXHAUSTED (REQUEST_BYTES_BUDGET); one past the whole budget, which
//!   can never be served, is RESOURCE_EXHAUSTED (MESSAGE_TOO_LARGE) naming the
//!   field that costs most and its count.
//! - The body's size goes to the handler ([`RequestBodyBytes`]), which decides
//!   small requests on the reactor thread.

use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body::{Body as _, Frame};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tonic::body::Body;

use super::{Holding, HttpRequest, Next, ResponseFuture, Step, error_response};
use crate::server::metrics;
use job_decider_api::ApiError;
use job_decider_api::codec::OFF_REACTOR_DECODE_BYTES;
use job_decider_api::decoded_size::{self, Estimate};

/// gRPC's length prefix before each message: a compression flag and a u32 length.
const GRPC_PREFIX_BYTES: usize = 5;

/// The size of the call's request body in bytes, gRPC prefix included (a request extension).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RequestBodyBytes(pub usize);

/// The call's byte charge (a request extension): the body's bytes, and what
/// a handler adds once the request is decoded — the memory its pods will
/// take, which a lean request's bytes do not cover — taken from the same
/// budget without waiting. Every clone shares one charge, given back when the
/// last clone goes: the body layer holds one until the response is over, and
/// the handler moves one into the call's work, which may outlive the
/// response (a call answered DEADLINE_EXCEEDED while its work winds down).
#[derive(Clone, Debug)]
pub struct CallCharge(Arc<Charge>);

#[derive(Debug)]
struct Charge {
    budget: Arc<Semaphore>,
    budget_bytes: usize,
    held: Mutex<HeldBytes>,
}

impl CallCharge {
    fn new(budget: &Arc<Semaphore>, budget_bytes: usize, held: HeldBytes) -> Self {
        CallCharge(Arc::new(Charge {
            budget: Arc::clone(budget),
            budget_bytes,
            held: Mutex::new(held),
        }))
    }

    /// Takes `bytes` more for this call; the error when the budget cannot give them now.
    pub fn take(&self, bytes: usize) -> Result<(), ApiError> {
        let charge = &self.0;
        let mut held = match charge.held.lock() {
            Ok(held) => held,
            Err(poisoned) => poisoned.into_inner(),
        };
        if held.take(&charge.budget, bytes) {
            Ok(())
        } else {
            Err(ApiError::ByteBudgetExhausted {
                budget: charge.budget_bytes,
            })
        }
    }
}

/// Something a handler hands back in its response's extensions to be freed
/// only once the response has been sent, on the blocking pool (a response
/// extension; the body layer takes it out).
#[derive(Clone)]
pub struct FreeAfterResponse(Arc<Mutex<Option<Box<dyn Send>>>>);

impl FreeAfterResponse {
    /// Keeps `value` until the response is over.
    pub fn new(value: impl Send + 'static) -> Self {
        FreeAfterResponse(Arc::new(Mutex::new(Some(Box::new(value)))))
    }

    fn take(&self) -> Option<Box<dyn Send>> {
        match self.0.lock() {
            Ok(mut value) => value.take(),
            Err(poisoned) => poisoned.into_inner().take(),
        }
    }
}

impl std::fmt::Debug for FreeAfterResponse {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("FreeAfterResponse")
    }
}

/// What the body layer holds until the call's response is over: its share of
/// the call's charge, and what the handler left to free. Dropped, it frees
/// that on the blocking pool and lets go of the charge only then.
struct Release {
    charge: CallCharge,
    later: Option<Box<dyn Send>>,
}

impl Drop for Release {
    fn drop(&mut self) {
        let Some(later) = self.later.take() else {
            return;
        };
        let charge = self.charge.clone();
        let free = move || {
            drop(later);
            drop(charge);
        };
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => drop(runtime.spawn_blocking(free)),
            // No runtime (a test dropping a response by itself): free here.
            Err(_) => free(),
        }
    }
}

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
        metrics::request_bytes_held(more as f64);
        true
    }
}

impl Drop for HeldBytes {
    fn drop(&mut self) {
        if self.bytes > 0 {
            #[allow(clippy::cast_precision_loss)]
            metrics::request_bytes_held(-(self.bytes as f64));
        }
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

    /// Takes from the budget what prost may allocate to decode the body of a call to `path`.
    fn charge_decoded(
        &self,
        path: &str,
        chunks: &VecDeque<Bytes>,
        body_bytes: usize,
        held: &mut HeldBytes,
    ) -> Result<(), ApiError> {
        let schema = decoded_size::contract()
            .map_err(|e| ApiError::Internal(format!("decoded-size schema: {e}")))?;
        // Not an RPC of the contract: tonic answers UNIMPLEMENTED without decoding.
        let Some(request) = schema.request_for_path(path) else {
            return Ok(());
        };
        // What the budget could ever give this call beyond what it holds.
        let limit = self.budget_bytes.saturating_sub(held.bytes);
        let pieces: Vec<&[u8]> = chunks.iter().map(Bytes::as_ref).collect();
        let scan = || decoded_size::estimate_grpc_body(&request, &pieces, limit);
        // Linear in the body, like decoding it: a large one is scanned off the reactor.
        let on_multi_thread = tokio::runtime::Handle::try_current()
            .is_ok_and(|h| h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread);
        let estimate = if body_bytes >= OFF_REACTOR_DECODE_BYTES && on_multi_thread {
            tokio::task::block_in_place(scan)
        } else {
            scan()
        };
        // No uncompressed message to scan: tonic refuses the body before decoding it.
        let Some(estimate) = estimate else {
            return Ok(());
        };
        if estimate.exceeded {
            return Err(self.never_fits(&estimate, body_bytes));
        }
        if !held.take(&self.budget, estimate.bytes) {
            return Err(self.exhausted());
        }
        Ok(())
    }

    /// A request whose decoded size alone passes the whole budget: it can never be served.
    fn never_fits(&self, estimate: &Estimate, body_bytes: usize) -> ApiError {
        let what = estimate.largest.as_ref().map_or_else(String::new, |field| {
            format!(
                "{}: at least {} entries, taking {} bytes decoded; ",
                field.path, field.count, field.bytes
            )
        });
        ApiError::TooLarge {
            detail: format!(
                "{what}decoding the request may take {} bytes or more, which with its \
                 {body_bytes} body bytes is past the {}-byte budget of request bytes in flight",
                estimate.bytes, self.budget_bytes
            ),
        }
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
        let (mut parts, body) = request.into_parts();
        let mut chunks = tokio::time::timeout(self.read_timeout, self.collect(body, &mut held))
            .await
            .map_err(|_| ApiError::BodyTimeout(self.read_timeout))??;
        let body_bytes = chunks.iter().map(Bytes::len).sum();
        self.charge_decoded(parts.uri.path(), &chunks, body_bytes, &mut held)?;
        parts.extensions.insert(RequestBodyBytes(body_bytes));
        prefix_apart(&mut chunks);
        Ok((
            HttpRequest::from_parts(parts, Body::new(Buffered { chunks })),
            held,
        ))
    }
}

impl Step for BodyLayer {
    fn call<N: Next>(&self, next: N, request: HttpRequest) -> ResponseFuture {
        let mut inner = next;
        let limits = self.clone();
        Box::pin(async move {
            match limits.buffer(request).await {
                Ok((mut request, held)) => {
                    let charge = CallCharge::new(&limits.budget, limits.budget_bytes, held);
                    request.extensions_mut().insert(charge.clone());
                    let mut response = inner.call(request).await?;
                    let later = response
                        .extensions_mut()
                        .remove::<FreeAfterResponse>()
                        .and_then(|free| free.take());
                    Ok(Holding::response(response, Release { charge, later }))
                }
                Err(err) => Ok(error_response(err)),
            }
        })
    }
}

/// Hands gRPC's 5-byte message prefix over as a frame of its own. tonic
/// reserves room for the whole message once it has read the prefix; with the
/// message's first bytes already in its buffer, that reservation reallocates
/// (a copy and twice the memory, on every small call); with only the prefix
/// read, it does not.
fn prefix_apart(chunks: &mut VecDeque<Bytes>) {
    let Some(first) = chunks.front_mut() else {
        return;
    };
    if first.len() >= GRPC_PREFIX_BYTES {
        if first.len() > GRPC_PREFIX_BYTES {
            let prefix = first.split_to(GRPC_PREFIX_BYTES);
            chunks.push_front(prefix);
        }
        return;
    }
    // The prefix itself came in pieces: gather it.
    let mut prefix = Vec::with_capacity(GRPC_PREFIX_BYTES);
    while prefix.len() < GRPC_PREFIX_BYTES {
        let Some(mut chunk) = chunks.pop_front() else {
            break;
        };
        let part = chunk.split_to(chunk.len().min(GRPC_PREFIX_BYTES - prefix.len()));
        prefix.extend_from_slice(&part);
        if !chunk.is_empty() {
            chunks.push_front(chunk);
        }
    }
    chunks.push_front(Bytes::from(prefix));
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
mod tests;
