//! Table tests of the world, one per script feature, decided by job-decider in process.

use super::*;
use crate::timeline::Timeline;

/// The world's cost (pods carried by syncs) and the pruned requests.
mod speed;

const UID: &str = "0f0f0f0f-1111-2222-3333-444455556666";

/// A Job as the API server stores it, with `spec` merged into a small default.
fn job(spec: serde_json::Value) -> pb::Job {
    let mut base = serde_json::json!({
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": "train", "namespace": "default", "uid": UID,
            "creationTimestamp": "2025-06-02T10:00:00Z", "resourceVersion": "1",
            "labels": {"batch.kubernetes.io/controller-uid": UID, "batch.kubernetes.io/job-name": "train",
                "controller-uid": UID, "job-name": "train"}},
        "spec": {"parallelism": 2, "completions": 4, "backoffLimit": 6, "completionMode": "NonIndexed",
            "selector": {"matchLabels": {"batch.kubernetes.io/controller-uid": UID}},
            "template": {"metadata": {"labels": {"batch.kubernetes.io/controller-uid": UID,
                "batch.kubernetes.io/job-name": "train", "controller-uid": UID, "job-name": "train"}},
                "spec": {"restartPolicy": "Never", "containers": [{"name": "main"}]}}}
    });
    if let (Some(s), Some(add)) = (base["spec"].as_object_mut(), spec.as_object()) {
        for (k, v) in add {
            s.insert(k.clone(), v.clone());
        }
    }
    serde_json::from_value(base).expect("a valid Job")
}

/// The first of a script's errors.
fn first(e: ScriptErrors) -> ScriptError {
    e.0.into_iter().next().expect("an error")
}

fn decide(request: pb::DecideJobRequest) -> Result<pb::DecideJobResponse, DecideError> {
    job_decider_api::decide(request)
        .map(|d| d.response())
        .map_err(|e| DecideError {
            bad_input: true,
            message: e.to_string(),
        })
}

fn play(job: pb::Job, script: &str) -> Timeline {
    let script = Script::from_yaml(script).expect("script");
    simulate(job, Vec::new(), &script, &Options::default(), &mut decide).expect("simulated")
}

fn indexed(extra: serde_json::Value) -> pb::Job {
    let mut spec =
        serde_json::json!({"completionMode": "Indexed", "completions": 4, "parallelism": 4});
    if let (Some(s), Some(add)) = (spec.as_object_mut(), extra.as_object()) {
        for (k, v) in add {
            s.insert(k.clone(), v.clone());
        }
    }
    job(spec)
}

fn outcomes(t: &Timeline, index: i32) -> Vec<String> {
    t.summary.per_index.get(&index).cloned().unwrap_or_default()
}

#[test]
fn no_script_every_pod_succeeds_after_the_default_run_time() {
    let t = play(job(serde_json::json!({})), "");
    assert_eq!(t.summary.result, "Complete");
    assert_eq!(t.summary.stopped, "finished");
    assert_eq!(t.summary.pods_created, 4);
    assert_eq!(t.summary.succeeded, 4);
    assert_eq!(t.summary.pods_failed, 0);
    // Two waves of one minute each, with the 1s pod-event batch and whole-second starts.
    assert!(t.summary.wall_time_ms >= 120_000, "{}", t.summary.wall_time);
    assert!(t.summary.wall_time_ms < 130_000, "{}", t.summary.wall_time);
}

#[test]
fn index_3_exits_137_twice_then_succeeds() {
    let t = play(
        indexed(serde_json::json!({})),
        "attempts:\n- {index: 3, attempt: 1-2, exitCode: 137, reason: OOMKilled}\n",
    );
    assert_eq!(outcomes(&t, 3), ["failed(137)", "failed(137)", "succeeded"]);
    assert_eq!(outcomes(&t, 0), ["succeeded"]);
    assert_eq!(t.summary.result, "Complete");
    assert_eq!(t.summary.failures_counted, 2);
    assert!(
        t.attempts
            .iter()
            .any(|a| a.why.contains("exited 137 (OOMKilled)"))
    );
    // The second failure waits out a backoff: a requeue is in the timeline.
    assert!(t.events.iter().any(|e| e.kind == EventKind::Requeue));
}

#[test]
fn every_first_attempt_fails_with_exit_1() {
    let t = play(
        indexed(serde_json::json!({})),
        "attempts:\n- {attempt: 1, exitCode: 1}\n",
    );
    for i in 0..4 {
        assert_eq!(outcomes(&t, i), ["failed(1)", "succeeded"], "index {i}");
    }
    assert_eq!(t.summary.failures_counted, 4);
    assert_eq!(t.summary.result, "Complete");
}

#[test]
fn backoff_limit_exceeded_fails_the_job() {
    let t = play(
        job(serde_json::json!({"backoffLimit": 1})),
        "attempts:\n- {exitCode: 1}\n",
    );
    assert_eq!(t.summary.result, "Failed");
    assert_eq!(t.summary.reason, "BackoffLimitExceeded");
    assert!(
        t.events
            .iter()
            .any(|e| e.kind == EventKind::Condition && e.detail.starts_with("Failed=True"))
    );
}

#[test]
fn fail_job_rule_on_exit_42_ends_the_job_at_the_first_match() {
    let t = play(
        job(serde_json::json!({"podFailurePolicy": {"rules": [
            {"action": "FailJob", "onExitCodes": {"containerName": "main", "operator": "In", "values": [42]}}]}})),
        "attempts:\n- {attempt: 3, exitCode: 42}\n",
    );
    assert_eq!(t.summary.result, "Failed");
    assert_eq!(t.summary.reason, "PodFailurePolicy");
    let failed = t
        .attempts
        .iter()
        .find(|a| a.exit_code == Some(42))
        .expect("a pod exited 42");
    assert_eq!(failed.attempt, 3);
    assert!(
        failed
            .policy
            .as_deref()
            .unwrap_or("")
            .contains("rule 0 (FailJob)"),
        "{failed:?}"
    );
}

#[test]
fn drain_at_5m_with_an_ignore_rule_is_not_counted() {
    let t = play(
        indexed(
            serde_json::json!({"backoffLimit": 0, "podFailurePolicy": {"rules": [
            {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]}]}}),
        ),
        "defaults: {runTime: 10m}\nevents:\n- {at: 5m, drain: {index: 2}}\n",
    );
    assert_eq!(t.summary.result, "Complete");
    assert_eq!(t.summary.failures_counted, 0);
    assert_eq!(t.summary.failures_ignored, 1);
    assert_eq!(outcomes(&t, 2), ["failed(143)", "succeeded"]);
    let evicted = t
        .events
        .iter()
        .find(|e| e.kind == EventKind::PodEvicted)
        .expect("evicted");
    assert_eq!(evicted.offset_ms, 300_000);
    assert_eq!(evicted.index, Some(2));
}

#[test]
fn drain_without_a_policy_counts_and_fails_with_backoff_limit_0() {
    let t = play(
        indexed(serde_json::json!({"backoffLimit": 0})),
        "defaults: {runTime: 10m}\nevents:\n- {at: 5m, drain: {index: 2}}\n",
    );
    assert_eq!(t.summary.result, "Failed");
    assert_eq!(t.summary.reason, "BackoffLimitExceeded");
}

#[test]
fn random_failures_are_the_same_for_the_same_seed_and_differ_for_another() {
    let script =
        |seed: u64| format!("seed: {seed}\nattempts:\n- {{percent: 50, exitCodes: [1, 137]}}\n");
    let a = play(
        indexed(serde_json::json!({"completions": 8, "parallelism": 8})),
        &script(7),
    );
    let b = play(
        indexed(serde_json::json!({"completions": 8, "parallelism": 8})),
        &script(7),
    );
    assert_eq!(a, b);
    let failed: Vec<_> = a
        .attempts
        .iter()
        .filter_map(|x| x.exit_code.filter(|c| *c != 0))
        .collect();
    assert!(
        !failed.is_empty() && failed.iter().all(|c| *c == 1 || *c == 137),
        "{failed:?}"
    );
    let others: Vec<Timeline> = (1..6)
        .map(|s| {
            play(
                indexed(serde_json::json!({"completions": 8, "parallelism": 8})),
                &script(s),
            )
        })
        .collect();
    assert!(others.iter().any(|o| o.attempts != a.attempts));
}

#[test]
fn percent_100_always_and_percent_0_never() {
    let all = play(
        job(serde_json::json!({"backoffLimit": 2})),
        "attempts:\n- {percent: 100, exitCode: 3}\n",
    );
    assert_eq!(all.summary.reason, "BackoffLimitExceeded");
    let none = play(
        job(serde_json::json!({})),
        "attempts:\n- {percent: 0, exitCode: 3}\n",
    );
    assert_eq!(none.summary.pods_failed, 0);
}

