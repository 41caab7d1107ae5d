//! The shared test vectors: every `tests/vectors/*.yaml` is a DecideJobRequest
//! in Kubernetes-native proto3 JSON (written as YAML) with the response
//! upstream's controller gives (recorded by the conformance harness). The
//! service must give exactly that response. The Go harness reads the same files.

use std::path::Path;

use job_decider_api::lean::lean_request;
use job_decider_api::{self as api, pb};

/// One vector file: a request and the response expected for it.
struct Vector {
    name: String,
    request: pb::DecideJobRequest,
    expected: pb::DecideJobResponse,
}

/// Puts a response in the canonical form the conformance harness (and the client
/// conformance suite) compares: uncounted UIDs sorted (upstream appends them in its
/// informer's order).
pub(crate) fn canonical(mut response: pb::DecideJobResponse) -> pb::DecideJobResponse {
    for action in &mut response.actions {
        if let Some(pb::action::Kind::UpdateStatus(update)) = &mut action.kind
            && let Some(uncounted) = update
                .status
                .as_mut()
                .and_then(|s| s.uncounted_terminated_pods.as_mut())
        {
            uncounted.succeeded.sort();
            uncounted.failed.sort();
        }
    }
    response
}

/// Vector names that conformance/known-differences.md excuses, with the reason
/// there; the Go harness checks those field by field.
pub(crate) fn known_differences() -> Vec<String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("conformance/known-differences.md");
    let text = std::fs::read_to_string(&path).unwrap_or_default();
    let mut in_fence = false;
    let mut names = Vec::new();
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            in_fence = !in_fence;
            continue;
        }
        let item = line.trim_start();
        if in_fence || !(item.starts_with("- `") || item.starts_with("* `")) {
            continue;
        }
        if let Some(name) = item[3..].split('`').next()
            && !name.contains('*')
        {
            names.push(name.to_string());
        }
    }
    names
}

fn load(path: &Path) -> Result<Vector, String> {
    let doc = crate::vector_files::load(path)?;
    Ok(Vector {
        name: doc.name,
        request: serde_json::from_value(doc.request).map_err(|e| format!("request: {e}"))?,
        expected: serde_json::from_value(doc.expected).map_err(|e| format!("expected: {e}"))?,
    })
}

#[test]
fn every_vector_gives_the_upstream_response() {
    let files = crate::vector_files::yaml_files("vectors");
    assert!(
        files.len() >= 120,
        "expected the vector set, found {} files",
        files.len()
    );
    let failures = check_vectors(&files, &known_differences());
    assert!(
        failures.is_empty(),
        "{} of {} vectors failed:\n\n{}",
        failures.len(),
        files.len(),
        failures.join("\n\n")
    );
}

/// The extended failure policy's vectors (`tests/vectors-extended/`): requests
/// whose Job carries a failure policy document (or whose request does), with the
/// response job-decider gives, recorded once and read by hand against
/// docs/failure-policy.md (each description says what to look for). Upstream has
/// no such policy, so the Go harness does not read them; every feature has some.
#[test]
fn every_extended_vector_gives_its_recorded_response() {
    let files = crate::vector_files::yaml_files("vectors-extended");
    let names: Vec<String> = files
        .iter()
        .map(|p| crate::vector_files::file_name(p))
        .collect();
    for feature in [
        "pending-timeout-",
        "backoff-",
        "named-rule-",
        "ignored-failure-immediate",
        "pod-reason-",
        "container-reason-and-message",
        "exit-ranges-and-signals",
        "retry-limit-",
        "node-avoidance-",
        "failure-message-",
        "attempt-deadline-",
        "ready-timeout-",
        "terminating-timeout-",
    ] {
        assert!(
            names.iter().any(|n| n.starts_with(feature)),
            "no extended vector for {feature}: {names:?}"
        );
    }
    let failures = check_vectors(&files, &[]);
    assert!(
        failures.is_empty(),
        "{} of {} extended vectors failed:\n\n{}",
        failures.len(),
        files.len(),
        failures.join("\n\n")
    );
}

/// Decides every vector of `files` (but the `excused`) twice, with its pods as
/// Kubernetes-shaped `Pod`s and as `LeanPod`s, through the server's own path; one
/// message per vector that does not give its expected response.
fn check_vectors(files: &[std::path::PathBuf], excused: &[String]) -> Vec<String> {
    let mut failures = Vec::new();
    for path in files {
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
        if excused.contains(&vector.name) {
            continue;
        }
        let lean = match lean_request(vector.request.clone()) {
            Ok(lean) => lean,
            Err((i, e)) => {
                failures.push(format!("{file}: pods[{i}] has no lean form: {e}"));
                continue;
            }
        };
        for (encoding, request) in [("pods", vector.request), ("leanPods", lean)] {
            // Through the server's own path: each pod left encoded until it is converted.
            let got = match api::decide(api::LazyDecideJobRequest::from(request)) {
                Ok(decision) => canonical(decision.response()),
                Err(e) => {
                    failures.push(format!("{file} ({encoding}): rejected: {e}"));
                    continue;
                }
            };
            if got != vector.expected {
                let want = serde_json::to_string_pretty(&vector.expected).unwrap_or_default();
                let got = serde_json::to_string_pretty(&got).unwrap_or_default();
                failures.push(format!(
                    "{file} ({encoding}): response differs\n--- expected\n{want}\n--- got\n{got}"
                ));
            }
        }
    }
    failures
}

/// tests/vectors/README.md names what each file-name prefix covers; a vector whose
/// prefix has no row there would leave a newcomer guessing what it exercises.
#[test]
fn every_vector_prefix_is_explained_in_the_vectors_readme() {
    let readme_path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/vectors/README.md");
    let readme = std::fs::read_to_string(&readme_path).expect("tests/vectors/README.md");
    // The prefixes the table names: every `code` span in a table row's first cell.
    let explained: Vec<&str> = readme
        .lines()
        .filter_map(|line| line.strip_prefix("| "))
        .filter_map(|row| row.split(" |").next())
        .flat_map(|cell| cell.split('`').skip(1).step_by(2))
        .collect();
    let mut unexplained = Vec::new();
    for file in crate::vector_files::yaml_files("vectors") {
        let stem = file
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or_default();
        let prefix = stem.split('-').next().unwrap_or_default();
        if !explained.contains(&prefix) {
            unexplained.push(stem.to_string());
        }
    }
    assert!(
        unexplained.is_empty(),
        "vectors whose prefix has no row in tests/vectors/README.md: {unexplained:?}"
    );
}
