//! A decision for people: per pod, whether it counts and which pod failure
//! policy rule matched and why; then the plan's actions.

use std::collections::HashSet;
use std::fmt::Write;

use job_decider_api::Decision;
use job_decider_core::model::{
    Job, OnPodConditionsPattern, Pod, PodFailurePolicyAction, PodFailurePolicyRule, PodPhase,
};
use job_decider_core::plan::{Action, PodRef};
use job_decider_core::pod_failure_policy::{MatchedOn, match_pod_failure_policy};

/// How a pod counts towards the Job, with the reason.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PodVerdict {
    /// `succeeded`, `failed-counted`, `failed-ignored`, `active` or `terminating`.
    pub counts_as: &'static str,
    /// Why, in a few words.
    pub why: String,
}

/// Classifies one pod of the snapshot.
pub fn classify(job: &Job, pod: &Pod) -> PodVerdict {
    let verdict = |counts_as, why: String| PodVerdict { counts_as, why };
    let limit = if job.spec.uses_backoff_limit_per_index() {
        "its index's backoffLimitPerIndex"
    } else {
        "backoffLimit"
    };
    match pod.phase {
        PodPhase::Succeeded => verdict("succeeded", String::new()),
        PodPhase::Failed => {
            let Some(policy) = job.spec.pod_failure_policy.as_ref() else {
                return verdict(
                    "failed-counted",
                    format!("no pod failure policy: counts towards {limit}"),
                );
            };
            let decision = match_pod_failure_policy(Some(policy), &job.namespace, pod);
            let (Some(index), Some(action)) = (decision.rule_index, decision.action.as_ref())
            else {
                return verdict(
                    "failed-counted",
                    format!("no pod failure policy rule matched: counts towards {limit}"),
                );
            };
            let matched = match &decision.matched_on {
                Some(MatchedOn::ExitCode {
                    container,
                    exit_code,
                    init_container,
                }) => format!(
                    "{} {container:?} exited with {exit_code}",
                    if *init_container {
                        "init container"
                    } else {
                        "container"
                    }
                ),
                Some(MatchedOn::Condition { condition_type }) => {
                    format!("pod condition {condition_type} matched")
                }
                None => "matched".into(),
            };
            let (counts_as, effect) = match action {
                PodFailurePolicyAction::Ignore => ("failed-ignored", "not counted"),
                PodFailurePolicyAction::FailJob => ("failed-counted", "fails the Job"),
                PodFailurePolicyAction::FailIndex => ("failed-counted", "fails its index"),
                PodFailurePolicyAction::Count | PodFailurePolicyAction::Unknown(_) => {
                    ("failed-counted", "counts towards the backoff limit")
                }
            };
            verdict(
                counts_as,
                format!("rule {index} ({}): {matched}; {effect}", action.as_str()),
            )
        }
        PodPhase::Pending | PodPhase::Running | PodPhase::Unknown => {
            if pod.deletion.is_some() {
                let replaced = if job.spec.only_replace_failed_pods() {
                    "replaced only once it has failed"
                } else {
                    "may be replaced already"
                };
                verdict("terminating", format!("being deleted; {replaced}"))
            } else if pod.is_ready() {
                verdict("active", "ready".into())
            } else {
                verdict("active", String::new())
            }
        }
    }
}

fn describe_rule(rule: &PodFailurePolicyRule) -> String {
    let mut on = Vec::new();
    if let Some(codes) = &rule.on_exit_codes {
        let operator = codes.operator.as_str();
        let container = codes
            .container_name
            .as_ref()
            .map(|c| format!(" of container {c:?}"))
            .unwrap_or_default();
        on.push(format!(
            "exit codes {operator} {:?}{container}",
            codes.values
        ));
    }
    let conditions: Vec<String> = rule
        .on_pod_conditions
        .iter()
        .map(
            |OnPodConditionsPattern {
                 condition_type,
                 status,
             }| { format!("{condition_type}={}", status.as_str()) },
        )
        .collect();
    if !conditions.is_empty() {
        on.push(format!("pod conditions {}", conditions.join(" or ")));
    }
    format!("{} on {}", rule.action.as_str(), on.join(" and "))
}

