//! Domain → wire for `DecideJobSet`: the plan, its explanation and the JobSet status.

use job_decider_core::jobset::{
    JobSetAction, JobSetExplanation, JobSetPlan, JobSetStatus, MAX_EXPLANATION_TEXT_BYTES,
};
use job_decider_core::validate::truncated;

use crate::pb;
use crate::wire_time::time_to_pb;

/// The wire response for a plan; the explanation only when `explain`.
pub fn plan_to_pb(plan: &JobSetPlan, explain: bool) -> pb::DecideJobSetResponse {
    use pb::job_set_action::Kind;
    let actions = plan
        .actions
        .iter()
        .map(|a| pb::JobSetAction {
            kind: Some(match a {
                JobSetAction::DeleteJobs(jobs) => Kind::DeleteJobs(pb::DeleteJobs {
                    jobs: jobs
                        .iter()
                        .map(|j| pb::JobReference {
                            name: j.name.clone(),
                            uid: j.uid.clone(),
                        })
                        .collect(),
                }),
                JobSetAction::UpdateStatus(s) => Kind::UpdateStatus(pb::UpdateJobSetStatus {
                    status: Some(status_to_pb(s)),
                }),
                JobSetAction::RecordEvent(e) => Kind::RecordEvent(pb::RecordEvent {
                    r#type: e.event_type.as_str().to_string(),
                    reason: e.reason.clone(),
                    message: e.message.clone(),
                }),
            }),
        })
        .collect();
    let jobs_to_create = plan
        .jobs_to_create
        .iter()
        .map(|j| pb::JobCreation {
            name: j.name.clone(),
            replicated_job: j.replicated_job.clone(),
            job_index: j.job_index,
            labels: j.labels.iter().cloned().collect(),
            annotations: j.annotations.iter().cloned().collect(),
        })
        .collect();
    pb::DecideJobSetResponse {
        actions,
        jobs_to_create,
        explanation: explain.then(|| explanation_to_pb(&plan.explanation)),
        // "Decide again at once": the plan stopped at the cap on Job creations and deletions.
        requeue_after: plan.requeue.then(pbjson_types::Duration::default),
    }
}

/// The wire form of an explanation; names and details cut as the core cuts its lists'.
pub fn explanation_to_pb(e: &JobSetExplanation) -> pb::JobSetExplanation {
    let d = e.decision.as_ref();
    let text = |s: &str| truncated(s, MAX_EXPLANATION_TEXT_BYTES).into_owned();
    let omitted = |n: usize| i32::try_from(n).unwrap_or(i32::MAX);
    pb::JobSetExplanation {
        previous_jobs: e.previous_jobs.items.clone(),
        active_jobs: e.active_jobs.items.clone(),
        failed_jobs: e.failed_jobs.items.clone(),
        succeeded_jobs: e.succeeded_jobs.items.clone(),
        previous_jobs_omitted: omitted(e.previous_jobs.omitted),
        active_jobs_omitted: omitted(e.active_jobs.omitted),
        failed_jobs_omitted: omitted(e.failed_jobs.omitted),
        succeeded_jobs_omitted: omitted(e.succeeded_jobs.omitted),
        evaluations_omitted: omitted(e.evaluations.omitted),
        evaluations: e
            .evaluations
            .iter()
            .map(|ev| pb::JobSetRuleEvaluation {
                rule_index: i32::try_from(ev.rule_index).unwrap_or(i32::MAX),
                rule_name: ev.rule_name.clone(),
                job: ev.job.clone(),
                matches: ev.verdict.applies(),
                detail: ev.verdict.to_string(),
            })
            .collect(),
        matched_rule_index: d
            .and_then(|d| d.rule.as_ref())
            .map(|(i, _)| i32::try_from(*i).unwrap_or(i32::MAX)),
        matched_rule: d
            .and_then(|d| d.rule.as_ref())
            .map(|(_, n)| text(n))
            .unwrap_or_default(),
        first_failed_job: d.map(|d| text(&d.job)).unwrap_or_default(),
        action: d
            .and_then(|d| d.action)
            .map(|a| a.as_str().to_string())
            .unwrap_or_default(),
        counted_restarts: d
            .map(|d| i32::try_from(d.counted_restarts).unwrap_or(i32::MAX))
            .unwrap_or_default(),
        max_restarts: d.and_then(|d| d.max_restarts),
        summary: e.summary.clone(),
    }
}

/// The wire form of a JobSet status.
pub fn status_to_pb(s: &JobSetStatus) -> pb::JobSetStatus {
    pb::JobSetStatus {
        conditions: s
            .conditions
            .iter()
            .map(|c| pb::Condition {
                r#type: c.condition_type.clone(),
                status: c.status.clone(),
                observed_generation: c.observed_generation,
                last_transition_time: c.last_transition_time.map(time_to_pb),
                reason: c.reason.clone(),
                message: c.message.clone(),
            })
            .collect(),
        restarts: s.restarts,
        restarts_count_towards_max: s.restarts_count_towards_max,
        terminal_state: s.terminal_state.clone(),
        replicated_jobs_status: s
            .replicated_jobs_status
            .iter()
            .map(|r| pb::ReplicatedJobStatus {
                name: r.name.clone(),
                ready: r.ready,
                succeeded: r.succeeded,
                failed: r.failed,
                active: r.active,
                suspended: r.suspended,
                job_restarts: r.job_restarts.clone(),
                job_restarts_count_towards_max: r.job_restarts_count_towards_max.clone(),
            })
            .collect(),
    }
}
