use super::*;

#[test]
fn a_decision_thread_runs_below_the_serving_threads_and_only_it() {
    let serving = this_thread_niceness();
    let decision = std::thread::spawn(|| {
        let before = this_thread_niceness();
        lower_this_thread();
        lower_this_thread();
        (before, this_thread_niceness())
    })
    .join()
    .unwrap();
    assert!(decision.1 >= DECISION_NICENESS, "{decision:?}");
    assert!(decision.1 >= decision.0, "{decision:?}");
    // Only the thread that ran the decision was lowered.
    assert_eq!(this_thread_niceness(), serving);
}
