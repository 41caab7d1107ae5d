//! The world's cost: the work a run does (pods carried by its syncs) grows with its
//! events, and the requests it prunes decide exactly as full ones do.

use crate::timeline::Timeline;
use crate::world::*;

const UID: &str = "5a5a5a5a-1111-2222-3333-444455556666";

/// An Indexed Job of `completions` indexes run `parallelism` at a time, each index
/// allowed two retries (`backoffLimitPerIndex: 2`), merged with `extra`.
fn indexed_job(completions: i32, parallelism: i32, extra: serde_json::Value) -> pb::Job {
    let mut spec = serde_json::json!({
        "parallelism": parallelism, "completions": completions, "backoffLimit": 2147483647,
        "backoffLimitPerIndex": 2, "completionMode": "Indexed",
        "selector": {"matchLabels": {"batch.kubernetes.io/controller-uid": UID}},
        "template": {"metadata": {"labels": {"batch.kubernetes.io/controller-uid": UID,
            "batch.kubernetes.io/job-name": "big", "controller-uid": UID, "job-name": "big"}},
            "spec": {"restartPolicy": "Never", "containers": [{"name": "main"}]}}
    });
    if let (Some(s), Some(add)) = (spec.as_object_mut(), extra.as_object()) {
        for (k, v) in add {
            s.insert(k.clone(), v.clone());
        }
    }
    serde_json::from_value(serde_json::json!({
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": "big", "namespace": "default", "uid": UID,
            "creationTimestamp": "2025-06-02T10:00:00Z", "resourceVersion": "1",
            "labels": {"batch.kubernetes.io/controller-uid": UID, "batch.kubernetes.io/job-name": "big",
                "controller-uid": UID, "job-name": "big"}},
        "spec": spec
    }))
    .expect("a valid Job")
}

fn decide(request: pb::DecideJobRequest) -> Result<pb::DecideJobResponse, DecideError> {
    job_decider_api::decide(request)
        .map(|d| d.response())
        .map_err(|e| DecideError {
            bad_input: true,
            message: e.to_string(),
        })
}

/// Plays `indexes` indexes, 100 at a time, 5% of attempts failing: the pods carried by
/// all syncs together, the syncs and the pods created.
fn work(indexes: i32) -> (u64, u64, u64) {
    let job = indexed_job(indexes, 100, serde_json::json!({}));
    let script =
        Script::from_yaml("seed: 7\nattempts:\n  - {percent: 5, exitCode: 1}\n").expect("script");
    let mut world = World::new(job, Vec::new(), &script, &Options::default()).expect("world");
    let stopped = world.run(&mut decide).expect("played");
    assert_eq!(stopped, "finished");
    assert_eq!(
        has_condition(&world.job, &["Complete"]).map(|c| c.status),
        Some("True".into())
    );
    (
        world.pod_syncs,
        u64::from(world.syncs),
        u64::from(world.created),
    )
}

#[test]
fn every_sync_carried_every_pod_so_work_grew_as_syncs_times_pods() {
    // 1,000 indexes: about 1,050 pods in ten waves. Each sync carries the pods that can
    // still change a decision (those running, and those ended but not yet counted), about
    // the parallelism, not every pod the Job ever had: carrying them all took 115,484
    // pods over 166 syncs (695 a sync, 110 per pod created).
    let (carried, syncs, created) = work(1000);
    assert!(created >= 1000, "{created} pods created");
    assert!(
        carried <= syncs * 110 && carried <= 15 * created,
        "{carried} pods carried by {syncs} syncs for {created} pods created"
    );
    // Twice the indexes, twice the events: about twice the work, not four times.
    let (carried2, syncs2, created2) = work(2000);
    assert!(
        carried2 * 10 <= carried * 25,
        "{carried2} pods carried by {syncs2} syncs for {created2} pods created, against {carried} for {created}"
    );
}

/// Plays `script` on `job` with requests pruned and with every pod carried.
fn both_ways(job: &pb::Job, script: &str) -> (Timeline, Timeline) {
    let script = Script::from_yaml(script).expect("script");
    let play = |carry_all_pods: bool| {
        let options = Options {
            carry_all_pods,
            ..Options::default()
        };
        simulate(job.clone(), Vec::new(), &script, &options, &mut decide).expect("simulated")
    };
    (play(false), play(true))
}

