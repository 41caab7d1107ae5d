use super::*;
use crate::fixtures::*;
use crate::model::{OnPodConditionsPattern, PodFailurePolicy, PodFailurePolicyRule, PodPhase};
use crate::pod_failure_policy::match_pod_failure_policy;

/// The action read from a SyncPod is the one the full matcher decides, for
/// failed pods (matched when gathered) and others (matched when asked).
#[test]
fn policy_action_is_the_full_matchers_action() {
    let mut job = job();
    let exit = crate::fixtures::exit_rule;
    job.spec.pod_failure_policy = Some(PodFailurePolicy {
        rules: vec![
            exit(PodFailurePolicyAction::Unknown("Later".into()), vec![1]),
            exit(PodFailurePolicyAction::FailJob, vec![42]),
            PodFailurePolicyRule {
                action: PodFailurePolicyAction::Ignore,
                on_exit_codes: None,
                on_pod_conditions: vec![OnPodConditionsPattern {
                    condition_type: "DisruptionTarget".into(),
                    status: crate::model::ConditionStatus::True,
                }],
            },
            exit(PodFailurePolicyAction::Count, vec![1, 2]),
        ],
    });
    let pods = [
        pod("fail-job")
            .phase(PodPhase::Failed)
            .exit("main", 42, t(1)),
        pod("counted").phase(PodPhase::Failed).exit("main", 1, t(1)),
        pod("ignored")
            .phase(PodPhase::Failed)
            .exit("main", 7, t(1))
            .condition("DisruptionTarget", t(1)),
        pod("unmatched")
            .phase(PodPhase::Failed)
            .exit("main", 9, t(1)),
        // Not failed: matched only when asked (tracking, for a failing Job).
        pod("running-exited").exit("main", 42, t(1)),
        pod("running"),
    ];
    let mut actions = Vec::new();
    for p in &pods {
        let sync_pod = SyncPod::new(&job, p);
        let full = match_pod_failure_policy(job.spec.pod_failure_policy.as_ref(), "ns", p);
        assert_eq!(sync_pod.failed, p.phase == PodPhase::Failed, "{}", p.name);
        assert_eq!(
            sync_pod.policy_action(&job),
            full.action.as_ref(),
            "{}",
            p.name
        );
        actions.push(sync_pod.policy_action(&job).cloned());
    }
    use PodFailurePolicyAction::*;
    assert_eq!(
        actions,
        vec![
            Some(FailJob),
            Some(Count),
            Some(Ignore),
            None,
            Some(FailJob),
            None
        ]
    );
}

/// With a document, its rules come first; the spec's rules decide a pod
/// none of them holds for; a pod that did not fail is matched when asked.
#[test]
fn a_document_decides_first_and_falls_through_to_the_spec() {
    use crate::extended::rules::DocumentRule;
    use crate::extended::rules::test_docs::*;
    use crate::model::ExtendedAction;
    let mut job = with_document(
        job(),
        document(vec![
            rule(ExtendedAction::Ignore)
                .named("drain")
                .exit_in(&[(42, 42)]),
        ]),
    );
    job.spec.pod_failure_policy = Some(PodFailurePolicy {
        rules: vec![crate::fixtures::exit_rule(
            PodFailurePolicyAction::FailJob,
            vec![42, 7],
        )],
    });
    let by_document = pod("d").phase(PodPhase::Failed).exit("main", 42, t(1));
    let by_spec = pod("s").phase(PodPhase::Failed).exit("main", 7, t(1));
    let running = pod("r").exit("main", 42, t(1));
    let d = SyncPod::new(&job, &by_document);
    assert_eq!(d.policy_action(&job), Some(&PodFailurePolicyAction::Ignore));
    assert_eq!(
        d.failed_document_match().map(|m| m.rule),
        Some(DocumentRule::Rule(0))
    );
    let s = SyncPod::new(&job, &by_spec);
    assert_eq!(
        s.policy_action(&job),
        Some(&PodFailurePolicyAction::FailJob)
    );
    assert_eq!(s.failed_document_match(), None);
    let r = SyncPod::new(&job, &running);
    assert_eq!(r.failed_document_match(), None, "not failed");
    assert_eq!(r.policy_action(&job), Some(&PodFailurePolicyAction::Ignore));
}

/// The sync holds one per pod: the document's match or upstream's (by position) in 32 bytes.
#[test]
fn a_sync_pod_stays_small() {
    assert!(std::mem::size_of::<SyncPod<'_>>() <= 32);
}
