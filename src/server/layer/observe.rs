//! The outermost layer: every call gets one span (`rpc`, with the method; the
//! handlers record the Job's identity and what was decided into it), one log
//! line when its code is known — DEBUG, with the status message of a failure
//! cut to [`LOGGED_MESSAGE_BYTES`], except WARN for the codes that mean a
//! fault of the server ([`server_fault`]); the metrics count every call, so
//! INFO stays free of per-call lines — the request counter (by
//! method and code), the latency histogram, and the gauge of calls in
//! progress (from headers to the last response frame, slot or not).
//!
//! Being outermost, it counts every answer: calls shed while draining, over
//! the byte budget or without a slot, and the codes the rewrite layer fixed.

use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Instant;

use bytes::Bytes;
use http_body::Frame;
use tonic::body::Body;
use tracing::{Instrument, Span, debug, field::Empty, info_span, warn};

use super::{HttpRequest, Next, ResponseFuture, Rpc, Step, truncated};
use crate::server::metrics;

/// Status messages in logs are cut to this many bytes: a message can echo input.
pub const LOGGED_MESSAGE_BYTES: usize = 256;

/// See the module documentation.
#[derive(Clone, Copy, Debug, Default)]
pub struct ObserveLayer;

/// The call's span, with the fields handlers fill in.
fn call_span(rpc: Rpc) -> Span {
    info_span!(
        "rpc",
        rpc.method = rpc.method,
        job.namespace = Empty,
        job.name = Empty,
        job.uid = Empty,
        pods = Empty,
        jobs = Empty,
        actions = Empty,
    )
}

/// Codes that say the server itself failed (a bug, a broken invariant), which
/// an operator must see at the default level; the others are the caller's
/// input, its deadline, or load shed on purpose, and the metrics count them.
pub fn server_fault(code: tonic::Code) -> bool {
    matches!(
        code,
        tonic::Code::Internal | tonic::Code::Unknown | tonic::Code::DataLoss
    )
}

/// Records and logs a call's outcome exactly once.
struct Outcome {
    rpc: Rpc,
    started: Instant,
    span: Span,
    done: bool,
}

impl Outcome {
    fn finish(&mut self, code: tonic::Code, message: &str) {
        if self.done {
            return;
        }
        self.done = true;
        metrics::call_ended();
        let elapsed = self.started.elapsed();
        metrics::record_request(self.rpc.method, code, elapsed);
        let elapsed_us = u64::try_from(elapsed.as_micros()).unwrap_or(u64::MAX);
        let fault = server_fault(code);
        let code = metrics::code_name(code);
        let _entered = self.span.enter();
        if code == "OK" {
            debug!(code, elapsed_us, "call finished");
        } else if fault {
            warn!(
                code,
                elapsed_us,
                status_message = truncated(message, LOGGED_MESSAGE_BYTES),
                "call failed"
            );
        } else {
            debug!(
                code,
                elapsed_us,
                status_message = truncated(message, LOGGED_MESSAGE_BYTES),
                "call failed"
            );
        }
    }
}

impl Drop for Outcome {
    fn drop(&mut self) {
        // Never finished: the client went away before the call ended.
        self.finish(
            tonic::Code::Cancelled,
            "the client went away before the answer",
        );
    }
}

impl Step for ObserveLayer {
    fn call<N: Next>(&self, next: N, mut request: HttpRequest) -> ResponseFuture {
        let rpc = Rpc::of_path(request.uri().path());
        request.extensions_mut().insert(rpc);
        let span = call_span(rpc);
        metrics::call_began(rpc.method);
        let mut outcome = Outcome {
            rpc,
            started: Instant::now(),
            span: span.clone(),
            done: false,
        };
        let mut next = next;
        let call = next.call(request).instrument(span);
        Box::pin(async move {
            let response = call.await?;
            // A trailers-only answer carries its status in the headers.
            if let Some(status) = tonic::Status::from_header_map(response.headers()) {
                outcome.finish(status.code(), status.message());
                return Ok(response);
            }
            Ok(response.map(|inner| Body::new(Recording { inner, outcome })))
        })
    }
}

/// A response body that finishes the outcome from its trailers.
struct Recording {
    inner: Body,
    outcome: Outcome,
}

impl http_body::Body for Recording {
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
                if let Some(status) = frame
                    .trailers_ref()
                    .and_then(tonic::Status::from_header_map)
                {
                    this.outcome.finish(status.code(), status.message());
                }
            }
            Poll::Ready(Some(Err(status))) => this.outcome.finish(status.code(), status.message()),
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
