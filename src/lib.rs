//! job-decider: the Kubernetes Job controller's decisions as a stateless service.
//!
//! Start at [`core::sync::decide`] for the decision itself, [`api`] for the wire
//! contract and its conversions, and [`server`] for the gRPC service around it.
//! ARCHITECTURE.md maps the modules and the invariants they keep.

pub mod api;
pub mod cli;
pub mod core;
pub mod explain;
pub mod server;