fn names(pods: &[PodRef]) -> String {
    pods.iter()
        .map(|p| p.name.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

/// The whole explanation of a decision.
pub fn explain(decision: &Decision) -> String {
    let snapshot = &decision.snapshot;
    let job = &snapshot.job;
    let spec = &job.spec;
    let mut out = String::new();
    // Writing to a String cannot fail; the results are ignored on purpose.
    let _ = writeln!(out, "Job {}/{} (uid {})", job.namespace, job.name, job.uid);
    let mode = spec.completion_mode.as_str();
    let completions = spec
        .completions
        .map_or_else(|| "unset (work queue)".to_string(), |c| c.to_string());
    let _ = write!(
        out,
        "  {mode}, completions {completions}, parallelism {}, backoffLimit {}",
        spec.parallelism, spec.backoff_limit
    );
    if let Some(per_index) = spec.backoff_limit_per_index {
        let _ = write!(out, ", backoffLimitPerIndex {per_index}");
    }
    if let Some(max) = spec.max_failed_indexes {
        let _ = write!(out, ", maxFailedIndexes {max}");
    }
    if spec.suspend {
        let _ = write!(out, ", suspended");
    }
    let _ = writeln!(out);
    let status = &job.status;
    let _ = writeln!(
        out,
        "  status: active {}, succeeded {}, failed {}{}{}",
        status.active,
        status.succeeded,
        status.failed,
        if status.completed_indexes.is_empty() {
            String::new()
        } else {
            format!(", completedIndexes {}", status.completed_indexes)
        },
        status
            .failed_indexes
            .as_ref()
            .filter(|f| !f.is_empty())
            .map(|f| format!(", failedIndexes {f}"))
            .unwrap_or_default(),
    );
    if let Some(policy) = &spec.pod_failure_policy {
        let _ = writeln!(out, "Pod failure policy:");
        for (i, rule) in policy.rules.iter().enumerate() {
            let _ = writeln!(out, "  rule {i}: {}", describe_rule(rule));
        }
    }

    let uncounted: HashSet<&str> = status
        .uncounted_terminated_pods
        .iter()
        .flat_map(|u| u.succeeded.iter().chain(u.failed.iter()))
        .map(String::as_str)
        .collect();
    let _ = writeln!(out, "Pods ({}):", snapshot.pods.len());
    for pod in &snapshot.pods {
        let verdict = classify(job, pod);
        let index = pod
            .completion_index
            .map(|i| format!(" index {i}"))
            .unwrap_or_default();
        let mut notes = Vec::new();
        if !verdict.why.is_empty() {
            notes.push(verdict.why.clone());
        }
        if matches!(pod.phase, PodPhase::Succeeded | PodPhase::Failed) {
            if uncounted.contains(pod.uid.as_str()) {
                notes.push("recorded in uncountedTerminatedPods".into());
            } else if !pod.has_tracking_finalizer {
                notes.push("no tracking finalizer: already counted".into());
            }
        }
        if pod.controller.is_none() {
            notes.push("orphan: no controller owner".into());
        }
        let _ = writeln!(
            out,
            "  {}{index} [{}] {}{}",
            pod.name,
            pod.phase.as_str(),
            verdict.counts_as,
            if notes.is_empty() {
                String::new()
            } else {
                format!(": {}", notes.join("; "))
            }
        );
    }

    let plan = &decision.plan;
    if plan.actions.is_empty() {
        let _ = writeln!(out, "Actions: none");
    } else {
        let _ = writeln!(out, "Actions ({}), in order:", plan.actions.len());
    }
    for (n, action) in plan.actions.iter().enumerate() {
        let line = match action {
            Action::AdoptPods(pods) => format!("adopt {}", names(pods)),
            Action::ReleasePods(pods) => format!("release {}", names(pods)),
            Action::CreatePods(pods) => {
                let indexes: Vec<String> = pods
                    .iter()
                    .filter_map(|p| p.completion_index.map(|i| i.to_string()))
                    .collect();
                if indexes.is_empty() {
                    format!("create {} pod(s)", pods.len())
                } else {
                    format!(
                        "create {} pod(s) for indexes {}",
                        pods.len(),
                        indexes.join(", ")
                    )
                }
            }
            Action::DeletePods(pods) => {
                let list: Vec<String> = pods
                    .iter()
                    .map(|p| {
                        if p.remove_finalizer_first {
                            format!("{} (finalizer removed first, not counted)", p.pod.name)
                        } else {
                            p.pod.name.clone()
                        }
                    })
                    .collect();
                format!("delete {}", list.join(", "))
            }
            Action::RemoveFinalizers(pods) => {
                format!("remove the tracking finalizer from {}", names(pods))
            }
            Action::UpdateStatus(s) => {
                let conditions: Vec<String> = s
                    .conditions
                    .iter()
                    .map(|c| {
                        format!(
                            "{}={} ({})",
                            c.condition_type.as_str(),
                            c.status.as_str(),
                            c.reason
                        )
                    })
                    .collect();
                let uncounted = s
                    .uncounted_terminated_pods
                    .as_ref()
                    .map(|u| {
                        format!(
                            ", uncounted succeeded {} failed {}",
                            u.succeeded.len(),
                            u.failed.len()
                        )
                    })
                    .unwrap_or_default();
                format!(
                    "update status: active {}, succeeded {}, failed {}{uncounted}{}",
                    s.active,
                    s.succeeded,
                    s.failed,
                    if conditions.is_empty() {
                        String::new()
                    } else {
                        format!("; conditions {}", conditions.join(", "))
                    }
                )
            }
            Action::RecordEvent(e) => format!(
                "event {} {}: {}",
                e.event_type.as_str(),
                e.reason,
                e.message
            ),
        };
        let _ = writeln!(out, "  {}. {line}", n + 1);
    }
    if let Some(after) = plan.requeue_after {
        let _ = writeln!(out, "Decide again after {after:?}");
    }
    let backoff = &plan.state.backoff;
    if backoff.failures_after_last_success > 0 {
        let _ = writeln!(
            out,
            "State: {} failure(s) since the last success",
            backoff.failures_after_last_success
        );
    }
    out
}

/// A JobSet decision for people: the Jobs by group, every rule checked against
/// every failed Job and why it matched or not, the action, then the plan.
pub fn explain_jobset(response: &job_decider_api::pb::DecideJobSetResponse) -> String {
    use job_decider_api::pb::job_set_action::Kind;
    use std::fmt::Write as _;
    let mut out = String::new();
    if let Some(e) = &response.explanation {
        for (group, jobs, omitted) in [
            (
                "previous attempts",
                &e.previous_jobs,
                e.previous_jobs_omitted,
            ),
            ("active", &e.active_jobs, e.active_jobs_omitted),
            ("failed", &e.failed_jobs, e.failed_jobs_omitted),
            ("succeeded", &e.succeeded_jobs, e.succeeded_jobs_omitted),
        ] {
            if !jobs.is_empty() {
                let _ = writeln!(out, "{group}: {}{}", jobs.join(", "), and_more(omitted));
            }
        }
        if !e.evaluations.is_empty() {
            let _ = writeln!(out, "\nRules:");
            for ev in &e.evaluations {
                let verdict = if ev.matches { "matches" } else { "no match" };
                let _ = writeln!(
                    out,
                    "  rule {} ({}) on {}: {verdict}: {}",
                    ev.rule_index, ev.rule_name, ev.job, ev.detail
                );
            }
        }
        if e.evaluations_omitted > 0 {
            let _ = writeln!(
                out,
                "  ({} more evaluations not listed)",
                e.evaluations_omitted
            );
        }
        let _ = writeln!(out, "\nDecision: {}", e.summary);
    }
    let _ = writeln!(out, "\nActions:");
    if response.actions.is_empty() {
        let _ = writeln!(out, "  none");
    }
    for action in &response.actions {
        match &action.kind {
            Some(Kind::DeleteJobs(d)) => {
                let names: Vec<&str> = d.jobs.iter().map(|j| j.name.as_str()).collect();
                let _ = writeln!(out, "  delete jobs (foreground): {}", names.join(", "));
            }
            Some(Kind::UpdateStatus(u)) => {
                let status = u.status.clone().unwrap_or_default();
                let conditions: Vec<String> = status
                    .conditions
                    .iter()
                    .map(|c| format!("{}={} ({})", c.r#type, c.status, c.reason))
                    .collect();
                let _ = writeln!(
                    out,
                    "  update status: restarts {}, counted towards max {}, terminalState {:?}, conditions [{}]",
                    status.restarts,
                    status.restarts_count_towards_max,
                    status.terminal_state,
                    conditions.join(", ")
                );
            }
            Some(Kind::RecordEvent(ev)) => {
                let _ = writeln!(out, "  event {} {}: {}", ev.r#type, ev.reason, ev.message);
            }
            None => {}
        }
    }
    if !response.jobs_to_create.is_empty() {
        let names: Vec<&str> = response
            .jobs_to_create
            .iter()
            .map(|j| j.name.as_str())
            .collect();
        let _ = writeln!(out, "\nJobs that may be created now: {}", names.join(", "));
    }
    if let Some(after) = &response.requeue_after {
        // A plan stops at the per-plan cap of child Job changes; the rest follow.
        let _ = writeln!(
            out,
            "\nDecide again after {}s: this plan stopped at its cap of child Job changes",
            after.seconds
        );
    }
    out
}

/// ", and N more" for a list the response cut short; empty when it is whole.
fn and_more(omitted: i32) -> String {
    if omitted > 0 {
        format!(", and {omitted} more")
    } else {
        String::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use job_decider_core::fixtures;
    use job_decider_core::model::{ConditionStatus, Deletion, PodFailurePolicy};
    use job_decider_core::time::Time;

    fn pod(phase: PodPhase) -> Pod {
        Pod {
            uid: "u".into(),
            labels: Default::default(),
            controller: None,
            creation_timestamp: None,
            phase,
            ..fixtures::pod("p")
        }
    }

    #[test]
    fn pods_are_classified_by_phase_and_deletion() {
        let job = fixtures::job();
        assert_eq!(
            classify(&job, &pod(PodPhase::Succeeded)).counts_as,
            "succeeded"
        );
        assert_eq!(classify(&job, &pod(PodPhase::Running)).counts_as, "active");
        let failed = classify(&job, &pod(PodPhase::Failed));
        assert_eq!(failed.counts_as, "failed-counted");
        assert!(failed.why.contains("no pod failure policy"));
        let mut deleting = pod(PodPhase::Running);
        deleting.deletion = Some(Deletion {
            timestamp: Time::from_unix_nanos(0),
            grace_period_seconds: Some(30),
        });
        assert_eq!(classify(&job, &deleting).counts_as, "terminating");
    }

    #[test]
    fn rules_are_described() {
        let mut job = fixtures::job();
        job.spec.pod_failure_policy = Some(PodFailurePolicy {
            rules: vec![PodFailurePolicyRule {
                action: PodFailurePolicyAction::Ignore,
                on_exit_codes: None,
                on_pod_conditions: vec![OnPodConditionsPattern {
                    condition_type: "DisruptionTarget".into(),
                    status: ConditionStatus::True,
                }],
            }],
        });
        let rule = &job.spec.pod_failure_policy.as_ref().expect("policy").rules[0];
        assert_eq!(
            describe_rule(rule),
            "Ignore on pod conditions DisruptionTarget=True"
        );
    }

    #[test]
    fn a_capped_jobset_plan_says_what_it_left_out_and_when_to_come_back() {
        use job_decider_api::pb;
        let response = pb::DecideJobSetResponse {
            explanation: Some(pb::JobSetExplanation {
                active_jobs: vec!["js-a-0".into(), "js-a-1".into()],
                active_jobs_omitted: 7,
                evaluations_omitted: 3,
                summary: "creating Jobs".into(),
                ..Default::default()
            }),
            requeue_after: Some(pbjson_types::Duration::default()),
            ..Default::default()
        };
        let text = explain_jobset(&response);
        assert!(
            text.contains("active: js-a-0, js-a-1, and 7 more"),
            "{text}"
        );
        assert!(text.contains("3 more evaluations not listed"), "{text}");
        assert!(text.contains("Decide again after 0s"), "{text}");
        let whole = explain_jobset(&pb::DecideJobSetResponse::default());
        assert!(!whole.contains("Decide again"), "{whole}");
    }
}
