//! `job-decider-k8s`: k8s-openapi's `Job` and `Pod`, decided in process, must
//! decide exactly as the server does on the same objects — the same snapshot
//! and plan for every vector and bundled example, and the same field-named
//! violations for a bad object.

use std::path::{Path, PathBuf};

use job_decider::documents;
use job_decider_api::wire_time::time_from_pb;
use job_decider_api::{self as api, pb};
use job_decider_core::model::{BackoffRecord, ControllerState, Expectations};
use job_decider_core::validate::Violation;
use job_decider_k8s::{Inputs, Job, Pod};
use k8s_openapi::api::core::v1 as core_v1;
use serde_json::Value;

/// The proto3 JSON int64 fields of a Job or Pod that the contract names: proto3
/// JSON writes them as strings (the vectors do), kubectl and k8s-openapi as numbers.
const INT64_FIELDS: &[&str] = &[
    "generation",
    "activeDeadlineSeconds",
    "deletionGracePeriodSeconds",
];

/// A proto3-JSON object in the shape kubectl prints: int64 strings become numbers.
/// A string that is not a number is left alone, so k8s-openapi rejects it loudly.
fn kubectl_shape(value: &mut Value) {
    match value {
        Value::Object(map) => {
            for (key, field) in map.iter_mut() {
                if INT64_FIELDS.contains(&key.as_str())
                    && let Value::String(text) = field
                    && let Ok(n) = text.parse::<i64>()
                {
                    *field = Value::from(n);
                } else {
                    kubectl_shape(field);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(kubectl_shape),
        _ => {}
    }
}

/// The non-object inputs of a request, as the k8s path takes them.
fn inputs_of(request: &pb::DecideJobRequest) -> Inputs {
    let now = request
        .now
        .as_ref()
        .and_then(time_from_pb)
        .expect("every vector has a valid now");
    let backoff = request.state.as_ref().and_then(|s| s.backoff.as_ref());
    Inputs {
        nodes: request.nodes.iter().map(k8s_node).collect(),
        missing_nodes: request.missing_nodes.clone(),
        now,
        state: ControllerState {
            backoff: backoff.map_or_else(BackoffRecord::default, |b| BackoffRecord {
                failures_after_last_success: b.failures_after_last_success,
                last_failure_time: b.last_failure_time.as_ref().and_then(time_from_pb),
            }),
        },
        controller_name: request.controller_name.clone(),
        expectations: request
            .expectations
            .as_ref()
            .map(|e| Expectations {
                pod_changes_pending: e.pod_changes_pending,
                finalizer_removals_pending: e.finalizer_removals_pending.iter().cloned().collect(),
            })
            .unwrap_or_default(),
        explain: request.explain,
    }
}

/// A request's node as the k8s-openapi Node a node cache holds: its name, taints and
/// conditions, nothing the request does not carry.
fn k8s_node(node: &pb::Node) -> core_v1::Node {
    core_v1::Node {
        metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
            name: Some(node.name.clone()),
            ..Default::default()
        },
        spec: Some(core_v1::NodeSpec {
            taints: Some(
                node.taints
                    .iter()
                    .map(|t| core_v1::Taint {
                        key: t.key.clone(),
                        effect: t.effect.clone(),
                        ..Default::default()
                    })
                    .collect(),
            ),
            ..Default::default()
        }),
        status: Some(core_v1::NodeStatus {
            conditions: Some(
                node.conditions
                    .iter()
                    .map(|c| core_v1::NodeCondition {
                        type_: c.r#type.clone(),
                        status: c.status.clone(),
                        ..Default::default()
                    })
                    .collect(),
            ),
            ..Default::default()
        }),
    }
}

/// A Job and its pods (JSON values in kubectl's shape) as k8s-openapi types.
fn k8s_objects(job: &Value, pods: &[Value]) -> Result<(Job, Vec<Pod>), String> {
    let job: Job = serde_json::from_value(job.clone()).map_err(|e| format!("job: {e}"))?;
    let pods = pods
        .iter()
        .enumerate()
        .map(|(i, p)| serde_json::from_value(p.clone()).map_err(|e| format!("pods[{i}]: {e}")))
        .collect::<Result<Vec<Pod>, _>>()?;
    Ok((job, pods))
}

/// Decides one snapshot both ways; `Err` says how they differ.
fn both_paths_agree(
    server_request: pb::DecideJobRequest,
    job: &Value,
    pods: &[Value],
) -> Result<(), String> {
    let inputs = inputs_of(&server_request);
    let (job, pods) = k8s_objects(job, pods)?;
    let server = api::decide(api::LazyDecideJobRequest::from(server_request));
    let k8s = job_decider_k8s::decide(&job, &pods, &inputs);
    match (server, k8s) {
        (Ok(server), Ok(k8s)) => {
            if server.snapshot != k8s.snapshot {
                return Err(format!(
                    "snapshots differ\n--- server\n{:#?}\n--- k8s-openapi\n{:#?}",
                    server.snapshot, k8s.snapshot
                ));
            }
            if server.response() != k8s.response() {
                return Err(format!(
                    "plans differ\n--- server\n{:#?}\n--- k8s-openapi\n{:#?}",
                    server.response(),
                    k8s.response()
                ));
            }
            Ok(())
        }
        (Err(server), Err(k8s)) => {
            let server = match server {
                api::ApiError::BadRequest { violations, .. } => violations,
                other => return Err(format!("server: unexpected {other}")),
            };
            if server.as_slice() != k8s.violations() {
                return Err(format!(
                    "violations differ\n--- server\n{server:#?}\n--- k8s-openapi\n{:#?}",
                    k8s.violations()
                ));
            }
            Ok(())
        }
        (server, k8s) => Err(format!(
            "one path decided, the other did not: server {:?}, k8s-openapi {:?}",
            server.map(|d| d.plan),
            k8s.map(|d| d.plan)
        )),
    }
}

#[test]
fn every_vector_decides_alike_from_k8s_openapi_objects() {
    let files = crate::vector_files::yaml_files("vectors");
    assert!(
        files.len() >= 120,
        "expected the vector set, found {}",
        files.len()
    );
    let (decided, failures) = vectors_decide_alike(&files);
    assert!(
        failures.is_empty(),
        "{} of {} vectors differ:\n\n{}",
        failures.len(),
        decided,
        failures.join("\n\n")
    );
}

/// The extended failure policy's vectors too, nodes and missing nodes included
/// (the k8s path takes them as k8s-openapi Nodes and names). A vector whose document
/// is in the request's field is left out: the k8s path reads a Job's annotation only.
#[test]
fn every_extended_vector_decides_alike_from_k8s_openapi_objects() {
    let files = crate::vector_files::yaml_files("vectors-extended");
    let (decided, failures) = vectors_decide_alike(&files);
    assert!(
        failures.is_empty(),
        "{} of {} extended vectors differ:\n\n{}",
        failures.len(),
        decided,
        failures.join("\n\n")
    );
    let with_nodes = files
        .iter()
        .filter_map(|p| crate::vector_files::load(p).ok())
        .filter(|d| d.request.get("nodes").is_some() && d.request.get("missingNodes").is_some())
        .count();
    assert!(
        decided >= 20 && with_nodes > 0,
        "{decided} extended vectors decided, {with_nodes} with nodes and missing nodes"
    );
}

/// Decides each vector of `files` both ways; how many were decided, and one message
/// per vector whose two paths differ.
fn vectors_decide_alike(files: &[PathBuf]) -> (usize, Vec<String>) {
    let mut failures = Vec::new();
    let mut decided = 0;
    for path in files {
        let file = crate::vector_files::file_name(path);
        let doc = crate::vector_files::load(path).expect("vector loads");
        let server_request: pb::DecideJobRequest =
            serde_json::from_value(doc.request.clone()).expect("vector request parses");
        if !server_request.failure_policy.is_empty() {
            continue;
        }
        let mut job = doc.request["job"].clone();
        kubectl_shape(&mut job);
        let mut pods = doc.request["pods"].as_array().cloned().unwrap_or_default();
        pods.iter_mut().for_each(kubectl_shape);
        decided += 1;
        if let Err(e) = both_paths_agree(server_request, &job, &pods) {
            failures.push(format!("{file}: {e}"));
        }
    }
    (decided, failures)
}

/// A bundled example's Job and pods files (JSON or YAML, as kubectl prints them).
fn example_files(dir: &Path) -> Option<(PathBuf, PathBuf)> {
    ["json", "yaml"].iter().find_map(|ext| {
        let job = dir.join(format!("job.{ext}"));
        let pods = dir.join(format!("pods.{ext}"));
        (job.exists() && pods.exists()).then_some((job, pods))
    })
}

/// A kubectl document as a JSON value (YAML is a superset of JSON).
fn document(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).expect("example reads");
    serde_yaml::from_str(&text).expect("example parses")
}

/// The pods of a PodList or List document.
fn items(list: &Value) -> Vec<Value> {
    list["items"]
        .as_array()
        .cloned()
        .expect("a list with items")
}

/// The request the server's own reader makes of kubectl documents (as `job-decider decide` does).
fn server_request(job: &Value, pods: &Value, now: &str) -> pb::DecideJobRequest {
    pb::DecideJobRequest {
        job: Some(documents::parse_job(&job.to_string(), "job").expect("job reads")),
        pods: documents::parse_pods(&pods.to_string(), "pods").expect("pods read"),
        now: Some(documents::parse_time(now, "now").expect("now parses")),
        ..Default::default()
    }
}

#[test]
fn every_bundled_example_decides_alike_from_k8s_openapi_objects() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples");
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(&root)
        .expect("examples/ reads")
        .map(|e| e.expect("entry").path())
        .collect();
    dirs.sort();
    let mut decided = 0;
    for dir in &dirs {
        // JobSet examples have no job/pods pair.
        let Some((job_path, pods_path)) = example_files(dir) else {
            continue;
        };
        let (job, pods) = (document(&job_path), document(&pods_path));
        let request = server_request(&job, &pods, "2025-06-02T10:00:00Z");
        if let Err(e) = both_paths_agree(request, &job, &items(&pods)) {
            panic!("{}: {e}", dir.display());
        }
        decided += 1;
    }
    assert!(decided >= 4, "expected the Job examples, decided {decided}");
}

