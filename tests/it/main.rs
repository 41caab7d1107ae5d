//! The integration tests, in one binary so that the crates are linked once
//! rather than once per file. `tests/scale.rs` stays a binary of its own: it
//! counts every allocation of its process, which other tests running beside it
//! would spoil.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
mod generators;
mod vector_files;

mod cli;
mod crate_edges;
mod hostile;
mod jobset_vectors;
mod kubectl;
mod lean;
mod lifecycle;
mod properties;
mod regressions;
mod server;
mod tls;
mod vectors;
