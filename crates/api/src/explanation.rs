//! A sync's explanation on the wire (`DecideJobResponse.explanation`): the
//! core's [`JobExplanation`], field for field. Counts beyond `i32` saturate.

use job_decider_core::explain::{
    ActionReason, BackoffWait, ComingCondition, IndexSummary, JobExplanation, NotManaged, PodGroup,
};

use crate::pb;
use crate::wire_time::{duration_to_pb, time_to_pb};

/// A count as the wire's `int32`.
fn int(n: usize) -> i32 {
    i32::try_from(n).unwrap_or(i32::MAX)
}

/// The explanation on the wire.
pub fn to_pb(e: &JobExplanation) -> pb::JobExplanation {
    pb::JobExplanation {
        summary: e.summary.clone(),
        pods: e.pods.iter().map(pod_group).collect(),
        pod_groups_omitted: int(e.pods.omitted),
        action_reasons: e.action_reasons.iter().map(action_reason).collect(),
        action_reasons_omitted: int(e.action_reasons.omitted),
        completed_indexes: e.completed_indexes.as_ref().map(index_list),
        failed_indexes: e.failed_indexes.as_ref().map(index_list),
        backoff: e.backoff.as_ref().map(backoff),
        coming_condition: e.coming_condition.as_ref().map(coming_condition),
        not_managed: e.not_managed.as_ref().map(not_managed),
        requeue_reason: e.requeue_reason.clone(),
    }
}

fn pod_group(g: &PodGroup) -> pb::PodVerdict {
    pb::PodVerdict {
        verdict: g.verdict.as_str().to_string(),
        count: int(g.count),
        pods: g.pods.to_vec(),
        pods_omitted: int(g.pods.omitted),
        indexes: g.indexes.as_ref().map(index_list),
        rule_index: g.rule.as_ref().map(|(i, _)| int(*i)),
        rule_action: g
            .rule
            .as_ref()
            .map(|(_, a)| a.as_str().to_string())
            .unwrap_or_default(),
        matched: g.matched.clone(),
        detail: g.detail.clone(),
        adopted: g.adopted,
        extended_rule: g.extended_rule.clone().unwrap_or_default(),
    }
}

fn index_list(i: &IndexSummary) -> pb::IndexList {
    pb::IndexList {
        indexes: i.text.clone(),
        count: i64::try_from(i.count).unwrap_or(i64::MAX),
        intervals_omitted: int(i.intervals_omitted),
    }
}

fn action_reason(r: &ActionReason) -> pb::ActionReason {
    pb::ActionReason {
        action: int(r.action),
        reason: r.reason.to_string(),
        message: r.message.clone(),
        pods: int(r.pods),
    }
}

fn backoff(b: &BackoffWait) -> pb::BackoffWait {
    pb::BackoffWait {
        until: Some(time_to_pb(b.until)),
        delay: Some(duration_to_pb(b.delay)),
        failures: b.failures,
        last_failure_time: Some(time_to_pb(b.last_failure)),
        index: b.index,
    }
}

fn coming_condition(c: &ComingCondition) -> pb::ComingCondition {
    pb::ComingCondition {
        interim: c
            .interim
            .as_ref()
            .map(|t| t.as_str().to_string())
            .unwrap_or_default(),
        terminal: c.terminal.as_str().to_string(),
        reason: c.reason.clone(),
        message: c.message.clone(),
        terminal_now: c.terminal_now,
        waits_for: c.waits_for.clone(),
        at: c.at.map(time_to_pb),
    }
}

fn not_managed(n: &NotManaged) -> pb::NotManaged {
    pb::NotManaged {
        managed_by: n.managed_by.clone(),
        controller_name: n.controller_name.clone(),
        message: n.message.clone(),
    }
}
