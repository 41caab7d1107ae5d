//! The layers every JobDecider RPC passes, outermost first:
//!
//! 1. [`observe`]: one span, one log line, the request counter and latency;
//! 2. [`drain`]: no new calls once shutdown has begun;
//! 3. [`body`]: the whole request body buffered under a read timeout, its
//!    bytes taken from the global byte budget and held until the response ends;
//! 4. [`slot`]: a decision slot, taken only now that the body is in, with a
//!    bounded wait;
//! 5. [`timeout`]: the per-call decision timeout;
//! 6. [`rewrite`]: transport statuses rewritten to the codes the contract names.
//!
//! [`crate::server::stack`] puts them together in one `ServiceBuilder` around
//! the generated JobDecider service, which routes every RPC of the service: a
//! new RPC passes every layer without anyone adding it anywhere.

pub mod body;
pub mod drain;
pub mod observe;
pub mod rewrite;
pub mod slot;
pub mod timeout;

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::Frame;
use tonic::body::Body;
use tower::{Layer, Service};

use job_decider_api::ApiError;

/// What every layer takes.
pub type HttpRequest = http::Request<Body>;
/// What every layer answers.
pub type HttpResponse = http::Response<Body>;
/// A layer's response future; no layer fails, an error is a gRPC status response.
pub type ResponseFuture = Pin<Box<dyn Future<Output = Result<HttpResponse, Infallible>> + Send>>;

/// The answer for an error a layer produced itself (trailers-only, as tonic answers).
pub fn error_response(err: ApiError) -> HttpResponse {
    tonic::Status::from(err).into_http()
}

/// Takes the ready service for this call and leaves a clone for the next
/// (tower's usual swap: the clone has not been polled ready, the original has).
fn take_ready<S: Clone>(service: &mut S) -> S {
    let clone = service.clone();
    std::mem::replace(service, clone)
}

/// The rest of the stack, as a layer's step sees it: ready for one call.
pub trait Next:
    Service<HttpRequest, Response = HttpResponse, Error = Infallible, Future: Send> + Send + 'static
{
}

impl<S> Next for S where
    S: Service<HttpRequest, Response = HttpResponse, Error = Infallible, Future: Send>
        + Send
        + 'static
{
}

/// What one layer does with a call; tower's plumbing (readiness, handing each
/// call a ready inner service) is [`Around`]'s, written once for every layer.
pub trait Step: Clone + Send + Sync + 'static {
    /// Answers `request`, passing it on to `next` or answering it itself.
    fn call<N: Next>(&self, next: N, request: HttpRequest) -> ResponseFuture;
}

/// A [`Step`] as a tower layer: `ServiceBuilder::new().layer(around(step))`.
pub fn around<T: Step>(step: T) -> AroundLayer<T> {
    AroundLayer(step)
}

/// The tower layer of a [`Step`].
#[derive(Clone, Debug)]
pub struct AroundLayer<T>(T);

impl<S, T: Clone> Layer<S> for AroundLayer<T> {
    type Service = Around<S, T>;
    fn layer(&self, inner: S) -> Around<S, T> {
        Around {
            inner,
            step: self.0.clone(),
        }
    }
}

/// A [`Step`] around the rest of the stack.
#[derive(Clone, Debug)]
pub struct Around<S, T> {
    inner: S,
    step: T,
}

impl<S, T> Service<HttpRequest> for Around<S, T>
where
    S: Next + Clone,
    T: Step,
{
    type Response = HttpResponse;
    type Error = Infallible;
    type Future = ResponseFuture;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: HttpRequest) -> ResponseFuture {
        self.step.call(take_ready(&mut self.inner), request)
    }
}

/// One RPC of the JobDecider service: its method name and its request message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rpc {
    /// The method, as metrics and logs name it.
    pub method: &'static str,
    /// The request message, as error messages name it.
    pub request_type: &'static str,
}

/// Every RPC of the service; a test checks this against the service descriptor.
pub const RPCS: [Rpc; 4] = [
    Rpc {
        method: "DecideJob",
        request_type: "DecideJobRequest",
    },
    Rpc {
        method: "ValidateJob",
        request_type: "ValidateJobRequest",
    },
    Rpc {
        method: "DecideJobSet",
        request_type: "DecideJobSetRequest",
    },
    Rpc {
        method: "ValidateJobSet",
        request_type: "ValidateJobSetRequest",
    },
];

/// A path that names no RPC of the service (tonic answers UNIMPLEMENTED).
pub const UNKNOWN_RPC: Rpc = Rpc {
    method: "other",
    request_type: "request message",
};

impl Rpc {
    /// The RPC a request path names: a closed set, so metric labels stay bounded.
    pub fn of_path(path: &str) -> Rpc {
        let method = path.rsplit('/').next().unwrap_or_default();
        RPCS.into_iter()
            .find(|rpc| rpc.method == method)
            .unwrap_or(UNKNOWN_RPC)
    }

    /// The RPC of a request: the one the observe layer recorded, else its path's.
    pub fn of_request(request: &HttpRequest) -> Rpc {
        request
            .extensions()
            .get::<Rpc>()
            .copied()
            .unwrap_or_else(|| Rpc::of_path(request.uri().path()))
    }
}

/// A response body that keeps `held` alive until the body is finished or dropped:
/// request bytes, connection activity, anything that must last as long as the call.
pub struct Holding<H> {
    inner: Body,
    held: Option<H>,
}

impl<H: Send + Unpin + 'static> Holding<H> {
    /// Wraps `response`'s body so that `held` lives until it ends.
    pub fn response(response: HttpResponse, held: H) -> HttpResponse {
        response.map(|inner| {
            Body::new(Holding {
                inner,
                held: Some(held),
            })
        })
    }
}

impl<H: Unpin> http_body::Body for Holding<H> {
    type Data = Bytes;
    type Error = tonic::Status;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.inner).poll_frame(cx);
        if let Poll::Ready(None | Some(Err(_))) = &polled {
            // The response is over: release what it held without waiting for the drop.
            this.held = None;
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

/// Cuts `text` to at most `max` bytes (on a character boundary) for logs,
/// saying how much was left out.
pub fn truncated(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… ({} more bytes)", &text[..end], text.len() - end)
}

#[cfg(test)]
mod tests;