#[test]
fn run_times_and_start_delays_per_rule_and_default() {
    let t = play(
        indexed(serde_json::json!({"completions": 2, "parallelism": 2})),
        "defaults: {runTime: 5m, startDelay: 10s}\nattempts:\n- {index: 1, runTime: 30m}\n",
    );
    let a0 = &t.attempts[0];
    let a1 = &t.attempts[1];
    assert_eq!(a0.started_ms.map(|s| s - a0.created_ms), Some(10_999));
    assert_eq!(
        a0.ended_ms.zip(a0.started_ms).map(|(e, s)| e - s),
        Some(300_000)
    );
    assert_eq!(
        a1.ended_ms.zip(a1.started_ms).map(|(e, s)| e - s),
        Some(1_800_000)
    );
}

#[test]
fn a_user_deletes_a_pod_and_the_controller_replaces_it() {
    let t = play(
        indexed(serde_json::json!({"completions": 2, "parallelism": 2})),
        "defaults: {runTime: 10m}\nevents:\n- {at: 2m, deletePod: {index: 0}}\n",
    );
    assert!(
        t.events
            .iter()
            .any(|e| e.kind == EventKind::PodDeletedByUser)
    );
    assert_eq!(outcomes(&t, 0), ["failed(143)", "succeeded"]);
    assert_eq!(t.summary.result, "Complete");
}

#[test]
fn suspend_deletes_the_pods_and_resume_starts_over() {
    let t = play(
        job(serde_json::json!({"completions": 2, "parallelism": 2})),
        "defaults: {runTime: 10m}\nevents:\n- {at: 2m, suspend: true}\n- {at: 5m, resume: true}\n",
    );
    assert!(
        t.events
            .iter()
            .any(|e| e.kind == EventKind::Condition && e.detail.starts_with("Suspended=True"))
    );
    assert!(t.events.iter().any(|e| e.kind == EventKind::PodDeleted));
    assert_eq!(t.summary.result, "Complete");
    assert_eq!(t.summary.pods_created, 4);
    // The replacement pods start after the resume at 5m and run 10m.
    assert!(
        t.summary.wall_time_ms >= 15 * 60_000,
        "{}",
        t.summary.wall_time
    );
}

#[test]
fn the_horizon_stops_a_long_run() {
    let t = play(
        job(serde_json::json!({})),
        "horizon: 1h\ndefaults: {runTime: 2h}\n",
    );
    assert_eq!(t.summary.stopped, "horizon");
    assert_eq!(t.summary.result, "Unfinished");
    assert_eq!(t.summary.wall_time_ms, 3_600_000);
}

#[test]
fn the_sync_bound_stops_a_script() {
    let t = play(job(serde_json::json!({})), "maxSyncs: 3\n");
    assert_eq!(t.summary.stopped, "syncLimit");
    assert_eq!(t.summary.syncs, 3);
}

#[test]
fn active_deadline_fails_the_job_on_the_requeue() {
    let t = play(
        job(serde_json::json!({"activeDeadlineSeconds": 90})),
        "defaults: {runTime: 10m}\n",
    );
    assert_eq!(t.summary.reason, "DeadlineExceeded", "{}", t.text());
    // FailureTarget when the deadline passes; Failed once the deleted pods have stopped
    // (5s) and their update reached the controller (1s).
    let target = t
        .events
        .iter()
        .find(|e| e.detail.starts_with("FailureTarget=True"))
        .expect("target");
    assert_eq!(target.offset_ms, 90_000, "{}", t.text());
    assert_eq!(t.summary.wall_time_ms, 96_000, "{}", t.text());
}

#[test]
fn index_rules_need_an_indexed_job() {
    let script = Script::from_yaml("attempts:\n- {index: 1, exitCode: 1}\n").expect("script");
    let err = simulate(
        job(serde_json::json!({})),
        Vec::new(),
        &script,
        &Options::default(),
        &mut decide,
    )
    .expect_err("NonIndexed");
    assert!(
        matches!(&err, SimError::Script(e) if e.0[0].path == "attempts[0].index"),
        "{err}"
    );
    let script =
        Script::from_yaml("attempts:\n- {container: side, exitCode: 1}\n").expect("script");
    let err = simulate(
        job(serde_json::json!({})),
        Vec::new(),
        &script,
        &Options::default(),
        &mut decide,
    )
    .expect_err("no such container");
    assert!(
        matches!(&err, SimError::Script(e) if e.0[0].path == "attempts[0].container"),
        "{err}"
    );
}

#[test]
fn a_refused_request_names_the_sync() {
    let mut bad = job(serde_json::json!({}));
    if let Some(m) = bad.metadata.as_mut() {
        m.uid.clear();
    }
    let err = simulate(
        bad,
        Vec::new(),
        &Script::default(),
        &Options::default(),
        &mut decide,
    )
    .expect_err("no uid");
    assert!(
        matches!(&err, SimError::Decide { sync: 1, source, .. } if source.bad_input),
        "{err}"
    );
}

#[test]
fn the_text_shows_relative_and_absolute_times() {
    let t = play(
        indexed(serde_json::json!({"completions": 1, "parallelism": 1})),
        "defaults: {runTime: 65s}\n",
    );
    let text = t.text();
    assert!(text.contains("+1m06s  10:01:06  succeeded"), "{text}");
    assert!(text.contains("Result:            Complete"), "{text}");
}

#[test]
fn pods_given_at_the_start_run_on_from_where_they_are() {
    let job = indexed(serde_json::json!({"completions": 2, "parallelism": 2}));
    let running: pb::Pod = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "train-0-abcde", "namespace": "default", "uid": "pod-0",
            "creationTimestamp": "2025-06-02T09:59:20Z",
            "labels": {"batch.kubernetes.io/controller-uid": UID, "batch.kubernetes.io/job-completion-index": "0"},
            "annotations": {"batch.kubernetes.io/job-completion-index": "0"},
            "finalizers": ["batch.kubernetes.io/job-tracking"],
            "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": "train", "uid": UID,
                "controller": true, "blockOwnerDeletion": true}]},
        "spec": {"nodeName": "node-a"},
        "status": {"phase": "Running", "containerStatuses": [{"name": "main",
            "state": {"running": {"startedAt": "2025-06-02T09:59:30Z"}}}]}
    }))
    .expect("a pod");
    let script = Script::from_yaml("defaults: {runTime: 1m}\n").expect("script");
    let options = Options {
        start_nanos: Some(1_748_858_400 * SECOND), // 10:00:00
        ..Options::default()
    };
    let t = simulate(
        job.clone(),
        vec![running.clone()],
        &script,
        &options,
        &mut decide,
    )
    .expect("simulated");
    let first = &t.attempts[0];
    assert_eq!(first.pod, "train-0-abcde");
    assert_eq!(
        (first.started_ms, first.ended_ms),
        (Some(-30_000), Some(30_000))
    );
    assert_eq!(t.summary.pods_created, 1, "only index 1 needed a pod");
    assert_eq!(t.summary.result, "Complete");

    // From a live cluster: the run time is what is left, counted from now.
    let options = Options {
        running_pods: RunningPods::FromNow,
        ..options
    };
    let t = simulate(job, vec![running], &script, &options, &mut decide).expect("simulated");
    let first = &t.attempts[0];
    assert_eq!(
        (first.started_ms, first.ended_ms),
        (Some(-30_000), Some(60_000))
    );
    assert_eq!(t.summary.result, "Complete");
}

#[test]
fn a_job_created_suspended_waits_for_the_resume() {
    let t = play(
        job(serde_json::json!({"suspend": true, "completions": 1, "parallelism": 1})),
        "events:\n- {at: 10m, resume: true}\n",
    );
    let first = t.attempts.first().expect("a pod");
    // Pods a plan creates are k milliseconds apart, so none share a creation time.
    assert_eq!(first.created_ms, 600_001);
    assert_eq!(t.summary.result, "Complete");
}

#[test]
fn parallelism_changes_how_many_pods_run_at_once() {
    let t = play(
        job(serde_json::json!({"completions": 4, "parallelism": 1})),
        "defaults: {runTime: 10m}\nevents:\n- {at: 1m, parallelism: 3}\n",
    );
    let at_1m = t
        .attempts
        .iter()
        .filter(|a| (60_000..61_000).contains(&a.created_ms))
        .count();
    assert_eq!(at_1m, 2, "{}", t.text());
}

#[test]
fn a_job_managed_by_another_controller_is_played_as_that_controller() {
    let t = play(
        job(
            serde_json::json!({"managedBy": "job-decider.dev/shim", "completions": 1, "parallelism": 1}),
        ),
        "",
    );
    assert_eq!(t.summary.result, "Complete");
    assert_eq!(t.summary.pods_created, 1);
}

