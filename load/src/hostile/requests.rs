//! The hostile requests, encoded once: issue 22's reviewer's calls and the
//! largest calls the caps let through. Requests of millions of list items are
//! written on the wire directly (protobuf merges a message's repeated fields
//! across occurrences), so the client never holds millions of decoded items.

use bytes::Bytes;
use job_decider_api::convert::failure_policy::{MAX_MESSAGE_SCAN_BYTES, MAX_RULES};
use job_decider_api::convert_jobset::{MAX_CONDITION_MESSAGE_BYTES, MAX_PATTERNS_PER_RULE};
use job_decider_api::fixtures::{self, NOW_SECONDS};
use job_decider_api::pb;
use job_decider_core::extended::FAILURE_POLICY_ANNOTATION;
use prost::Message;
use prost::encoding::{WireType, decode_key, encode_key, encode_varint};

use crate::Error;

/// "Any character" counted 200 times: defeated the lazy DFA before issue 22.
pub const DOT_200: &str = "a(?s:.){200}b";
/// Past RE2's repetition limit: 46 ms a 4 KiB message before issue 22.
pub const AC_3000: &str = "a[ac]{3000}b";

/// A message's wire bytes.
pub fn encode<M: Message>(m: &M) -> Bytes {
    m.encode_to_vec().into()
}

/// The field number of the only field `m` encodes (a message set to one field).
fn field_of<M: Message>(m: &M) -> Result<u32, Error> {
    let bytes = m.encode_to_vec();
    decode_key(&mut bytes.as_slice())
        .map(|(field, _)| field)
        .map_err(|e| Error::tool("hostile requests", e.to_string()))
}

/// `body` as length-delimited field `field`.
fn len_field(field: u32, body: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(body.len() + 10);
    encode_key(field, WireType::LengthDelimited, &mut out);
    encode_varint(body.len() as u64, &mut out);
    out.extend_from_slice(body);
    out
}

/// `n` copies of `container` as repeated field `field`.
fn repeated(field: u32, container: &[u8], n: usize) -> Vec<u8> {
    let one = len_field(field, container);
    let mut out = Vec::with_capacity(one.len() * n);
    for _ in 0..n {
        out.extend_from_slice(&one);
    }
    out
}

/// A Job's wire bytes whose pod template holds `n` extra copies of `container`
/// (after the Job's own), built without decoding them.
fn job_with_containers(
    job: &pb::Job,
    container: &pb::Container,
    n: usize,
) -> Result<Vec<u8>, Error> {
    let spec_f = field_of(&pb::Job {
        spec: Some(Default::default()),
        ..Default::default()
    })?;
    let template_f = field_of(&pb::JobSpec {
        template: Some(Default::default()),
        ..Default::default()
    })?;
    let pod_spec_f = field_of(&pb::PodTemplateSpec {
        spec: Some(Default::default()),
        ..Default::default()
    })?;
    let containers_f = field_of(&pb::PodSpec {
        containers: vec![pb::Container::default()],
        ..Default::default()
    })?;
    let list = repeated(containers_f, &container.encode_to_vec(), n);
    let mut out = job.encode_to_vec();
    out.extend(len_field(
        spec_f,
        &len_field(template_f, &len_field(pod_spec_f, &list)),
    ));
    Ok(out)
}

/// Issue 22 item 4: ValidateJob of a Job with `n` containers that all have one name
/// (the reviewer's 3,000,000; five bytes each here, as the service's `Container` keeps
/// only name and env).
pub fn validate_duplicate_containers(n: usize) -> Result<Bytes, Error> {
    let job_f = field_of(&pb::ValidateJobRequest {
        job: Some(Default::default()),
        ..Default::default()
    })?;
    let container = pb::Container {
        name: "c".into(),
        ..Default::default()
    };
    let job = job_with_containers(&fixtures::realistic_job(1), &container, n)?;
    Ok(len_field(job_f, &job).into())
}