/// The bundled FailJob example's Job and pods, for the bad-object cases.
fn failjob_example() -> (Value, Value) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/kep-3329-failjob-exit-code-42");
    (
        document(&dir.join("job.json")),
        document(&dir.join("pods.json")),
    )
}

/// The violations of the k8s-openapi path for a bad object, checked equal to the server's.
fn k8s_violations(job: &Value, pods: &Value) -> Vec<Violation> {
    let request = server_request(job, pods, "2025-06-02T10:00:00Z");
    let inputs = inputs_of(&request);
    both_paths_agree(request, job, &items(pods)).unwrap_or_else(|e| panic!("{e}"));
    let (job, pods) = k8s_objects(job, &items(pods)).expect("objects deserialize");
    match job_decider_k8s::decide(&job, &pods, &inputs) {
        Ok(d) => panic!("a bad object was decided: {:?}", d.plan),
        Err(e) => e.violations().to_vec(),
    }
}

#[test]
fn a_bad_k8s_openapi_object_is_rejected_with_the_servers_field_path() {
    // Each case breaks the bundled example one way; the path is the one the server
    // gives for the same JSON (checked equal above, inside k8s_violations).
    type Break = fn(&mut Value, &mut Value);
    let cases: [(&str, Break, &str); 5] = [
        (
            "no uid",
            |job, _| {
                job["metadata"].as_object_mut().unwrap().remove("uid");
            },
            "job.metadata.uid",
        ),
        (
            "negative active",
            |job, _| job["status"]["active"] = Value::from(-1),
            "job.status.active",
        ),
        (
            "a start time past 2262",
            |job, _| job["status"]["startTime"] = Value::from("2300-01-01T00:00:00Z"),
            "job.status.startTime",
        ),
        (
            "an unknown pod phase",
            |_, pods| pods["items"][1]["status"]["phase"] = Value::from("Exploded"),
            "pods[1].status.phase",
        ),
        (
            "a pod twice",
            |_, pods| {
                let first = pods["items"][0].clone();
                pods["items"].as_array_mut().unwrap().push(first);
            },
            "pods[3].metadata.uid",
        ),
    ];
    for (what, break_it, field) in cases {
        let (mut job, mut pods) = failjob_example();
        break_it(&mut job, &mut pods);
        let violations = k8s_violations(&job, &pods);
        assert!(
            violations.iter().any(|v| v.field == field),
            "{what}: expected a violation of {field}, got {violations:#?}"
        );
    }
}

