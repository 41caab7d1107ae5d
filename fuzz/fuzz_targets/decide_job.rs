//! DecideJobRequest bytes → decode → convert → validate → decide → encode, as the server does
//! (pods kept encoded until each is converted: `LazyDecideJobRequest`; `LeanPod`s read by the
//! hand-written decoder); a plan stays within a bounded multiple of its request plus a bounded
//! amount.
#![no_main]

mod common;

use job_decider_api::{self as api, LazyDecideJobRequest};
use libfuzzer_sys::fuzz_target;
use prost::Message;

fuzz_target!(|data: &[u8]| {
    let Ok(request) = LazyDecideJobRequest::decode(data) else {
        return;
    };
    match api::decide(request) {
        Ok(decision) => {
            let size = decision.response().encode_to_vec().len();
            // The status written twice, names and uids repeated per pod, and at most 500
            // creations of bounded size.
            assert!(
                size <= 3 * data.len() + (4 << 20),
                "{} request bytes gave {size} response bytes",
                data.len()
            );
        }
        Err(err) => common::check_status(err),
    }
});
