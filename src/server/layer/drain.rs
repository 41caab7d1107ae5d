//! Once shutdown has begun, new calls are answered UNAVAILABLE (SHUTTING_DOWN)
//! at once, so a client retries on another replica instead of waiting here.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use super::{HttpRequest, Next, ResponseFuture, Step, error_response};
use job_decider_api::ApiError;

/// See the module documentation.
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

impl Step for DrainLayer {
    fn call<N: Next>(&self, next: N, request: HttpRequest) -> ResponseFuture {
        if self.draining.load(Ordering::Acquire) {
            return Box::pin(async { Ok(error_response(ApiError::ShuttingDown)) });
        }
        let mut next = next;
        Box::pin(next.call(request))
    }
}
