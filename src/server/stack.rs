//! The one place the JobDecider service is put together: the generated
//! service (which routes every RPC of the contract) inside every layer of
//! [`crate::server::layer`], in one `ServiceBuilder`.
//!
//! **Invariant: every RPC passes every layer.** [`decider`] is the only code
//! that constructs `JobDeciderServer`, and it wraps the whole router, not the
//! methods one by one; health and reflection are added beside it, outside the
//! budget and the slots, so probes answer when every slot is busy.

use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::task::{Context, Poll};
use std::time::Duration;

use tonic::server::NamedService;
use tower::{Service, ServiceBuilder};

use crate::server::layer::body::BodyLayer;
use crate::server::layer::drain::DrainLayer;
use crate::server::layer::observe::ObserveLayer;
use crate::server::layer::rewrite::RewriteLayer;
use crate::server::layer::slot::SlotLayer;
use crate::server::layer::timeout::TimeoutLayer;
use crate::server::layer::{HttpRequest, HttpResponse, ResponseFuture};
use crate::server::service::DeciderService;
use job_decider_api::pb::job_decider_server::JobDeciderServer;

/// The limits the layers apply.
#[derive(Clone, Debug)]
pub struct StackLimits {
    /// Decision slots.
    pub max_concurrent: usize,
    /// Longest wait for a slot.
    pub queue_timeout: Duration,
    /// Request bytes in flight across all calls.
    pub request_bytes_budget: usize,
    /// Largest request message.
    pub max_message_size: usize,
    /// Longest time to receive a request body.
    pub body_read_timeout: Duration,
    /// Longest decision.
    pub request_timeout: Duration,
    /// Set once shutdown has begun.
    pub draining: Arc<AtomicBool>,
}

/// The JobDecider service with every layer, ready for `Server::add_service`.
#[derive(Clone)]
pub struct Decider {
    inner: tower::util::BoxCloneSyncService<HttpRequest, HttpResponse, Infallible>,
}

impl NamedService for Decider {
    const NAME: &'static str = <JobDeciderServer<DeciderService> as NamedService>::NAME;
}

impl Service<HttpRequest> for Decider {
    type Response = HttpResponse;
    type Error = Infallible;
    type Future = ResponseFuture;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: HttpRequest) -> ResponseFuture {
        self.inner.call(request)
    }
}

/// Builds the service: the layers in their order, outermost first.
pub fn decider(limits: &StackLimits) -> Decider {
    let generated = JobDeciderServer::new(DeciderService)
        .max_decoding_message_size(limits.max_message_size)
        .max_encoding_message_size(usize::MAX);
    let layered = ServiceBuilder::new()
        .layer(ObserveLayer)
        .layer(DrainLayer::new(limits.draining.clone()))
        .layer(BodyLayer::new(
            limits.request_bytes_budget,
            limits.max_message_size,
            limits.body_read_timeout,
        ))
        .layer(SlotLayer::new(limits.max_concurrent, limits.queue_timeout))
        .layer(TimeoutLayer::new(limits.request_timeout))
        .layer(RewriteLayer)
        .service(generated);
    Decider {
        inner: tower::util::BoxCloneSyncService::new(layered),
    }
}
