use super::*;

use std::time::Duration;

use http::{Request, Response};
use k8s_openapi::api::batch::v1::JobSpec;
use k8s_openapi::api::core::v1::{Container, PodTemplateSpec};
use kube::client::Body;
use serde_json::Value;
use tower_test::mock;

/// One request the mocked API server received.
#[derive(Debug, Clone)]
struct Call {
    method: String,
    path: String,
    content_type: String,
    body: Value,
}

impl Call {
    fn short(&self) -> String {
        format!("{} {}", self.method, self.path)
    }
}

/// Answers each request with `respond`'s status and JSON body and records
/// it, until the client is dropped.
async fn serve(
    mut handle: mock::Handle<Request<Body>, Response<Body>>,
    respond: impl Fn(&Call, usize) -> (u16, Value),
) -> Vec<Call> {
    let mut calls = Vec::new();
    while let Some((request, send)) = handle.next_request().await {
        let method = request.method().to_string();
        let path = request.uri().path().to_string();
        let content_type = request
            .headers()
            .get(http::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_string();
        let bytes = request.into_body().collect_bytes().await.unwrap();
        let body = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        let call = Call {
            method,
            path,
            content_type,
            body,
        };
        let (code, answer) = respond(&call, calls.len());
        calls.push(call);
        let response = Response::builder()
            .status(code)
            .header(http::header::CONTENT_TYPE, "application/json")
            .body(Body::from(serde_json::to_vec(&answer).unwrap()))
            .unwrap();
        send.send_response(response);
    }
    calls
}

/// Applies `actions` to [`job`] through a mocked API server; the calls it saw.
async fn run(
    actions: Vec<pb::action::Kind>,
    respond: impl Fn(&Call, usize) -> (u16, Value) + Send + 'static,
) -> (Result<Outcome, Error>, Vec<Call>) {
    let plan = pb::DecideJobResponse {
        actions: actions
            .into_iter()
            .map(|k| pb::Action { kind: Some(k) })
            .collect(),
        ..Default::default()
    };
    run_plan(plan, respond).await
}

async fn run_plan(
    plan: pb::DecideJobResponse,
    respond: impl Fn(&Call, usize) -> (u16, Value) + Send + 'static,
) -> (Result<Outcome, Error>, Vec<Call>) {
    let (service, handle) = mock::pair::<Request<Body>, Response<Body>>();
    let server = tokio::spawn(serve(handle, respond));
    let applier = Applier::new(kube::Client::new(service, "default"));
    let result = applier.apply(&job(), &plan).await;
    drop(applier);
    let calls = tokio::time::timeout(Duration::from_secs(10), server)
        .await
        .expect("the mocked server ends once the client is dropped")
        .unwrap();
    (result, calls)
}

/// Every write succeeds: the object sent comes back, with a resourceVersion.
fn ok(call: &Call, n: usize) -> (u16, Value) {
    let mut body = call.body.clone();
    if body.is_object() {
        body["metadata"]["resourceVersion"] = json!(format!("rv-{n}"));
    } else {
        body = json!({"kind": "Status", "apiVersion": "v1", "status": "Success", "code": 200});
    }
    (200, body)
}

fn status(code: u16, reason: &str) -> (u16, Value) {
    (
        code,
        json!({"kind": "Status", "apiVersion": "v1", "status": "Failure",
               "message": reason, "reason": reason, "code": code}),
    )
}

fn job() -> Job {
    Job {
        metadata: ObjectMeta {
            name: Some("pi".into()),
            namespace: Some("ns".into()),
            uid: Some("job-uid".into()),
            resource_version: Some("decided-rv".into()),
            ..Default::default()
        },
        spec: Some(JobSpec {
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta {
                    labels: Some([("app".to_string(), "pi".to_string())].into()),
                    ..Default::default()
                }),
                spec: Some(PodSpec {
                    containers: vec![Container {
                        name: "main".into(),
                        image: Some("busybox".into()),
                        ..Default::default()
                    }],
                    ..Default::default()
                }),
            },
            ..Default::default()
        }),
        status: None,
    }
}

fn create(n: usize) -> pb::action::Kind {
    pb::action::Kind::CreatePods(pb::CreatePods {
        pods: (0..n)
            .map(|i| pb::PodCreation {
                name: format!("pi-{i}"),
                finalizers: vec![JOB_TRACKING_FINALIZER.into()],
                ..Default::default()
            })
            .collect(),
    })
}

fn pod_ref(name: &str) -> pb::PodReference {
    pb::PodReference {
        name: name.into(),
        uid: format!("{name}-uid"),
    }
}

fn update_status(active: i32) -> pb::action::Kind {
    pb::action::Kind::UpdateStatus(pb::UpdateStatus {
        status: Some(pb::JobStatus {
            active,
            ..Default::default()
        }),
    })
}

const PODS: &str = "/api/v1/namespaces/ns/pods";
const STATUS: &str = "/apis/batch/v1/namespaces/ns/jobs/pi/status";

