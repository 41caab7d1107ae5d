//! Generated protobuf messages, the tonic service and their proto3 JSON impls.
//!
//! Everything here is written by `build.rs`; nothing is edited by hand.

#![allow(missing_docs, clippy::all, clippy::pedantic)]

include!(concat!(env!("OUT_DIR"), "/jobdecider.v1.rs"));
include!(concat!(env!("OUT_DIR"), "/jobdecider.v1.serde.rs"));
// The service, generated apart: DecideJob takes a `LazyDecideJobRequest` (build.rs).
include!(concat!(env!("OUT_DIR"), "/server/jobdecider.v1.rs"));

/// The encoded descriptor set of the contract, for server reflection.
pub const FILE_DESCRIPTOR_SET: &[u8] =
    include_bytes!(concat!(env!("OUT_DIR"), "/jobdecider_descriptor.bin"));
