//! The DecideJob request as the server receives it: wire-compatible with
//! `pb::DecideJobRequest`, except that each pod stays encoded — a slice of the
//! received body, not a copy — until conversion decodes, converts and drops
//! it, one at a time.
//!
//! Why: a decoded pod takes several times its wire size (one allocation per
//! string, map and list). Decoded all at once, 100,000 pods would sit in memory
//! beside the body they came from and the domain model built from them. Here
//! the body is held once, and each pod lives decoded only while its domain form
//! is built. `repeated bytes` and `repeated Pod` share a wire type
//! (length-delimited), so any client's encoding of a `DecideJobRequest` decodes
//! as this message.

use bytes::Bytes;

use crate::pb;

/// A `DecideJobRequest` whose pods are still encoded `Pod` messages.
///
/// Field numbers and types match `jobdecider.v1.DecideJobRequest` field for
/// field; only `pods` differs, as `bytes` instead of `Pod`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct LazyDecideJobRequest {
    /// The Job, as read from the API server.
    #[prost(message, optional, tag = "1")]
    pub job: Option<pb::Job>,
    /// The pods, each an encoded `Pod`.
    #[prost(bytes = "bytes", repeated, tag = "2")]
    pub pods: Vec<Bytes>,
    /// The current time.
    #[prost(message, optional, tag = "3")]
    pub now: Option<pbjson_types::Timestamp>,
    /// The state returned by the previous DecideJob for this Job.
    #[prost(message, optional, tag = "4")]
    pub state: Option<pb::ControllerState>,
    /// The controller the caller decides for; empty means the built-in one.
    #[prost(string, tag = "5")]
    pub controller_name: String,
    /// What the caller has done but not yet seen in its caches.
    #[prost(message, optional, tag = "6")]
    pub expectations: Option<pb::Expectations>,
    /// The pods in the lean encoding, each an encoded `LeanPod`.
    #[prost(bytes = "bytes", repeated, tag = "7")]
    pub lean_pods: Vec<Bytes>,
    /// Also return the explanation.
    #[prost(bool, tag = "8")]
    pub explain: bool,
    /// The extended failure policy document; empty when the request has none.
    #[prost(string, tag = "9")]
    pub failure_policy: String,
    /// The nodes of the Job's terminating pods, as the caller's cache shows them.
    #[prost(message, repeated, tag = "10")]
    pub nodes: Vec<pb::Node>,
    /// Nodes such pods name that the caller's synced cache does not hold.
    #[prost(string, repeated, tag = "11")]
    pub missing_nodes: Vec<String>,
}

impl From<pb::DecideJobRequest> for LazyDecideJobRequest {
    /// Encodes each pod again: for tests and tools that hold a decoded request.
    fn from(request: pb::DecideJobRequest) -> Self {
        use prost::Message;
        LazyDecideJobRequest {
            job: request.job,
            pods: request
                .pods
                .iter()
                .map(|p| p.encode_to_vec().into())
                .collect(),
            now: request.now,
            state: request.state,
            controller_name: request.controller_name,
            expectations: request.expectations,
            lean_pods: request
                .lean_pods
                .iter()
                .map(|p| p.encode_to_vec().into())
                .collect(),
            explain: request.explain,
            failure_policy: request.failure_policy,
            nodes: request.nodes,
            missing_nodes: request.missing_nodes,
        }
    }
}