#[test]
fn a_decider_listing_the_same_plan_in_another_order_gives_the_same_timeline() {
    // Upstream issues pod writes from goroutines: the world puts every plan in one
    // order, so deciders that agree give the same timeline byte for byte.
    let reversed = |request: pb::DecideJobRequest| {
        decide(request).map(|mut r| {
            for a in &mut r.actions {
                if let Some(Kind::CreatePods(c)) = a.kind.as_mut() {
                    c.pods.reverse();
                }
            }
            r
        })
    };
    let job = indexed(serde_json::json!({}));
    let script = Script::from_yaml("attempts:\n- {attempt: 1, exitCode: 1}\n").expect("script");
    let a = simulate(
        job.clone(),
        Vec::new(),
        &script,
        &Options::default(),
        &mut decide,
    )
    .expect("in order");
    let mut reversed = reversed;
    let b =
        simulate(job, Vec::new(), &script, &Options::default(), &mut reversed).expect("reversed");
    assert_eq!(a, b);
}

#[test]
fn a_plan_naming_a_pod_with_another_uid_is_refused_as_the_api_server_would() {
    let mut first = true;
    let mut wrong_uid = |request: pb::DecideJobRequest| {
        let mut response = decide(request.clone())?;
        if !first && let Some(p) = request.pods.first() {
            let name = p
                .metadata
                .as_ref()
                .map(|m| m.name.clone())
                .unwrap_or_default();
            response.actions.push(pb::Action {
                kind: Some(Kind::DeletePods(pb::DeletePods {
                    pods: vec![pb::PodDeletion {
                        name,
                        uid: "someone-else".to_string(),
                        ..Default::default()
                    }],
                })),
            });
        }
        first = false;
        Ok(response)
    };
    let err = simulate(
        job(serde_json::json!({})),
        Vec::new(),
        &Script::default(),
        &Options::default(),
        &mut wrong_uid,
    )
    .expect_err("uid precondition");
    assert!(
        matches!(&err, SimError::Apply { sync: 2, message } if message.contains("someone-else")),
        "{err}"
    );
}

#[test]
fn preemption_writes_its_own_reason_and_skips_pending_pods() {
    let t = play(
        indexed(
            serde_json::json!({"completions": 2, "parallelism": 2, "podFailurePolicy": {"rules": [
            {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]}]}}),
        ),
        "defaults: {runTime: 10m, startDelay: 1m}\nevents:\n- {at: 30s, preempt: {index: 0}}\n- {at: 5m, preempt: {index: 1}}\n",
    );
    let evicted: Vec<_> = t
        .events
        .iter()
        .filter(|e| e.kind == EventKind::PodEvicted)
        .collect();
    // At 30s index 0's pod is still pending (no node): nothing to preempt.
    assert_eq!(evicted.len(), 1, "{}", t.text());
    assert_eq!(evicted[0].index, Some(1));
    assert!(evicted[0].detail.contains("PreemptionByScheduler"));
    assert_eq!(t.summary.failures_ignored, 1);
    assert_eq!(t.summary.result, "Complete");
}

fn restarting(mut job: pb::Job) -> pb::Job {
    if let Some(spec) = job
        .spec
        .as_mut()
        .and_then(|s| s.template.as_mut())
        .and_then(|t| t.spec.as_mut())
    {
        spec.restart_policy = "OnFailure".to_string();
    }
    job
}

#[test]
fn on_failure_a_crashed_container_restarts_in_place_as_a_new_attempt() {
    let t = play(
        restarting(indexed(
            serde_json::json!({"completions": 2, "parallelism": 2}),
        )),
        "attempts:\n- {index: 0, attempt: 1, exitCode: 1}\n",
    );
    assert_eq!(t.summary.result, "Complete", "{}", t.text());
    assert_eq!(outcomes(&t, 0), ["failed(1)", "succeeded"]);
    assert_eq!(
        t.summary.pods_created, 2,
        "restarted in place, not replaced"
    );
    assert_eq!(t.summary.restarts, 1);
    // The kubelet restarts a container's first crash at once (no back-off entry yet).
    let crashed = t
        .events
        .iter()
        .find(|e| e.kind == EventKind::ContainerFailed)
        .expect("crash");
    let restarted = t
        .events
        .iter()
        .find(|e| e.kind == EventKind::ContainerRestarted)
        .expect("restart");
    assert_eq!(restarted.offset_ms - crashed.offset_ms, 0);
}

#[test]
fn on_failure_restarts_count_toward_the_backoff_limit() {
    let t = play(
        restarting(job(
            serde_json::json!({"backoffLimit": 2, "completions": 1, "parallelism": 1}),
        )),
        "attempts:\n- {exitCode: 1, runTime: 30s}\n",
    );
    assert_eq!(t.summary.reason, "BackoffLimitExceeded", "{}", t.text());
    assert_eq!(t.summary.pods_created, 1);
    assert!(t.summary.restarts >= 2, "{}", t.text());
}

#[test]
fn a_decider_that_always_acts_cannot_loop_forever() {
    let mut chatty = |_: pb::DecideJobRequest| {
        Ok(pb::DecideJobResponse {
            actions: vec![pb::Action {
                kind: Some(Kind::RecordEvent(pb::RecordEvent {
                    r#type: "Normal".to_string(),
                    reason: "Again".to_string(),
                    message: "and again".to_string(),
                })),
            }],
            ..Default::default()
        })
    };
    let t = simulate(
        job(serde_json::json!({})),
        Vec::new(),
        &Script::default(),
        &Options::default(),
        &mut chatty,
    )
    .expect("stops");
    assert_eq!(t.summary.stopped, "decisionLoop");
    assert_eq!(t.summary.syncs, SAME_INSTANT_SYNCS);
}

/// Issue 25, defect 11: the guard against a decider that never settles stopped under
/// `maxSyncs`'s label (`syncLimit`) with no word of what happened.
#[test]
fn a_decision_loop_at_one_instant_stopped_as_sync_limit() {
    let mut chatty = |_: pb::DecideJobRequest| {
        Ok(pb::DecideJobResponse {
            actions: vec![pb::Action {
                kind: Some(Kind::RecordEvent(pb::RecordEvent {
                    r#type: "Warning".to_string(),
                    reason: "Again".to_string(),
                    message: "and again".to_string(),
                })),
            }],
            ..Default::default()
        })
    };
    // A script bound far above the guard: the guard, not maxSyncs, stops it.
    let script = Script::from_yaml("maxSyncs: 50000\n").expect("script");
    let t = simulate(
        job(serde_json::json!({})),
        Vec::new(),
        &script,
        &Options::default(),
        &mut chatty,
    )
    .expect("stops");
    assert_eq!(t.summary.stopped, "decisionLoop");
    assert!(
        t.summary.stop_reason.contains("at one instant")
            && t.summary
                .stop_reason
                .contains(&SAME_INSTANT_SYNCS.to_string()),
        "{}",
        t.summary.stop_reason
    );
    assert_eq!(t.summary.wall_time_ms, 0, "the clock never moved");
}

/// A random script from `seed`, in the script format (the conformance script's shape).
fn random_script(seed: u64, indexed: bool) -> String {
    let mut k = 0u64;
    let mut r = |n: u64| {
        k += 1;
        #[allow(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            clippy::cast_precision_loss
        )]
        let v = (draw(seed, k, 99, 3) * n as f64) as u64;
        v
    };
    let mut s = format!(
        "seed: {seed}\nhorizon: 3h\ndefaults: {{runTime: {}s, startDelay: {}s, stopTime: {}s}}\nattempts:\n",
        r(900) + 1,
        r(5),
        r(31)
    );
    s += &format!(
        "- {{attempt: {}, exitCode: {}, runTime: {}s}}\n",
        r(3) + 1,
        r(138),
        r(600) + 1
    );
    s += &format!("- {{percent: {}, exitCodes: [1, 42, 137]}}\n", r(60));
    if indexed {
        s += &format!("- {{index: {}, exitCode: 1}}\n", r(4));
    }
    s += "events:\n";
    let mut t = 0;
    for _ in 0..r(6) {
        t += r(900) + 1;
        let target = if indexed && r(2) == 0 {
            format!("{{index: {}}}", r(4))
        } else {
            format!("{{pod: {}}}", r(8) + 1)
        };
        s += &match r(6) {
            0 => format!("- {{at: {t}s, drain: {target}}}\n"),
            1 => format!("- {{at: {t}s, preempt: {target}}}\n"),
            2 => format!("- {{at: {t}s, deletePod: {target}}}\n"),
            3 => format!(
                "- {{at: {t}s, suspend: true}}\n- {{at: {}s, resume: true}}\n",
                t + 60
            ),
            4 => format!("- {{at: {t}s, parallelism: {}}}\n", r(5)),
            _ => format!("- {{at: {t}s, suspend: false}}\n"),
        };
        t += 60;
    }
    if s.ends_with("events:\n") {
        s += "- {at: 1s, suspend: false}\n";
    }
    s
}

