use super::*;
use crate::extended::rules::test_docs::{RuleExt, document, rule, with_document};
use crate::extended::rules::{self, DocumentRule};
use crate::fixtures::{PodExt, job, pod, t};
use crate::model::{
    ExitCodeOperator, ExtendedAction, OnExitCodes, PodFailurePolicy, PodFailurePolicyAction,
    PodFailurePolicyRule, PodPhase,
};
use crate::pod_failure_policy::{self, match_pod_failure_policy};

fn upstream_rule(values: Vec<i32>) -> PodFailurePolicyRule {
    PodFailurePolicyRule {
        action: PodFailurePolicyAction::FailJob,
        on_exit_codes: Some(OnExitCodes {
            container_name: None,
            operator: ExitCodeOperator::In,
            values,
        }),
        on_pod_conditions: vec![],
    }
}

/// Upstream's FailJob message and the document's start with the same
/// subject, written once; upstream's words stay its own exactly.
#[test]
fn one_subject_starts_both_fail_job_messages() {
    let p = pod("p").phase(PodPhase::Failed).exit("main", 137, t(0));
    let policy = PodFailurePolicy {
        rules: vec![upstream_rule(vec![137])],
    };
    let upstream = match_pod_failure_policy(Some(&policy), "default", &p);
    let on = upstream.matched_on.clone().expect("a match");
    let want = "Container main for pod default/p failed with exit code 137";
    assert_eq!(subject(Some(&on), "default", "p"), want);
    assert_eq!(
        upstream.fail_job_message.as_deref(),
        Some(format!("{want} matching FailJob rule at index 0").as_str())
    );
    let doc = document(vec![rule(ExtendedAction::FailJob).exit_in(&[(137, 137)])]);
    let job = with_document(job(), doc.clone());
    let m = rules::match_document(&doc, &p).expect("a document match");
    assert_eq!(rules::matched_on(&doc, m.rule, &p), vec![on]);
    assert_eq!(
        rules::fail_job_message(&job, &m, &p),
        format!("{want} matching FailJob rule at index 0 of the failure policy document")
    );
}

/// One description; each policy writes its own requirement.
#[test]
fn each_policy_describes_its_requirement_in_its_own_notation() {
    let on = MatchedOn::ExitCode {
        container: "main".into(),
        exit_code: 2,
        init_container: true,
    };
    let upstream = pod_failure_policy::asked(&upstream_rule(vec![1, 2, 3]));
    assert_eq!(
        on.describe(&upstream),
        "exit code 2 of init container \"main\" (In [1, 2, 3])"
    );
    let doc = document(vec![rule(ExtendedAction::Count).exit_in(&[(1, 3)])]);
    let extended = rules::asked(&doc, DocumentRule::Rule(0));
    assert_eq!(
        on.describe(&extended),
        "exit code 2 of init container \"main\" (In 1-3)"
    );
    assert_eq!(
        on.describe(&Asked::default()),
        "exit code 2 of init container \"main\""
    );
}
