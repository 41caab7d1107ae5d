//! A decision for people, rendered from the explanation the API returns
//! (`DecideJobResponse.explanation`), so the text and the API never disagree:
//! the Job and its policy, what the sync concluded about its pods, each action
//! and why, the indexes, the backoff wait, the condition that comes next.

use std::fmt::Write;
use std::time::Duration;

use job_decider_api::Decision;
use job_decider_api::pb;
use job_decider_core::model::{OnPodConditionsPattern, PodFailurePolicyRule};
use job_decider_core::text::{human_duration, ordinal};

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

fn names(pods: &[pb::PodReference]) -> String {
    pods.iter()
        .map(|p| p.name.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Seconds and nanoseconds of a wire timestamp as one count of nanoseconds.
fn nanos(t: &pbjson_types::Timestamp) -> i128 {
    i128::from(t.seconds) * 1_000_000_000 + i128::from(t.nanos)
}

/// A wire duration as a std one (negative ones as zero: the contract sends none).
fn std_duration(d: &pbjson_types::Duration) -> Duration {
    let secs = u64::try_from(d.seconds).unwrap_or(0);
    Duration::new(secs, u32::try_from(d.nanos).unwrap_or(0))
}

/// How far apart two times are, for people: `7s`, `4m10s`; never a huge number.
fn between(earlier: i128, later: i128) -> String {
    let diff = u64::try_from((later - earlier).max(0)).unwrap_or(u64::MAX);
    human_duration(Duration::from_nanos(diff))
}

/// A time for people: the clock time when it falls on the day of `now`, else the date too.
fn clock(t: &pbjson_types::Timestamp, now: &pbjson_types::Timestamp) -> String {
    let at = |t: &pbjson_types::Timestamp| {
        chrono::DateTime::from_timestamp(t.seconds, u32::try_from(t.nanos).unwrap_or(0))
    };
    match (at(t), at(now)) {
        (Some(t), Some(now)) if t.date_naive() == now.date_naive() => {
            t.format("%H:%M:%S").to_string()
        }
        (Some(t), _) => t.format("%Y-%m-%d %H:%M:%S UTC").to_string(),
        (None, _) => format!("{}s after the epoch", t.seconds),
    }
}

/// A note when `--now` is far from the snapshot's own times: durations measured from it
/// would mislead (`--now 1999-…` against a Job started in 2025).
fn now_note(decision: &Decision, now: &pbjson_types::Timestamp) -> Option<String> {
    const DAY: i128 = 86_400 * 1_000_000_000;
    let snapshot = &decision.snapshot;
    let reference = snapshot.job.status.start_time.or_else(|| {
        snapshot
            .pods
            .iter()
            .filter_map(|p| p.creation_timestamp)
            .min()
    })?;
    let what = if snapshot.job.status.start_time.is_some() {
        "the Job's startTime"
    } else {
        "its first pod's creation"
    };
    let reference = job_decider_api::wire_time::time_to_pb(reference);
    let (now_n, ref_n) = (nanos(now), nanos(&reference));
    let shown = |t: &pbjson_types::Timestamp| {
        chrono::DateTime::from_timestamp(t.seconds, 0).map_or_else(
            || t.seconds.to_string(),
            |t| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        )
    };
    // Years, not seconds: the gap is what is wrong, its exact size does not matter.
    let apart = |a: i128, b: i128| {
        let years = (b - a) / (365 * DAY);
        if years >= 2 {
            format!("about {years} years")
        } else {
            between(a, b)
        }
    };
    if now_n + DAY < ref_n {
        Some(format!(
            "Note: the time of this decision ({}) is far in the past: {} before {what} ({}); \
             waits measured from it are not meaningful (pass --now near the snapshot's times)",
            shown(now),
            apart(now_n, ref_n),
            shown(&reference)
        ))
    } else if now_n > ref_n + 365 * DAY {
        Some(format!(
            "Note: the time of this decision ({}) is far in the future: {} after {what} ({})",
            shown(now),
            apart(ref_n, now_n),
            shown(&reference)
        ))
    } else {
        None
    }
}

/// ", and N more" for a list the response cut short; empty when it is whole.
fn more(omitted: i32) -> String {
    and_more(omitted)
}

/// An index list in words: the indexes, how many, and how many intervals were left out.
fn index_list(list: &pb::IndexList) -> String {
    let cut = if list.intervals_omitted > 0 {
        format!(" and {} more intervals", list.intervals_omitted)
    } else {
        String::new()
    };
    format!(
        "{}{cut} ({} index{})",
        list.indexes,
        list.count,
        if list.count == 1 { "" } else { "es" }
    )
}

/// The whole explanation of a decision.
pub fn explain(decision: &Decision) -> String {
    let snapshot = &decision.snapshot;
    let job = &snapshot.job;
    let spec = &job.spec;
    let response = decision.response();
    let now = job_decider_api::wire_time::time_to_pb(snapshot.now);
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
    if let Some(managed_by) = &spec.managed_by {
        let _ = write!(out, ", managedBy {managed_by:?}");
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
    if let Some(note) = now_note(decision, &now) {
        let _ = writeln!(out, "{note}");
    }
    if let Some(policy) = &spec.pod_failure_policy {
        let _ = writeln!(out, "Pod failure policy:");
        for (i, rule) in policy.rules.iter().enumerate() {
            let _ = writeln!(out, "  rule {i}: {}", describe_rule(rule));
        }
    }
    let default = pb::JobExplanation::default();
    let e = response.explanation.as_ref().unwrap_or(&default);
    write_pods(&mut out, snapshot.pods.len(), e);
    write_indexes(&mut out, e, spec.max_failed_indexes);
    write_actions(&mut out, &response, e);
    if let Some(b) = &e.backoff {
        write_backoff(&mut out, b, &now);
    }
    if let Some(c) = &e.coming_condition {
        write_coming(&mut out, c, &now);
    }
    if let Some(n) = &e.not_managed {
        let _ = writeln!(
            out,
            "Not managed here: spec.managedBy is {:?} and this decision is for {:?}; \
             pass --controller-name {} to decide as that controller",
            n.managed_by, n.controller_name, n.managed_by
        );
    }
    if let Some(after) = &response.requeue_after {
        let reason = if e.requeue_reason.is_empty() {
            String::new()
        } else {
            format!(": {}", e.requeue_reason)
        };
        let _ = writeln!(
            out,
            "Decide again after {}{reason}",
            human_duration(std_duration(after))
        );
    }
    let backoff = &decision.plan.state.backoff;
    if backoff.failures_after_last_success > 0 {
        let _ = writeln!(
            out,
            "State: {} failure(s) since the last success",
            backoff.failures_after_last_success
        );
    }
    if !e.summary.is_empty() {
        let _ = writeln!(out, "Summary: {}", e.summary);
    }
    out
}

/// The pods, one line per group of the same verdict.
fn write_pods(out: &mut String, total: usize, e: &pb::JobExplanation) {
    if e.not_managed.is_some() {
        let _ = writeln!(
            out,
            "Pods ({total}): not examined: another controller manages the Job"
        );
        return;
    }
    let _ = writeln!(out, "Pods ({total}):");
    for g in &e.pods {
        let names = format!("{}{}", g.pods.join(", "), more(g.pods_omitted));
        let count = if g.count > 1 {
            format!(" ({} pods)", g.count)
        } else {
            String::new()
        };
        let indexes = g
            .indexes
            .as_ref()
            .map(|i| format!(" index {}", index_list(i)))
            .unwrap_or_default()
            .replace(" (1 index)", "");
        let rule = match g.rule_index {
            Some(i) => format!("rule {i} ({}) matched {}; ", g.rule_action, g.matched),
            None => String::new(),
        };
        let adopted = if g.adopted {
            "; orphan, adopted now"
        } else {
            ""
        };
        let _ = writeln!(
            out,
            "  {}{count}{indexes}: {}: {rule}{}{adopted}",
            names, g.verdict, g.detail
        );
    }
    if e.pod_groups_omitted > 0 {
        let _ = writeln!(
            out,
            "  ({} more groups of pods not listed)",
            e.pod_groups_omitted
        );
    }
}

/// The completed and failed indexes, in words.
fn write_indexes(out: &mut String, e: &pb::JobExplanation, max_failed: Option<i32>) {
    if let Some(c) = &e.completed_indexes {
        if c.count == 0 {
            let _ = writeln!(out, "Completed indexes: none yet");
        } else {
            let _ = writeln!(out, "Completed indexes: {}", index_list(c));
        }
    }
    if let Some(f) = &e.failed_indexes {
        if f.count == 0 {
            let _ = writeln!(out, "Failed indexes: none");
        } else {
            let verb = if f.count == 1 && f.intervals_omitted == 0 {
                format!("index {} has failed", f.indexes)
            } else {
                format!("indexes {} have failed", f.indexes)
            };
            let limit = max_failed
                .map(|m| format!("; maxFailedIndexes {m}"))
                .unwrap_or_default();
            let _ = writeln!(out, "Failed indexes: {} — {verb}{limit}", index_list(f));
        }
    }
}

/// The actions in order, each with why.
fn write_actions(out: &mut String, response: &pb::DecideJobResponse, e: &pb::JobExplanation) {
    use pb::action::Kind;
    if response.actions.is_empty() {
        let _ = writeln!(out, "Actions: none");
    } else {
        let _ = writeln!(out, "Actions ({}), in order:", response.actions.len());
    }
    for (n, action) in response.actions.iter().enumerate() {
        let line = match &action.kind {
            Some(Kind::AdoptPods(a)) => format!("adopt {}", names(&a.pods)),
            Some(Kind::ReleasePods(r)) => format!("release {}", names(&r.pods)),
            Some(Kind::CreatePods(c)) => {
                let indexes: Vec<String> = c
                    .pods
                    .iter()
                    .filter_map(|p| p.completion_index.map(|i| i.to_string()))
                    .collect();
                let created = if indexes.is_empty() {
                    format!("create {} pod(s)", c.pods.len())
                } else {
                    format!(
                        "create {} pod(s) for indexes {}",
                        c.pods.len(),
                        indexes.join(", ")
                    )
                };
                format!("{created}{}", avoided_nodes(&c.pods))
            }
            Some(Kind::DeletePods(d)) => {
                let list: Vec<String> = d
                    .pods
                    .iter()
                    .map(|p| {
                        if p.remove_finalizer_first {
                            format!("{} (finalizer removed first, not counted)", p.name)
                        } else {
                            p.name.clone()
                        }
                    })
                    .collect();
                format!("delete {}", list.join(", "))
            }
            Some(Kind::RemoveFinalizers(r)) => {
                format!("remove the tracking finalizer from {}", names(&r.pods))
            }
            Some(Kind::FailPods(f)) => {
                let list: Vec<String> = f
                    .pods
                    .iter()
                    .map(|p| {
                        let name = p.pod.as_ref().map_or("", |r| r.name.as_str());
                        if p.message.is_empty() {
                            format!("{name} ({})", p.reason)
                        } else {
                            format!("{name} ({}: {})", p.reason, p.message)
                        }
                    })
                    .collect();
                let condition = f.pods.first().map_or("", |p| p.condition_type.as_str());
                format!("mark failed (condition {condition}) {}", list.join(", "))
            }
            Some(Kind::UpdateStatus(u)) => {
                let s = u.status.clone().unwrap_or_default();
                let conditions: Vec<String> = s
                    .conditions
                    .iter()
                    .map(|c| format!("{}={} ({})", c.r#type, c.status, c.reason))
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
            Some(Kind::RecordEvent(ev)) => {
                format!("event {} {}: {}", ev.r#type, ev.reason, ev.message)
            }
            None => String::new(),
        };
        let _ = writeln!(out, "  {}. {line}", n + 1);
        let reasons: Vec<&pb::ActionReason> = e
            .action_reasons
            .iter()
            .filter(|r| usize::try_from(r.action).ok() == Some(n))
            .collect();
        for r in &reasons {
            let pods = if reasons.len() > 1 && r.pods > 0 {
                format!(" ({} pod(s))", r.pods)
            } else {
                String::new()
            };
            let _ = writeln!(out, "     why{pods}: {} [{}]", r.message, r.reason);
        }
    }
}

/// The nodes created pods keep off (extended failure policy's nodeAvoidance),
/// one clause per distinct list; empty when none avoids any.
fn avoided_nodes(pods: &[pb::PodCreation]) -> String {
    let mut lists: Vec<(&str, Vec<&str>)> = Vec::new();
    for a in pods.iter().filter_map(|p| p.avoid_nodes.as_ref()) {
        let nodes: Vec<&str> = a.nodes.iter().map(String::as_str).collect();
        if !nodes.is_empty() && !lists.iter().any(|(m, n)| *m == a.mode && *n == nodes) {
            lists.push((a.mode.as_str(), nodes));
        }
    }
    lists
        .iter()
        .map(|(mode, nodes)| format!("; avoiding nodes {} ({mode})", nodes.join(", ")))
        .collect()
}

/// The backoff wait: until when, and after which failure.
fn write_backoff(out: &mut String, b: &pb::BackoffWait, now: &pbjson_types::Timestamp) {
    let (Some(until), Some(delay)) = (&b.until, &b.delay) else {
        return;
    };
    let whose = b
        .index
        .map(|i| format!("index {i}'s replacement"))
        .unwrap_or_else(|| "new pods".into());
    let left = if nanos(until) > nanos(now) {
        format!(", in {}", between(nanos(now), nanos(until)))
    } else {
        String::new()
    };
    let _ = writeln!(
        out,
        "Backoff: {whose} wait until {}{left} ({} after the {} failure)",
        clock(until, now),
        human_duration(std_duration(delay)),
        ordinal(i64::from(b.failures))
    );
}

/// The condition that comes next.
fn write_coming(out: &mut String, c: &pb::ComingCondition, now: &pbjson_types::Timestamp) {
    if let Some(at) = &c.at {
        let left = if nanos(at) > nanos(now) {
            format!(" (in {})", between(nanos(now), nanos(at)))
        } else {
            String::new()
        };
        let _ = writeln!(
            out,
            "Next condition: {} ({}) at {}{left}, unless the Job finishes first",
            c.terminal,
            c.reason,
            clock(at, now)
        );
        return;
    }
    if c.terminal_now {
        let _ = writeln!(
            out,
            "Next condition: {} ({}) is written now: {}",
            c.terminal, c.reason, c.message
        );
        return;
    }
    let interim = if c.interim.is_empty() {
        String::new()
    } else {
        format!("{} ({}) now, then ", c.interim, c.reason)
    };
    let when = if c.waits_for == "the next sync" {
        "at the next sync".to_string()
    } else {
        format!("once {}", c.waits_for)
    };
    let _ = writeln!(
        out,
        "Next condition: {interim}{} ({}) {when}: {}",
        c.terminal, c.reason, c.message
    );
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
mod tests;