#[test]
fn random_scripts_always_end_with_events_in_time_order() {
    let jobs = [
        (
            job(serde_json::json!({"completions": 4, "parallelism": 2, "backoffLimit": 3})),
            false,
        ),
        (
            indexed(
                serde_json::json!({"backoffLimitPerIndex": 1, "maxFailedIndexes": 2, "backoffLimit": 2147483647}),
            ),
            true,
        ),
        (
            restarting(indexed(serde_json::json!({"backoffLimit": 4}))),
            true,
        ),
        (
            indexed(serde_json::json!({"podFailurePolicy": {"rules": [
            {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]},
            {"action": "FailJob", "onExitCodes": {"operator": "In", "values": [42]}}]}})),
            true,
        ),
    ];
    for seed in 0..40 {
        for (job, indexed) in &jobs {
            let text = random_script(seed, *indexed);
            let script = Script::from_yaml(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
            let t = simulate(
                job.clone(),
                Vec::new(),
                &script,
                &Options::default(),
                &mut decide,
            )
            .unwrap_or_else(|e| panic!("{e}\n{text}"));
            assert!(
                ["finished", "horizon", "idle"].contains(&t.summary.stopped.as_str()),
                "{}\n{text}",
                t.summary.stopped
            );
            assert!(
                t.events
                    .windows(2)
                    .all(|w| w[0].offset_ms <= w[1].offset_ms),
                "events out of order\n{text}"
            );
            assert!(t.summary.wall_time_ms <= 3 * 3_600_000, "{text}");
        }
    }
}

#[test]
fn per_index_backoff_waits_were_missing_from_the_summary() {
    // The bug: with backoffLimitPerIndex, an index's failed pod waits out its own
    // backoff before it is recreated, but when other pods succeeded at the same
    // moment the Job's backoff record is empty, and the summary said "0 backoff waits".
    let t = play(
        indexed(serde_json::json!({"backoffLimitPerIndex": 1, "backoffLimit": 100})),
        "defaults: {runTime: 4m}\nattempts:\n- {index: 3, attempt: 1, exitCode: 1}\n",
    );
    assert_eq!(outcomes(&t, 3), ["failed(1)", "succeeded"]);
    assert_eq!(t.summary.result, "Complete");
    assert_eq!(t.summary.backoff_waits, 1, "{}", t.text());
    assert_eq!(t.backoff_waits.len(), 1);
    let wait = &t.backoff_waits[0];
    assert_eq!(wait.indexes, vec![3]);
    assert!(wait.wait_ms > 0 && wait.wait_ms <= 10_000, "{wait:?}");
    assert_eq!(t.summary.backoff_wait_ms, wait.wait_ms);
    // The wait is what held the retry: index 3's second pod comes when it is over.
    let retry = t
        .attempts
        .iter()
        .find(|a| a.index == Some(3) && a.attempt == 2)
        .map(|a| a.created_ms);
    let end = wait.at_ms + wait.wait_ms;
    assert!(
        retry.is_some_and(|r| (end..end + 1000).contains(&r)),
        "{retry:?} {wait:?}"
    );
    assert!(
        t.text()
            .contains("per-index backoff: index 3 (1 failed attempt)")
    );
}

fn events_of(t: &Timeline, kind: EventKind) -> Vec<&crate::timeline::Event> {
    t.events.iter().filter(|e| e.kind == kind).collect()
}

#[test]
fn a_pending_attempt_waits_with_its_reason_and_nothing_upstream_fails_it() {
    let job = job(serde_json::json!({"parallelism": 1, "completions": 1}));
    let t = play(
        job,
        "horizon: 30m\nattempts:\n- {attempt: 1, pending: ImagePullBackOff}\n",
    );
    let waiting = events_of(&t, EventKind::PodWaiting);
    assert_eq!(waiting.len(), 1);
    assert!(waiting[0].detail.contains("ImagePullBackOff"));
    assert_eq!(t.summary.result, "Unfinished");
    assert_eq!(t.summary.pods_created, 1);
    assert_eq!(t.attempts[0].ending, Ending::Pending);
}

#[test]
fn a_pod_the_kubelet_rejects_fails_without_containers_and_counts() {
    let job = job(serde_json::json!({"parallelism": 1, "completions": 1}));
    let t = play(
        job,
        "attempts:\n- {attempt: 1, podReason: UnexpectedAdmissionError, message: \"Allocate failed: gpu\"}\n",
    );
    assert_eq!(t.summary.pods_failed, 1);
    assert_eq!(t.summary.failures_counted, 1);
    assert_eq!(t.summary.result, "Complete");
    assert!(
        t.attempts[0].why.contains("UnexpectedAdmissionError"),
        "{}",
        t.attempts[0].why
    );
    assert_eq!(t.attempts[0].started_ms, None);
}

#[test]
fn nodes_take_pods_least_loaded_first_and_rules_select_attempts_by_node() {
    let job = job(serde_json::json!({"parallelism": 2, "completions": 2, "backoffLimit": 0}));
    let t = play(job, "nodes: 2\nattempts:\n- {node: node-2, exitCode: 1}\n");
    let created: Vec<&str> = events_of(&t, EventKind::PodCreated)
        .iter()
        .map(|e| e.detail.as_str())
        .collect();
    assert_eq!(created, ["attempt 1, on node-1", "attempt 2, on node-2"]);
    assert_eq!(t.summary.pods_failed, 1);
    assert_eq!(t.summary.result, "Failed");
}

/// job-decider's plan, plus what an extended policy would add: every stuck pod
/// failed, every new pod kept off node-1.
fn with_extended_actions(
    request: pb::DecideJobRequest,
) -> Result<pb::DecideJobResponse, DecideError> {
    let stuck: Vec<pb::PodFailure> = request
        .pods
        .iter()
        .filter(|p| {
            p.status.as_ref().is_some_and(|s| {
                s.phase == "Pending"
                    && s.container_statuses.iter().any(|c| {
                        c.state
                            .as_ref()
                            .and_then(|st| st.waiting.as_ref())
                            .is_some_and(|w| w.reason == "ImagePullBackOff")
                    })
            })
        })
        .map(|p| {
            let m = p.metadata.clone().unwrap_or_default();
            pb::PodFailure {
                pod: Some(pb::PodReference {
                    name: m.name,
                    uid: m.uid,
                }),
                condition_type: "job-decider.dev/PendingTimeout".to_string(),
                reason: "ImagePullBackOff".to_string(),
                message: "stuck".to_string(),
                force_delete: false,
            }
        })
        .collect();
    let mut response = decide(request)?;
    for a in &mut response.actions {
        if let Some(Kind::CreatePods(c)) = a.kind.as_mut() {
            for p in &mut c.pods {
                p.avoid_nodes = Some(pb::AvoidNodes {
                    nodes: vec!["node-1".to_string()],
                    mode: "Required".to_string(),
                });
            }
        }
    }
    if !stuck.is_empty() {
        response.actions.insert(
            0,
            pb::Action {
                kind: Some(Kind::FailPods(pb::FailPods { pods: stuck })),
            },
        );
    }
    Ok(response)
}

#[test]
fn the_world_fails_and_deletes_the_pods_a_plan_fails_and_keeps_new_pods_off_avoided_nodes() {
    let job = job(serde_json::json!({"parallelism": 1, "completions": 1}));
    let script = Script::from_yaml(
        "nodes: [node-1, node-2]\nattempts:\n- {attempt: 1, pending: ImagePullBackOff}\n",
    )
    .expect("script");
    let mut decider = with_extended_actions;
    let t =
        simulate(job, Vec::new(), &script, &Options::default(), &mut decider).expect("simulated");
    let failed = events_of(&t, EventKind::PodFailedByController);
    assert_eq!(failed.len(), 1, "{:#?}", t.events);
    assert!(failed[0].detail.contains("ImagePullBackOff"));
    assert_eq!(t.summary.pods_failed, 1);
    assert_eq!(t.summary.failures_counted, 1);
    assert_eq!(t.summary.result, "Complete");
    let created: Vec<&str> = events_of(&t, EventKind::PodCreated)
        .iter()
        .map(|e| e.detail.as_str())
        .collect();
    assert_eq!(
        created,
        [
            "attempt 1, on node-2, avoiding node-1 (Required)",
            "attempt 2, on node-2, avoiding node-1 (Required)"
        ]
    );
}

