use super::*;
use crate::fixtures::{PodExt, creations, indexed_job, job, pod, snapshot, t};
use crate::model::PodPhase;
use crate::model::{ExtendedFailurePolicy, NodeAvoidanceMode, PodFailureDetails};
use crate::sync::decide;
use std::sync::Arc;

fn settings(max_nodes: i32) -> NodeAvoidance {
    NodeAvoidance {
        mode: NodeAvoidanceMode::Required,
        max_nodes,
    }
}

/// A pod that failed on `node` at `at`, carrying `carried`.
fn failed_on(name: &str, node: &str, at: i64, carried: &[&str]) -> Pod {
    let mut p = pod(name).phase(PodPhase::Failed).exit("main", 1, t(at));
    p.failure_details = Some(Box::new(PodFailureDetails {
        node_name: node.into(),
        failed_nodes: carried.iter().map(|n| n.to_string()).collect(),
        ..PodFailureDetails::default()
    }));
    p
}

/// A running pod created at `created` carrying `carried`.
fn carrying(name: &str, created: i64, carried: &[&str]) -> Pod {
    let mut p = pod(name);
    p.creation_timestamp = Some(t(created));
    p.failure_details = Some(Box::new(PodFailureDetails {
        node_name: "running-node".into(),
        failed_nodes: carried.iter().map(|n| n.to_string()).collect(),
        ..PodFailureDetails::default()
    }));
    p
}

fn nodes_of(pods: &[Pod], max: i32) -> Vec<String> {
    let j = job();
    let sync_pods: Vec<SyncPod<'_>> = pods.iter().map(|p| SyncPod::new(&j, p)).collect();
    let refs: Vec<&SyncPod<'_>> = sync_pods.iter().collect();
    failed_nodes(&refs, settings(max))
}

#[test]
fn failed_nodes_orders_dedups_and_keeps_the_last_max() {
    // (name, pods, maxNodes, want)
    let cases: Vec<(&str, Vec<Pod>, i32, Vec<&str>)> = vec![
        ("nothing failed", vec![pod("r")], 5, vec![]),
        (
            "failures by finish time, not snapshot order",
            vec![failed_on("x", "n2", 20, &[]), failed_on("y", "n1", 10, &[])],
            5,
            vec!["n1", "n2"],
        ),
        (
            "same finish time: by name",
            vec![failed_on("b", "n2", 10, &[]), failed_on("a", "n1", 10, &[])],
            5,
            vec!["n1", "n2"],
        ),
        (
            "carried lists come first, oldest pod first",
            vec![
                carrying("new", 50, &["c3"]),
                carrying("old", 5, &["c1", "c2"]),
                failed_on("f", "n1", 10, &[]),
            ],
            5,
            vec!["c1", "c2", "c3", "n1"],
        ),
        (
            "a repeated node keeps its latest place",
            vec![
                carrying("old", 5, &["n1", "c2"]),
                failed_on("f1", "n1", 10, &[]),
                failed_on("f2", "c2", 5, &[]),
            ],
            5,
            vec!["c2", "n1"],
        ),
        (
            "only the last maxNodes",
            vec![
                failed_on("a", "n1", 1, &[]),
                failed_on("b", "n2", 2, &[]),
                failed_on("c", "n3", 3, &[]),
                failed_on("d", "n4", 4, &[]),
            ],
            2,
            vec!["n3", "n4"],
        ),
        (
            "a failed pod's own carried list and node both count",
            vec![failed_on("a", "n9", 1, &["n1", "n9"])],
            5,
            vec!["n1", "n9"],
        ),
        (
            "a failure without a node adds nothing",
            vec![failed_on("a", "", 1, &[])],
            5,
            vec![],
        ),
        (
            "a running pod's node is not a failure",
            vec![carrying("r", 1, &[])],
            5,
            vec![],
        ),
    ];
    for (name, pods, max, want) in cases {
        assert_eq!(nodes_of(&pods, max), want, "{name}");
    }
}

fn with_policy(mut j: Job, s: NodeAvoidance) -> Job {
    j.extended_failure_policy = Some(Arc::new(ExtendedFailurePolicy {
        node_avoidance: Some(s),
        ..ExtendedFailurePolicy::default()
    }));
    j
}

