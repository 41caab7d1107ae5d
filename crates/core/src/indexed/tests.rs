use super::*;
use crate::fixtures::*;

#[test]
fn completion_index_order_borrows_ordered_pods_and_sorts_others_stably() {
    let ordered = [
        pod("none"),
        pod("a").index(0),
        pod("b").index(0),
        pod("c").index(2),
    ];
    let refs: Vec<&Pod> = ordered.iter().collect();
    assert!(matches!(in_completion_index_order(&refs), Cow::Borrowed(_)));
    let shuffled = [
        pod("c").index(2),
        pod("a").index(0),
        pod("none"),
        pod("b").index(0),
    ];
    let refs: Vec<&Pod> = shuffled.iter().collect();
    let in_order = in_completion_index_order(&refs);
    assert!(matches!(in_order, Cow::Owned(_)));
    let names: Vec<&str> = in_order.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(
        names,
        ["none", "a", "b", "c"],
        "equal indexes keep their order"
    );
    let mut sorted = refs.clone();
    sort_by_completion_index(&mut sorted);
    assert_eq!(in_order.as_ref(), sorted.as_slice());
}

#[test]
fn generate_name_is_cut_to_58_characters() {
    assert_eq!(pod_generate_name_with_index("job", 3), "job-3-");
    let long = "a".repeat(70);
    let name = pod_generate_name_with_index(&long, 1);
    assert_eq!(name.len(), 58);
    assert_eq!(name, format!("{}-1-", "a".repeat(55)));
    let exact = "b".repeat(55);
    assert_eq!(pod_generate_name_with_index(&exact, 1).len(), 58);
}

#[test]
fn succeeded_indexes_take_only_valid_indexes_with_finalizer() {
    let mut job = indexed_job(4, 2);
    job.status.completed_indexes = "0,1-foo,bar".into();
    let pods = [
        pod("a").index(3).phase(PodPhase::Succeeded),
        pod("b")
            .index(2)
            .phase(PodPhase::Succeeded)
            .without_finalizer(),
        pod("c").index(7).phase(PodPhase::Succeeded),
        pod("d").phase(PodPhase::Succeeded),
    ];
    let refs: Vec<&Pod> = pods.iter().collect();
    let (prev, all) = succeeded_indexes(&job, &refs);
    assert_eq!(prev.to_string(), "0");
    assert_eq!(all.to_string(), "0,3");
}

#[test]
fn index_fails_once_its_counted_failures_reach_the_limit() {
    let mut job = indexed_job(3, 3);
    job.spec.backoff_limit_per_index = Some(1);
    let first = pod("a")
        .index(0)
        .phase(PodPhase::Failed)
        .failure_counts(0, 0);
    let second = pod("b")
        .index(0)
        .phase(PodPhase::Failed)
        .failure_counts(1, 0);
    assert!(!is_index_failed(&job, &first));
    assert!(is_index_failed(&job, &second));
    job.spec.backoff_limit_per_index = Some(0);
    assert!(is_index_failed(&job, &first));
}

#[test]
fn delayed_deletion_keeps_the_latest_highest_count_pod() {
    let mut job = indexed_job(3, 3);
    job.spec.backoff_limit_per_index = Some(3);
    let pods = [
        pod("old")
            .index(1)
            .phase(PodPhase::Failed)
            .failure_counts(0, 0)
            .exit("main", 1, t(10)),
        pod("new")
            .index(1)
            .phase(PodPhase::Failed)
            .failure_counts(1, 0)
            .exit("main", 1, t(20)),
        pod("other")
            .index(2)
            .phase(PodPhase::Failed)
            .exit("main", 1, t(5)),
        pod("running").index(2),
    ];
    let refs: Vec<SyncPod> = pods.iter().map(|p| SyncPod::new(&job, p)).collect();
    let active: Vec<&Pod> = pods.iter().filter(|p| p.is_active()).collect();
    let kept = pods_with_delayed_deletion(
        &job,
        &refs,
        &IndexSet::from_indexes(active.iter().filter_map(|p| p.completion_index)),
        &IndexSet::new(),
        &IndexSet::new(),
        &Default::default(),
    );
    assert_eq!(kept.len(), 1);
    assert_eq!(kept[&1].name, "new");
}

/// Regression (found by the conformance generator's odd annotations):
/// failure counts near i32::MAX were summed in i64, so a pod whose sum
/// wraps in upstream's int32 was kept for replacement instead of the older one.
#[test]
fn regression_delayed_deletion_sums_failure_counts_in_int32() {
    let mut job = indexed_job(3, 3);
    job.spec.backoff_limit_per_index = Some(3);
    let pods = [
        pod("older")
            .index(1)
            .phase(PodPhase::Failed)
            .failure_counts(0, i32::MAX)
            .exit("main", 1, t(10)),
        pod("wraps")
            .index(1)
            .phase(PodPhase::Failed)
            .failure_counts(1, i32::MAX)
            .exit("main", 1, t(20)),
    ];
    let refs: Vec<SyncPod> = pods.iter().map(|p| SyncPod::new(&job, p)).collect();
    let kept = pods_with_delayed_deletion(
        &job,
        &refs,
        &IndexSet::new(),
        &IndexSet::new(),
        &IndexSet::new(),
        &Default::default(),
    );
    assert_eq!(kept[&1].name, "older");
    let ignored_at_max = pod("c").failure_counts(0, i32::MAX);
    let mut ignoring = job.clone();
    ignoring.spec.pod_failure_policy = None;
    assert_eq!(
        new_index_failure_counts(&ignoring, Some(&SyncPod::new(&ignoring, &ignored_at_max))),
        (1, i32::MAX),
        "a counted failure leaves the ignored count as it is"
    );
}

#[test]
fn replacement_counts_follow_the_policy() {
    let job = indexed_job(3, 3);
    assert_eq!(new_index_failure_counts(&job, None), (0, 0));
    let failed = pod("a")
        .index(0)
        .phase(PodPhase::Failed)
        .failure_counts(2, 1);
    let replaced = |p| new_index_failure_counts(&job, Some(&SyncPod::new(&job, p)));
    assert_eq!(replaced(&failed), (3, 1));
    let at_max = pod("b").failure_counts(i32::MAX, 0);
    assert_eq!(replaced(&at_max), (i32::MIN, 0));
}
