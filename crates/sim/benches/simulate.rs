//! One simulated life of an Indexed Job (`backoffLimitPerIndex: 2`, restartPolicy
//! Never) with 5% of attempts failing (`percent: 5, exitCode: 1`), decided by
//! job-decider in process: 100 indexes (what one Monte Carlo life costs), 1,000,
//! and 10,000 at parallelism 1,000 and 10,000.
//!
//! Run: `cargo bench -p job-decider-sim --bench simulate` (add `-- --quick` for a
//! short run). `cargo test --all-targets` runs each once; a debug build plays small
//! Jobs only, so that stays quick.

// Bench code: a failed unwrap is a failed bench.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use job_decider_api::{LazyDecideJobRequest, pb};
use job_decider_sim::{DecideError, Decider, Options, Script, simulate};

const UID: &str = "5a5a5a5a-1111-2222-3333-444455556666";

/// (indexes, parallelism): the release build's Jobs, or a debug build's small ones.
fn sizes() -> &'static [(i32, i32)] {
    if cfg!(debug_assertions) {
        &[(100, 100), (200, 50)]
    } else {
        &[
            (100, 100),
            (1_000, 1_000),
            (10_000, 1_000),
            (10_000, 10_000),
        ]
    }
}

/// An Indexed Job as the API server stores it (uid, selector and labels filled in).
fn job(completions: i32, parallelism: i32) -> pb::Job {
    serde_json::from_value(serde_json::json!({
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": "big", "namespace": "default", "uid": UID,
            "creationTimestamp": "2025-06-02T10:00:00Z", "resourceVersion": "1",
            "labels": {"batch.kubernetes.io/controller-uid": UID, "batch.kubernetes.io/job-name": "big",
                "controller-uid": UID, "job-name": "big"}},
        "spec": {"parallelism": parallelism, "completions": completions, "backoffLimit": 2147483647,
            "backoffLimitPerIndex": 2, "completionMode": "Indexed",
            "selector": {"matchLabels": {"batch.kubernetes.io/controller-uid": UID}},
            "template": {"metadata": {"labels": {"batch.kubernetes.io/controller-uid": UID,
                "batch.kubernetes.io/job-name": "big", "controller-uid": UID, "job-name": "big"}},
                "spec": {"restartPolicy": "Never", "containers": [{"name": "main"}]}}}
    }))
    .unwrap()
}

/// job-decider in process, as `simulate` asks it: the world's encoded pods read as they are.
struct InProcess;

impl Decider for InProcess {
    fn decide(
        &mut self,
        request: pb::DecideJobRequest,
    ) -> Result<pb::DecideJobResponse, DecideError> {
        self.decide_encoded(LazyDecideJobRequest::from(request))
    }

    fn decide_encoded(
        &mut self,
        request: LazyDecideJobRequest,
    ) -> Result<pb::DecideJobResponse, DecideError> {
        job_decider_api::decide(request)
            .map(|d| d.response())
            .map_err(|e| DecideError {
                bad_input: true,
                message: e.to_string(),
            })
    }
}

fn bench_simulate(c: &mut Criterion) {
    let script = Script::from_yaml("seed: 1\nattempts:\n  - {percent: 5, exitCode: 1}\n").unwrap();
    let mut group = c.benchmark_group("simulate");
    group.sample_size(10);
    for &(indexes, parallelism) in sizes() {
        let job = job(indexes, parallelism);
        // The life is played to its end: a bound reached would measure less than a life.
        let played = simulate(
            job.clone(),
            Vec::new(),
            &script,
            &Options::default(),
            &mut InProcess,
        )
        .unwrap();
        assert_eq!(played.summary.result, "Complete", "{indexes} indexes");
        group.bench_with_input(
            BenchmarkId::new(format!("indexed_p{parallelism}"), indexes),
            &job,
            |b, job| {
                b.iter(|| {
                    simulate(
                        black_box(job.clone()),
                        Vec::new(),
                        &script,
                        &Options::default(),
                        &mut InProcess,
                    )
                    .unwrap()
                });
            },
        );
    }
    group.finish();
}

criterion_group!(benches, bench_simulate);
criterion_main!(benches);
