//! The API boundary: the only crate that knows the wire format.
//!
//! `pb` holds the generated protobuf types; `convert` turns wire messages into
//! core domain types (where bad input becomes field-named errors) and core
//! plans back into wire messages; `status` maps errors to gRPC statuses; the
//! pipeline module holds [`decide`], [`validate`] and [`decide_jobset`], the one
//! path the server and the CLI share. This file only declares and re-exports.

pub mod codec;
pub mod convert;
pub mod convert_jobset;
pub mod decoded_size;
pub mod explanation;
#[cfg(any(test, feature = "test-util"))]
pub mod fixtures;
pub mod lazy;
pub mod lean;
mod lean_decode;
pub mod pb;
mod pipeline;
mod pod_decode;
pub mod pod_details;
mod pod_fields;
pub mod safe_text;
pub mod status;
mod violations;
pub mod wire;
pub mod wire_time;
pub mod yaml_bounds;

pub use codec::DEFAULT_MAX_MESSAGE_SIZE;
pub use lazy::LazyDecideJobRequest;
pub use pipeline::{
    Decision, ExplainFlag, JobRequest, decide, decide_jobset, decide_jobset_until, decide_until,
    job_identity, validate, validate_jobset_request,
};
pub use status::ApiError;
