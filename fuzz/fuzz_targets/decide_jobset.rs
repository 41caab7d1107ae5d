//! DecideJobSetRequest bytes → decode → convert → validate → decide → encode, as the server
//! does; a plan changes at most 500 Jobs each way and stays near its request's size.
#![no_main]

mod common;

use job_decider_api::{self as api, pb};
use job_decider_core::jobset::MAX_JOB_CHANGES_PER_PLAN;
use libfuzzer_sys::fuzz_target;
use prost::Message;

fuzz_target!(|data: &[u8]| {
    let Ok(request) = pb::DecideJobSetRequest::decode(data) else {
        return;
    };
    match api::decide_jobset(request) {
        Ok(response) => {
            assert!(response.jobs_to_create.len() <= MAX_JOB_CHANGES_PER_PLAN);
            for action in &response.actions {
                if let Some(pb::job_set_action::Kind::DeleteJobs(d)) = &action.kind {
                    assert!(d.jobs.len() <= MAX_JOB_CHANGES_PER_PLAN);
                }
            }
            // Twice the request (Jobs named once to delete, once in the explanation) plus a
            // bounded amount (500 creations, per-Job restart arrays of at most 10^6 replicas).
            let size = response.encoded_len();
            assert!(
                size <= 2 * data.len() + (4 << 20),
                "{} request bytes gave {size} response bytes",
                data.len()
            );
        }
        Err(err) => common::check_status(err),
    }
});
