//! The integration tests, in one binary so that the crates are linked once
//! rather than once per file. `tests/scale.rs`, `tests/amplification.rs` and
//! `tests/memory.rs` stay binaries of their own: they count their process's
//! allocations or memory, which other tests running beside them would spoil;
//! so does `tests/lifecycle.rs`, which reads the process-wide in-flight gauges.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
mod generators;
mod vector_files;

mod authority;
mod cli;
mod client;
mod client_cases;
mod cluster;
mod crate_edges;
mod explain;
mod failure_policy_cli;
mod failure_policy_wire;
mod hostile;
mod hostile_input;
mod hostile_patterns;
mod hostile_server;
mod hostile_sim;
mod jobset_vectors;
mod k8s_openapi;
mod kubectl;
mod lean;
mod module_edges;
mod observability;
mod overload;
mod properties;
mod regressions;
mod server;
mod simulate;
mod simulate_carry;
mod simulate_monte_carlo;
mod simulate_render;
mod strict;
mod tls;
mod unix_socket;
mod vectors;
