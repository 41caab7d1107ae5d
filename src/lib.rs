//! job-decider: the Kubernetes Job controller's decisions as a stateless service.
//!
//! The decisions live in [`job_decider_core`] (start at `sync::decide`), the wire
//! contract and its conversions in [`job_decider_api`]; this crate is the binary
//! around them: the gRPC [`server`], the [`cli`], [`documents`] (Kubernetes YAML
//! and JSON files, checked against the [`schema`]), [`manifest`] (a Job as
//! written, taken as created), [`input`] (what every command reads and how it
//! fails), [`explain`] and [`cluster`] (a live Job and its
//! pods through kubeconfig). ARCHITECTURE.md maps the crates and the invariants
//! they keep.

pub mod address;
pub mod cli;
pub mod cluster;
pub mod documents;
pub mod explain;
pub mod input;
pub mod manifest;
pub mod report;
pub mod schema;
pub mod server;
pub mod simulate;
