//! The per-call decision timeout. It starts once the body is in and a slot is
//! held, so it measures the server's own work; a slow upload is the body
//! layer's timeout, with its own message.
//!
//! A decision that outlives the timeout keeps its slot until its blocking work
//! really ends (the handler holds the slot), so timed-out work still counts
//! against `--max-concurrent-requests`.
//!
//! A small decision runs on the reactor thread within one poll, where no timer
//! can interrupt it; an answer that comes later than the timeout is therefore
//! replaced by DEADLINE_EXCEEDED too, wherever the work ran.
//!
//! The deadline goes to the handler ([`CallDeadline`]): its work asks the
//! clock between pods and stops once the deadline has passed, wherever it
//! runs, so a timed-out call's slot and bytes come back soon after its answer.

use std::time::{Duration, Instant};

use super::body::FreeAfterResponse;
use super::{HttpRequest, Next, ResponseFuture, Step, error_response};
use job_decider_api::ApiError;

/// When the call's decision must be done (a request extension): the work stops there.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CallDeadline(pub Instant);

/// See the module documentation.
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

impl Step for TimeoutLayer {
    fn call<N: Next>(&self, next: N, mut request: HttpRequest) -> ResponseFuture {
        let mut next = next;
        let started = Instant::now();
        // A timeout too large for the clock has no deadline to pass.
        if let Some(deadline) = started.checked_add(self.timeout) {
            request.extensions_mut().insert(CallDeadline(deadline));
        }
        let call = next.call(request);
        let timeout = self.timeout;
        Box::pin(async move {
            match tokio::time::timeout(timeout, call).await {
                Ok(answer) if started.elapsed() <= timeout => answer,
                Ok(Ok(mut late)) => {
                    let mut answer = error_response(ApiError::Timeout(timeout));
                    // A large snapshot is still freed off the reactor, after the answer.
                    if let Some(free) = late.extensions_mut().remove::<FreeAfterResponse>() {
                        answer.extensions_mut().insert(free);
                    }
                    Ok(answer)
                }
                Err(_) => Ok(error_response(ApiError::Timeout(timeout))),
            }
        })
    }
}
