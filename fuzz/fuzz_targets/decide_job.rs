//! DecideJobRequest bytes → decode → convert → validate → decide → encode, as the server does.
#![no_main]

mod common;

use job_decider::api::{self, pb};
use libfuzzer_sys::fuzz_target;
use prost::Message;

fuzz_target!(|data: &[u8]| {
    let Ok(request) = pb::DecideJobRequest::decode(data) else {
        return;
    };
    match api::decide(request) {
        Ok(decision) => {
            let response = decision.response();
            let _ = response.encode_to_vec();
        }
        Err(err) => common::check_status(err),
    }
});