/// A seeded random script, as `conformance/simulate.sh` writes them: run times, a
/// failing attempt, a share of random failures, and a few drains, preemptions,
/// deletions, suspensions and parallelism changes.
fn random_script(seed: u64) -> String {
    let mut state = seed;
    let mut rnd = |n: u64| {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (state >> 33) % n
    };
    let r = rnd(20);
    let mut out = format!(
        "seed: {seed}\nhorizon: 3h\ndefaults: {{runTime: {}m, startDelay: {}s, stopTime: {}s}}\nattempts:\n",
        r + 1,
        r % 5,
        r % 31
    );
    let r = rnd(3);
    out += &format!(
        "  - {{attempt: {}, exitCode: {}, runTime: {}m}}\n",
        r + 1,
        (r * 41) % 138,
        r + 2
    );
    out += &format!(
        "  - {{percent: {}, exitCodes: [1, 42, 137]}}\n",
        rnd(40) + 5
    );
    let mut events = Vec::new();
    let mut t = 0;
    for _ in 0..rnd(5) {
        t += rnd(15) + 1;
        let pod = rnd(6) + 1;
        events.push(match rnd(5) {
            0 => format!("  - {{at: {t}m, drain: {{pod: {pod}}}}}"),
            1 => format!("  - {{at: {t}m, preempt: {{pod: {pod}}}}}"),
            2 => format!("  - {{at: {t}m, deletePod: {{pod: {pod}}}}}"),
            3 => {
                let resume = t + rnd(10) + 1;
                let line =
                    format!("  - {{at: {t}m, suspend: true}}\n  - {{at: {resume}m, resume: true}}");
                t = resume;
                line
            }
            _ => format!("  - {{at: {t}m, parallelism: {}}}", rnd(6)),
        });
    }
    if events.is_empty() {
        out += "events: []\n";
    } else {
        out += &format!("events:\n{}\n", events.join("\n"));
    }
    out
}

#[test]
fn pruned_requests_decide_as_full_ones_on_seeded_random_scripts() {
    let jobs = [
        // NonIndexed, a Job-wide backoff limit.
        indexed_job(
            6,
            3,
            serde_json::json!({"completionMode": "NonIndexed", "backoffLimitPerIndex": null, "backoffLimit": 4}),
        ),
        // Indexed, per-index limits, replacements only for failed pods.
        indexed_job(
            6,
            3,
            serde_json::json!({"podReplacementPolicy": "Failed", "maxFailedIndexes": 2}),
        ),
        // A pod failure policy: exit 42 fails the Job, disruptions are ignored.
        indexed_job(
            5,
            5,
            serde_json::json!({"backoffLimitPerIndex": null, "backoffLimit": 3, "podFailurePolicy": {"rules": [
                {"action": "FailJob", "onExitCodes": {"operator": "In", "values": [42]}},
                {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]}]}}),
        ),
        // A success policy.
        indexed_job(
            6,
            2,
            serde_json::json!({"backoffLimitPerIndex": null, "backoffLimit": 6,
                "successPolicy": {"rules": [{"succeededIndexes": "0-2"}]}}),
        ),
    ];
    let mut compared = 0;
    for seed in 1..=8 {
        let script = random_script(seed);
        for job in &jobs {
            let (pruned, full) = both_ways(job, &script);
            let (pruned, full) = (
                serde_json::to_string_pretty(&pruned).expect("json"),
                serde_json::to_string_pretty(&full).expect("json"),
            );
            assert!(
                pruned == full,
                "seed {seed}, script:\n{script}\npruned:\n{pruned}\nfull:\n{full}"
            );
            compared += 1;
        }
    }
    assert_eq!(compared, 32);
}

#[test]
fn pruned_requests_carry_fewer_pods_than_full_ones() {
    // The comparison above can fail: pruning does leave pods out.
    let job = indexed_job(200, 50, serde_json::json!({}));
    let script =
        Script::from_yaml("seed: 3\nattempts:\n  - {percent: 10, exitCode: 1}\n").expect("script");
    let carried = |carry_all_pods: bool| {
        let options = Options {
            carry_all_pods,
            ..Options::default()
        };
        let mut world = World::new(job.clone(), Vec::new(), &script, &options).expect("world");
        world.run(&mut decide).expect("played");
        (world.pod_syncs, world.syncs)
    };
    let (pruned, syncs) = carried(false);
    let (full, full_syncs) = carried(true);
    assert_eq!(syncs, full_syncs);
    assert!(
        pruned * 2 < full,
        "{pruned} pods carried pruned, {full} in full"
    );
}
