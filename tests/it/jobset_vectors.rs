//! The JobSet vectors: every `tests/vectors/jobset/*.yaml` is a DecideJobSetRequest in
//! proto3 JSON (written as YAML, the JobSet and Jobs as kubectl prints them) with the plan
//! JobSet's controller gives for it, as the reference and the KEP describe. The service must
//! give exactly that plan.

use std::path::Path;

use job_decider_api::convert_jobset::decide_jobset_request;
use job_decider_api::pb;

/// One vector file.
struct Vector {
    name: String,
    description: String,
    request: pb::DecideJobSetRequest,
    expected: pb::DecideJobSetResponse,
    /// `expected` as written, to catch fields the parser would silently ignore.
    expected_json: serde_json::Value,
}

fn load(path: &Path) -> Result<Vector, String> {
    let doc = crate::vector_files::load(path)?;
    Ok(Vector {
        name: doc.name,
        description: doc.description,
        request: serde_json::from_value(doc.request).map_err(|e| format!("request: {e}"))?,
        expected: serde_json::from_value(doc.expected.clone())
            .map_err(|e| format!("expected: {e}"))?,
        expected_json: doc.expected,
    })
}

#[test]
fn every_jobset_vector_gives_the_expected_plan() {
    let files = crate::vector_files::yaml_files("vectors/jobset");
    assert!(
        files.len() >= 20,
        "expected at least 20 JobSet vectors, found {}",
        files.len()
    );
    let mut failures = Vec::new();
    for path in &files {
        let file = crate::vector_files::file_name(path);
        let vector = match load(path) {
            Ok(v) => v,
            Err(e) => {
                failures.push(format!("{file}: cannot load: {e}"));
                continue;
            }
        };
        assert_eq!(
            format!("{}.yaml", vector.name),
            file,
            "a vector's name matches its file"
        );
        assert!(
            !vector.description.is_empty(),
            "{file}: every vector says what it shows and where it comes from"
        );
        // The expected plan must be written in canonical proto3 JSON, so no field is ignored.
        let canonical = utc_as_z(serde_json::to_value(&vector.expected).unwrap_or_default());
        if canonical != utc_as_z(vector.expected_json.clone()) {
            failures.push(format!(
                "{file}: `expected` is not canonical proto3 JSON (unknown or default-valued \
                 fields?)\n--- as written\n{}\n--- canonical\n{}",
                pretty(&vector.expected_json),
                pretty(&canonical)
            ));
            continue;
        }
        let got = match decide_jobset_request(vector.request) {
            Ok(resp) => resp,
            Err(violations) => {
                let list: Vec<String> = violations.iter().map(ToString::to_string).collect();
                failures.push(format!("{file}: rejected: {}", list.join("; ")));
                continue;
            }
        };
        if got != vector.expected {
            let want = serde_json::to_value(&vector.expected).unwrap_or_default();
            let got = serde_json::to_value(&got).unwrap_or_default();
            failures.push(format!(
                "{file}: plan differs\n--- expected\n{}\n--- got\n{}",
                pretty(&want),
                pretty(&got)
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} vectors failed:\n\n{}",
        failures.len(),
        files.len(),
        failures.join("\n\n")
    );
}

/// pbjson writes UTC as `+00:00`; Kubernetes (and the vectors) write `Z`.
fn utc_as_z(v: serde_json::Value) -> serde_json::Value {
    use serde_json::Value;
    match v {
        Value::String(s) => match s.strip_suffix("+00:00") {
            Some(t) if s.as_bytes().get(10) == Some(&b'T') => Value::String(format!("{t}Z")),
            _ => Value::String(s),
        },
        Value::Array(a) => Value::Array(a.into_iter().map(utc_as_z).collect()),
        Value::Object(o) => Value::Object(o.into_iter().map(|(k, v)| (k, utc_as_z(v))).collect()),
        other => other,
    }
}

fn pretty(v: &serde_json::Value) -> String {
    serde_yaml::to_string(v).unwrap_or_default()
}