#[test]
fn decide_files_example_decides_as_the_cli() {
    // The example's own code (its `run`), on the bundled kubectl files, against the CLI's.
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/kep-3329-failjob-exit-code-42");
    let (job, pods) = (dir.join("job.json"), dir.join("pods.json"));
    let now = "2025-06-02T10:00:00Z";
    let args: Vec<String> = [&job, &pods]
        .iter()
        .map(|p| p.display().to_string())
        .chain([now.to_string()])
        .collect();
    let printed = decide_files::run(&args).expect("the example decides");
    let from_example: pb::DecideJobResponse =
        serde_json::from_str(&printed).expect("the example prints a DecideJobResponse");
    let cli = job_decider::cli::decide(&job_decider::cli::DecideArgs {
        snapshot: job_decider::cli::SnapshotArgs {
            job: Some(job.clone()),
            pods: Some(pods.clone()),
            now: Some(now.to_string()),
            ..Default::default()
        },
        output: job_decider::cli::Output::Json,
        explain: false,
    })
    .expect("the CLI decides");
    let from_cli: pb::DecideJobResponse = serde_json::from_str(&cli).expect("CLI JSON");
    assert!(!from_cli.actions.is_empty(), "the example has a plan");
    assert_eq!(from_example, from_cli);

    // A Job without a uid: the example fails, naming the field.
    let mut bad = document(&job);
    bad["metadata"].as_object_mut().unwrap().remove("uid");
    let tmp = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(tmp.path(), bad.to_string()).unwrap();
    let args = [
        tmp.path().display().to_string(),
        pods.display().to_string(),
        now.to_string(),
    ];
    let err = decide_files::run(&args).expect_err("a Job without a uid is rejected");
    assert!(err.contains("job.metadata.uid"), "{err}");
}