#[test]
fn a_pod_that_must_avoid_every_node_stays_unscheduled() {
    let job = job(serde_json::json!({"parallelism": 1, "completions": 1}));
    let script = Script::from_yaml("horizon: 10m\nnodes: [node-1]\n").expect("script");
    let mut decider = with_extended_actions;
    let t =
        simulate(job, Vec::new(), &script, &Options::default(), &mut decider).expect("simulated");
    let created = events_of(&t, EventKind::PodCreated);
    assert_eq!(
        created[0].detail,
        "attempt 1, unschedulable, avoiding node-1 (Required)"
    );
    assert_eq!(t.summary.result, "Unfinished");
    assert_eq!(t.attempts[0].started_ms, None);
}

#[test]
fn script_errors_for_the_new_fields_name_the_field() {
    for (text, path) in [
        (
            "attempts:\n- {exitCode: 1, pending: ImagePullBackOff}\n",
            "attempts[0].pending",
        ),
        (
            "attempts:\n- {pending: ImagePullBackOff, podReason: Evicted}\n",
            "attempts[0].podReason",
        ),
        (
            "attempts:\n- {pending: \"image pull\"}\n",
            "attempts[0].pending",
        ),
        ("attempts:\n- {message: boom}\n", "attempts[0].message"),
        (
            "attempts:\n- {node: node-1, exitCode: 1}\n",
            "attempts[0].node",
        ),
        (
            "nodes: 2\nattempts:\n- {node: node-9, exitCode: 1}\n",
            "attempts[0].node",
        ),
        ("nodes: 0\n", "nodes"),
        ("nodes: [a, a]\n", "nodes[1]"),
    ] {
        let e = Script::from_yaml(text).map_err(first).expect_err(text);
        assert_eq!(e.path, path, "{text}: {e}");
    }
}

// Bounds (issue 22, item 7): no script, however written, holds the simulator for long
// or grows it without end; each bound is an error naming the field or a stated stop.

/// `count` attempt rules, each an alias of one naming a million attempt numbers.
fn aliased_numbers(count: usize) -> String {
    let mut text = String::from("attempts:\n- &a {attempt: \"1-1000000\", exitCode: 1}\n");
    for _ in 1..count {
        text.push_str("- *a\n");
    }
    text
}

#[test]
fn script_numbers_are_bounded_across_fields_and_aliases() {
    let err = Script::from_yaml(&aliased_numbers(4))
        .map_err(first)
        .expect_err("four million numbers");
    assert_eq!(err.path, "attempts[1].attempt", "{err}");
    assert!(
        err.message.contains("1000000 numbers in all"),
        "names the limit: {err}"
    );
    Script::from_yaml(&aliased_numbers(1)).expect("a million numbers is the bound itself");
    // The budget is per script: the next one starts afresh.
    Script::from_yaml(&aliased_numbers(1)).expect("again");
}

#[test]
fn max_syncs_above_a_million_is_refused() {
    let err = Script::from_yaml("maxSyncs: 4294967295\n")
        .map_err(first)
        .expect_err("2^32-1 syncs");
    assert_eq!(err.path, "maxSyncs");
    assert!(err.message.contains("1000000"), "names the limit: {err}");
    Script::from_yaml("maxSyncs: 1000000\n").expect("the bound itself");
}

#[test]
fn parallelism_events_past_what_the_world_holds_are_refused() {
    let err = Script::from_yaml("events:\n- {at: 1m, parallelism: 1000000}\n")
        .map_err(first)
        .expect_err("a million pods at once");
    assert_eq!(err.path, "events[0].parallelism");
    assert!(err.message.contains("10000"), "names the limit: {err}");
}

#[test]
fn completions_and_parallelism_past_what_the_world_holds_are_refused() {
    for (field, spec) in [
        (
            "spec.parallelism",
            serde_json::json!({"completions": 4, "parallelism": 1_000_000}),
        ),
        (
            "spec.completions",
            serde_json::json!({"completions": 1_000_000, "parallelism": 2}),
        ),
    ] {
        let script = Script::default();
        let err = simulate(
            job(spec),
            Vec::new(),
            &script,
            &Options::default(),
            &mut decide,
        )
        .expect_err(field);
        assert!(matches!(err, SimError::Start(_)), "{field}: {err}");
        let text = err.to_string();
        assert!(text.contains(field) && text.contains("10000"), "{text}");
    }
}

/// Plays the default Job (4 completions, 2 at a time) under `limits`.
fn play_bounded(script: &str, limits: Limits) -> Timeline {
    let script = Script::from_yaml(script).expect("script");
    let options = Options {
        limits,
        ..Options::default()
    };
    simulate(
        job(serde_json::json!({})),
        Vec::new(),
        &script,
        &options,
        &mut decide,
    )
    .expect("simulated")
}

#[test]
fn a_timeline_at_its_event_bound_stops_and_says_so() {
    let t = play_bounded(
        "",
        Limits {
            events: 10,
            ..Limits::default()
        },
    );
    assert_eq!(t.summary.stopped, "eventLimit");
    assert!(t.events.len() <= 10, "{} events", t.events.len());
    assert!(
        t.summary.stop_reason.contains("10 events"),
        "{}",
        t.summary.stop_reason
    );
    assert!(t.text().contains("10 events"), "the text says why");
}

#[test]
fn pods_created_past_their_bound_stop_the_simulation() {
    // Every attempt fails: the controller keeps creating pods until the bound.
    let t = play_bounded(
        "attempts:\n- {exitCode: 1}\n",
        Limits {
            pods: 3,
            ..Limits::default()
        },
    );
    assert_eq!(t.summary.stopped, "podLimit");
    assert!(t.attempts.len() <= 3, "{} pods", t.attempts.len());
    assert!(
        t.summary.stop_reason.contains("3 pods"),
        "{}",
        t.summary.stop_reason
    );
}

#[test]
fn the_pods_carried_by_all_syncs_are_bounded() {
    let t = play_bounded(
        "",
        Limits {
            pod_syncs: 5,
            ..Limits::default()
        },
    );
    assert_eq!(t.summary.stopped, "workLimit");
    assert!(
        t.summary.stop_reason.contains("5 pods"),
        "{}",
        t.summary.stop_reason
    );
}

#[test]
fn the_bytes_of_a_timeline_are_bounded() {
    let t = play_bounded(
        "",
        Limits {
            event_bytes: 200,
            ..Limits::default()
        },
    );
    assert_eq!(t.summary.stopped, "eventLimit");
    let bytes: usize = t.events.iter().map(|e| e.detail.len()).sum();
    assert!(bytes <= 200, "{bytes} bytes");
    assert!(
        t.summary.stop_reason.contains("200 bytes"),
        "{}",
        t.summary.stop_reason
    );
}

/// Issue 22, item 7: narrating a failure read the Job's failure policy document again (its
/// YAML parsed, its patterns compiled), so N failures cost N reads. It is read once per Job
/// spec now: counted, not timed, apart from the reads of the decider itself (one per sync).
#[test]
fn narrating_failures_reads_the_document_once_not_once_per_failure() {
    use job_decider_api::convert::failure_policy::documents_read;
    let mut job = job(serde_json::json!({"backoffLimit": 30, "completions": 2}));
    job.metadata.get_or_insert_default().annotations.insert(
        FAILURE_POLICY_ANNOTATION.to_string(),
        "apiVersion: job-decider.dev/v1alpha1\nkind: FailurePolicy\nrules:\n\
             - name: flaky\n  action: Count\n  onExitCodes: {operator: In, values: [1]}\n\
             \x20 onMessage: {pattern: 'connection (reset|refused)'}\n"
            .to_string(),
    );
    let script = Script::from_yaml("attempts:\n- {attempt: 1-10, exitCode: 1}\n").expect("script");
    let decider_reads = std::cell::Cell::new(0u64);
    let mut counting = |request: pb::DecideJobRequest| {
        let before = documents_read();
        let answer = decide(request);
        decider_reads.set(decider_reads.get() + documents_read() - before);
        answer
    };
    let before = documents_read();
    let t =
        simulate(job, Vec::new(), &script, &Options::default(), &mut counting).expect("simulated");
    let narration_reads = documents_read() - before - decider_reads.get();
    let narrated = t
        .attempts
        .iter()
        .filter(|a| {
            a.policy
                .as_deref()
                .is_some_and(|p| p.contains("no pod failure policy rule matches"))
        })
        .count();
    assert!(
        narrated >= 10,
        "{narrated} failures narrated: {:#?}",
        t.attempts
    );
    assert_eq!(narration_reads, 1, "{narrated} failures narrated");
}

