use super::*;
use crate::fixtures::AfterAsks;

#[test]
fn a_flag_interrupts_once_set_and_never_does_not() {
    let flag = AtomicBool::new(false);
    assert_eq!(check(&flag), Ok(()));
    flag.store(true, Ordering::Relaxed);
    assert_eq!(check(&flag), Err(Cancelled));
    assert_eq!(check(&std::sync::Arc::new(flag)), Err(Cancelled));
    assert_eq!(check(&Never), Ok(()));
}

fn many_pods(n: usize) -> crate::model::Snapshot {
    use crate::fixtures::{job, running_pod, snapshot, t};
    let pods = (0..n)
        .map(|i| running_pod(&format!("p{i}"), &format!("u{i}"), t(0)))
        .collect();
    snapshot(job(), pods, t(10))
}

#[test]
fn a_decision_asks_between_pods_and_stops_when_told() {
    let snapshot = many_pods(1_000);
    let never = AfterAsks::new(usize::MAX);
    let plan = crate::sync::decide_until(&snapshot, &never);
    assert_eq!(plan, Ok(crate::sync::decide(&snapshot)));
    assert!(
        never.asked() >= 1_000,
        "asked {} times for 1,000 pods",
        never.asked()
    );
    // Told to stop half-way through the pods: no plan, and no further questions.
    let half = AfterAsks::new(500);
    assert_eq!(crate::sync::decide_until(&snapshot, &half), Err(Cancelled));
    assert_eq!(half.asked(), 501);
    let explained = crate::sync::decide_explained_until(&snapshot, &AtomicBool::new(true));
    assert_eq!(explained.map(|_| ()), Err(Cancelled));
}