#[allow(dead_code)]
#[path = "../../crates/k8s/examples/decide_files.rs"]
mod decide_files;

#[test]
fn edge_objects_decide_alike_from_k8s_openapi_objects() {
    // Shapes the vectors do not hold; both paths must agree, whether they decide or reject.
    type Change = fn(&mut Value, &mut Value);
    let cases: [(&str, Change); 7] = [
        // Seconds -1 and half a second: the wire's nanos are never negative.
        ("a start time before 1970 with a fraction", |job, _| {
            job["status"]["startTime"] = Value::from("1969-12-31T23:59:59.5Z");
        }),
        ("a Job being deleted", |job, _| {
            job["metadata"]["deletionTimestamp"] = Value::from("2025-06-02T09:59:00.25Z");
        }),
        ("a pod with no spec and no status", |_, pods| {
            let pod = pods["items"][1].as_object_mut().unwrap();
            pod.remove("spec");
            pod.remove("status");
        }),
        ("a sidecar init container", |_, pods| {
            pods["items"][1]["spec"]["initContainers"] =
                serde_json::json!([{"name": "proxy", "restartPolicy": "Always"}]);
        }),
        ("an onPodConditions pattern without a status", |job, _| {
            let rules = &mut job["spec"]["podFailurePolicy"]["rules"];
            rules[1]["onPodConditions"][0]
                .as_object_mut()
                .unwrap()
                .remove("status");
        }),
        ("a pod whose controller is another Job", |_, pods| {
            pods["items"][2]["metadata"]["ownerReferences"][0]["uid"] = Value::from("other");
        }),
        // Everything the extended failure policy reads of a pod, copied by both paths.
        ("a Job with a failure policy document", |job, pods| {
            job["metadata"]["annotations"] = serde_json::json!({
                "job-decider.dev/failure-policy": "apiVersion: job-decider.dev/v1alpha1\n\
                    kind: FailurePolicy\nrules:\n- {action: Count, onContainerReasons: {values: [OOMKilled]}}\n\
                    pendingTimeout: {seconds: 60}\n"
            });
            let pod = &mut pods["items"][1];
            pod["metadata"]["annotations"]["job-decider.dev/failed-nodes"] = Value::from("n1,n2");
            pod["spec"]["nodeName"] = Value::from("n3");
            pod["status"]["reason"] = Value::from("UnexpectedAdmissionError");
            pod["status"]["message"] = Value::from("admission failed");
            pod["status"]["conditions"] = serde_json::json!([{
                "type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                "lastTransitionTime": "2025-06-02T09:59:00Z"
            }]);
            pod["status"]["initContainerStatuses"] = serde_json::json!([{
                "name": "setup", "image": "i", "imageID": "", "ready": false, "restartCount": 0,
                "state": {"waiting": {"reason": "ImagePullBackOff", "message": "pull"}}
            }]);
        }),
    ];
    for (what, change) in cases {
        let (mut job, mut pods) = failjob_example();
        change(&mut job, &mut pods);
        let request = server_request(&job, &pods, "2025-06-02T10:00:00Z");
        if let Err(e) = both_paths_agree(request, &job, &items(&pods)) {
            panic!("{what}: {e}");
        }
    }
}
