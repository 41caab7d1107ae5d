//! The decision core: plain functions over plain data.
//!
//! Architecture invariant: nothing in `core` imports `api`, `server` or `cli`,
//! reads a clock, touches a socket or a file, or depends on tokio, tonic or
//! prost. Every input arrives in a [`model::Snapshot`]; every output leaves in a
//! [`plan::Plan`]. On a valid snapshot the core cannot fail.
//!
//! Regular expressions from requests (`onMessage`, JobSet's message patterns) go through one
//! matcher, [`message_pattern`], whose search costs one DFA step per byte.

pub mod api_names;
pub mod backoff;
pub mod cancel;
pub mod conditions;
pub mod defaults;
pub mod explain;
pub mod extended;
pub mod go_text;
pub mod index_set;
pub mod indexed;
pub mod jobset;
pub mod jobset_validate;
pub(crate) mod k8s_names;
pub mod manage;
pub mod matched_on;
pub mod message_pattern;
pub mod model;
pub mod plan;
pub mod pod_failure_policy;
pub mod pod_order;
pub mod selector;
pub mod success_policy;
pub mod sync;
pub(crate) mod sync_pod;
pub mod text;
pub mod time;
pub mod tracking;
pub mod validate;
pub mod violation;

#[cfg(any(test, feature = "test-util"))]
pub mod fixtures;