#[tokio::test]
async fn an_unknown_action_refuses_the_whole_plan_before_any_write() {
    let plan = pb::DecideJobResponse {
        actions: vec![
            pb::Action {
                kind: Some(pb::action::Kind::RemoveFinalizers(pb::RemoveFinalizers {
                    pods: vec![pod_ref("a")],
                })),
            },
            // What a newer decider's kind decodes to.
            pb::Action { kind: None },
        ],
        ..Default::default()
    };
    let (result, calls) = run_plan(plan, ok).await;
    assert!(calls.is_empty(), "wrote before refusing: {calls:?}");
    match result {
        Err(Error::Refused {
            index: 2,
            total: 2,
            reason: Refusal::UnknownAction,
        }) => {}
        other => panic!("want the plan refused at action 2: {other:?}"),
    }
}

#[tokio::test]
async fn actions_run_in_order_with_the_template_and_the_decided_resource_version() {
    let (result, calls) = run(
        vec![
            create(1),
            update_status(1),
            pb::action::Kind::RemoveFinalizers(pb::RemoveFinalizers {
                pods: vec![pod_ref("old")],
            }),
        ],
        ok,
    )
    .await;
    let outcome = result.expect("the plan applies");
    assert!(outcome.complete && outcome.status_written && outcome.state_holds());
    assert_eq!(outcome.applied, 3);
    let order: Vec<_> = calls.iter().map(Call::short).collect();
    assert_eq!(
        order,
        [
            format!("POST {PODS}"),
            format!("PUT {STATUS}"),
            format!("PATCH {PODS}/old"),
        ]
    );
    // The pod: the template's labels and containers, the creation's name and finalizer.
    let pod = &calls[0].body;
    assert_eq!(pod["metadata"]["name"], "pi-0");
    assert_eq!(pod["metadata"]["labels"]["app"], "pi");
    assert_eq!(pod["metadata"]["finalizers"][0], JOB_TRACKING_FINALIZER);
    assert_eq!(pod["spec"]["containers"][0]["image"], "busybox");
    // The status write carries the resourceVersion the decision was made on.
    assert_eq!(calls[1].body["metadata"]["resourceVersion"], "decided-rv");
    assert_eq!(calls[1].body["status"]["active"], 1);
    // The finalizer removal: a strategic merge patch carrying the pod's uid.
    assert_eq!(
        calls[2].content_type,
        "application/strategic-merge-patch+json"
    );
    assert_eq!(
        calls[2].body,
        json!({"metadata": {
            "$deleteFromPrimitiveList/finalizers": [JOB_TRACKING_FINALIZER],
            "uid": "old-uid",
        }})
    );
    assert_eq!(
        outcome.job.metadata.resource_version.as_deref(),
        Some("rv-1")
    );
}

#[tokio::test]
async fn a_second_status_write_carries_the_resource_version_the_first_returned() {
    let (result, calls) = run(vec![update_status(1), update_status(2)], ok).await;
    result.expect("the plan applies");
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[0].body["metadata"]["resourceVersion"], "decided-rv");
    assert_eq!(calls[1].body["metadata"]["resourceVersion"], "rv-0");
    assert_eq!(calls[1].body["status"]["active"], 2);
}

#[tokio::test]
async fn a_conflict_on_the_status_stops_the_plan_unretried() {
    let (result, calls) = run(
        vec![
            update_status(1),
            pb::action::Kind::RemoveFinalizers(pb::RemoveFinalizers {
                pods: vec![pod_ref("a")],
            }),
        ],
        |call, n| {
            if call.path == STATUS {
                status(409, "Conflict")
            } else {
                ok(call, n)
            }
        },
    )
    .await;
    let order: Vec<_> = calls.iter().map(Call::short).collect();
    assert_eq!(order, [format!("PUT {STATUS}")], "retried or went on");
    let err = result.expect_err("a conflict fails the plan");
    assert!(err.is_conflict(), "{err}");
    assert!(!err.state_holds());
    match &err {
        Error::Action {
            index: 1,
            action: "update_status",
            outcome,
            ..
        } => assert_eq!(outcome.applied, 0),
        other => panic!("want action 1 failed: {other:?}"),
    }
}

#[tokio::test]
async fn deletes_carry_the_uid_precondition_remove_the_finalizer_first_and_ignore_gone_pods() {
    let (result, calls) = run(
        vec![pb::action::Kind::DeletePods(pb::DeletePods {
            pods: vec![pb::PodDeletion {
                name: "a".into(),
                uid: "a-uid".into(),
                remove_finalizer_first: true,
                ready: false,
            }],
        })],
        |call, n| {
            if call.method == "DELETE" {
                status(404, "NotFound")
            } else {
                ok(call, n)
            }
        },
    )
    .await;
    result.expect("a pod already gone is no error");
    let order: Vec<_> = calls.iter().map(Call::short).collect();
    assert_eq!(
        order,
        [format!("PATCH {PODS}/a"), format!("DELETE {PODS}/a")]
    );
    assert_eq!(calls[0].body["metadata"]["uid"], "a-uid");
    assert_eq!(calls[1].body["preconditions"], json!({"uid": "a-uid"}));
}

