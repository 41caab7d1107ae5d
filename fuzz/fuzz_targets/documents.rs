//! The CLI's Kubernetes document readers (proto3 JSON and YAML, one or several documents).
#![no_main]

use job_decider::documents;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let _ = documents::parse_job(text, "fuzz");
    let _ = documents::parse_pods(text, "fuzz");
    let _ = documents::parse_jobs(text, "fuzz");
    let _ = documents::parse_jobset(text, "fuzz");
    let _ = documents::parse_state(text, "fuzz");
    let _ = documents::parse_time(text, "fuzz");
});
