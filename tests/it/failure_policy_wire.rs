//! The extended failure policy document through the real server: read from
//! the request's field or the Job's annotation, its violations named, and the
//! pods' failure details read alike from both pod encodings.

use crate::common::TestServer;
use job_decider::server::ServerConfig;
use job_decider_api::lean::lean_request;
use job_decider_api::{fixtures, pb};
use tonic::Code;
use tonic_types::StatusExt;

const DOC: &str = "apiVersion: job-decider.dev/v1alpha1\nkind: FailurePolicy\n\
    rules:\n- name: oom\n  action: Count\n  onContainerReasons: {values: [OOMKilled]}\n\
    pendingTimeout: {seconds: 60}\nnodeAvoidance: {}\n";

fn fields(status: &tonic::Status) -> Vec<String> {
    status
        .get_error_details()
        .bad_request()
        .map(|b| b.field_violations.iter().map(|v| v.field.clone()).collect())
        .unwrap_or_default()
}

/// The realistic request with its first pods failed (OOMKilled, on their nodes) and one stuck.
fn request_with_failures(document: &str) -> pb::DecideJobRequest {
    let mut request = fixtures::realistic_request(20);
    request.failure_policy = document.to_string();
    for (i, pod) in request.pods.iter_mut().enumerate().take(3) {
        let status = pod.status.get_or_insert_default();
        status.phase = "Failed".into();
        status.reason = "Error".into();
        status.message = format!("pod {i} failed");
        status.container_statuses[0].state = Some(pb::ContainerState {
            terminated: Some(pb::ContainerStateTerminated {
                exit_code: 137,
                reason: "OOMKilled".into(),
                message: "out of memory".into(),
                finished_at: Some(pbjson_types::Timestamp {
                    seconds: fixtures::NOW_SECONDS - 10,
                    nanos: 0,
                }),
                ..Default::default()
            }),
            ..Default::default()
        });
    }
    if let Some(status) = request.pods[3].status.as_mut() {
        status.phase = "Pending".into();
        status.container_statuses[0].state = Some(pb::ContainerState {
            waiting: Some(pb::ContainerStateWaiting {
                reason: "ImagePullBackOff".into(),
                message: "back-off pulling".into(),
            }),
            ..Default::default()
        });
    }
    request
}

#[tokio::test]
async fn both_encodings_get_the_same_answer_with_a_document() {
    let server = TestServer::start(ServerConfig::default()).await;
    let mut client = server.client().await;
    for document in ["", DOC] {
        let request = request_with_failures(document);
        let lean = lean_request(request.clone()).expect("every pod has a lean form");
        // The lean pods carry the details exactly when the Job has a document.
        assert_eq!(
            lean.lean_pods[0].node_name.is_empty(),
            document.is_empty(),
            "document {document:?}"
        );
        assert_eq!(
            lean.lean_pods[3].container_statuses[0]
                .waiting_reason
                .is_empty(),
            document.is_empty()
        );
        let full = client.decide_job(request).await.expect("full").into_inner();
        let lean = client.decide_job(lean).await.expect("lean").into_inner();
        assert!(!full.actions.is_empty());
        assert_eq!(full, lean, "document {document:?}");
    }
}

#[tokio::test]
async fn a_bad_document_is_invalid_argument_naming_its_field() {
    let server = TestServer::start(ServerConfig::default()).await;
    let mut client = server.client().await;
    let bad = DOC.replace("seconds: 60", "seconds: 0");
    let status = client
        .decide_job(request_with_failures(&bad))
        .await
        .expect_err("rejected");
    assert_eq!(status.code(), Code::InvalidArgument);
    assert_eq!(fields(&status), ["failurePolicy.pendingTimeout.seconds"]);

    // The same document in the Job's annotation is named there, by DecideJob and ValidateJob.
    let mut request = request_with_failures("");
    let mut job = request.job.take().expect("job");
    job.metadata
        .get_or_insert_default()
        .annotations
        .insert("job-decider.dev/failure-policy".into(), bad);
    request.job = Some(job.clone());
    let status = client.decide_job(request).await.expect_err("rejected");
    let path = "metadata.annotations[job-decider.dev/failure-policy].pendingTimeout.seconds";
    assert_eq!(fields(&status), [path]);
    let response = client
        .validate_job(pb::ValidateJobRequest {
            job: Some(job),
            failure_policy: String::new(),
        })
        .await
        .expect("answered")
        .into_inner();
    let named: Vec<&str> = response
        .violations
        .iter()
        .map(|v| v.field.as_str())
        .collect();
    assert_eq!(named, [path]);
}

