//! Memory of reading a large pods file: a JSON PodList is read item by item,
//! so reading it holds the pods it yields and little more, never the whole
//! file as one JSON value tree (which takes several times the file's size).
//!
//! Bytes are counted by a counting allocator, so the bound is exact and does
//! not depend on the machine's load. In its own test binary: every allocation
//! of the process counts, so only one measurement runs at a time.
// The counting allocator is the one unsafe thing here.
#![allow(unsafe_code)]
// A panic in a test helper is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod counting_alloc;

use std::sync::Mutex;

use job_decider::documents::{self, UnknownFields};
use serde_json::Value;

#[global_allocator]
static ALLOCATOR: counting_alloc::Counting = counting_alloc::Counting;

/// One measurement at a time (the test harness runs tests on threads).
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// Measured (debug and release builds alike) at about 0.5 bytes held per
/// byte of the file, for the pods themselves; reading the file whole as one
/// value took about 4.
const MAX_PEAK_PER_FILE_BYTE: f64 = 1.0;

/// A PodList of `n` copies of the example's failed pod with unique names and
/// uids, printed as `kubectl get pods -o json` prints it (`items` before `kind`).
fn pod_list(n: usize) -> String {
    let example: Value = serde_json::from_str(include_str!(
        "../examples/kep-3329-failjob-exit-code-42/pods.json"
    ))
    .unwrap();
    let pod = example["items"][0].clone();
    let items: Vec<Value> = (0..n)
        .map(|i| {
            let mut pod = pod.clone();
            pod["metadata"]["name"] = Value::from(format!("pod-{i}"));
            pod["metadata"]["uid"] = Value::from(format!("uid-{i}"));
            pod
        })
        .collect();
    let list = serde_json::json!({
        "apiVersion": "v1",
        "items": items,
        "kind": "List",
        "metadata": {"resourceVersion": ""},
    });
    serde_json::to_string_pretty(&list).unwrap()
}

#[test]
fn a_large_pod_list_is_read_in_about_its_size() {
    // A failed measurement (a poisoned lock) leaves the next one valid.
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let pods = 3_000;
    let text = pod_list(pods);
    let (read, peak) = counting_alloc::measured(|| {
        documents::parse_pods_with(&text, "pods.json", UnknownFields::Reject)
    });
    let read = read.expect("the list reads");
    assert_eq!(read.value.len(), pods);
    assert_eq!(
        read.value[pods - 1]
            .metadata
            .as_ref()
            .map(|m| m.uid.as_str()),
        Some("uid-2999")
    );
    let per_byte = peak as f64 / text.len() as f64;
    eprintln!(
        "{} bytes read, {peak} bytes at the peak: {per_byte:.2} per byte",
        text.len()
    );
    assert!(
        per_byte <= MAX_PEAK_PER_FILE_BYTE,
        "reading {} bytes held {peak} bytes at the peak ({per_byte:.2} per byte of the file)",
        text.len()
    );
}

#[test]
fn a_large_bare_array_of_pods_is_read_in_about_its_size() {
    // A failed measurement (a poisoned lock) leaves the next one valid.
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let pods = 3_000;
    let list: Value = serde_json::from_str(&pod_list(pods)).unwrap();
    // `jq .items` of the list.
    let text = serde_json::to_string_pretty(&list["items"]).unwrap();
    drop(list);
    let (read, peak) = counting_alloc::measured(|| {
        documents::parse_pods_with(&text, "pods.json", UnknownFields::Warn)
    });
    assert_eq!(read.expect("the array reads").value.len(), pods);
    let per_byte = peak as f64 / text.len() as f64;
    eprintln!(
        "{} bytes read, {peak} bytes at the peak: {per_byte:.2} per byte",
        text.len()
    );
    assert!(
        per_byte <= MAX_PEAK_PER_FILE_BYTE,
        "reading {} bytes held {peak} bytes at the peak ({per_byte:.2} per byte of the file)",
        text.len()
    );
}
