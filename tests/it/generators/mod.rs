//! Shared builders for the integration tests and benchmarks: the crate's own
//! `job_decider_core::fixtures` (enabled for them by its `test-util` feature), under the
//! names these tests use.

#![allow(dead_code, unused_imports)]

pub use job_decider_core::fixtures::{
    JOB_NAME, JOB_UID, job as base_job, job_owner, running_pod, snapshot, t, template_labels,
    terminated,
};
