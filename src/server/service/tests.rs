use super::*;

fn cost(pods: usize, body_bytes: Option<usize>, document: bool) -> DecideCost {
    DecideCost {
        pods,
        body_bytes,
        document,
    }
}

#[cfg(target_os = "linux")]
#[tokio::test]
async fn a_decision_off_the_reactor_runs_below_the_reactors_priority() {
    let lease = || Lease {
        _slot: None,
        charge: None,
    };
    let reactor = priority::this_thread_niceness();
    let blocking = run(Placement::Blocking, lease(), None, |_| {
        Ok(priority::this_thread_niceness())
    })
    .await
    .unwrap();
    assert!(blocking >= priority::DECISION_NICENESS, "{blocking}");
    // A small call decided on the reactor leaves the reactor's priority alone.
    let inline = run(Placement::Inline, lease(), None, |_| {
        Ok(priority::this_thread_niceness())
    })
    .await
    .unwrap();
    assert_eq!(inline, reactor);
}

#[test]
fn small_snapshots_are_decided_inline_and_large_ones_off_the_reactor() {
    assert_eq!(placement(cost(0, Some(100), false)), Placement::Inline);
    assert_eq!(
        placement(cost(INLINE_MAX_PODS, Some(INLINE_MAX_BODY_BYTES), false)),
        Placement::Inline
    );
    assert_eq!(
        placement(cost(INLINE_MAX_PODS + 1, Some(100), false)),
        Placement::Blocking
    );
    // Few pods but a large body (a huge pod, a large template): off the reactor.
    assert_eq!(
        placement(cost(1, Some(INLINE_MAX_BODY_BYTES + 1), false)),
        Placement::Blocking
    );
    // Without the body layer's count, nothing is known: off the reactor.
    assert_eq!(placement(cost(0, None, false)), Placement::Blocking);
}

/// A document's patterns make a small call's cost unbounded (issue 22, item 3).
#[test]
fn small_call_with_a_failure_policy_document_is_decided_off_the_reactor() {
    assert_eq!(placement(cost(1, Some(100), true)), Placement::Blocking);
    let annotated = pb::Job {
        metadata: Some(pb::ObjectMeta {
            annotations: [(FAILURE_POLICY_ANNOTATION.to_string(), "rules: []".into())].into(),
            ..Default::default()
        }),
        ..Default::default()
    };
    assert!(has_document(Some(&annotated), ""));
    assert!(has_document(None, "rules: []"));
    assert!(!has_document(Some(&pb::Job::default()), ""));
}

/// ValidateJob of 100,000 containers is not reactor work (issue 22, item 3).
#[test]
fn large_validation_is_off_the_reactor() {
    assert_eq!(validation_placement(Some(100), false), Placement::Inline);
    assert_eq!(
        validation_placement(Some(VALIDATE_INLINE_MAX_BODY_BYTES + 1), false),
        Placement::Blocking
    );
    assert_eq!(validation_placement(Some(100), true), Placement::Blocking);
    assert_eq!(validation_placement(None, false), Placement::Blocking);
}

#[test]
fn a_call_interrupt_is_set_by_its_guard_or_its_deadline() {
    let (interrupt, guard) = CallInterrupt::new(None);
    assert!(!interrupt.interrupted());
    drop(guard);
    assert!(interrupt.interrupted(), "the handler's future was dropped");
    let (past, _guard) = CallInterrupt::new(Some(Instant::now()));
    assert!(past.interrupted(), "the deadline has passed");
    let later = Instant::now() + std::time::Duration::from_secs(3600);
    let (future, _guard) = CallInterrupt::new(Some(later));
    assert!(!future.interrupted());
}