#[tokio::test]
async fn the_explanation_names_the_document_rule_that_handled_the_pods() {
    let server = TestServer::start(ServerConfig::default()).await;
    let mut client = server.client().await;
    let mut request = request_with_failures(DOC);
    request.explain = true;
    let response = client
        .decide_job(request)
        .await
        .expect("decided")
        .into_inner();
    let explanation = response.explanation.expect("asked for");
    let handled: Vec<(&str, &str, i32)> = explanation
        .pods
        .iter()
        .filter(|g| !g.extended_rule.is_empty())
        .map(|g| (g.extended_rule.as_str(), g.verdict.as_str(), g.count))
        .collect();
    // The three OOM-killed pods, by the document's rule named oom (Count); no upstream rule index.
    assert_eq!(
        handled,
        [("oom", "FailedCounted", 3)],
        "{:#?}",
        explanation.pods
    );
    assert!(
        explanation
            .pods
            .iter()
            .filter(|g| !g.extended_rule.is_empty())
            .all(|g| g.rule_index.is_none())
    );
    // Without a document the same pods name no extended rule.
    let mut plain = request_with_failures("");
    plain.explain = true;
    let response = client
        .decide_job(plain)
        .await
        .expect("decided")
        .into_inner();
    let explanation = response.explanation.expect("asked for");
    assert!(explanation.pods.iter().all(|g| g.extended_rule.is_empty()));
}

/// The FailureTarget messages the response's status updates write.
fn failure_target_messages(response: &pb::DecideJobResponse) -> Vec<String> {
    response
        .actions
        .iter()
        .filter_map(|a| match &a.kind {
            Some(pb::action::Kind::UpdateStatus(u)) => u.status.as_ref(),
            _ => None,
        })
        .flat_map(|s| &s.conditions)
        .filter(|c| c.r#type == "FailureTarget")
        .map(|c| c.message.clone())
        .fold(Vec::new(), |mut seen, m| {
            // The status is written more than once in a plan; each message counts once.
            if !seen.contains(&m) {
                seen.push(m);
            }
            seen
        })
}

#[tokio::test]
async fn failure_message_detailed_explains_the_failure_on_the_wire() {
    let server = TestServer::start(ServerConfig::default()).await;
    let mut client = server.client().await;
    let answer = |document: &str| {
        let mut request = request_with_failures(document);
        let spec = request.job.as_mut().and_then(|j| j.spec.as_mut());
        spec.expect("spec").backoff_limit = Some(0);
        request
    };
    let upstream = "Job has reached the specified backoff limit";
    let plain = client.decide_job(answer(DOC)).await.expect("decided");
    assert_eq!(failure_target_messages(&plain.into_inner()), [upstream]);
    let detailed_doc = format!("{DOC}failureMessage: Detailed\n");
    for request in [
        answer(&detailed_doc),
        lean_request(answer(&detailed_doc)).expect("lean"),
    ] {
        let response = client.decide_job(request).await.expect("decided");
        let messages = failure_target_messages(&response.into_inner());
        assert_eq!(messages.len(), 1, "{messages:?}");
        // The three pods failed at the same moment: the smallest name explains it.
        let want = format!("{upstream} (pod {}-0-", fixtures::JOB_NAME);
        assert!(messages[0].starts_with(&want), "{messages:?}");
        assert!(
            messages[0].ends_with(
                ": container trainer exit code 137 reason OOMKilled; rule rules[0] \"oom\" \
                 action Count; limit backoffLimit=0)"
            ),
            "{messages:?}"
        );
    }
    // A value the schema does not have is refused at its field.
    let status = client
        .decide_job(answer(&format!("{DOC}failureMessage: detailed\n")))
        .await
        .expect_err("rejected");
    assert_eq!(status.code(), Code::InvalidArgument);
    assert_eq!(fields(&status), ["failurePolicy.failureMessage"]);
}

/// The realistic request (Ready pods started 600 s ago, now) with pod 0 not
/// Ready since just after its start and pod 1 Ready; both carry their start
/// time, the rest none.
fn request_with_start_times(document: &str) -> pb::DecideJobRequest {
    let mut request = fixtures::realistic_request(6);
    request.failure_policy = document.to_string();
    let start = Some(pbjson_types::Timestamp {
        seconds: fixtures::NOW_SECONDS - 600,
        nanos: 0,
    });
    for (i, pod) in request.pods.iter_mut().enumerate().take(2) {
        let status = pod.status.get_or_insert_default();
        status.start_time = start;
        if i == 0 {
            for c in &mut status.conditions {
                if c.r#type == "Ready" {
                    c.status = "False".into();
                    c.reason = "ContainersNotReady".into();
                }
            }
        }
    }
    request
}

