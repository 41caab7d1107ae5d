//! Recording: timeline events for status writes and the finished [`Timeline`]
//! with each pod's attempts and how they ended.

use super::*;
use crate::timeline::offset;

impl<'s> World<'s> {
    /// Timeline events for what a status write changes.
    pub(super) fn record_status(&mut self, new: &pb::JobStatus) {
        let old = self.job.status.clone().unwrap_or_default();
        let mut changes = Vec::new();
        let mut num = |name: &str, a: i32, b: i32| {
            if a != b {
                changes.push(format!("{name} {a}→{b}"));
            }
        };
        num("active", old.active, new.active);
        num("succeeded", old.succeeded, new.succeeded);
        num("failed", old.failed, new.failed);
        num(
            "terminating",
            old.terminating.unwrap_or(0),
            new.terminating.unwrap_or(0),
        );
        num("ready", old.ready.unwrap_or(0), new.ready.unwrap_or(0));
        let uncounted = |s: &pb::JobStatus| {
            s.uncounted_terminated_pods
                .as_ref()
                .map_or((0, 0), |u| (u.succeeded.len(), u.failed.len()))
        };
        // A pod whose uid the controller lists among the uncounted failed is counted.
        if let Some(u) = &new.uncounted_terminated_pods {
            for uid in &u.failed {
                for k in self.slots_of_uid(uid).to_vec() {
                    self.pods[k].counted = true;
                }
            }
        }
        let (ou, nu) = (uncounted(&old), uncounted(new));
        if ou != nu {
            changes.push(format!(
                "uncounted succeeded/failed {}/{}→{}/{}",
                ou.0, ou.1, nu.0, nu.1
            ));
        }
        if old.completed_indexes != new.completed_indexes {
            changes.push(format!("completedIndexes {:?}", new.completed_indexes));
        }
        if old.failed_indexes != new.failed_indexes {
            changes.push(format!(
                "failedIndexes {:?}",
                new.failed_indexes.clone().unwrap_or_default()
            ));
        }
        if old.start_time != new.start_time {
            changes.push(match &new.start_time {
                Some(t) => format!("startTime {}", rfc3339(ts_nanos(t))),
                None => "startTime cleared".to_string(),
            });
        }
        if !changes.is_empty() {
            self.push(EventKind::Status, None, changes.join(", "));
        }
        for c in &new.conditions {
            let before = old.conditions.iter().find(|o| o.r#type == c.r#type);
            let changed = before.is_none_or(|o| o.status != c.status || o.reason != c.reason);
            if !changed {
                continue;
            }
            let mut detail = format!("{}={}", c.r#type, c.status);
            if !c.reason.is_empty() {
                detail += &format!(" ({})", c.reason);
            }
            if !c.message.is_empty() {
                detail += &format!(": {}", c.message);
            }
            self.push(EventKind::Condition, None, detail);
            if (c.r#type == "FailureTarget" || c.r#type == "Failed")
                && c.status == "True"
                && self.verdict_at.is_none()
            {
                self.verdict_at = Some(self.now);
            }
            if (c.r#type == "Complete" || c.r#type == "Failed")
                && c.status == "True"
                && self.finished_at.is_none()
            {
                self.finished_at = Some(self.now);
            }
        }
    }

    /// The failures that used up a backoff limit are fatal too: the last failed attempt
    /// of each index in `failed_indexes`, and, when the Job failed with
    /// BackoffLimitExceeded, the last counted failure up to the verdict.
    pub(super) fn mark_fatal(
        &self,
        attempts: &mut [Attempt],
        failed_indexes: &str,
        backoff_exceeded: bool,
    ) {
        let counted = |e: Ending| matches!(e, Ending::Counted | Ending::Disrupted);
        // One pass over the attempts: an index's last attempt (the later one on a tie, as
        // `max_by_key` picks), looked up in the interval set instead of expanding the list.
        let failed = self.indexes(failed_indexes);
        let mut last: BTreeMap<i32, usize> = BTreeMap::new();
        for (k, a) in attempts.iter().enumerate() {
            let Some(i) = a.index.filter(|i| failed.contains(*i)) else {
                continue;
            };
            let key = |a: &Attempt| (a.ended_ms, a.created_ms);
            match last.get(&i) {
                Some(&j) if key(&attempts[j]) > key(a) => {}
                _ => {
                    last.insert(i, k);
                }
            }
        }
        for k in last.into_values() {
            if counted(attempts[k].ending) {
                attempts[k].ending = Ending::Fatal;
            }
        }
        if !backoff_exceeded {
            return;
        }
        let verdict = self
            .verdict_at
            .map(|t| t.saturating_sub(self.start).div_euclid(1_000_000));
        let last = attempts
            .iter()
            .enumerate()
            .filter(|(_, a)| {
                counted(a.ending) && a.ended_ms.zip(verdict).is_some_and(|(e, v)| e <= v)
            })
            .max_by_key(|(_, a)| a.ended_ms)
            .map(|(k, _)| k);
        if let Some(k) = last {
            attempts[k].ending = Ending::Fatal;
        }
    }

    pub(super) fn timeline(&self, stopped: String) -> Timeline {
        let ms = |t: i64| t.saturating_sub(self.start).div_euclid(1_000_000);
        let mut attempts: Vec<Attempt> = Vec::new();
        for sp in &self.pods {
            let pod = sp
                .pod
                .metadata
                .as_ref()
                .map(|m| m.name.clone())
                .unwrap_or_default();
            for run in &sp.history {
                attempts.push(Attempt {
                    pod: pod.clone(),
                    index: sp.index,
                    attempt: run.attempt,
                    created_ms: ms(sp.created),
                    started_ms: Some(ms(run.started)),
                    ended_ms: Some(ms(run.ended)),
                    outcome: "failed".to_string(),
                    ending: Ending::Restarted,
                    exit_code: Some(run.exit_code),
                    why: run.why.clone(),
                    policy: None,
                });
            }
            // A pod waiting to restart has no run in progress.
            if sp.restart_at.is_some() && sp.started.is_none() && !terminal(&sp.pod) {
                continue;
            }
            attempts.push(Attempt {
                pod,
                index: sp.index,
                attempt: sp.attempt,
                created_ms: ms(sp.created),
                started_ms: sp.started.map(ms),
                ended_ms: sp.ended.map(ms),
                outcome: sp.outcome.clone(),
                ending: ending(sp),
                exit_code: sp.exit_code,
                why: sp.why.clone(),
                policy: sp.policy.clone(),
            });
        }
        let status = self.job.status.clone().unwrap_or_default();
        let finished = has_condition(&self.job, &["Complete", "Failed"]);
        let (result, reason, message) = match &finished {
            Some(c) => (c.r#type.clone(), c.reason.clone(), c.message.clone()),
            None => ("Unfinished".to_string(), String::new(), String::new()),
        };
        self.mark_fatal(
            &mut attempts,
            status.failed_indexes.as_deref().unwrap_or_default(),
            result == "Failed" && reason == "BackoffLimitExceeded",
        );
        let end = self.finished_at.unwrap_or(self.now);
        let mut per_index: BTreeMap<i32, Vec<String>> = BTreeMap::new();
        for a in &attempts {
            if let Some(i) = a.index {
                let o = match (a.outcome.as_str(), a.exit_code) {
                    ("failed", Some(c)) => format!("failed({c})"),
                    (o, _) => o.to_string(),
                };
                per_index.entry(i).or_default().push(o);
            }
        }
        let backoff_waits = held(&self.backoff_waits, &attempts, ms(end));
        let job_meta = self.job.metadata.clone().unwrap_or_default();
        let unfinished = if finished.is_some() {
            String::new()
        } else {
            self.unfinished(&backoff_waits)
        };
        Timeline {
            job: format!("{}/{}", job_meta.namespace, job_meta.name),
            description: self.script.description.clone(),
            start: rfc3339(self.start),
            start_nanos: self.start,
            events: self.events.clone(),
            attempts,
            backoff_waits: backoff_waits.clone(),
            summary: Summary {
                result,
                reason,
                message,
                stopped,
                stop_reason: self.stop_reason.clone(),
                unfinished,
                wall_time_ms: ms(end),
                wall_time: human(end.saturating_sub(self.start)),
                syncs: self.syncs,
                pods_created: self.created - self.existing,
                pods_failed: self.pods.iter().filter(|p| p.outcome == "failed").count() as u32,
                failures_counted: status.failed,
                failures_ignored: self
                    .pods
                    .iter()
                    .filter(|p| p.outcome == "failed" && p.ignored)
                    .count() as u32,
                succeeded: status.succeeded,
                backoff_waits: u32::try_from(backoff_waits.len()).unwrap_or(u32::MAX),
                restarts: self
                    .pods
                    .iter()
                    .map(|p| p.restarts.max(0).unsigned_abs())
                    .sum(),
                crash_loop_back_off_ms: self.crash_looped_ms(end),
                suspended_ms: suspended_ms(&self.events, ms(end)),
                backoff_wait_ms: backoff_waits.iter().map(|w| w.held_ms).sum(),
                longest_backoff_wait_ms: backoff_waits.iter().map(|w| w.held_ms).max().unwrap_or(0),
                completed_indexes: status.completed_indexes.clone(),
                failed_indexes: status.failed_indexes.clone().unwrap_or_default(),
                per_index,
            },
        }
    }
}

impl World<'_> {
    /// Why the Job is not finished, from the world as the run stopped: its pods that
    /// never started (and why), those running or restarting, a backoff wait or a
    /// decision still due, a suspension.
    fn unfinished(&self, waits: &[BackoffWait]) -> String {
        let ms = |t: i64| t.saturating_sub(self.start).div_euclid(1_000_000);
        let now = ms(self.now);
        let live: Vec<&SimPod> = self
            .pods
            .iter()
            .filter(|p| !p.gone && !terminal(&p.pod))
            .collect();
        let mut parts = Vec::new();
        // Pending pods grouped by why: the reason, then the indexes it holds.
        let mut pending: BTreeMap<String, Vec<i32>> = BTreeMap::new();
        let mut pending_count = 0usize;
        let mut crash_looping = 0usize;
        let mut running = 0usize;
        let mut terminating = 0usize;
        for p in &live {
            if p.pod
                .metadata
                .as_ref()
                .is_some_and(|m| m.deletion_timestamp.is_some())
            {
                terminating += 1;
            } else if p.started.is_some() {
                running += 1;
            } else if p.restart_at.is_some() {
                crash_looping += 1;
            } else {
                pending_count += 1;
                let why = if !scheduled(&p.pod) {
                    "no node fits".to_string()
                } else if let (PlannedEnding::Stuck(reason), None) = (&p.plan.ending, p.start_at) {
                    reason.clone()
                } else {
                    match p.start_at {
                        Some(t) => format!("starting {}", offset(ms(t))),
                        None => "not started".to_string(),
                    }
                };
                let indexes = pending.entry(why).or_default();
                indexes.extend(p.index);
            }
        }
        let pods = |n: usize| {
            if n == 1 {
                "1 pod".to_string()
            } else {
                format!("{n} pods")
            }
        };
        if pending_count > 0 {
            let whys: Vec<String> = pending
                .iter()
                .map(|(why, indexes)| match indexes.as_slice() {
                    [] => why.clone(),
                    [i] => format!("index {i}: {why}"),
                    many => format!("indexes {}: {why}", listed(many)),
                })
                .collect();
            parts.push(format!(
                "{} Pending ({})",
                pods(pending_count),
                whys.join("; ")
            ));
        }
        if running > 0 {
            parts.push(format!("{} Running", pods(running)));
        }
        if crash_looping > 0 {
            parts.push(format!("{} in CrashLoopBackOff", pods(crash_looping)));
        }
        if terminating > 0 {
            parts.push(format!("{} terminating", pods(terminating)));
        }
        if self
            .job
            .spec
            .as_ref()
            .is_some_and(|s| s.suspend.unwrap_or(false))
        {
            parts.push("suspended".to_string());
        }
        // A wait the stop cut short is still being waited out.
        let backoff = waits
            .iter()
            .map(|w| w.at_ms.saturating_add(w.wait_ms))
            .filter(|&until| until > now)
            .max();
        let due = self.due.map(ms).filter(|&t| t > now);
        match (backoff, due) {
            (Some(until), _) => parts.push(format!("waiting for backoff until {}", offset(until))),
            (None, Some(t)) => parts.push(format!("next decision due {}", offset(t))),
            (None, None) => {}
        }
        if parts.is_empty() {
            return "no pod pending or running, no decision due".to_string();
        }
        parts.join("; ")
    }
}

impl World<'_> {
    /// Each pod's waits between a crash and the restart in place (to `end` for a
    /// restart still waited for), added up, ms.
    fn crash_looped_ms(&self, end: i64) -> i64 {
        let mut all = 0i64;
        for sp in &self.pods {
            let nexts = sp
                .history
                .iter()
                .skip(1)
                .map(|r| Some(r.started))
                .chain([sp.started.or(sp.restart_at.map(|t| t.min(end)))]);
            for (run, next) in sp.history.iter().zip(nexts) {
                let next = next.unwrap_or(end).min(end);
                all = all.saturating_add(next.saturating_sub(run.ended).max(0));
            }
        }
        all.div_euclid(1_000_000)
    }
}

/// The time between each `Suspended=True` condition and the next `Suspended=False`
/// (or `end_ms`), added up, ms.
fn suspended_ms(events: &[Event], end_ms: i64) -> i64 {
    let mut all = 0i64;
    let mut since: Option<i64> = None;
    for e in events.iter().filter(|e| e.kind == EventKind::Condition) {
        if e.detail.starts_with("Suspended=True") {
            since.get_or_insert(e.offset_ms);
        } else if e.detail.starts_with("Suspended=False")
            && let Some(from) = since.take()
        {
            all = all.saturating_add(e.offset_ms.saturating_sub(from));
        }
    }
    if let Some(from) = since {
        all = all.saturating_add(end_ms.saturating_sub(from).max(0));
    }
    all
}

/// Up to five numbers, then how many more.
fn listed(numbers: &[i32]) -> String {
    let shown: Vec<String> = numbers.iter().take(5).map(i32::to_string).collect();
    match numbers.len().saturating_sub(5) {
        0 => shown.join(", "),
        more => format!("{} and {more} more", shown.join(", ")),
    }
}

/// How a pod's latest attempt ended, from what the world recorded as it happened.
fn ending(sp: &SimPod) -> Ending {
    match sp.outcome.as_str() {
        "succeeded" => return Ending::Succeeded,
        "running" => return Ending::Running,
        "pending" => return Ending::Pending,
        "removed" | "deleted" => return Ending::Deleted,
        _ => {}
    }
    let live = !sp.settled;
    match &sp.rule {
        Some(PodFailurePolicyAction::FailJob | PodFailurePolicyAction::FailIndex) if live => {
            return Ending::Fatal;
        }
        Some(PodFailurePolicyAction::Ignore) if live => return Ending::Ignored,
        _ => {}
    }
    if sp.evicted {
        Ending::Disrupted
    } else if sp.deleted_by_controller || sp.settled {
        Ending::Deleted
    } else {
        Ending::Counted
    }
}

/// Each wait with the time it actually held pods: up to the first pod created after it
/// (of its indexes, when it names some), at most the wait, at most to the `end`.
fn held(waits: &[BackoffWait], attempts: &[Attempt], end_ms: i64) -> Vec<BackoffWait> {
    waits
        .iter()
        .map(|w| {
            let next = attempts
                .iter()
                .filter(|a| a.created_ms > w.at_ms)
                .filter(|a| w.indexes.is_empty() || a.index.is_some_and(|i| w.indexes.contains(&i)))
                .map(|a| a.created_ms)
                .min()
                .unwrap_or(end_ms);
            BackoffWait {
                held_ms: w.wait_ms.min(next.saturating_sub(w.at_ms)).max(0),
                ..w.clone()
            }
        })
        .collect()
}
