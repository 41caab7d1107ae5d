//! The client conformance suite (`conformance/clients/`): `cases.jsonl` holds every shared
//! vector and the hand-written error cases as one JSON object a line, the requests and
//! answers in the canonical proto3 JSON every language's protobuf library reads. This file
//! keeps it current (`JD_WRITE_CLIENT_CASES=1` rewrites it) and is the Rust client's run of
//! it: each case through a live server with `job_decider_k8s::client::Connect`, compared as
//! the suite's README says.

use std::collections::BTreeMap;
use std::path::PathBuf;

use job_decider::server::ServerConfig;
use job_decider_api::pb;
use serde_json::{Value, json};
use tonic_types::StatusExt;

use crate::common::TestServer;
use job_decider_k8s::client::{Connect, Retrying};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A message in the canonical proto3 JSON: what the service's own types read and print.
fn canonical<T: serde::de::DeserializeOwned + serde::Serialize>(value: Value, what: &str) -> Value {
    let message: T = serde_json::from_value(value).unwrap_or_else(|e| panic!("{what}: {e}"));
    serde_json::to_value(&message).unwrap_or_else(|e| panic!("{what}: {e}"))
}

/// The suite, line by line: the Job vectors upstream agrees on, the extended vectors, the
/// JobSet vectors, then the error cases.
fn build_cases() -> Vec<String> {
    let excused = crate::vectors::known_differences();
    let mut lines = Vec::new();
    let sets: [(&str, &str, &str); 3] = [
        ("vectors", "tests/vectors", "DecideJob"),
        ("vectors-extended", "tests/vectors-extended", "DecideJob"),
        ("vectors/jobset", "tests/vectors/jobset", "DecideJobSet"),
    ];
    for (dir, source, method) in sets {
        for path in crate::vector_files::yaml_files(dir) {
            let doc = crate::vector_files::load(&path).unwrap_or_else(|e| panic!("{e}"));
            if excused.contains(&doc.name) {
                continue;
            }
            let (request, response) = if method == "DecideJob" {
                (
                    canonical::<pb::DecideJobRequest>(doc.request, &doc.name),
                    canonical::<pb::DecideJobResponse>(doc.expected, &doc.name),
                )
            } else {
                let request: pb::DecideJobSetRequest = serde_json::from_value(doc.request)
                    .unwrap_or_else(|e| panic!("{}: {e}", doc.name));
                // A few vectors test the reconciler on a JobSet JobSet's webhook refuses (a
                // rule naming no replicatedJob); the service refuses it too, so no client
                // can see the reconciler's answer to it.
                if job_decider_api::decide_jobset(request.clone()).is_err() {
                    continue;
                }
                (
                    serde_json::to_value(&request).expect("json"),
                    canonical::<pb::DecideJobSetResponse>(doc.expected, &doc.name),
                )
            };
            let file = crate::vector_files::file_name(&path);
            lines.push(json!({
                "name": doc.name,
                "source": format!("{source}/{file}"),
                "method": method,
                "request": request,
                "response": response,
            }));
        }
    }
    let errors = root().join("conformance/clients/errors.yaml");
    let doc: Value = serde_yaml::from_str(&std::fs::read_to_string(&errors).expect("errors.yaml"))
        .expect("errors.yaml is YAML");
    for case in doc["cases"].as_array().expect("a list of cases") {
        let name = case["name"].as_str().expect("a name");
        let method = case["method"].as_str().expect("a method");
        let request = match method {
            "DecideJob" => canonical::<pb::DecideJobRequest>(case["request"].clone(), name),
            "DecideJobSet" => canonical::<pb::DecideJobSetRequest>(case["request"].clone(), name),
            "ValidateJob" => canonical::<pb::ValidateJobRequest>(case["request"].clone(), name),
            other => panic!("{name}: unknown method {other}"),
        };
        let mut line = json!({
            "name": name,
            "source": "conformance/clients/errors.yaml",
            "method": method,
            "request": request,
        });
        if case.get("error").is_some() {
            line["error"] = case["error"].clone();
        } else {
            line["response"] = canonical::<pb::ValidateJobResponse>(case["response"].clone(), name);
        }
        lines.push(line);
    }
    lines
        .iter()
        .map(|l| serde_json::to_string(l).expect("json"))
        .collect()
}

fn cases_path() -> PathBuf {
    root().join("conformance/clients/cases.jsonl")
}

