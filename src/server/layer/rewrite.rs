//! Rewrites the statuses the transport (tonic) produces into the codes the
//! contract names: an oversized message is RESOURCE_EXHAUSTED, not
//! OUT_OF_RANGE; a body that does not decode is INVALID_ARGUMENT naming the
//! RPC's request type, not INTERNAL. The mapping itself is
//! [`ApiError::from_transport_status_for`].
//!
//! It is the innermost layer, so every layer outside it, the metrics among
//! them, sees the code the caller sees.

use super::{HttpRequest, Next, ResponseFuture, Rpc, Step, error_response};
use job_decider_api::ApiError;

/// See the module documentation.
#[derive(Clone, Copy, Debug, Default)]
pub struct RewriteLayer;

impl Step for RewriteLayer {
    fn call<N: Next>(&self, next: N, request: HttpRequest) -> ResponseFuture {
        let rpc = Rpc::of_request(&request);
        let mut next = next;
        let call = next.call(request);
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
mod tests;