/// DecideJob whose Job's pod template carries `n` empty containers: two bytes
/// each on the wire, a decoded `Container` each in the server.
pub fn decide_empty_containers(n: usize) -> Result<Bytes, Error> {
    let job_f = field_of(&pb::DecideJobRequest {
        job: Some(Default::default()),
        ..Default::default()
    })?;
    let mut request = fixtures::realistic_request(1);
    let job = request.job.take().unwrap_or_default();
    let mut out = request.encode_to_vec();
    out.extend(len_field(
        job_f,
        &job_with_containers(&job, &pb::Container::default(), n)?,
    ));
    Ok(out.into())
}

/// The realistic running Indexed Job (`fixtures::realistic_request`) of about
/// `bytes` on the wire: at most 100,000 pods (an Indexed Job's most completions
/// with a per-index backoff limit), each padded by an annotation to make up the size.
pub fn decide_of_size(bytes: u64) -> pb::DecideJobRequest {
    let sample = fixtures::realistic_request(1000).encoded_len() as u64 / 1000;
    let pods = (bytes / sample.max(1)).clamp(1, 100_000);
    let mut request = fixtures::realistic_request(usize::try_from(pods).unwrap_or(1));
    let pad = bytes.saturating_sub(pods * sample) / pods;
    if pad > 16 {
        let filler = "p".repeat(usize::try_from(pad - 16).unwrap_or(0));
        for pod in &mut request.pods {
            if let Some(m) = pod.metadata.as_mut() {
                m.annotations.insert("hostile/pad".into(), filler.clone());
            }
        }
    }
    request
}

/// `pods` realistic pods, all Failed with `message` as the pod's message and as its
/// first container's termination message (`container_message`: or only the pod's).
pub fn failed_pods(pods: usize, message: &str, container_message: bool) -> pb::DecideJobRequest {
    let mut request = fixtures::realistic_request(pods);
    for pod in &mut request.pods {
        let status = pod.status.get_or_insert_default();
        status.phase = "Failed".into();
        status.message = message.to_string();
        if let Some(c) = status.container_statuses.first_mut() {
            c.state = Some(pb::ContainerState {
                terminated: Some(pb::ContainerStateTerminated {
                    exit_code: 1,
                    reason: "Error".into(),
                    message: if container_message {
                        message.to_string()
                    } else {
                        String::new()
                    },
                    finished_at: Some(pbjson_types::Timestamp {
                        seconds: NOW_SECONDS - 10,
                        nanos: 0,
                    }),
                    ..Default::default()
                }),
                ..Default::default()
            });
        }
    }
    request
}

/// A FailurePolicy document of `rules` Count rules searching `patterns` in turn.
pub fn document(patterns: &[String], rules: usize) -> String {
    let mut doc =
        String::from("apiVersion: job-decider.dev/v1alpha1\nkind: FailurePolicy\nrules:\n");
    for i in 0..rules {
        let pattern = patterns[i % patterns.len().max(1)].replace('\'', "''");
        doc.push_str(&format!(
            "- action: Count\n  onMessage: {{pattern: '{pattern}'}}\n"
        ));
    }
    doc
}

/// The reviewer's pattern call: `pods` failed pods with 4 KiB messages of `ab`,
/// 20 rules of [`DOT_200`] and [`AC_3000`], in the request's field or on the Job.
pub fn reviewer_patterns(pods: usize, through_annotation: bool) -> pb::DecideJobRequest {
    let mut request = failed_pods(pods, &"ab".repeat(2048), true);
    let doc = document(&[DOT_200.to_string(), AC_3000.to_string()], 20);
    if through_annotation {
        if let Some(m) = request.job.as_mut().and_then(|j| j.metadata.as_mut()) {
            m.annotations.insert(FAILURE_POLICY_ANNOTATION.into(), doc);
        }
    } else {
        request.failure_policy = doc;
    }
    request
}

