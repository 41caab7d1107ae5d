//! The decision slot: a call takes one of `--max-concurrent-requests` slots
//! only once its whole body has arrived (the body layer is outside this one),
//! so slow or stalled uploads never hold a slot.
//!
//! Shedding, on count and on queueing delay: a call that finds every slot busy
//! waits at most `--queue-timeout` for one, and at most as many calls wait as
//! there are slots; a call that would be one too many waiting, or that waits
//! out the timeout, is answered UNAVAILABLE (OVERLOADED) — retried by gRPC
//! clients — instead of queueing without bound behind work it cannot overtake.
//! The answer says how long to wait ([`overload_pushback`]: 50–150 ms, jittered).
//!
//! The slot travels to the handler in the request's extensions
//! ([`DecisionSlot`]); the handler holds it through its work (on the reactor
//! for a small snapshot, moved into the blocking work for a large one), so
//! the slot (and the in-flight gauge) is released when the work ends, even
//! when the caller stopped waiting because of the timeout.

use std::hash::{BuildHasher, RandomState};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::{HttpRequest, Next, ResponseFuture, Step, error_response};
use crate::server::metrics;
use job_decider_api::ApiError;

/// The shortest wait an OVERLOADED answer asks for (`RetryInfo` and `grpc-retry-pushback-ms`).
pub const OVERLOAD_PUSHBACK_MIN: Duration = Duration::from_millis(50);
/// The longest wait an OVERLOADED answer asks for.
pub const OVERLOAD_PUSHBACK_MAX: Duration = Duration::from_millis(150);

/// A wait in whole milliseconds, uniform in [`OVERLOAD_PUSHBACK_MIN`, `OVERLOAD_PUSHBACK_MAX`]:
/// callers shed together are told different waits, so they do not come back together.
pub fn overload_pushback() -> Duration {
    let min = OVERLOAD_PUSHBACK_MIN.as_millis() as u64;
    let span = OVERLOAD_PUSHBACK_MAX.as_millis() as u64 - min + 1;
    // A fresh RandomState is randomly keyed: good enough for jitter, and no new dependency.
    let random = RandomState::new().hash_one(std::time::Instant::now());
    Duration::from_millis(min + random % span)
}

/// A held decision slot; dropping the last clone frees it.
#[derive(Clone, Debug)]
pub struct DecisionSlot(#[allow(dead_code)] Arc<Held>);

#[derive(Debug)]
struct Held {
    _permit: OwnedSemaphorePermit,
}

impl Held {
    fn new(permit: OwnedSemaphorePermit) -> Self {
        metrics::slots_held(1.0);
        Held { _permit: permit }
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        metrics::slots_held(-1.0);
    }
}

/// The slots, shared by every connection.
#[derive(Clone, Debug)]
pub struct SlotLayer {
    slots: Arc<Semaphore>,
    waiters: Arc<Semaphore>,
    max: usize,
    queue_timeout: Duration,
}

impl SlotLayer {
    /// `max` slots; a call waits at most `queue_timeout` for one (zero: never waits).
    pub fn new(max: usize, queue_timeout: Duration) -> Self {
        SlotLayer {
            slots: Arc::new(Semaphore::new(max)),
            waiters: Arc::new(Semaphore::new(max)),
            max,
            queue_timeout,
        }
    }
}

impl SlotLayer {
    async fn acquire(&self) -> Result<OwnedSemaphorePermit, ApiError> {
        let overloaded = || ApiError::Overloaded {
            in_flight: self.max,
            retry_after: overload_pushback(),
        };
        if let Ok(permit) = self.slots.clone().try_acquire_owned() {
            return Ok(permit);
        }
        if self.queue_timeout.is_zero() {
            return Err(overloaded());
        }
        // A bounded queue: past `max` waiters a call is shed at once.
        let Ok(_waiting) = self.waiters.clone().try_acquire_owned() else {
            return Err(overloaded());
        };
        match tokio::time::timeout(self.queue_timeout, self.slots.clone().acquire_owned()).await {
            Ok(Ok(permit)) => Ok(permit),
            // A closed semaphore is never used here; treat it as overload, not a panic.
            Ok(Err(_)) | Err(_) => Err(overloaded()),
        }
    }
}

impl Step for SlotLayer {
    fn call<N: Next>(&self, next: N, mut request: HttpRequest) -> ResponseFuture {
        let mut inner = next;
        let limits = self.clone();
        Box::pin(async move {
            match limits.acquire().await {
                Ok(permit) => {
                    request
                        .extensions_mut()
                        .insert(DecisionSlot(Arc::new(Held::new(permit))));
                    inner.call(request).await
                }
                Err(err) => Ok(error_response(err)),
            }
        })
    }
}

#[cfg(test)]
mod tests;
