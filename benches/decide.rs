//! Benchmarks of `decide` alone on jobs of 10 to 100,000 pods:
//! (a) Indexed with backoffLimitPerIndex and per-index failures,
//! (b) NonIndexed with a pod failure policy; and the same with the explanation
//! (`decide_explained`), what a caller who asks for one pays.
//!
//! Also the wire side on realistic pods (`api::fixtures`): decoding a request
//! whole (`pb::DecideJobRequest`) and as the server does (`LazyDecideJobRequest`,
//! pods left encoded), and converting the lazy form into the domain snapshot.
//!
//! Run: `cargo bench --bench decide` (add `-- --quick` for a short run).

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

#[path = "../tests/it/generators/mod.rs"]
mod generators;

use std::hint::black_box;

use bytes::Bytes;
use criterion::{BatchSize, BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use generators::{base_job, running_pod, snapshot, t, terminated};
use job_decider_api::lean::lean_request;
use job_decider_api::{LazyDecideJobRequest, fixtures, pb};
use job_decider_core::model::*;
use job_decider_core::sync::{decide, decide_explained};
use job_decider_core::validate::validate_job;
use prost::Message;

/// The server's allocator (src/main.rs), so the figures are the server's: with
/// glibc's malloc, decide at 100,000 pods takes about twice as long.
#[cfg(feature = "jemalloc")]
#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

const NOW: i64 = 1_000_000;
const SIZES: [usize; 5] = [10, 100, 1_000, 10_000, 100_000];

/// An Indexed Job of `n` completions and parallelism, backoffLimitPerIndex 2,
/// maxFailedIndexes n/10; pods: one per index, every tenth failed (failure
/// counts 0..=2, so some fail their index), every fifth succeeded, the rest running.
fn indexed(n: usize) -> Snapshot {
    let n32 = i32::try_from(n).unwrap();
    let mut job = base_job();
    job.spec.completion_mode = CompletionMode::Indexed;
    job.spec.completions = Some(n32);
    job.spec.parallelism = n32;
    job.spec.backoff_limit = i32::MAX;
    job.spec.backoff_limit_per_index = Some(2);
    job.spec.max_failed_indexes = Some(n32 / 10);
    job.spec.pod_replacement_policy = PodReplacementPolicy::Failed;
    assert_eq!(validate_job(&job), vec![]);
    let pods = (0..n)
        .map(|i| {
            let mut p = running_pod(&format!("job-{i}-x"), &format!("uid-{i}"), t(NOW - 3_600));
            p.completion_index = Some(i32::try_from(i).unwrap());
            if i % 10 == 3 {
                p.phase = PodPhase::Failed;
                p.index_failure_count = i32::try_from(i % 3).unwrap();
                p.container_statuses = vec![terminated("main", 1, t(NOW - 30))];
            } else if i % 5 == 0 {
                p.phase = PodPhase::Succeeded;
                p.container_statuses = vec![terminated("main", 0, t(NOW - 60))];
            }
            p
        })
        .collect();
    snapshot(job, pods, t(NOW))
}

/// A NonIndexed Job of parallelism `n` with a pod failure policy (FailJob on
/// exit code 42, Ignore on DisruptionTarget, Count on exit codes 1-3);
/// pods: every tenth failed with exit 1 or a disruption, every fifth succeeded.
fn nonindexed_with_policy(n: usize) -> Snapshot {
    let n32 = i32::try_from(n).unwrap();
    let mut job = base_job();
    job.spec.completions = Some(n32 * 2);
    job.spec.parallelism = n32;
    job.spec.backoff_limit = n32;
    job.spec.pod_replacement_policy = PodReplacementPolicy::Failed;
    let exit_codes = |action, operator, values: Vec<i32>| PodFailurePolicyRule {
        action,
        on_exit_codes: Some(OnExitCodes {
            container_name: None,
            operator,
            values,
        }),
        on_pod_conditions: vec![],
    };
    job.spec.pod_failure_policy = Some(PodFailurePolicy {
        rules: vec![
            exit_codes(
                PodFailurePolicyAction::FailJob,
                ExitCodeOperator::In,
                vec![42],
            ),
            PodFailurePolicyRule {
                action: PodFailurePolicyAction::Ignore,
                on_exit_codes: None,
                on_pod_conditions: vec![OnPodConditionsPattern {
                    condition_type: "DisruptionTarget".into(),
                    status: ConditionStatus::True,
                }],
            },
            exit_codes(
                PodFailurePolicyAction::Count,
                ExitCodeOperator::In,
                vec![1, 2, 3],
            ),
        ],
    });
    assert_eq!(validate_job(&job), vec![]);
    let pods = (0..n)
        .map(|i| {
            let mut p = running_pod(&format!("job-{i}"), &format!("uid-{i}"), t(NOW - 3_600));
            if i % 10 == 3 {
                p.phase = PodPhase::Failed;
                p.container_statuses = vec![terminated("main", 1, t(NOW - 30))];
                if i % 20 == 13 {
                    p.conditions.push(PodCondition {
                        condition_type: "DisruptionTarget".into(),
                        status: ConditionStatus::True,
                        last_transition_time: Some(t(NOW - 40)),
                    });
                }
            } else if i % 5 == 0 {
                p.phase = PodPhase::Succeeded;
                p.container_statuses = vec![terminated("main", 0, t(NOW - 60))];
            }
            p
        })
        .collect();
    snapshot(job, pods, t(NOW))
}

fn bench_decide(c: &mut Criterion) {
    for (name, build) in [
        (
            "decide/indexed_per_index_failures",
            indexed as fn(usize) -> Snapshot,
        ),
        ("decide/nonindexed_failure_policy", nonindexed_with_policy),
    ] {
        let mut group = c.benchmark_group(name);
        for n in SIZES {
            let s = build(n);
            // Every snapshot decides something: the benchmark measures real work.
            assert!(!decide(&s).actions.is_empty());
            group.throughput(Throughput::Elements(n as u64));
            if n >= 10_000 {
                group.sample_size(10);
            }
            group.bench_with_input(BenchmarkId::from_parameter(n), &s, |b, s| {
                b.iter(|| decide(black_box(s)))
            });
        }
        group.finish();
    }
}

/// The same snapshots decided with their explanation (`explain: true`): what
/// asking costs; `decide/*` above is what not asking costs.
fn bench_decide_explained(c: &mut Criterion) {
    for (name, build) in [
        (
            "decide_explained/indexed_per_index_failures",
            indexed as fn(usize) -> Snapshot,
        ),
        (
            "decide_explained/nonindexed_failure_policy",
            nonindexed_with_policy,
        ),
    ] {
        let mut group = c.benchmark_group(name);
        for n in SIZES {
            let s = build(n);
            group.throughput(Throughput::Elements(n as u64));
            if n >= 10_000 {
                group.sample_size(10);
            }
            group.bench_with_input(BenchmarkId::from_parameter(n), &s, |b, s| {
                b.iter(|| decide_explained(black_box(s)))
            });
        }
        group.finish();
    }
}

fn bench_wire(c: &mut Criterion) {
    let mut decode = c.benchmark_group("wire/decode");
    let bodies: Vec<(usize, Bytes)> = [1_000, 10_000, 100_000]
        .into_iter()
        .map(|n| (n, fixtures::realistic_request(n).encode_to_vec().into()))
        .collect();
    // The same requests with their pods in the lean encoding.
    let lean_bodies: Vec<(usize, Bytes)> = [1_000, 10_000, 100_000]
        .into_iter()
        .map(|n| {
            let lean = lean_request(fixtures::realistic_request(n)).unwrap();
            (n, lean.encode_to_vec().into())
        })
        .collect();
    for (n, body) in &lean_bodies {
        decode.throughput(Throughput::Bytes(body.len() as u64));
        decode.sample_size(10);
        decode.bench_with_input(BenchmarkId::new("lazy_lean", n), body, |b, body| {
            b.iter(|| LazyDecideJobRequest::decode(black_box(body.clone())))
        });
    }
    for (n, body) in &bodies {
        decode.throughput(Throughput::Bytes(body.len() as u64));
        decode.sample_size(10);
        decode.bench_with_input(BenchmarkId::new("whole", n), body, |b, body| {
            b.iter(|| pb::DecideJobRequest::decode(black_box(body.as_ref())))
        });
        // From a `Bytes`, as the server decodes: pods become slices of the body.
        decode.bench_with_input(BenchmarkId::new("lazy", n), body, |b, body| {
            b.iter(|| LazyDecideJobRequest::decode(black_box(body.clone())))
        });
    }
    decode.finish();
    let mut convert = c.benchmark_group("wire/convert");
    for (encoding, bodies) in [("lazy", &bodies), ("lazy_lean", &lean_bodies)] {
        for (n, body) in bodies {
            convert.throughput(Throughput::Elements(*n as u64));
            convert.sample_size(10);
            convert.bench_with_input(BenchmarkId::new(encoding, n), body, |b, body| {
                b.iter_batched(
                    || LazyDecideJobRequest::decode(body.clone()).expect("decodes"),
                    |request| Snapshot::try_from(request).expect("converts"),
                    BatchSize::LargeInput,
                )
            });
        }
    }
    convert.finish();
}

criterion_group!(benches, bench_decide, bench_decide_explained, bench_wire);
criterion_main!(benches);