#[test]
fn sync_nonindexed_every_new_pod_avoids_the_jobs_failed_nodes() {
    let mut j = with_policy(
        job(),
        NodeAvoidance {
            mode: NodeAvoidanceMode::Preferred,
            max_nodes: 5,
        },
    );
    j.spec.parallelism = 2;
    j.spec.completions = Some(2);
    let pods = vec![
        failed_on("f1", "node-b", 20, &["node-a"]),
        failed_on("f2", "node-c", 10, &[]),
    ];
    let plan = decide(&snapshot(j, pods, t(1000)));
    let c = creations(&plan);
    assert_eq!(c.len(), 2);
    for creation in c {
        assert_eq!(
            creation
                .annotations
                .get(FAILED_NODES_ANNOTATION)
                .map(String::as_str),
            Some("node-a,node-c,node-b")
        );
        assert_eq!(
            creation.avoid_nodes,
            Some(AvoidNodes {
                nodes: vec!["node-a".into(), "node-c".into(), "node-b".into()],
                mode: NodeAvoidanceMode::Preferred,
            })
        );
    }
}

#[test]
fn sync_indexed_each_index_avoids_its_own_failed_nodes() {
    let mut j = with_policy(indexed_job(3, 3), settings(5));
    j.spec.backoff_limit = 10;
    let pods = vec![
        failed_on("i0", "node-0", 10, &["node-old"]).index(0),
        failed_on("i1", "node-1", 10, &[]).index(1),
    ];
    let plan = decide(&snapshot(j, pods, t(1000)));
    let by_index: Vec<(Option<i32>, Option<Vec<String>>)> = creations(&plan)
        .iter()
        .map(|c| {
            (
                c.completion_index,
                c.avoid_nodes.as_ref().map(|a| a.nodes.clone()),
            )
        })
        .collect();
    let v = |n: &[&str]| Some(n.iter().map(|s| s.to_string()).collect::<Vec<_>>());
    assert_eq!(
        by_index,
        vec![
            (Some(0), v(&["node-old", "node-0"])),
            (Some(1), v(&["node-1"])),
            (Some(2), None),
        ]
    );
    let c = creations(&plan);
    assert!(!c[2].annotations.contains_key(FAILED_NODES_ANNOTATION));
    assert_eq!(c[0].annotations[FAILED_NODES_ANNOTATION], "node-old,node-0");
}

#[test]
fn sync_without_node_avoidance_leaves_creations_alone() {
    let pods = vec![failed_on("f", "node-a", 10, &["node-z"])];
    let mut bare = pods.clone();
    bare[0].failure_details = None;
    let with = decide(&snapshot(job(), pods, t(1000)));
    let without = decide(&snapshot(job(), bare, t(1000)));
    assert_eq!(with, without);
    assert!(creations(&with).iter().all(|c| c.avoid_nodes.is_none()));
    assert_eq!(creations(&with).len(), 1);
}

#[test]
fn explanation_mentions_each_indexs_avoided_nodes() {
    let mut j = with_policy(indexed_job(8, 8), settings(5));
    j.spec.backoff_limit = 100;
    let pods: Vec<Pod> = (0..7)
        .map(|i| failed_on(&format!("f{i}"), &format!("n{i}"), 1, &[]).index(i))
        .collect();
    let (_, e) = crate::sync::decide_explained(&snapshot(j, pods, t(1000)));
    let message = e
        .action_reasons
        .iter()
        .find(|r| r.reason == "PendingIndexes")
        .map(|r| r.message.clone())
        .unwrap_or_default();
    assert!(
        message.ends_with(
            "; new pods keep off (Required) the nodes where their index failed: \
             index 0 avoids n0; index 1 avoids n1; index 2 avoids n2; index 3 avoids n3; \
             index 4 avoids n4 and 2 more"
        ),
        "{message}"
    );
}

#[test]
fn describe_is_empty_without_avoidance_and_bounded_with() {
    let mut j = with_policy(job(), settings(50));
    j.spec.backoff_limit = 10;
    let pods: Vec<Pod> = (0..8)
        .map(|i| failed_on(&format!("f{i}"), &format!("n{i}"), i, &[]))
        .collect();
    let plan = decide(&snapshot(j, pods, t(1000)));
    let c: Vec<PodCreation> = creations(&plan).into_iter().cloned().collect();
    assert_eq!(
        describe(&c),
        "; 1 new pod(s) keep off (Required) the nodes where the Job's pods failed: n0, n1, n2, n3, n4 and 3 more"
    );
    assert_eq!(describe(&[]), "");
}