/// The most matching a call may ask for: the document's most rules (none matching)
/// over failed pods' 4 KiB pod and container messages, just inside the scan budget.
pub fn patterns_at_budget(scale: f64) -> pb::DecideJobRequest {
    let per_pod = 2 * 4096 * MAX_RULES as u64;
    let pods = (MAX_MESSAGE_SCAN_BYTES / per_pod).saturating_sub(50);
    let pods = scaled(pods as usize, scale);
    let mut request = failed_pods(pods, &"m".repeat(4096), true);
    let patterns: Vec<String> = (0..MAX_RULES).map(|i| format!("needle {i}")).collect();
    request.failure_policy = document(&patterns, MAX_RULES);
    request
}

/// One rule over about `bytes` of pod messages (64 KiB each): big messages, few patterns.
pub fn one_rule_big_messages(bytes: u64) -> pb::DecideJobRequest {
    let pods = usize::try_from(bytes / 65_536).unwrap_or(1).max(1);
    let mut request = failed_pods(pods, &"m".repeat(65_536), false);
    request.failure_policy = document(&["needle".to_string()], 1);
    request
}

/// A failure-policy document of `depth` `[`: item 5's quadratic YAML nesting.
pub fn nested_document(depth: usize) -> pb::DecideJobRequest {
    let mut request = fixtures::realistic_request(1);
    request.failure_policy = "[".repeat(depth);
    request
}

/// A JobSet with one replicated Job of `jobs` replicas, every Job Failed with two
/// conditions of `message`, and one FailJobSet rule searching `patterns`.
pub fn jobset(jobs: usize, patterns: &[String], message: &str) -> Result<Bytes, Error> {
    let job = |i: usize| {
        serde_json::json!({
            "apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": format!("js-rj-{i}"), "namespace": "default", "uid": format!("uid-js-rj-{i}"),
                "labels": {"jobset.sigs.k8s.io/replicatedjob-name": "rj",
                           "jobset.sigs.k8s.io/job-index": i.to_string(),
                           "jobset.sigs.k8s.io/restart-attempt": "0",
                           "jobset.sigs.k8s.io/job-restart-attempt": "0"}},
            "spec": {"parallelism": 1, "completions": 1, "backoffLimit": 0},
            "status": {"failed": 1, "conditions": [
                {"type": "FailureTarget", "status": "True", "reason": "PodFailurePolicy",
                 "message": message, "lastTransitionTime": "2024-01-01T11:00:00Z"},
                {"type": "Failed", "status": "True", "reason": "PodFailurePolicy",
                 "message": message, "lastTransitionTime": "2024-01-01T11:00:00Z"}]}
        })
    };
    let request = serde_json::json!({
        "now": "2024-01-01T12:00:00Z",
        "jobSet": {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
            "metadata": {"name": "js", "namespace": "default", "uid": "uid-js"},
            "spec": {"replicatedJobs": [{"name": "rj", "replicas": jobs}],
                "failurePolicy": {"maxRestarts": 3, "rules": [{"name": "critical", "action": "FailJobSet",
                    "onJobFailureReasons": ["PodFailurePolicy"],
                    "onJobFailureMessagePatterns": patterns}]}}},
        "jobs": (0..jobs).map(job).collect::<Vec<_>>(),
    });
    let request: pb::DecideJobSetRequest = serde_json::from_value(request)
        .map_err(|e| Error::tool("hostile requests", format!("JobSet request: {e}")))?;
    Ok(encode(&request))
}

/// The JobSet call at the caps: 16 patterns (none matching) and Jobs whose
/// messages are the longest allowed, as many as make about `bytes`.
pub fn jobset_at_caps(bytes: u64) -> Result<Bytes, Error> {
    let per_job = 2 * MAX_CONDITION_MESSAGE_BYTES as u64;
    let jobs = usize::try_from(bytes / per_job).unwrap_or(1).max(1);
    let patterns: Vec<String> = (0..MAX_PATTERNS_PER_RULE)
        .map(|i| format!("needle {i}"))
        .collect();
    jobset(jobs, &patterns, &"m".repeat(MAX_CONDITION_MESSAGE_BYTES))
}