#[tokio::test]
async fn a_failed_delete_stops_the_plan() {
    let (result, calls) = run(
        vec![
            pb::action::Kind::DeletePods(pb::DeletePods {
                pods: vec![pb::PodDeletion {
                    name: "a".into(),
                    uid: "a-uid".into(),
                    ..Default::default()
                }],
            }),
            update_status(0),
        ],
        |call, n| {
            if call.method == "DELETE" {
                // What a UID precondition that no longer holds answers.
                status(409, "Conflict")
            } else {
                ok(call, n)
            }
        },
    )
    .await;
    assert_eq!(calls.len(), 1, "{calls:?}");
    assert!(result.expect_err("the delete failed").is_conflict());
}

#[tokio::test]
async fn creations_go_in_slow_start_batches_stopping_after_a_failed_batch() {
    // Batches 1, 2, 4: a failure in the second batch (calls 1 and 2) leaves
    // the last four never sent.
    let (result, calls) = run(vec![create(7), update_status(1)], |call, n| {
        if n == 1 {
            status(500, "InternalError")
        } else {
            ok(call, n)
        }
    })
    .await;
    assert_eq!(
        calls.len(),
        3,
        "{:?}",
        calls.iter().map(Call::short).collect::<Vec<_>>()
    );
    assert!(calls.iter().all(|c| c.method == "POST"));
    let err = result.expect_err("a creation failed");
    assert!(!err.is_conflict());
    assert!(
        matches!(
            err,
            Error::Action {
                index: 1,
                action: "create_pods",
                ..
            }
        ),
        "{err}"
    );

    // All succeed: 7 creations, every one sent.
    let (result, calls) = run(vec![create(7)], ok).await;
    result.expect("the plan applies");
    assert_eq!(calls.len(), 7);
}

#[tokio::test]
async fn fail_pods_patch_the_status_then_delete_guarded() {
    let (result, calls) = run(
        vec![pb::action::Kind::FailPods(pb::FailPods {
            pods: vec![pb::PodFailure {
                pod: Some(pod_ref("a")),
                condition_type: "DisruptionTarget".into(),
                reason: "Evicted".into(),
                message: "node gone".into(),
                force_delete: false,
            }],
        })],
        ok,
    )
    .await;
    result.expect("the plan applies");
    let order: Vec<_> = calls.iter().map(Call::short).collect();
    assert_eq!(
        order,
        [format!("PATCH {PODS}/a/status"), format!("DELETE {PODS}/a")]
    );
    assert_eq!(calls[0].body["status"]["phase"], "Failed");
    assert_eq!(
        calls[0].body["status"]["conditions"][0]["type"],
        "DisruptionTarget"
    );
    assert_eq!(calls[0].body["metadata"]["uid"], "a-uid");
    assert_eq!(calls[1].body["preconditions"]["uid"], "a-uid");
}

#[tokio::test]
async fn adoption_rereads_the_job_and_refuses_a_recreated_one() {
    let (result, calls) = run(
        vec![pb::action::Kind::AdoptPods(pb::AdoptPods {
            pods: vec![pod_ref("orphan")],
        })],
        |call, n| {
            if call.method == "GET" {
                let mut j = serde_json::to_value(job()).unwrap();
                j["metadata"]["uid"] = json!("another-uid");
                (200, j)
            } else {
                ok(call, n)
            }
        },
    )
    .await;
    assert_eq!(calls.len(), 1, "{calls:?}");
    assert!(matches!(
        result,
        Err(Error::Action {
            source: ActionError::JobRecreated { .. },
            ..
        })
    ));
}

#[test]
fn a_pod_from_the_template_avoids_the_plan_nodes_in_every_required_term() {
    let pc = pb::PodCreation {
        generate_name: "pi-".into(),
        avoid_nodes: Some(pb::AvoidNodes {
            nodes: vec!["n1".into(), "n2".into()],
            mode: "Required".into(),
        }),
        ..Default::default()
    };
    let pod = pod_from_template(&job(), &pc).unwrap();
    assert_eq!(pod.metadata.generate_name.as_deref(), Some("pi-"));
    let terms = pod
        .spec
        .and_then(|s| s.affinity)
        .and_then(|a| a.node_affinity)
        .and_then(|n| n.required_during_scheduling_ignored_during_execution)
        .unwrap()
        .node_selector_terms;
    assert_eq!(terms.len(), 1);
    let fields = terms[0].match_fields.clone().unwrap();
    assert_eq!(fields.len(), 2);
    assert_eq!(fields[1].values.as_deref(), Some(&["n2".to_string()][..]));

    let bad = pb::PodCreation {
        avoid_nodes: Some(pb::AvoidNodes {
            nodes: vec!["n1".into()],
            mode: "Sometimes".into(),
        }),
        ..Default::default()
    };
    assert!(pod_from_template(&job(), &bad).is_err());
}