#[test]
fn the_client_conformance_cases_are_the_vectors_and_error_cases_of_today() {
    let built = build_cases();
    let path = cases_path();
    if std::env::var_os("JD_WRITE_CLIENT_CASES").is_some() {
        std::fs::write(&path, built.join("\n") + "\n").expect("write cases.jsonl");
    }
    let written = std::fs::read_to_string(&path).unwrap_or_default();
    let written: Vec<&str> = written.lines().collect();
    assert!(
        built.len() > 250,
        "the suite holds every vector: {}",
        built.len()
    );
    let name = |line: &str| -> String {
        serde_json::from_str::<Value>(line).map_or(String::new(), |v| v["name"].to_string())
    };
    for (i, line) in built.iter().enumerate() {
        let Some(old) = written.get(i) else {
            panic!(
                "{} lacks case {} ({}) on: rewrite it with JD_WRITE_CLIENT_CASES=1 cargo test --test it client_conformance",
                path.display(),
                i + 1,
                name(line)
            );
        };
        assert!(
            old == line,
            "{} line {} ({}) is stale: rewrite it with JD_WRITE_CLIENT_CASES=1 cargo test --test it client_conformance",
            path.display(),
            i + 1,
            name(line)
        );
    }
    assert_eq!(
        written.len(),
        built.len(),
        "{} has extra lines",
        path.display()
    );
}

/// A failed call as the suite writes an error: code, ErrorInfo reason, each violation's
/// field and reason.
fn error_of(status: &tonic::Status) -> Value {
    let details = status.get_error_details();
    let violations: Vec<Value> = details
        .bad_request()
        .map(|b| {
            b.field_violations
                .iter()
                .map(|v| json!({"field": v.field, "reason": v.reason}))
                .collect()
        })
        .unwrap_or_default();
    let code = format!("{:?}", status.code());
    // tonic's names are CamelCase; the suite uses gRPC's own names.
    let code = match code.as_str() {
        "InvalidArgument" => "INVALID_ARGUMENT".to_string(),
        other => other.to_uppercase(),
    };
    json!({
        "code": code,
        "reason": details.error_info().map(|i| i.reason.clone()).unwrap_or_default(),
        "violations": violations,
    })
}

/// What one case gave: `Ok(answer as JSON)` or `Err(error as the suite writes it)`.
async fn run_case(
    client: &mut pb::job_decider_client::JobDeciderClient<Retrying>,
    method: &str,
    request: Value,
) -> Result<Value, Value> {
    fn json<T: serde::Serialize>(message: &T) -> Value {
        serde_json::to_value(message).expect("an answer prints as JSON")
    }
    match method {
        "DecideJob" => {
            let request: pb::DecideJobRequest = serde_json::from_value(request).expect("request");
            client
                .decide_job(request)
                .await
                .map(|r| json(&crate::vectors::canonical(r.into_inner())))
                .map_err(|s| error_of(&s))
        }
        "DecideJobSet" => {
            let request: pb::DecideJobSetRequest =
                serde_json::from_value(request).expect("request");
            client
                .decide_job_set(request)
                .await
                .map(|r| json(&r.into_inner()))
                .map_err(|s| error_of(&s))
        }
        "ValidateJob" => {
            let request: pb::ValidateJobRequest = serde_json::from_value(request).expect("request");
            client
                .validate_job(request)
                .await
                .map(|r| json(&r.into_inner()))
                .map_err(|s| error_of(&s))
        }
        other => panic!("unknown method {other}"),
    }
}

/// The Rust client on `server`, connected as a user connects it.
async fn connect(server: &TestServer) -> pb::job_decider_client::JobDeciderClient<Retrying> {
    Connect::new(server.addr.to_string())
        .connect()
        .await
        .expect("connect")
}

#[tokio::test]
async fn every_client_conformance_case_passes_through_a_live_server() {
    let server = TestServer::start(ServerConfig::default()).await;
    let mut client = connect(&server).await;
    let text = std::fs::read_to_string(cases_path()).expect("cases.jsonl");
    let mut failures = Vec::new();
    let mut methods: BTreeMap<String, usize> = BTreeMap::new();
    for line in text.lines() {
        let case: Value = serde_json::from_str(line).expect("a case is JSON");
        let name = case["name"].as_str().unwrap_or_default().to_string();
        let method = case["method"].as_str().unwrap_or_default().to_string();
        *methods.entry(method.clone()).or_default() += 1;
        let got = run_case(&mut client, &method, case["request"].clone()).await;
        let want = match case.get("error") {
            Some(error) => Err(error.clone()),
            None => Ok(case["response"].clone()),
        };
        if got != want {
            failures.push(format!("{name}: want {want:?}\n  got {got:?}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    for method in ["DecideJob", "DecideJobSet", "ValidateJob"] {
        assert!(methods.get(method).is_some_and(|n| *n > 0), "{methods:?}");
    }
}

/// The suite's check is not vacuous: a case whose answer is changed fails it.
#[tokio::test]
async fn a_changed_answer_fails_its_client_conformance_case() {
    let server = TestServer::start(ServerConfig::default()).await;
    let mut client = connect(&server).await;
    let text = std::fs::read_to_string(cases_path()).expect("cases.jsonl");
    let first: Value = serde_json::from_str(text.lines().next().expect("a case")).expect("json");
    let got = run_case(&mut client, "DecideJob", first["request"].clone()).await;
    assert_eq!(got, Ok(first["response"].clone()));
    let mut changed = first["response"].clone();
    changed["actions"] = json!([]);
    assert_ne!(got, Ok(changed));
}
