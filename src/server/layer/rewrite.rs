//! Rewrites the statuses the transport (tonic) produces into the codes the
//! contract names: an oversized message is RESOURCE_EXHAUSTED, not
//! OUT_OF_RANGE; a body that does not decode is INVALID_ARGUMENT naming the
//! RPC's request type, not INTERNAL. The mapping itself is
//! [`ApiError::from_transport_status_for`].
//!
//! It is the innermost layer, so every layer outside it, the metrics among
//! them, sees the code the caller sees.

use std::convert::Infallible;
use std::task::{Context, Poll};

use tower::{Layer, Service};

use super::{HttpRequest, HttpResponse, ResponseFuture, Rpc, error_response, take_ready};
use job_decider_api::ApiError;

/// Adds [`Rewrite`].
#[derive(Clone, Copy, Debug, Default)]
pub struct RewriteLayer;

impl<S> Layer<S> for RewriteLayer {
    type Service = Rewrite<S>;
    fn layer(&self, inner: S) -> Rewrite<S> {
        Rewrite { inner }
    }
}

/// See the module documentation.
#[derive(Clone, Debug)]
pub struct Rewrite<S> {
    inner: S,
}

impl<S> Service<HttpRequest> for Rewrite<S>
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
        let rpc = Rpc::of_request(&request);
        let call = take_ready(&mut self.inner).call(request);
        Box::pin(async move {
            let response = call.await?;
            // A unary error is answered trailers-only: the status is in the headers.
            let rewritten = tonic::Status::from_header_map(response.headers())
                .and_then(|status| ApiError::from_transport_status_for(&status, rpc.request_type));
            Ok(match rewritten {
                Some(err) => error_response(err),
                None => response,
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use tonic::Code;

    use super::*;

    #[test]
    fn an_undecodable_body_is_invalid_argument_naming_the_request_type() {
        let decode =
            tonic::Status::internal("failed to decode Protobuf message: invalid wire type");
        let Some(err) = ApiError::from_transport_status_for(&decode, "DecideJobSetRequest") else {
            panic!("a decode failure is rewritten");
        };
        let status = tonic::Status::from(err);
        assert_eq!(status.code(), Code::InvalidArgument);
        assert_eq!(
            status.message(),
            "request body is not a valid DecideJobSetRequest: failed to decode Protobuf message: invalid wire type"
        );
        // INTERNAL that is not a decode failure stays INTERNAL: it is ours.
        let ours = tonic::Status::internal("decision task failed: panicked");
        assert!(ApiError::from_transport_status_for(&ours, "DecideJobRequest").is_none());
    }
}
