//! Monte Carlo sums: an analytic case, hand-computed costs, the CSV's shape.

use super::*;
use crate::Script;
use crate::world::{DecideError, Options, simulate};
use job_decider_api::pb;

const UID: &str = "0f0f0f0f-1111-2222-3333-444455556666";

/// An Indexed Job as the API server stores it, with `spec` merged in.
fn job(spec: serde_json::Value) -> pb::Job {
    let mut base = serde_json::json!({
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": "train", "namespace": "default", "uid": UID,
            "creationTimestamp": "2025-06-02T10:00:00Z", "resourceVersion": "1",
            "labels": {"batch.kubernetes.io/controller-uid": UID, "batch.kubernetes.io/job-name": "train",
                "controller-uid": UID, "job-name": "train"}},
        "spec": {"parallelism": 1, "completions": 1, "backoffLimit": 0, "completionMode": "Indexed",
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

fn decide(request: pb::DecideJobRequest) -> Result<pb::DecideJobResponse, DecideError> {
    job_decider_api::decide(request)
        .map(|d| d.response())
        .map_err(|e| DecideError {
            bad_input: true,
            message: e.to_string(),
        })
}

/// Lives 1..=n of `script` under `job`, summed up.
fn lives(job: &pb::Job, script: &str, seed: u64, n: u64, requests: &Requests) -> Vec<Life> {
    let script = Script::from_yaml(script).expect("script");
    (1..=n)
        .map(|i| {
            let s = Script::life_seed(seed, i);
            let t = simulate(
                job.clone(),
                Vec::new(),
                &script.life(s),
                &Options::default(),
                &mut decide,
            )
            .expect("simulated");
            Life::of(i, s, &t, requests)
        })
        .collect()
}

#[test]
fn one_index_no_retries_fails_as_often_as_its_attempt_fails() {
    // backoffLimit 0 and 10% of attempts failing: the Job fails in 10% of lives.
    let n = 3000;
    let l = lives(
        &job(serde_json::json!({})),
        "defaults: {runTime: 1m}\nattempts:\n- {percent: 10, exitCode: 1}\n",
        42,
        n,
        &Requests::new(),
    );
    let r = Report::of("default/train", 42, &l);
    let sigma = (0.1_f64 * 0.9 / 3000.0).sqrt();
    assert!(
        (r.p_failed - 0.1).abs() <= 3.0 * sigma,
        "P(Failed) {} not within 3 sigma ({sigma}) of 0.1",
        r.p_failed
    );
    assert!((r.p_complete + r.p_failed - 1.0).abs() < 1e-12);
    assert_eq!(r.p_unfinished, 0.0);
    let failed = r
        .outcomes
        .iter()
        .find(|o| o.outcome == "Failed (BackoffLimitExceeded)")
        .expect("the failures' reason");
    assert_eq!(
        failed.lives,
        l.iter().filter(|l| l.result == "Failed").count()
    );
    // One pod per life, whatever happened.
    assert_eq!(r.pods_created.max, 1.0);
    assert_eq!(r.pods_created.min, 1.0);
}

#[test]
fn pod_and_gpu_hours_of_a_hand_computable_life() {
    // Two indexes, each one pod running 1h: from creation to its end that is 1h and
    // the second or so before it starts (starts land on whole seconds), so about 2
    // pod-hours, and with 4 GPUs and 500m CPU per pod, 4 and 0.5 times that.
    let requests = Requests::from([
        ("nvidia.com/gpu".to_string(), 4.0),
        ("cpu".to_string(), quantity("500m").expect("quantity")),
    ]);
    let l = lives(
        &job(serde_json::json!({"completions": 2, "parallelism": 2})),
        "defaults: {runTime: 1h}\n",
        1,
        1,
        &requests,
    );
    let life = &l[0];
    assert_eq!(life.result, "Complete");
    let hours = life.pod_hours.succeeded;
    assert!((2.0..2.0 + 2.0 * 2.0 / 3600.0).contains(&hours), "{life:?}");
    assert_eq!(life.pod_hours.burned, 0.0);
    let gpu = life.resource_hours["nvidia.com/gpu"];
    assert!((gpu.succeeded - 4.0 * hours).abs() < 1e-9, "{gpu:?}");
    assert!((life.resource_hours["cpu"].total() - 0.5 * hours).abs() < 1e-9);
}

#[test]
fn memory_hours_were_byte_hours_under_a_gib_label() {
    // A pod of 16Gi running about 1h is about 16 GiB-hours, in the report's
    // lines and its CSV alike (the text printed 1.7e10 "GiB-hours").
    let requests = Requests::from([("memory".to_string(), quantity("16Gi").expect("quantity"))]);
    let l = lives(
        &job(serde_json::json!({"completions": 1, "parallelism": 1})),
        "defaults: {runTime: 1h}\n",
        1,
        1,
        &requests,
    );
    let memory = l[0].resource_hours["memory"].total();
    assert!(
        (16.0..16.0 + 16.0 * 2.0 / 3600.0).contains(&memory),
        "{memory}"
    );
    let row = csv(&l, &["memory".to_string()]);
    let last = row
        .lines()
        .nth(1)
        .and_then(|r| r.split(',').nth(15))
        .unwrap_or_default();
    assert_eq!(last, format!("{memory:.4}"), "{row}");
}

#[test]
fn burned_hours_are_the_failed_pods() {
    // Index 0's first pod fails after 30m and is replaced; the replacement runs 30m.
    // The failed pod's 30m are burned, the two successes' hours are useful.
    let l = lives(
        &job(serde_json::json!({"completions": 2, "parallelism": 2, "backoffLimit": 1})),
        "defaults: {runTime: 30m}\nattempts:\n- {index: 0, attempt: 1, exitCode: 1}\n",
        1,
        1,
        &Requests::from([("nvidia.com/gpu".to_string(), 8.0)]),
    );
    let life = &l[0];
    assert_eq!(life.result, "Complete");
    assert_eq!(life.pods_created, 3);
    // Each pod also holds the second or so before it starts (starts land on whole seconds).
    let slack = 2.0 / 3600.0;
    let (burned, useful) = (life.pod_hours.burned, life.pod_hours.succeeded);
    assert!((0.5..0.5 + slack).contains(&burned), "{life:?}");
    assert!((1.0..1.0 + 2.0 * slack).contains(&useful), "{life:?}");
    assert!((life.resource_hours["nvidia.com/gpu"].burned - 8.0 * burned).abs() < 1e-9);
}

#[test]
fn the_same_attempt_runs_as_long_under_either_policy() {
    // Common random numbers: the first attempt's drawn run time is the life's, not the Job's.
    let script = "defaults: {runTime: {logNormal: {median: 40m, sigma: 0.5}}}\nattempts:\n- {percent: 30, exitCode: 1}\n";
    let a = lives(
        &job(serde_json::json!({"backoffLimit": 0})),
        script,
        5,
        40,
        &Requests::new(),
    );
    let b = lives(
        &job(serde_json::json!({"backoffLimit": 3})),
        script,
        5,
        40,
        &Requests::new(),
    );
    let mut differ = 0;
    for (x, y) in a.iter().zip(&b) {
        // A life whose first attempt succeeds is the same life under both Jobs.
        if x.result == "Complete" {
            assert_eq!(x.wall_time_ms, y.wall_time_ms, "life {}", x.life);
        } else {
            differ += 1;
            assert!(y.pods_created > 1, "life {}", x.life);
        }
    }
    assert!(differ > 0, "no life failed its first attempt");
    // And run times differ between lives (they are drawn).
    let times: std::collections::BTreeSet<i64> = a.iter().map(|l| l.wall_time_ms).collect();
    assert!(times.len() > 30, "{times:?}");
}

#[test]
fn percentiles_are_nearest_rank() {
    let v: Vec<f64> = (1..=100).map(f64::from).collect();
    let s = Stats::of(&v);
    assert_eq!(
        (s.p50, s.p90, s.p99, s.max, s.min),
        (50.0, 90.0, 99.0, 100.0, 1.0)
    );
    assert!((s.mean - 50.5).abs() < 1e-12);
    assert_eq!(Stats::of(&[]).n, 0);
}

#[test]
fn quantities_read_as_kubernetes_writes_them() {
    for (text, want) in [
        ("2", 2.0),
        ("500m", 0.5),
        ("1.5", 1.5),
        ("16Gi", 16.0 * 1024.0 * 1024.0 * 1024.0),
        ("1k", 1000.0),
        ("1e3", 1000.0),
    ] {
        assert_eq!(quantity(text), Some(want), "{text}");
    }
    assert_eq!(quantity("two"), None);
    assert_eq!(quantity("-1"), None);
}

#[test]
fn csv_has_a_row_per_life_and_the_documented_columns() {
    let l = lives(
        &job(serde_json::json!({})),
        "attempts:\n- {percent: 50, exitCode: 1}\n",
        3,
        7,
        &Requests::from([("nvidia.com/gpu".to_string(), 1.0)]),
    );
    let text = csv(&l, &["nvidia.com/gpu".to_string()]);
    let rows: Vec<&str> = text.lines().collect();
    assert_eq!(rows.len(), 8);
    assert_eq!(
        rows[0],
        "life,seed,result,reason,stopped,wall_time_s,pods_created,pods_failed,failures_counted,failures_ignored,backoff_waits,backoff_held_s,pod_hours,pod_hours_succeeded,pod_hours_burned,nvidia.com/gpu-hours,nvidia.com/gpu-hours_succeeded,nvidia.com/gpu-hours_burned"
    );
    for (i, row) in rows[1..].iter().enumerate() {
        let cols: Vec<&str> = row.split(',').collect();
        assert_eq!(cols.len(), 18, "{row}");
        assert_eq!(cols[0], (i + 1).to_string());
        assert_eq!(cols[1], Script::life_seed(3, i as u64 + 1).to_string());
    }
}

#[test]
fn the_html_report_draws_every_chart() {
    let l = lives(
        &job(serde_json::json!({})),
        "attempts:\n- {percent: 50, exitCode: 1}\n",
        3,
        20,
        &Requests::new(),
    );
    let r = Report::of("default/<train>", 3, &l);
    let page = html(&r, &l);
    assert!(page.contains("default/&lt;train&gt;"));
    assert_eq!(page.matches("<svg").count(), 8);
    assert!(!page.contains("<script"));
    let both = compare_html("a", (&r, &l), "b", (&r, &l));
    assert_eq!(both.matches("<svg").count(), 8);
    assert_eq!(both.matches("<polyline").count(), 8);
}

#[test]
fn a_node_failure_in_half_the_lives_at_a_drawn_time() {
    // The pod's node is drained in half the lives, 10 to 20 minutes in: those lives
    // replace the pod and finish an hour after the drain; the others after an hour.
    let n = 400;
    let l = lives(
        &job(serde_json::json!({"backoffLimit": 6})),
        "defaults: {runTime: 1h}\nevents:\n- {at: {uniform: [10m, 20m]}, percent: 50, drain: {index: 0}}\n",
        8,
        n,
        &Requests::new(),
    );
    let drained: Vec<&Life> = l.iter().filter(|l| l.pods_created == 2).collect();
    let share = drained.len() as f64 / n as f64;
    let sigma = (0.25_f64 / n as f64).sqrt();
    assert!((share - 0.5).abs() <= 3.0 * sigma, "{share}");
    for life in &l {
        assert_eq!(life.result, "Complete", "{life:?}");
        let minutes = life.wall_time_ms as f64 / 60_000.0;
        if life.pods_created == 2 {
            assert!((70.0..81.0).contains(&minutes), "{life:?}");
            assert!(life.pod_hours.burned > 10.0 / 60.0, "{life:?}");
        } else {
            assert!((60.0..60.1).contains(&minutes), "{life:?}");
            assert_eq!(life.pod_hours.burned, 0.0);
        }
    }
    // The drawn times differ from life to life.
    let times: std::collections::BTreeSet<i64> =
        drained.iter().map(|l| l.wall_time_ms / 1000).collect();
    assert!(times.len() > drained.len() / 2, "{times:?}");
}

#[test]
fn the_html_compare_put_an_outcome_only_one_job_has_after_the_result() {
    // The left Job always completes, the right one always fails: each has an
    // outcome the other never does. The text paired them with `0 lives` and the
    // Result last; the HTML wrote `-` and put the right's outcome after the Result.
    let left = lives(&job(serde_json::json!({})), "{}\n", 3, 4, &Requests::new());
    let right = lives(
        &job(serde_json::json!({"backoffLimit": 0})),
        "attempts:\n- {exitCode: 1}\n",
        3,
        4,
        &Requests::new(),
    );
    let (l, r) = (Report::of("a", 3, &left), Report::of("b", 3, &right));
    let rows = compare_rows(&l, &r);
    assert_eq!(rows.last().map(|(k, _, _)| k.as_str()), Some("Result:"));
    let failed = rows
        .iter()
        .find(|(k, _, _)| k.starts_with("Failed ("))
        .expect("the right Job's failure");
    assert_eq!(failed.1, "0 lives", "{rows:?}");
    let page = compare_html("a", (&l, &left), "b", (&r, &right));
    let rows_html: Vec<&str> = page.split("<tr").skip(2).collect();
    assert!(
        rows_html
            .last()
            .is_some_and(|row| row.contains("<th>Result:</th>")),
        "{rows_html:?}"
    );
    assert!(page.contains("<td>0 lives</td>"), "{page}");
    let text = compare_text("a", &l, "b", &r);
    assert!(
        text.trim_end()
            .lines()
            .rev()
            .nth(1)
            .is_some_and(|line| line.contains("Result:")),
        "{text}"
    );
}