fn fail_pods(response: &pb::DecideJobResponse) -> Vec<(String, String, String)> {
    response
        .actions
        .iter()
        .filter_map(|a| match &a.kind {
            Some(pb::action::Kind::FailPods(f)) => Some(f.pods.iter()),
            _ => None,
        })
        .flatten()
        .map(|f| {
            (
                f.pod.as_ref().map(|p| p.name.clone()).unwrap_or_default(),
                f.condition_type.clone(),
                f.reason.clone(),
            )
        })
        .collect()
}

/// readyTimeout and attemptDeadline through the server: the start time is read
/// from both pod encodings, the not-Ready pod fails for its ready timeout
/// (with Ready's reason), the Ready one for its attempt deadline; without the
/// document nothing is failed and the lean pods carry no start time.
#[tokio::test]
async fn ready_timeout_and_attempt_deadline_fail_pods_through_both_encodings() {
    const TIMEOUTS: &str = "apiVersion: job-decider.dev/v1alpha1\nkind: FailurePolicy\n\
        readyTimeout: {seconds: 60}\nattemptDeadline: {seconds: 300, action: Ignore}\n";
    let server = TestServer::start(ServerConfig::default()).await;
    let mut client = server.client().await;
    let names: Vec<String> = request_with_start_times("")
        .pods
        .iter()
        .take(2)
        .filter_map(|p| p.metadata.as_ref().map(|m| m.name.clone()))
        .collect();
    for document in ["", TIMEOUTS] {
        let request = request_with_start_times(document);
        let lean = lean_request(request.clone()).expect("every pod has a lean form");
        assert_eq!(
            lean.lean_pods[0].start_time.is_some(),
            !document.is_empty(),
            "document {document:?}"
        );
        let full = client.decide_job(request).await.expect("full").into_inner();
        let lean = client.decide_job(lean).await.expect("lean").into_inner();
        assert_eq!(full, lean, "document {document:?}");
        let mut want = vec![
            (
                names[0].clone(),
                "job-decider.dev/ReadyTimeout".to_string(),
                "ContainersNotReady".to_string(),
            ),
            (
                names[1].clone(),
                "job-decider.dev/AttemptDeadlineExceeded".to_string(),
                "DeadlineExceeded".to_string(),
            ),
        ];
        want.sort();
        if document.is_empty() {
            want.clear();
        }
        let mut got = fail_pods(&full);
        got.sort();
        assert_eq!(got, want, "document {document:?}");
    }
    // A bad value is named at its field.
    let bad = TIMEOUTS.replace("seconds: 300", "seconds: 2592001");
    let status = client
        .decide_job(request_with_start_times(&bad))
        .await
        .expect_err("rejected");
    assert_eq!(fields(&status), ["failurePolicy.attemptDeadline.seconds"]);
}
