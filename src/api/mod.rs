//! The API boundary: the only module that knows the wire format.
//!
//! `pb` holds the generated protobuf types; `convert` turns wire messages into
//! core domain types (where bad input becomes field-named errors) and core
//! plans back into wire messages; `status` maps errors to gRPC statuses.

/// Generated protobuf messages, the tonic service and their proto3 JSON impls.
#[allow(missing_docs, clippy::all, clippy::pedantic)]
pub mod pb {
    include!(concat!(env!("OUT_DIR"), "/jobdecider.v1.rs"));
    include!(concat!(env!("OUT_DIR"), "/jobdecider.v1.serde.rs"));

    /// The encoded descriptor set of the contract, for server reflection.
    pub const FILE_DESCRIPTOR_SET: &[u8] =
        include_bytes!(concat!(env!("OUT_DIR"), "/jobdecider_descriptor.bin"));
}

pub mod convert_jobset;
