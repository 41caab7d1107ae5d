use super::*;

use crate::wire_time::{NANOS_PER_SEC, time_from_pb};
use job_decider_core::extended::PENDING_TIMEOUT_CONDITION;
use job_decider_core::model::{
    CompletionMode, JOB_TRACKING_FINALIZER, PodPhase, PodReplacementPolicy,
};
use job_decider_core::plan::{EnvVarFromField, EventType};
use job_decider_core::time::Time;
use pbjson_types::Duration as PbDuration;
use std::collections::BTreeMap;
use std::time::Duration;

fn ts(seconds: i64) -> Timestamp {
    Timestamp { seconds, nanos: 0 }
}

fn meta(name: &str, uid: &str) -> pb::ObjectMeta {
    pb::ObjectMeta {
        name: name.into(),
        namespace: "default".into(),
        uid: uid.into(),
        ..Default::default()
    }
}

fn job() -> pb::Job {
    pb::Job {
        metadata: Some(meta("job", "job-uid")),
        spec: Some(pb::JobSpec::default()),
        ..Default::default()
    }
}

fn owned_pod(name: &str, uid: &str) -> pb::Pod {
    let mut metadata = meta(name, uid);
    metadata.owner_references.push(pb::OwnerReference {
        api_version: "batch/v1".into(),
        kind: "Job".into(),
        name: "job".into(),
        uid: "job-uid".into(),
        controller: Some(true),
        block_owner_deletion: Some(true),
    });
    metadata.finalizers.push(JOB_TRACKING_FINALIZER.into());
    pb::Pod {
        metadata: Some(metadata),
        status: Some(pb::PodStatus {
            phase: "Running".into(),
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn request() -> pb::DecideJobRequest {
    pb::DecideJobRequest {
        job: Some(job()),
        pods: vec![owned_pod("a", "a-uid"), owned_pod("b", "b-uid")],
        now: Some(ts(1_700_000_000)),
        ..Default::default()
    }
}

fn fields(result: Result<Snapshot, Vec<Violation>>) -> Vec<String> {
    match result {
        Ok(_) => Vec::new(),
        Err(violations) => violations.into_iter().map(|v| v.field).collect(),
    }
}

#[test]
fn valid_request_converts_with_defaults() {
    let snapshot = Snapshot::try_from(request()).expect("valid");
    let spec = &snapshot.job.spec;
    assert_eq!(spec.parallelism, 1);
    assert_eq!(spec.completions, Some(1));
    assert_eq!(spec.backoff_limit, 6);
    assert_eq!(spec.completion_mode, CompletionMode::NonIndexed);
    assert_eq!(
        spec.pod_replacement_policy,
        PodReplacementPolicy::TerminatingOrFailed
    );
    assert!(!spec.suspend && !spec.manual_selector);
    // Left empty: the core reads an empty controller name as upstream's own.
    assert_eq!(snapshot.controller_name, "");
    assert_eq!(
        snapshot.now,
        Time::from_unix_nanos(1_700_000_000 * NANOS_PER_SEC)
    );
    assert_eq!(snapshot.pods.len(), 2);
    let pod = &snapshot.pods[0];
    assert_eq!((pod.name.as_str(), pod.uid.as_str()), ("a", "a-uid"));
    assert!(pod.has_tracking_finalizer);
    assert_eq!(pod.phase, PodPhase::Running);
    assert_eq!(
        pod.controller.as_ref().map(|c| c.uid.as_str()),
        Some("job-uid")
    );
}

#[test]
fn defaults_follow_set_defaults_job() {
    let mut spec = pb::JobSpec {
        completions: Some(5),
        backoff_limit_per_index: Some(1),
        pod_failure_policy: Some(pb::PodFailurePolicy {
            rules: vec![pb::PodFailurePolicyRule {
                action: "Ignore".into(),
                on_pod_conditions: vec![pb::PodFailurePolicyOnPodConditionsPattern {
                    r#type: "DisruptionTarget".into(),
                    status: String::new(),
                }],
                ..Default::default()
            }],
        }),
        ..Default::default()
    };
    let converted = spec_from_pb(spec.clone());
    // Completions set, parallelism not: parallelism alone defaults to 1.
    assert_eq!((converted.parallelism, converted.completions), (1, Some(5)));
    assert_eq!(converted.backoff_limit, i32::MAX);
    assert_eq!(
        converted.pod_replacement_policy,
        PodReplacementPolicy::Failed
    );
    let rule = &converted.pod_failure_policy.expect("policy").rules[0];
    assert_eq!(rule.action, PodFailurePolicyAction::Ignore);
    assert_eq!(rule.on_pod_conditions[0].status, ConditionStatus::True);

    // Parallelism alone leaves completions unset (a work queue).
    spec = pb::JobSpec {
        parallelism: Some(3),
        ..Default::default()
    };
    let converted = spec_from_pb(spec);
    assert_eq!((converted.parallelism, converted.completions), (3, None));
    assert_eq!(converted.backoff_limit, 6);
}

#[test]
fn unknown_spec_enums_pass_through_for_validation() {
    let spec = pb::JobSpec {
        completion_mode: Some("Sideways".into()),
        pod_replacement_policy: Some("Sometimes".into()),
        template: Some(pb::PodTemplateSpec {
            metadata: None,
            spec: Some(pb::PodSpec {
                restart_policy: "Maybe".into(),
                ..Default::default()
            }),
        }),
        pod_failure_policy: Some(pb::PodFailurePolicy {
            rules: vec![pb::PodFailurePolicyRule {
                action: "Explode".into(),
                on_exit_codes: Some(pb::PodFailurePolicyOnExitCodesRequirement {
                    container_name: None,
                    operator: "Near".into(),
                    values: vec![1],
                }),
                on_pod_conditions: vec![],
            }],
        }),
        ..Default::default()
    };
    let converted = spec_from_pb(spec);
    assert_eq!(
        converted.completion_mode,
        CompletionMode::Unknown("Sideways".into())
    );
    assert_eq!(
        converted.pod_replacement_policy,
        PodReplacementPolicy::Unknown("Sometimes".into())
    );
    assert_eq!(
        converted.template.restart_policy,
        RestartPolicy::Other("Maybe".into())
    );
    let rule = &converted.pod_failure_policy.expect("policy").rules[0];
    assert_eq!(
        rule.action,
        PodFailurePolicyAction::Unknown("Explode".into())
    );
    assert_eq!(
        rule.on_exit_codes.as_ref().map(|e| e.operator.clone()),
        Some(ExitCodeOperator::Unknown("Near".into()))
    );
}

#[test]
fn missing_job_and_now_are_named() {
    let req = pb::DecideJobRequest::default();
    assert_eq!(fields(Snapshot::try_from(req)), ["job", "now"]);
}

#[test]
fn missing_identities_are_named() {
    let mut req = request();
    if let Some(m) = req.job.as_mut().and_then(|j| j.metadata.as_mut()) {
        m.uid.clear();
    }
    if let Some(m) = req.pods[1].metadata.as_mut() {
        m.uid.clear();
    }
    // The missing job uid is reported once, not again as every pod's foreign owner.
    assert_eq!(
        fields(Snapshot::try_from(req)),
        ["job.metadata.uid", "pods[1].metadata.uid"]
    );
}

#[test]
fn foreign_controller_is_named_by_owner_reference_index() {
    let mut req = request();
    if let Some(m) = req.pods[1].metadata.as_mut() {
        m.owner_references.insert(
            0,
            pb::OwnerReference {
                kind: "ConfigMap".into(),
                uid: "cm".into(),
                ..Default::default()
            },
        );
        m.owner_references[1].uid = "other-job".into();
    }
    assert_eq!(
        fields(Snapshot::try_from(req)),
        ["pods[1].metadata.ownerReferences[1].uid"]
    );
}

#[test]
fn negative_counts_are_named() {
    let mut req = request();
    if let Some(job) = req.job.as_mut() {
        job.status = Some(pb::JobStatus {
            active: -1,
            succeeded: -2,
            failed: -3,
            terminating: Some(-4),
            ready: Some(-5),
            ..Default::default()
        });
    }
    if let Some(status) = req.pods[0].status.as_mut() {
        status.container_statuses.push(pb::ContainerStatus {
            name: "main".into(),
            restart_count: -1,
            ..Default::default()
        });
    }
    assert_eq!(
        fields(Snapshot::try_from(req)),
        [
            "job.status.active",
            "job.status.succeeded",
            "job.status.failed",
            "job.status.terminating",
            "job.status.ready",
            "pods[0].status.containerStatuses[0].restartCount",
        ]
    );
}

#[test]
fn unknown_phase_and_read_condition_status_are_named() {
    let mut req = request();
    if let Some(status) = req.pods[0].status.as_mut() {
        status.phase = "Sleeping".into();
    }
    if let Some(status) = req.pods[1].status.as_mut() {
        for (t, s) in [("Ready", "Yes"), ("SomethingElse", "Whatever")] {
            status.conditions.push(pb::PodCondition {
                r#type: t.into(),
                status: s.into(),
                ..Default::default()
            });
        }
    }
    // Only the Ready condition is read, so only its status must be known.
    assert_eq!(
        fields(Snapshot::try_from(req.clone())),
        [
            "pods[0].status.phase",
            "pods[1].status.conditions[0].status"
        ]
    );
    // The values listed are the core's table (`api_names`), in the API's order.
    let details: Vec<String> = match Snapshot::try_from(req) {
        Ok(_) => Vec::new(),
        Err(violations) => violations.iter().map(|v| v.description()).collect(),
    };
    assert_eq!(
        details,
        [
            "pods[0].status.phase: Unsupported value: \"Sleeping\": supported values: \
             \"Pending\", \"Running\", \"Succeeded\", \"Failed\", \"Unknown\"",
            "pods[1].status.conditions[0].status: Unsupported value: \"Yes\": supported values: \
             \"True\", \"False\", \"Unknown\"",
        ]
    );
}

#[test]
fn out_of_range_timestamps_are_named() {
    let mut req = request();
    req.now = Some(Timestamp {
        seconds: i64::MAX / 2,
        nanos: 0,
    });
    if let Some(m) = req.pods[0].metadata.as_mut() {
        m.creation_timestamp = Some(Timestamp {
            seconds: 0,
            nanos: -1,
        });
    }
    assert_eq!(
        fields(Snapshot::try_from(req)),
        ["now", "pods[0].metadata.creationTimestamp"]
    );
}

#[test]
fn duplicate_pod_uids_are_named() {
    let mut req = request();
    req.pods.push(owned_pod("c", "a-uid"));
    assert_eq!(fields(Snapshot::try_from(req)), ["pods[2].metadata.uid"]);
}

#[test]
fn orphans_and_deleting_pods_convert() {
    let mut req = request();
    if let Some(m) = req.pods[0].metadata.as_mut() {
        m.owner_references.clear();
        m.deletion_timestamp = Some(ts(1_699_999_990));
        m.deletion_grace_period_seconds = Some(30);
    }
    let snapshot = Snapshot::try_from(req).expect("valid");
    let pod = &snapshot.pods[0];
    assert!(pod.controller.is_none());
    assert_eq!(pod.deletion.map(|d| d.grace_period_seconds), Some(Some(30)));
    assert!(pod.is_terminating());
}

#[test]
fn state_round_trips() {
    let state = ControllerState {
        backoff: BackoffRecord {
            failures_after_last_success: 3,
            last_failure_time: Some(Time::from_unix_nanos(1_700_000_000_123_456_789)),
        },
    };
    let mut errs = Violations::default();
    let back = state_from_pb(Some(state_to_pb(&state)), &mut errs);
    assert!(errs.is_empty());
    assert_eq!(back, state);
}

#[test]
fn times_round_trip_including_before_the_epoch() {
    for nanos in [0, 1, -1, -1_500_000_000, 1_700_000_000_999_999_999] {
        let t = Time::from_unix_nanos(nanos);
        assert_eq!(time_from_pb(&time_to_pb(t)), Some(t));
    }
}

#[test]
fn plan_converts_keeping_the_cores_order_of_creations() {
    let owner = OwnerRef {
        api_version: "batch/v1".into(),
        kind: "Job".into(),
        name: "job".into(),
        uid: "job-uid".into(),
    };
    let creation = |index| PodCreation {
        generate_name: "job-".into(),
        labels: BTreeMap::new(),
        annotations: BTreeMap::new(),
        finalizers: vec![JOB_TRACKING_FINALIZER.into()],
        hostname: String::new(),
        env: vec![EnvVarFromField {
            name: "JOB_COMPLETION_INDEX".into(),
            field_path: "metadata.annotations['batch.kubernetes.io/job-completion-index']".into(),
        }],
        completion_index: Some(index),
        owner: owner.clone(),
        avoid_nodes: None,
    };
    let status = JobStatus {
        conditions: vec![JobCondition {
            condition_type: JobConditionType::FailureTarget,
            status: ConditionStatus::True,
            last_probe_time: None,
            last_transition_time: Some(Time::from_unix_nanos(5)),
            reason: "PodFailurePolicy".into(),
            message: "m".into(),
        }],
        failed: 1,
        terminating: Some(0),
        uncounted_terminated_pods: Some(UncountedTerminatedPods::default()),
        ..Default::default()
    };
    let plan = Plan {
        actions: vec![
            Action::CreatePods(vec![creation(3), creation(1), creation(2)]),
            Action::UpdateStatus(Box::new(status)),
            Action::RecordEvent(Event {
                event_type: EventType::Warning,
                reason: "BackoffLimitExceeded".into(),
                message: "m".into(),
            }),
        ],
        requeue_after: Some(Duration::from_millis(1500)),
        state: ControllerState::default(),
        ..Plan::default()
    };
    let response = response_from_plan(&plan);
    let Some(pb::action::Kind::CreatePods(create)) = &response.actions[0].kind else {
        panic!("expected createPods, got {:?}", response.actions[0]);
    };
    // The order is the core's (manage creates indexes in ascending order); the wire keeps it.
    let indexes: Vec<_> = create.pods.iter().map(|p| p.completion_index).collect();
    assert_eq!(indexes, [Some(3), Some(1), Some(2)]);
    assert_eq!(
        create.pods[0]
            .owner_reference
            .as_ref()
            .and_then(|o| o.controller),
        Some(true)
    );
    let Some(pb::action::Kind::UpdateStatus(update)) = &response.actions[1].kind else {
        panic!("expected updateStatus");
    };
    let wire_status = update.status.as_ref().expect("status");
    assert_eq!(wire_status.conditions[0].r#type, "FailureTarget");
    assert_eq!(wire_status.conditions[0].status, "True");
    assert_eq!(wire_status.terminating, Some(0));
    let Some(pb::action::Kind::RecordEvent(event)) = &response.actions[2].kind else {
        panic!("expected recordEvent");
    };
    assert_eq!(event.r#type, "Warning");
    assert_eq!(
        response.requeue_after,
        Some(PbDuration {
            seconds: 1,
            nanos: 500_000_000
        })
    );
    // The wire status reads back as the same domain status.
    let mut errs = Violations::default();
    let back = job_status_from_pb(wire_status.clone(), "job", &mut errs);
    assert!(errs.is_empty());
    assert_eq!(Action::UpdateStatus(Box::new(back)), plan.actions[1]);
}

#[test]
fn validation_needs_no_identity() {
    let req = pb::ValidateJobRequest {
        job: Some(pb::Job {
            spec: Some(pb::JobSpec::default()),
            ..Default::default()
        }),
        ..Default::default()
    };
    assert!(job_for_validation(req).is_ok());
    let missing = job_for_validation(pb::ValidateJobRequest {
        job: None,
        ..Default::default()
    });
    assert_eq!(
        missing.err().map(|v| v[0].field.clone()),
        Some("job".to_string())
    );
}

/// A 100,000-pod snapshot of realistic pods fits the server's default message limit.
#[test]
fn hundred_thousand_pod_request_fits_default_limit() {
    use prost::Message;
    let per_pod = crate::fixtures::realistic_pod(0).encoded_len();
    let request = crate::fixtures::realistic_request(100_000);
    let size = request.encoded_len();
    // Visible with --nocapture; docs/operations.md and DEFAULT_MAX_MESSAGE_SIZE cite it.
    eprintln!("100k-pod request: {size} bytes ({per_pod} bytes per pod)");
    assert!(per_pod > 500, "a realistic pod is not tiny: {per_pod}");
    assert!(
        size < crate::DEFAULT_MAX_MESSAGE_SIZE,
        "100k pods encode to {size} bytes"
    );
}

/// A request decoded as the server decodes it: from the body's buffer, pods left encoded.
fn lazy(req: &pb::DecideJobRequest) -> (bytes::Bytes, LazyDecideJobRequest) {
    use prost::Message;
    let body = bytes::Bytes::from(req.encode_to_vec());
    let lazy =
        LazyDecideJobRequest::decode(body.clone()).expect("a DecideJobRequest decodes lazily");
    (body, lazy)
}

#[test]
fn lazy_request_converts_to_the_same_snapshot() {
    let mut req = pb::DecideJobRequest {
        job: Some(crate::fixtures::realistic_job(50)),
        pods: (0..50).map(crate::fixtures::realistic_pod).collect(),
        now: Some(ts(crate::fixtures::NOW_SECONDS)),
        controller_name: "example.com/controller".into(),
        ..Default::default()
    };
    req.expectations = Some(pb::Expectations {
        pod_changes_pending: true,
        finalizer_removals_pending: vec!["uid-1".into()],
    });
    let (_, lazy) = lazy(&req);
    assert_eq!(lazy.pods.len(), 50);
    let eager = Snapshot::try_from(req).expect("the fixture converts");
    assert_eq!(Snapshot::try_from(lazy).expect("lazily too"), eager);
}

#[test]
fn lazy_request_reports_undecodable_pods_and_keeps_going() {
    let mut req = request();
    req.pods.push(owned_pod("c", "b-uid"));
    let (_, mut lazy) = lazy(&req);
    // A pod cut short, and a pod whose field tag is 0 (never valid).
    let cut = lazy.pods[0].len() - 3;
    lazy.pods[0].truncate(cut);
    lazy.pods
        .insert(1, bytes::Bytes::from_static(&[0x00, 0x01]));
    let errs = Snapshot::try_from(lazy).expect_err("broken pods are reported");
    let fields: Vec<&str> = errs.iter().map(|v| v.field.as_str()).collect();
    // The duplicate UID of the last pod is still found after the broken ones.
    assert_eq!(fields, ["pods[0]", "pods[1]", "pods[3].metadata.uid"]);
    assert!(
        errs[0].detail.starts_with("not a valid Pod message"),
        "{errs:?}"
    );
}

#[test]
fn duplicate_uids_found_among_many_pods() {
    let mut req = request();
    let base = req.pods.len();
    for i in 0..1_000 {
        req.pods
            .push(owned_pod(&format!("p{i}"), &format!("uid-{i}")));
    }
    req.pods.push(owned_pod("again", "uid-500"));
    req.pods.push(owned_pod("again2", "uid-999"));
    let want = [
        format!("pods[{}].metadata.uid", base + 1_000),
        format!("pods[{}].metadata.uid", base + 1_001),
    ];
    assert_eq!(fields(Snapshot::try_from(req)), want);
}

#[test]
fn pods_keep_only_the_labels_the_selector_names() {
    let mut req = pb::DecideJobRequest {
        job: Some(crate::fixtures::realistic_job(3)),
        pods: (0..3).map(crate::fixtures::realistic_pod).collect(),
        now: Some(ts(crate::fixtures::NOW_SECONDS)),
        ..Default::default()
    };
    // A selector with a key the pods lack and an expression on another label.
    if let Some(selector) = req
        .job
        .as_mut()
        .and_then(|j| j.spec.as_mut())
        .and_then(|s| s.selector.as_mut())
    {
        selector
            .match_expressions
            .push(pb::LabelSelectorRequirement {
                key: "job-name".into(),
                operator: "Exists".into(),
                values: vec![],
            });
        selector
            .match_labels
            .insert("team".into(), "absent-from-pods".into());
    }
    let snapshot = Snapshot::try_from(req).expect("converts");
    let keys: Vec<&str> = snapshot.pods[0].labels.iter().map(|(k, _)| k).collect();
    assert_eq!(keys, ["batch.kubernetes.io/controller-uid", "job-name"]);
    assert_eq!(
        snapshot.pods[0]
            .labels
            .get("batch.kubernetes.io/controller-uid"),
        Some(crate::fixtures::JOB_UID)
    );
}

#[test]
fn pods_keep_only_the_conditions_decisions_read_but_all_are_checked() {
    let mut req = request();
    if let Some(j) = req.job.as_mut().and_then(|j| j.spec.as_mut()) {
        j.pod_failure_policy = Some(pb::PodFailurePolicy {
            rules: vec![pb::PodFailurePolicyRule {
                action: "Ignore".into(),
                on_exit_codes: None,
                on_pod_conditions: vec![pb::PodFailurePolicyOnPodConditionsPattern {
                    r#type: "DisruptionTarget".into(),
                    status: "True".into(),
                }],
            }],
        });
    }
    let condition = |t: &str, seconds: i64| pb::PodCondition {
        r#type: t.into(),
        status: "True".into(),
        last_transition_time: Some(ts(seconds)),
        ..Default::default()
    };
    if let Some(status) = req.pods[0].status.as_mut() {
        status.conditions = vec![
            condition("PodScheduled", 1),
            condition("DisruptionTarget", 2),
            condition("Initialized", 3),
            condition("Ready", 4),
        ];
    }
    let snapshot = Snapshot::try_from(req.clone()).expect("converts");
    let kept: Vec<(&str, Option<Time>)> = snapshot.pods[0]
        .conditions
        .iter()
        .map(|c| (&*c.condition_type, c.last_transition_time))
        .collect();
    assert_eq!(
        kept,
        [
            ("DisruptionTarget", time_from_pb(&ts(2))),
            ("Ready", time_from_pb(&ts(4)))
        ]
    );
    // A condition that is dropped is still checked.
    if let Some(status) = req.pods[0].status.as_mut() {
        status.conditions[2].last_transition_time = Some(Timestamp {
            seconds: 0,
            nanos: -1,
        });
    }
    assert_eq!(
        fields(Snapshot::try_from(req)),
        ["pods[0].status.conditions[2].lastTransitionTime"]
    );
}

const DOC: &str = "apiVersion: job-decider.dev/v1alpha1\nkind: FailurePolicy\n\
    rules:\n- {name: oom, action: FailJob, onContainerReasons: {values: [OOMKilled]}}\n\
    pendingTimeout: {seconds: 60}\n";

/// The test Job with a template whose restartPolicy is Never (rules need it).
fn never_job() -> pb::Job {
    let mut job = job();
    if let Some(spec) = job.spec.as_mut() {
        spec.template = Some(pb::PodTemplateSpec {
            metadata: None,
            spec: Some(pb::PodSpec {
                restart_policy: "Never".into(),
                ..Default::default()
            }),
        });
    }
    job
}

fn never_request() -> pb::DecideJobRequest {
    pb::DecideJobRequest {
        job: Some(never_job()),
        ..request()
    }
}

fn annotated(doc: &str) -> pb::DecideJobRequest {
    let mut req = never_request();
    if let Some(meta) = req.job.as_mut().and_then(|j| j.metadata.as_mut()) {
        meta.annotations
            .insert(FAILURE_POLICY_ANNOTATION.into(), doc.into());
    }
    req
}

#[test]
fn a_job_without_a_document_converts_as_before() {
    let snapshot = Snapshot::try_from(request()).expect("valid");
    assert_eq!(snapshot.job.extended_failure_policy, None);
    assert!(snapshot.pods.iter().all(|p| p.failure_details.is_none()));
    // An unrelated annotation changes nothing either.
    let mut req = request();
    if let Some(meta) = req.job.as_mut().and_then(|j| j.metadata.as_mut()) {
        meta.annotations.insert("other".into(), "x".into());
    }
    assert_eq!(Snapshot::try_from(req), Ok(snapshot));
}

#[test]
fn the_annotation_or_the_request_field_gives_the_job_its_document() {
    let from_annotation = Snapshot::try_from(annotated(DOC)).expect("valid");
    let policy = from_annotation
        .job
        .extended_failure_policy
        .clone()
        .expect("a document");
    assert_eq!(policy.rules[0].name.as_deref(), Some("oom"));
    assert!(policy.pending_timeout.is_some());
    // Pods of a Job with a document carry their details.
    assert!(
        from_annotation
            .pods
            .iter()
            .all(|p| p.failure_details.is_some())
    );

    let from_field = Snapshot::try_from(pb::DecideJobRequest {
        failure_policy: DOC.into(),
        ..never_request()
    })
    .expect("valid");
    assert_eq!(from_field, from_annotation);
    // Both, the same document: fine.
    let both = Snapshot::try_from(pb::DecideJobRequest {
        failure_policy: DOC.into(),
        ..annotated(DOC)
    })
    .expect("valid");
    assert_eq!(both, from_annotation);
}

/// The Job and pods of `req` as [`JobForPods`] converts them, one pod at a time, with `compiled`.
fn with_document(
    req: pb::DecideJobRequest,
    compiled: &CompiledDocument,
) -> Result<(Job, Vec<Pod>), Vec<Violation>> {
    let job = JobForPods::convert(req.job.as_ref().expect("a Job"), compiled)?;
    let pods = req
        .pods
        .iter()
        .map(|p| job.pod(p))
        .collect::<Result<_, _>>()?;
    Ok((job.job().clone(), pods))
}

/// The Job and pods of `req` as a snapshot converts them.
fn as_snapshot(req: pb::DecideJobRequest) -> Result<(Job, Vec<Pod>), Vec<Violation>> {
    Snapshot::try_from(req).map(|s| (s.job, s.pods))
}

/// Issue 22, item 7: a document compiled once converts the Job and each of its pods, one at a
/// time, as converting the whole request would, without reading it again.
#[test]
fn a_compiled_document_converts_as_reading_it_and_is_not_read_again() {
    let request = annotated(DOC);
    let job = request.job.clone().expect("a Job");
    let compiled = CompiledDocument::compile(&job, "").expect("valid");
    assert_eq!(
        compiled.policy().and_then(|p| p.rules[0].name.as_deref()),
        Some("oom")
    );
    let before = failure_policy::documents_read();
    let with = with_document(request.clone(), &compiled);
    assert_eq!(failure_policy::documents_read(), before, "not read again");
    assert!(with.as_ref().is_ok_and(|(_, pods)| !pods.is_empty()));
    assert_eq!(with, as_snapshot(request));
    // The request field, compiled the same way.
    let field = pb::DecideJobRequest {
        failure_policy: DOC.into(),
        ..never_request()
    };
    let compiled = CompiledDocument::compile(&never_job(), DOC).expect("valid");
    assert_eq!(with_document(field.clone(), &compiled), as_snapshot(field));
    // A bad document is the compile's error, at its path.
    let bad = DOC.replace("OOMKilled", "OOMKilled, OOMKilled");
    let errs = CompiledDocument::compile(&never_job(), &bad)
        .err()
        .unwrap_or_default();
    assert_eq!(
        errs.iter().map(|v| v.field.as_str()).collect::<Vec<_>>(),
        ["failurePolicy.rules[0].onContainerReasons.values[1]"]
    );
    // No document: nothing compiled, and the Job converts as before.
    let plain = CompiledDocument::compile(&never_job(), "").expect("valid");
    assert!(plain.policy().is_none());
    assert_eq!(
        with_document(never_request(), &plain),
        as_snapshot(never_request())
    );
}

#[test]
fn a_bad_document_is_rejected_with_its_field_path() {
    let bad = DOC.replace("OOMKilled", "OOMKilled, OOMKilled");
    assert_eq!(
        fields(Snapshot::try_from(annotated(&bad))),
        [
            "metadata.annotations[job-decider.dev/failure-policy].rules[0].onContainerReasons.values[1]"
        ]
    );
    assert_eq!(
        fields(Snapshot::try_from(pb::DecideJobRequest {
            failure_policy: bad,
            ..never_request()
        })),
        ["failurePolicy.rules[0].onContainerReasons.values[1]"]
    );
    // Both set and different.
    assert_eq!(
        fields(Snapshot::try_from(pb::DecideJobRequest {
            failure_policy: DOC.replace("60", "61"),
            ..annotated(DOC)
        })),
        ["failurePolicy"]
    );
}

#[test]
fn validate_job_reports_the_documents_violations_after_the_jobs() {
    let mut job = crate::fixtures::realistic_job(2);
    if let Some(meta) = job.metadata.as_mut() {
        meta.annotations.insert(
            FAILURE_POLICY_ANNOTATION.into(),
            "kind: FailurePolicy\n".into(),
        );
    }
    if let Some(spec) = job.spec.as_mut() {
        spec.parallelism = Some(-1);
    }
    let response = crate::validate(pb::ValidateJobRequest {
        job: Some(job.clone()),
        failure_policy: String::new(),
    })
    .expect("answered");
    let fields: Vec<&str> = response
        .violations
        .iter()
        .map(|v| v.field.as_str())
        .collect();
    assert_eq!(
        fields,
        [
            "spec.parallelism",
            "metadata.annotations[job-decider.dev/failure-policy].apiVersion"
        ]
    );
    // job_for_validation rejects the Job for its document alone.
    if let Some(spec) = job.spec.as_mut() {
        spec.parallelism = Some(2);
    }
    let errs = job_for_validation(pb::ValidateJobRequest {
        job: Some(job),
        failure_policy: String::new(),
    })
    .err()
    .unwrap_or_default();
    assert_eq!(errs.len(), 1);
    // The request field is checked too.
    let response = crate::validate(pb::ValidateJobRequest {
        job: Some(crate::fixtures::realistic_job(2)),
        failure_policy: "apiVersion: x\n".into(),
    })
    .expect("answered");
    let fields: Vec<&str> = response
        .violations
        .iter()
        .map(|v| v.field.as_str())
        .collect();
    assert_eq!(fields, ["failurePolicy.apiVersion", "failurePolicy.kind"]);
}

#[test]
fn read_fields_add_the_documents_conditions_only_with_a_document() {
    let plain = job_for_validation(pb::ValidateJobRequest {
        job: Some(job()),
        failure_policy: String::new(),
    })
    .expect("valid");
    let read = ReadFields::of(&plain);
    assert!(!read.details);
    assert!(!read.conditions.contains(PENDING_TIMEOUT_CONDITION));
    let with = job_for_validation(pb::ValidateJobRequest {
        job: Some(never_job()),
        failure_policy: DOC.replace(
            "onContainerReasons: {values: [OOMKilled]}",
            "onPodConditions: [{type: Custom}]",
        ),
    })
    .expect("valid");
    let read = ReadFields::of(&with);
    assert!(read.details);
    assert!(read.conditions.contains(PENDING_TIMEOUT_CONDITION));
    assert!(read.conditions.contains("Custom"));
}