/// The world read a pod's completion index with a bare `.parse()`, so `-1` became
/// index -1 where the core (upstream's `getCompletionIndex`) sees no index at all.
#[test]
fn a_completion_index_of_minus_one_was_read_as_an_index() {
    let job = indexed(serde_json::json!({"completions": 2, "parallelism": 2}));
    let stray: pb::Pod = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "train-x-abcde", "namespace": "default", "uid": "pod-x",
            "creationTimestamp": "2025-06-02T09:59:20Z",
            "labels": {"batch.kubernetes.io/controller-uid": UID},
            "annotations": {"batch.kubernetes.io/job-completion-index": "-1"},
            "finalizers": ["batch.kubernetes.io/job-tracking"],
            "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": "train", "uid": UID,
                "controller": true, "blockOwnerDeletion": true}]},
        "spec": {"nodeName": "node-a"},
        "status": {"phase": "Running", "containerStatuses": [{"name": "main",
            "state": {"running": {"startedAt": "2025-06-02T09:59:30Z"}}}]}
    }))
    .expect("a pod");
    let script = Script::from_yaml("defaults: {runTime: 1m}\n").expect("script");
    let options = Options {
        start_nanos: Some(1_748_858_400 * SECOND),
        ..Options::default()
    };
    let t = simulate(job, vec![stray], &script, &options, &mut decide).expect("simulated");
    let stray = t
        .attempts
        .iter()
        .find(|a| a.pod == "train-x-abcde")
        .expect("the given pod is an attempt");
    assert_eq!(stray.index, None, "-1 is no completion index");
    assert_eq!(outcomes(&t, -1), Vec::<String>::new());
}

/// Narrating a failed pod converted the whole request again (the Job and, with a document,
/// every pod) to learn which rule matched: N failures cost N snapshot conversions and
/// about N²/2 pod conversions on top of the decider's own.
#[test]
fn narrating_n_failures_does_not_convert_the_job_and_its_pods_n_times() {
    use job_decider_api::convert::{pods_converted, snapshots_converted};
    let mut job = job(serde_json::json!({"backoffLimit": 40, "completions": 1, "parallelism": 1}));
    job.metadata.get_or_insert_default().annotations.insert(
        FAILURE_POLICY_ANNOTATION.to_string(),
        "apiVersion: job-decider.dev/v1alpha1\nkind: FailurePolicy\nrules:\n\
             - name: flaky\n  action: Count\n  onExitCodes: {operator: In, values: [1]}\n\
             \x20 maxRetries: 100\n"
            .to_string(),
    );
    let script = Script::from_yaml("attempts:\n- {attempt: 1-30, exitCode: 1}\n").expect("script");
    let decider = std::cell::Cell::new((0u64, 0u64));
    let mut counting = |request: pb::DecideJobRequest| {
        let before = (snapshots_converted(), pods_converted());
        let answer = decide(request);
        let (s, p) = decider.get();
        decider.set((
            s + snapshots_converted() - before.0,
            p + pods_converted() - before.1,
        ));
        answer
    };
    let before = (snapshots_converted(), pods_converted());
    let t =
        simulate(job, Vec::new(), &script, &Options::default(), &mut counting).expect("simulated");
    let narration_snapshots = snapshots_converted() - before.0 - decider.get().0;
    let narration_pods = pods_converted() - before.1 - decider.get().1;
    let narrated = t
        .attempts
        .iter()
        .filter(|a| {
            a.policy
                .as_deref()
                .is_some_and(|p| p.contains("failure policy document rule \"flaky\""))
        })
        .count() as u64;
    assert!(
        narrated >= 30,
        "{narrated} failures narrated: {:#?}",
        t.attempts
    );
    assert_eq!(narration_snapshots, 0, "{narrated} failures narrated");
    // Each pod converted when it fails and again when the controller has changed it since.
    assert!(
        narration_pods <= 3 * narrated,
        "{narration_pods} pods converted to narrate {narrated} failures"
    );
}

/// The waits between each crash of index 0's container and its restart, in seconds.
fn restart_waits(t: &Timeline) -> Vec<i64> {
    let mut crashed_at = None;
    let mut waits = Vec::new();
    for e in &t.events {
        match e.kind {
            EventKind::ContainerFailed => crashed_at = Some(e.offset_ms),
            EventKind::ContainerRestarted => {
                if let Some(at) = crashed_at.take() {
                    waits.push((e.offset_ms - at) / 1000);
                }
            }
            _ => {}
        }
    }
    waits
}

fn crash_looping(backoff_limit: i32) -> pb::Job {
    restarting(indexed(serde_json::json!({
        "completions": 1, "parallelism": 1, "backoffLimit": backoff_limit
    })))
}

#[test]
fn crash_loop_back_off_was_one_step_late_the_first_restart_is_immediate() {
    // Nine short crashes: the kubelet restarts at once after the first exit, then
    // waits 10s doubling to its 5m cap (kuberuntime_manager.go doBackOff).
    let t = play(
        crash_looping(20),
        "attempts:\n- {index: 0, attempt: 1-9, exitCode: 1, runTime: 20s}\n",
    );
    assert_eq!(
        restart_waits(&t),
        [0, 10, 20, 40, 80, 160, 300, 300, 300],
        "{}",
        t.text()
    );
    assert_eq!(t.summary.result, "Complete", "{}", t.text());
    let first = events_of(&t, EventKind::ContainerFailed)[0];
    assert!(
        first.detail.contains("restarts it at once"),
        "{}",
        first.detail
    );
}

#[test]
fn crash_loop_back_off_never_reset_after_ten_minutes_of_running() {
    // Three short crashes (waits 0, 10s, 20s), then a run of 10m01s: the kubelet's
    // back-off entry has expired (more than 600s since its last update), so the
    // restart is immediate and the next crash waits 10s again.
    let t = play(
        crash_looping(20),
        "attempts:\n- {index: 0, attempt: 4, exitCode: 1, runTime: 10m1s}\n\
         - {index: 0, attempt: 1-5, exitCode: 1, runTime: 20s}\n",
    );
    assert_eq!(restart_waits(&t), [0, 10, 20, 0, 10], "{}", t.text());
    // A run of exactly 10 minutes is not more than 600s: the back-off goes on (40s).
    let t = play(
        crash_looping(20),
        "attempts:\n- {index: 0, attempt: 4, exitCode: 1, runTime: 10m}\n\
         - {index: 0, attempt: 1-5, exitCode: 1, runTime: 20s}\n",
    );
    assert_eq!(restart_waits(&t), [0, 10, 20, 40, 80], "{}", t.text());
}

fn play_with_grace(job: pb::Job, script: &str, grace: i64) -> Timeline {
    let script = Script::from_yaml(script).expect("script");
    let options = Options {
        termination_grace_period_seconds: Some(grace),
        ..Options::default()
    };
    simulate(job, Vec::new(), &script, &options, &mut decide).expect("simulated")
}