/// The reviewer's JobSet: many slow patterns (refused now, by count and by DFA size).
pub fn jobset_reviewer(too_many: bool) -> Result<Bytes, Error> {
    let patterns: Vec<String> = if too_many {
        (0..=MAX_PATTERNS_PER_RULE * 2)
            .map(|i| format!("p{i}"))
            .collect()
    } else {
        vec![DOT_200.to_string(); MAX_PATTERNS_PER_RULE]
    };
    jobset(50, &patterns, &"ab".repeat(2048))
}

/// A small call decided on the reactor: no document, a few pods, under 64 KiB,
/// its Job FailureTarget with a `reason` of its own (item 6's label).
pub fn small_with_reason(reason: &str) -> pb::DecideJobRequest {
    let mut request = fixtures::realistic_request(8);
    if let Some(job) = request.job.as_mut() {
        job.status
            .get_or_insert_default()
            .conditions
            .push(pb::JobCondition {
                r#type: "FailureTarget".into(),
                status: "True".into(),
                reason: reason.to_string(),
                message: "from the request".into(),
                ..Default::default()
            });
    }
    request
}

/// A small call with a document that used to be slow (four [`AC_3000`] rules over
/// a 4 KiB message): refused now, and off the reactor.
pub fn small_with_slow_document() -> pb::DecideJobRequest {
    let mut request = failed_pods(1, &"a".repeat(4096), false);
    request.failure_policy = document(&[AC_3000.to_string()], 4);
    request
}

/// `n` scaled, at least 1.
pub fn scaled(n: usize, scale: f64) -> usize {
    ((n as f64 * scale) as usize).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wire_built_containers_decode_as_one_list() {
        let bytes = validate_duplicate_containers(1000).expect("built");
        let decoded = pb::ValidateJobRequest::decode(bytes).expect("decodes");
        let containers = decoded
            .job
            .and_then(|j| j.spec)
            .and_then(|s| s.template)
            .and_then(|t| t.spec)
            .map(|s| s.containers)
            .unwrap_or_default();
        // The Job's own containers, then the thousand.
        let own = fixtures::realistic_job(1)
            .spec
            .and_then(|s| s.template)
            .and_then(|t| t.spec)
            .map_or(0, |s| s.containers.len());
        assert_eq!(containers.len(), own + 1000);
        assert!(containers[own..].iter().all(|c| c.name == "c"));
        let bytes = decide_empty_containers(10).expect("built");
        let decoded = pb::DecideJobRequest::decode(bytes).expect("decodes");
        assert_eq!(decoded.pods.len(), 1);
        let job = decoded.job.unwrap_or_default();
        assert_eq!(
            job.metadata.map(|m| m.name),
            Some(fixtures::JOB_NAME.to_string())
        );
    }

    #[test]
    fn the_budget_call_is_inside_the_scan_budget() {
        let r = patterns_at_budget(1.0);
        let scanned = r.pods.len() as u64 * 2 * 4096 * MAX_RULES as u64;
        assert!(scanned <= MAX_MESSAGE_SCAN_BYTES, "{scanned}");
        assert!(scanned > MAX_MESSAGE_SCAN_BYTES * 9 / 10, "{scanned}");
    }

    #[test]
    fn the_jobset_requests_build() {
        let b = jobset_at_caps(1 << 20).expect("built");
        let r = pb::DecideJobSetRequest::decode(b).expect("decodes");
        assert_eq!(r.jobs.len(), 16);
        assert!(jobset_reviewer(true).is_ok() && jobset_reviewer(false).is_ok());
    }
}