#[test]
fn termination_grace_period_was_ignored_sigkill_at_its_end_with_137() {
    let one = || job(serde_json::json!({"parallelism": 1, "completions": 1}));
    let script = "defaults: {runTime: 10m, stopTime: 25s}\nevents:\n- {at: 1m, drain: {pod: 1}}\n";
    // 10s: the app needs 25s, the kubelet kills it at 10s.
    let t = play_with_grace(one(), script, 10);
    let first = &t.attempts[0];
    assert_eq!((first.ended_ms, first.exit_code), (Some(70_000), Some(137)));
    assert!(first.why.contains("SIGKILL"), "{}", first.why);
    let evicted = events_of(&t, EventKind::PodEvicted);
    assert!(
        evicted[0].detail.contains("a 10s grace period"),
        "{}",
        evicted[0].detail
    );
    // 120s: a 25s stop is within it (no longer capped at the default 30s either way).
    let t = play_with_grace(one(), script, 120);
    assert_eq!(
        (t.attempts[0].ended_ms, t.attempts[0].exit_code),
        (Some(85_000), Some(143))
    );
    // 0s: the kubelet still waits its 2s minimum before SIGKILL (seen while a pod
    // failure policy keeps the finalizer on until the pod is terminal).
    let policy = job(serde_json::json!({"parallelism": 1, "completions": 1,
        "podFailurePolicy": {"rules": [{"action": "Ignore",
            "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]}]}}));
    let t = play_with_grace(policy, script, 0);
    assert_eq!(
        (t.attempts[0].ended_ms, t.attempts[0].exit_code),
        (Some(62_000), Some(137)),
        "{}",
        t.text()
    );
    // Without a template value: the default 30s, and a 25s stop ends on SIGTERM.
    let t = play(one(), script);
    assert_eq!(
        (t.attempts[0].ended_ms, t.attempts[0].exit_code),
        (Some(85_000), Some(143))
    );
}

#[test]
fn drain_evicted_one_pod_not_the_node_and_replacements_went_back_to_it() {
    // Three nodes, six pods (two a node); index 0's node (node-1) is drained at 1m.
    let job = indexed(serde_json::json!({"completions": 6, "parallelism": 6, "backoffLimit": 10}));
    let t = play(
        job,
        "nodes: 3\ndefaults: {runTime: 10m}\nevents:\n- {at: 1m, drain: {index: 0}}\n",
    );
    let evicted: Vec<Option<i32>> = events_of(&t, EventKind::PodEvicted)
        .iter()
        .map(|e| e.index)
        .collect();
    // kubectl drain evicts every pod on the node, not only the one named.
    assert_eq!(evicted, [Some(0), Some(3)], "{}", t.text());
    // It is cordoned: the replacements go to the other nodes.
    let replacements: Vec<&str> = events_of(&t, EventKind::PodCreated)
        .iter()
        .skip(6)
        .map(|e| e.detail.as_str())
        .collect();
    assert_eq!(replacements.len(), 2, "{}", t.text());
    assert!(
        replacements.iter().all(|d| !d.contains("node-1")),
        "{replacements:?}"
    );
    assert_eq!(t.summary.result, "Complete", "{}", t.text());
}

#[test]
fn drain_names_a_node_and_evicts_its_pending_pods_too() {
    // node-2's pods: index 1 running, index 3 still waiting to start (a 5m start delay).
    let job = indexed(serde_json::json!({"completions": 4, "parallelism": 4, "backoffLimit": 10}));
    let t = play(
        job,
        "nodes: [node-1, node-2]\ndefaults: {runTime: 10m}\n\
         attempts:\n- {index: 3, attempt: 1, startDelay: 5m}\n\
         events:\n- {at: 1m, drain: {node: node-2}}\n",
    );
    let evicted: Vec<Option<i32>> = events_of(&t, EventKind::PodEvicted)
        .iter()
        .map(|e| e.index)
        .collect();
    assert_eq!(evicted, [Some(1), Some(3)], "{}", t.text());
    let drained = events_of(&t, EventKind::NodeDrained);
    assert_eq!(drained.len(), 1, "{}", t.text());
    assert!(
        drained[0].detail.contains("node-2"),
        "{}",
        drained[0].detail
    );
    // The pending one had no container to stop: Failed at once, no exit code.
    let pending = t
        .attempts
        .iter()
        .find(|a| a.index == Some(3) && a.attempt == 1)
        .expect("index 3's first pod");
    assert_eq!(
        (pending.ended_ms, pending.exit_code),
        (Some(60_000), None),
        "{}",
        t.text()
    );
    assert_eq!(t.summary.result, "Complete", "{}", t.text());
}

#[test]
fn drain_script_errors_name_the_field() {
    let job = || indexed(serde_json::json!({}));
    for (script, path) in [
        (
            "events:\n- {at: 1m, drain: {node: node-1}}\n",
            "events[0].drain.node",
        ),
        (
            "nodes: 2\nevents:\n- {at: 1m, drain: {node: node-9}}\n",
            "events[0].drain.node",
        ),
        (
            "nodes: 2\nevents:\n- {at: 1m, drain: {node: node-1, index: 1}}\n",
            "events[0].drain.node",
        ),
        (
            "nodes: 2\nevents:\n- {at: 1m, preempt: {node: node-1}}\n",
            "events[0].preempt.node",
        ),
        (
            "nodes: 2\nevents:\n- {at: 1m, deletePod: {node: node-1}}\n",
            "events[0].deletePod.node",
        ),
    ] {
        let err = Script::from_yaml(script).map_err(first).expect_err(script);
        assert_eq!(err.path, path, "{script}: {err}");
    }
    // The old form still reads: the node of index 2's pod.
    let t = play(
        job(),
        "defaults: {runTime: 10m}\nevents:\n- {at: 5m, drain: {index: 2}}\n",
    );
    assert_eq!(events_of(&t, EventKind::PodEvicted).len(), 1);
}

fn play_with_container_restarts(job: pb::Job, script: &str, own: ContainerRestart) -> Timeline {
    let script = Script::from_yaml(script).expect("script");
    let options = Options {
        container_restarts: vec![own],
        ..Options::default()
    };
    simulate(job, Vec::new(), &script, &options, &mut decide).expect("simulated")
}

#[test]
fn container_restart_rules_were_ignored_rules_then_the_containers_own_policy() {
    let one = || job(serde_json::json!({"parallelism": 1, "completions": 1, "backoffLimit": 0}));
    let rule = |operator: &str, values: Vec<i32>| ContainerRestartRule {
        action: "Restart".to_string(),
        operator: operator.to_string(),
        values,
    };
    let own = |policy: &str, rules| ContainerRestart {
        container: "main".to_string(),
        policy: policy.to_string(),
        rules,
    };
    // In [3]: exit 3 restarts in place (at once, then with the crash-loop
    // back-off), never counted; the later exit 0 completes the Job.
    let t = play_with_container_restarts(
        one(),
        "attempts:\n- {attempt: 1-2, exitCode: 3, runTime: 20s}\n",
        own("Never", vec![rule("In", vec![3])]),
    );
    assert_eq!(t.summary.result, "Complete", "{}", t.text());
    assert_eq!((t.summary.restarts, t.summary.pods_created), (2, 1));
    assert_eq!(t.summary.failures_counted, 0);
    assert_eq!(restart_waits(&t), [0, 10]);
    // No rule matches exit 1 and the container's own policy is Never: the pod fails.
    let t = play_with_container_restarts(
        one(),
        "attempts:\n- {attempt: 1, exitCode: 1}\n",
        own("Never", vec![rule("NotIn", vec![0, 1])]),
    );
    assert_eq!(t.summary.reason, "BackoffLimitExceeded", "{}", t.text());
    // NotIn [1] matches exit 0 as well: a container that succeeds is restarted too
    // (what upstream's rule says), so the Job never completes.
    let t = play_with_container_restarts(
        one(),
        "horizon: 30m\n",
        own("Never", vec![rule("NotIn", vec![1])]),
    );
    assert_eq!(t.summary.result, "Unfinished", "{}", t.text());
    // The container's own OnFailure under a pod restartPolicy Never.
    let t = play_with_container_restarts(
        one(),
        "attempts:\n- {attempt: 1, exitCode: 1}\n",
        own("OnFailure", Vec::new()),
    );
    assert_eq!(t.summary.result, "Complete", "{}", t.text());
    assert_eq!(t.summary.restarts, 1);
}

/// The attempts the controller deleted, as the timeline shows them.
fn controller_deleted(t: &Timeline) -> Vec<&Attempt> {
    t.attempts
        .iter()
        .filter(|a| a.why.contains("deleted by the controller"))
        .collect()
}

#[test]
fn controller_deleted_pods_were_shown_as_failed_and_counted() {
    // The bug: pods the controller deleted (suspension, scale-down, a met success policy)
    // lose their tracking finalizer before the delete and are never counted, yet the
    // timeline called them "failed" and, with a podFailurePolicy, "counted".
    let policy = serde_json::json!({"rules": [{"action": "FailJob",
        "onExitCodes": {"operator": "In", "values": [42]}}]});
    let cases = [
        (
            "suspension",
            job(
                serde_json::json!({"completions": 2, "parallelism": 2, "podFailurePolicy": policy}),
            ),
            "defaults: {runTime: 10m}\nevents:\n- {at: 2m, suspend: true}\n- {at: 5m, resume: true}\n",
        ),
        (
            "scale-down",
            job(
                serde_json::json!({"completions": 3, "parallelism": 3, "podFailurePolicy": policy}),
            ),
            "defaults: {runTime: 10m}\nevents:\n- {at: 2m, parallelism: 1}\n",
        ),
        (
            "success policy",
            indexed(serde_json::json!({"podFailurePolicy": policy,
                "successPolicy": {"rules": [{"succeededIndexes": "0"}]}})),
            "defaults: {runTime: 10m}\nattempts:\n- {index: 0, runTime: 1m}\n",
        ),
    ];
    for (case, job, script) in cases {
        let t = play(job, script);
        let text = t.text();
        let deleted = controller_deleted(&t);
        assert!(!deleted.is_empty(), "{case}: {text}");
        for a in deleted {
            assert_eq!(a.outcome, "deleted", "{case}: {a:?}");
            assert_eq!(a.ending, Ending::Deleted, "{case}: {a:?}");
            assert!(a.policy.is_none(), "{case}: {a:?}");
        }
        assert_eq!(t.summary.failures_counted, 0, "{case}: {text}");
        assert_eq!(t.summary.pods_failed, 0, "{case}: {text}");
        assert!(
            !events_of(&t, EventKind::PodStopped)
                .iter()
                .any(|e| e.detail.contains(": counted") || e.detail.contains("rule")),
            "{case}: {text}"
        );
        assert!(!text.contains(": failed ran"), "{case}: {text}");
        for outcomes in t.summary.per_index.values() {
            assert!(
                outcomes.iter().all(|o| !o.starts_with("failed")),
                "{case}: {outcomes:?}"
            );
        }
    }
}

#[test]
fn backoff_waits_reported_the_requeue_asked_not_the_time_pods_were_held() {
    // The bug: a success resets the Job's backoff record, so the next pod is created at
    // once, yet "Backoff waits" added up the whole requeue the controller had asked for.
    let t = play(
        job(serde_json::json!({"completions": 2, "parallelism": 2})),
        "defaults: {runTime: 2m}\nattempts:\n- {attempt: 2-20, exitCode: 1, runTime: 50s}\n",
    );
    let text = t.text();
    assert!(!t.backoff_waits.is_empty(), "{text}");
    for w in &t.backoff_waits {
        assert!(w.held_ms <= w.wait_ms, "{w:?}");
    }
    assert!(
        t.backoff_waits.iter().any(|w| w.held_ms < w.wait_ms),
        "no hold was cut short: {text}"
    );
    let held: i64 = t.backoff_waits.iter().map(|w| w.held_ms).sum();
    assert_eq!(t.summary.backoff_wait_ms, held, "{text}");
}

#[test]
fn backoff_waits_counted_the_pending_timeout_requeue() {
    // The bug: a requeue for a stuck pod's pendingTimeout (extended policy), asked while
    // the Job's backoff record still held a failure, was counted as a backoff wait.
    let mut j = job(serde_json::json!({"completions": 1, "parallelism": 1}));
    if let Some(m) = j.metadata.as_mut() {
        m.annotations.insert(
            FAILURE_POLICY_ANNOTATION.to_string(),
            "apiVersion: job-decider.dev/v1alpha1\nkind: FailurePolicy\npendingTimeout: {seconds: 60, action: Count}\n"
                .to_string(),
        );
    }
    let t = play(
        j,
        "attempts:\n- {attempt: 1, exitCode: 1, runTime: 10s}\n- {attempt: 2, pending: ImagePullBackOff}\n",
    );
    let text = t.text();
    assert!(text.contains("timed-out"), "{text}");
    let timed_out = events_of(&t, EventKind::PodFailedByController)[0].offset_ms;
    assert!(
        t.backoff_waits
            .iter()
            .all(|w| w.at_ms + w.wait_ms != timed_out),
        "{:?}\n{text}",
        t.backoff_waits
    );
}

#[test]
fn per_index_requeues_showed_the_job_wide_backoff_record() {
    // The bug: with backoffLimitPerIndex the Job-wide record (which upstream does not use
    // for such Jobs) named the hold whenever it held failures; then `indexes` was empty.
    let t = play(
        indexed(
            serde_json::json!({"backoffLimitPerIndex": 3, "backoffLimit": 100,
            "completions": 2, "parallelism": 2}),
        ),
        "defaults: {runTime: 10m}\nattempts:\n- {index: 0, attempt: 1-2, exitCode: 1, runTime: 1m}\n",
    );
    let text = t.text();
    assert!(!t.backoff_waits.is_empty(), "{text}");
    assert!(!text.contains("backoff record"), "{text}");
    for w in &t.backoff_waits {
        assert_eq!(w.indexes, vec![0], "{text}");
    }
    assert!(text.contains("per-index backoff: index 0"), "{text}");
}

/// The summary's `Unfinished:` value, from the JSON (what `-o json` prints) and the text.
fn unfinished(t: &Timeline) -> String {
    let json = serde_json::to_value(&t.summary).expect("json");
    let value = json["unfinished"].as_str().unwrap_or_default().to_string();
    let line = t
        .text()
        .lines()
        .find_map(|l| l.strip_prefix("Unfinished:").map(|v| v.trim().to_string()))
        .unwrap_or_default();
    assert_eq!(value, line, "the JSON and the text say the same");
    value
}

#[test]
fn defect_8_an_unfinished_job_names_its_pending_pod_and_why() {
    let t = play(
        indexed(serde_json::json!({})),
        "horizon: 30m\nattempts:\n- {index: 3, attempt: 1, pending: ImagePullBackOff}\n",
    );
    assert_eq!(t.summary.result, "Unfinished");
    assert_eq!(t.summary.stopped, "idle");
    assert_eq!(unfinished(&t), "1 pod Pending (index 3: ImagePullBackOff)");
    // The reason sits just above the answer, so `tail` shows both.
    let text = t.text();
    let last: Vec<&str> = text.lines().rev().take(2).collect();
    assert!(last[0].starts_with("Result:"), "{text}");
    assert!(last[1].starts_with("Unfinished:"), "{text}");
}

#[test]
fn defect_8_an_unfinished_job_says_no_node_fits_an_unscheduled_pod() {
    let job = job(serde_json::json!({"parallelism": 1, "completions": 1}));
    let script = Script::from_yaml("horizon: 10m\nnodes: [node-1]\n").expect("script");
    let mut decider = with_extended_actions;
    let t =
        simulate(job, Vec::new(), &script, &Options::default(), &mut decider).expect("simulated");
    assert_eq!(t.summary.result, "Unfinished");
    assert_eq!(unfinished(&t), "1 pod Pending (no node fits)");
}

#[test]
fn defect_8_an_unfinished_job_says_it_waits_for_backoff() {
    // Every attempt fails at once; the horizon falls inside a backoff wait.
    let t = play(
        job(serde_json::json!({"parallelism": 1, "completions": 1})),
        "horizon: 2m\ndefaults: {runTime: 5s}\nattempts:\n- {exitCode: 1}\n",
    );
    assert_eq!(t.summary.result, "Unfinished");
    let last = t.backoff_waits.last().expect("a backoff wait");
    let until = crate::timeline::offset(last.at_ms + last.wait_ms);
    assert!(last.at_ms + last.wait_ms > 120_000, "{:?}", t.backoff_waits);
    assert_eq!(unfinished(&t), format!("waiting for backoff until {until}"));
}

#[test]
fn defect_8_a_finished_job_has_no_unfinished_line() {
    let t = play(job(serde_json::json!({})), "");
    assert_eq!(t.summary.result, "Complete");
    assert_eq!(unfinished(&t), "");
    assert!(!t.text().contains("Unfinished:"));
}

/// A summary line's value from the text, if the line is there.
fn line(t: &Timeline, label: &str) -> Option<String> {
    t.text()
        .lines()
        .find_map(|l| l.strip_prefix(label).map(|v| v.trim().to_string()))
}

#[test]
fn defect_8_time_suspended_is_a_summary_line() {
    let t = play(
        job(serde_json::json!({"completions": 2, "parallelism": 2})),
        "defaults: {runTime: 10m}\nevents:\n- {at: 2m, suspend: true}\n- {at: 5m, resume: true}\n",
    );
    let json = serde_json::to_value(&t.summary).expect("json");
    let ms = json["suspendedMs"].as_i64().unwrap_or_default();
    // Suspended from the 2m event to the 5m one (the conditions follow each at once).
    assert!((179_000..=181_000).contains(&ms), "{ms}");
    assert!(line(&t, "Suspended:").is_some(), "{}", t.text());
    // A Job never suspended has no such line.
    let plain = play(job(serde_json::json!({})), "");
    assert_eq!(line(&plain, "Suspended:"), None);
    assert_eq!(line(&plain, "CrashLoopBackOff:"), None);
}

#[test]
fn defect_8_time_in_crash_loop_back_off_is_a_summary_line() {
    // Index 0 crashes three times: restarted at once, then after 10s, then 20s.
    let t = play(
        restarting(indexed(
            serde_json::json!({"completions": 1, "parallelism": 1}),
        )),
        "defaults: {runTime: 5s}\nattempts:\n- {index: 0, attempt: 1, exitCode: 1}\n- {index: 0, attempt: 2, exitCode: 1}\n- {index: 0, attempt: 3, exitCode: 1}\n",
    );
    let gaps: i64 = t
        .attempts
        .windows(2)
        .filter_map(|w| Some(w[1].started_ms? - w[0].ended_ms?))
        .sum();
    let json = serde_json::to_value(&t.summary).expect("json");
    assert!(gaps >= 30_000, "{:?}", t.attempts);
    assert_eq!(json["crashLoopBackOffMs"].as_i64(), Some(gaps));
    assert!(line(&t, "CrashLoopBackOff:").is_some(), "{}", t.text());
}
