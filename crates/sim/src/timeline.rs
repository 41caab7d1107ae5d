//! The timeline: what happened, in order, with every attempt and a summary.
//! A plain serde type; the text here, JSON, and any picture render only it.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use job_decider_api::safe_text::escaped;
use serde::Serialize;

use crate::duration::{clock, human, rfc3339};

/// At most this many per-index lines, attempts and compared indexes the text
/// lists, as many as a chart draws rows; the rest are counted in one line, and
/// `-o json` has them all.
pub const MAX_TEXT_ROWS: usize = 150;
/// Routine events (pods created, started, succeeded, removed; status counters that
/// are not failures) the text lists one by one; past this, each run of them is
/// folded into one line with its counts. Every other event is always listed.
pub const MAX_ROUTINE_EVENTS: usize = 200;
/// Runs of routine events this short are listed even past the cap: a fold
/// line would say no less.
const MIN_FOLDED_RUN: usize = 3;
/// The summary's label of per-index lines.
const INDEX_LABEL: &str = "Index attempts:";

/// How much a row is worth reading, most first: 0 when it did not end in a
/// success (failed, held for a replacement, pending, running, deleted), 1 a
/// success after earlier attempts, 2 a single success. Caps keep the lowest.
fn worth(outcomes: &[String]) -> u8 {
    match outcomes {
        [.., last] if last != "succeeded" => 0,
        [] => 0,
        [_] => 2,
        _ => 1,
    }
}

/// The positions of `ranks` the caps keep: all when they fit in `cap`; else the
/// `cap` lowest ranks below `plain` (the earliest first among equals), in their
/// original order. Plain rows (`plain` and above, a single success) are then
/// only counted: listing a few of many would say nothing.
fn keep(ranks: &[u8], cap: usize, plain: u8) -> Vec<bool> {
    if ranks.len() <= cap {
        return vec![true; ranks.len()];
    }
    let mut order: Vec<usize> = (0..ranks.len()).filter(|&i| ranks[i] < plain).collect();
    order.sort_by_key(|&i| (ranks[i], i));
    let mut kept = vec![false; ranks.len()];
    for &i in order.iter().take(cap) {
        kept[i] = true;
    }
    kept
}

/// Whether an event is routine: pods created, started, succeeded or removed, and
/// status counters that do not count a failure. What a fold may hide.
fn routine(e: &Event) -> bool {
    match e.kind {
        EventKind::PodCreated
        | EventKind::PodStarted
        | EventKind::PodSucceeded
        | EventKind::PodRemoved => true,
        EventKind::Status => !e
            .detail
            .split(", ")
            .any(|part| part.starts_with("failed ") || part.starts_with("failedIndexes ")),
        _ => false,
    }
}

/// A whole simulated life.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Timeline {
    /// `namespace/name` of the Job.
    pub job: String,
    /// The script's description, if it has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// When the simulation starts (RFC 3339).
    pub start: String,
    /// The start in nanoseconds since the epoch (what offsets count from).
    #[serde(skip)]
    pub start_nanos: i64,
    /// Everything that happened, in time order.
    pub events: Vec<Event>,
    /// Every pod the Job had, in creation order.
    pub attempts: Vec<Attempt>,
    /// Every wait the controller imposed before recreating a failed pod, in time order.
    pub backoff_waits: Vec<BackoffWait>,
    /// The outcome.
    pub summary: Summary,
}

/// One thing that happened.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Event {
    /// When (RFC 3339).
    pub at: String,
    /// Milliseconds since the start.
    pub offset_ms: i64,
    /// What kind of thing (see [`EventKind`]).
    pub kind: EventKind,
    /// The pod it happened to, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pod: Option<String>,
    /// That pod's completion index, if it has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub index: Option<i32>,
    /// What happened, for people.
    pub detail: String,
}

/// The kinds of [`Event`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum EventKind {
    /// The script changed the Job (suspend, resume, parallelism).
    JobChanged,
    /// The controller created a pod.
    PodCreated,
    /// The pod's containers started.
    PodStarted,
    /// The pod's containers all exited 0: phase Succeeded.
    PodSucceeded,
    /// A container exited non-zero: phase Failed (with the policy rule it matches).
    PodFailed,
    /// The pod was evicted (its node drained) or preempted: DisruptionTarget, then deletion.
    PodEvicted,
    /// A user deleted the pod.
    PodDeletedByUser,
    /// The controller deleted the pod.
    PodDeleted,
    /// The kubelet stopped a deleted pod: phase Failed.
    PodStopped,
    /// The pod's containers cannot start (e.g. `ImagePullBackOff`) or no node may take it.
    PodWaiting,
    /// The controller failed a pod past a timeout of the extended policy (`pendingTimeout`,
    /// `readyTimeout`, `attemptDeadline`, `terminatingTimeout`).
    PodFailedByController,
    /// restartPolicy OnFailure: a container exited non-zero and will be restarted in place.
    ContainerFailed,
    /// restartPolicy OnFailure: the kubelet started the container again (a new attempt).
    ContainerRestarted,
    /// The pod is gone from the API (deleted, no finalizer left).
    PodRemoved,
    /// The controller wrote counters in the Job's status.
    Status,
    /// A Job condition was added or changed.
    Condition,
    /// The controller recorded an event on the Job.
    JobEvent,
    /// The controller asked to decide again after a delay (backoff, deadline).
    Requeue,
    /// A named node was cordoned and drained (scripts with `nodes`).
    NodeDrained,
    /// A node stopped answering: NotReady, tainted unreachable; its kubelet does nothing more.
    NodeLost,
}

impl EventKind {
    /// A short label for text.
    pub fn label(self) -> &'static str {
        match self {
            EventKind::JobChanged => "job",
            EventKind::PodCreated => "created",
            EventKind::PodStarted => "started",
            EventKind::PodSucceeded => "succeeded",
            EventKind::PodFailed => "failed",
            EventKind::PodEvicted => "evicted",
            EventKind::PodDeletedByUser => "user-deleted",
            EventKind::PodDeleted => "deleted",
            EventKind::PodStopped => "stopped",
            EventKind::PodWaiting => "waiting",
            EventKind::PodFailedByController => "timed-out",
            EventKind::ContainerFailed => "crashed",
            EventKind::ContainerRestarted => "restarted",
            EventKind::PodRemoved => "removed",
            EventKind::Status => "status",
            EventKind::Condition => "condition",
            EventKind::JobEvent => "event",
            EventKind::Requeue => "requeue",
            EventKind::NodeDrained => "drained",
            EventKind::NodeLost => "node-lost",
        }
    }
}

/// One attempt: a pod (under restartPolicy OnFailure, one run of its containers; a
/// pod restarted in place has one attempt per run).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Attempt {
    /// The pod's name.
    pub pod: String,
    /// Its completion index (Indexed Jobs).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub index: Option<i32>,
    /// Its number within the index (or the Job), from 1.
    pub attempt: u32,
    /// When it was created (ms from the start).
    pub created_ms: i64,
    /// When its containers started, if they did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub started_ms: Option<i64>,
    /// When it ended (succeeded, failed, stopped, or removed before it ran).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ended_ms: Option<i64>,
    /// `succeeded`, `failed`, `running`, `pending`, `removed` (gone before it ended), or
    /// `deleted` (the controller deleted it uncounted: suspension, scale-down, a met
    /// success policy; its phase is Failed, but it is no failure).
    pub outcome: String,
    /// How it ended, as the simulated world knows it (what the chart colours it by).
    pub ending: Ending,
    /// The exit code that ended it, if one did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// Why it ended, for people (`exit 137 (OOMKilled)`, `evicted`, ...).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub why: String,
    /// The pod failure policy rule it matches, if it failed and one does.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub policy: Option<String>,
}

/// A wait the controller imposed before recreating a failed pod: a requeue asked
/// while the Job's backoff record held failures, or while an index waited out its
/// own backoff (backoffLimitPerIndex).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BackoffWait {
    /// When the controller asked to decide again (ms from the start).
    pub at_ms: i64,
    /// How long the controller asked to wait, ms.
    pub wait_ms: i64,
    /// How long pods were actually held, ms: the wait, or less when a pod (of the
    /// indexes held, if any) was created sooner — a success resets the Job's backoff
    /// record — or the simulation ended first. What the summary adds up.
    pub held_ms: i64,
    /// The indexes whose last pod failed and waits to be recreated (Jobs with
    /// backoffLimitPerIndex); empty when the Job's backoff record holds the wait.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub indexes: Vec<i32>,
}

/// How an attempt ended, set by the world where it knows it (the rule a failure
/// matched, an eviction, the controller's deletion), never read back from text.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub enum Ending {
    /// Its containers all exited 0.
    #[serde(rename = "succeeded")]
    Succeeded,
    /// It failed and the failure counts against the backoff limit.
    #[serde(rename = "failedCounted")]
    Counted,
    /// It failed and an `Ignore` rule of the pod failure policy matched.
    #[serde(rename = "failedIgnored")]
    Ignored,
    /// It failed the Job or its index: a `FailJob` or `FailIndex` rule matched, or it was
    /// the failure that used up its index's or the Job's backoff limit.
    #[serde(rename = "failedTheJobOrIndex")]
    Fatal,
    /// Its node was drained or it was preempted (DisruptionTarget).
    #[serde(rename = "disrupted")]
    Disrupted,
    /// The controller deleted it (suspend, a finished Job, too many pods), or it was
    /// removed before it ended, or it failed after the Job's outcome was settled.
    #[serde(rename = "deleted")]
    Deleted,
    /// restartPolicy OnFailure: its container crashed and was restarted in place.
    #[serde(rename = "restartedInPlace")]
    Restarted,
    /// Still running when the simulation stopped.
    #[serde(rename = "running")]
    Running,
    /// Still waiting to start when the simulation stopped.
    #[serde(rename = "pending")]
    Pending,
}

/// How it ended.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Summary {
    /// `Complete`, `Failed`, or `Unfinished`.
    pub result: String,
    /// The finishing condition's reason (`BackoffLimitExceeded`, ...), if any.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub reason: String,
    /// The finishing condition's message, if any.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub message: String,
    /// Why the simulation stopped: `finished`, `horizon`, `idle` (nothing left to happen),
    /// `syncLimit` (the script's `maxSyncs`), `decisionLoop` (1000 acting syncs at one instant), or
    /// a bound of the simulator's own (`eventLimit`, `podLimit`, `workLimit`: see
    /// [`crate::world::Limits`]).
    pub stopped: String,
    /// For a bound of the simulator's own, the bound in a sentence.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub stop_reason: String,
    /// Why an unfinished Job is unfinished, from the world as the run stopped: pods
    /// pending (and why), running or restarting, a backoff wait or a decision due.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub unfinished: String,
    /// From the start to the finishing condition (or to the stop), ms.
    pub wall_time_ms: i64,
    /// The same, for people.
    pub wall_time: String,
    /// Syncs decided.
    pub syncs: u32,
    /// Pods the controller created.
    pub pods_created: u32,
    /// Attempts that failed (phase Failed).
    pub pods_failed: u32,
    /// The Job's final `status.failed`: failures the controller counted.
    pub failures_counted: i32,
    /// Failed attempts the pod failure policy ignored (an `Ignore` rule matched).
    pub failures_ignored: u32,
    /// The Job's final `status.succeeded`.
    pub succeeded: i32,
    /// Waits the controller imposed before recreating failed pods (the Job's backoff
    /// record or an index's own backoff): [`Timeline::backoff_waits`] counted.
    pub backoff_waits: u32,
    /// Container restarts in place (restartPolicy OnFailure, or a container's own
    /// policy and rules), all pods together.
    #[serde(skip_serializing_if = "is_zero")]
    pub restarts: u32,
    /// Time pods' containers waited in the kubelet's crash-loop back-off between a
    /// crash and their restart in place, all pods together, ms.
    #[serde(skip_serializing_if = "is_zero_ms")]
    pub crash_loop_back_off_ms: i64,
    /// Time the Job was suspended (its Suspended condition True), ms.
    #[serde(skip_serializing_if = "is_zero_ms")]
    pub suspended_ms: i64,
    /// The time those waits actually held pods ([`BackoffWait::held_ms`]) added up, ms.
    pub backoff_wait_ms: i64,
    /// The longest hold, ms.
    pub longest_backoff_wait_ms: i64,
    /// The final `status.completedIndexes` (Indexed Jobs).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub completed_indexes: String,
    /// The final `status.failedIndexes` (with backoffLimitPerIndex).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub failed_indexes: String,
    /// Attempts per completion index (Indexed Jobs), as outcomes in order.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub per_index: BTreeMap<i32, Vec<String>>,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

fn is_zero_ms(n: &i64) -> bool {
    *n == 0
}

/// `+1m05s`: an offset from the start, for text.
pub fn offset(ms: i64) -> String {
    let text = human(ms.saturating_mul(1_000_000));
    // Pods given with --pods can predate the start: `-2m`, not `+-2m`.
    if ms < 0 { text } else { format!("+{text}") }
}

impl Timeline {
    /// The timeline for people: a header, one line per event, the attempts, the summary.
    pub fn text(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "Job {} from {}", self.job, self.start);
        if let Some(d) = &self.description {
            let _ = writeln!(out, "{}", d.trim_end());
        }
        let _ = writeln!(out, "\nTimeline:");
        let width = self
            .events
            .iter()
            .map(|e| offset(e.offset_ms).len())
            .max()
            .unwrap_or(3);
        let line = |out: &mut String, e: &Event| {
            let who = match (&e.pod, e.index) {
                (Some(p), Some(i)) => format!("{p} [{i}] "),
                (Some(p), None) => format!("{p} "),
                _ => String::new(),
            };
            let _ = writeln!(
                out,
                "  {:<width$}  {}  {:<12} {who}{}",
                offset(e.offset_ms),
                self.clock_at(e.offset_ms),
                e.kind.label(),
                e.detail
            );
        };
        // Past the cap, runs of routine events fold; the rest is always listed.
        let mut routine_listed = 0;
        let mut run: Vec<&Event> = Vec::new();
        for e in &self.events {
            if routine(e) && routine_listed >= MAX_ROUTINE_EVENTS {
                run.push(e);
                continue;
            }
            self.fold(&mut out, &mut run, width, &line);
            routine_listed += usize::from(routine(e));
            line(&mut out, e);
        }
        self.fold(&mut out, &mut run, width, &line);
        let _ = writeln!(out, "\nAttempts:");
        let ranks: Vec<u8> = self
            .attempts
            .iter()
            .map(|a| match (a.outcome.as_str(), a.attempt) {
                ("succeeded", 1) => 2,
                ("succeeded", _) => 1,
                _ => 0,
            })
            .collect();
        let kept = keep(&ranks, MAX_TEXT_ROWS, 2);
        for (a, _) in self.attempts.iter().zip(&kept).filter(|(_, k)| **k) {
            let index = a.index.map(|i| format!("index {i}, ")).unwrap_or_default();
            let span = match (a.started_ms, a.ended_ms) {
                (Some(s), Some(e)) => format!("ran {} to {}", offset(s), offset(e)),
                (Some(s), None) => format!("running since {}", offset(s)),
                (None, Some(e)) => format!("created {}, ended {}", offset(a.created_ms), offset(e)),
                (None, None) => format!("created {}", offset(a.created_ms)),
            };
            let why = if a.why.is_empty() {
                String::new()
            } else {
                format!(": {}", a.why)
            };
            let policy = a
                .policy
                .as_ref()
                .map(|p| format!("; {p}"))
                .unwrap_or_default();
            let _ = writeln!(
                out,
                "  {} ({index}attempt {}): {} {span}{why}{policy}",
                a.pod, a.attempt, a.outcome
            );
        }
        let (more, plain) = left_out(&ranks, &kept);
        if more > 0 {
            let _ = writeln!(
                out,
                "  … {more} more attempts ({plain} of them a first-attempt success), see -o json"
            );
        }
        out.push('\n');
        out.push_str(&self.summary.text());
        // Names, messages and the description come from the input: escaped for a terminal.
        escaped(&out).into_owned()
    }

    /// The wall clock `offset_ms` after the start.
    fn clock_at(&self, offset_ms: i64) -> String {
        clock(
            self.start_nanos
                .saturating_add(offset_ms.saturating_mul(1_000_000)),
        )
    }

    /// Lists a run of routine events past the cap: one line with its counts by
    /// kind, or each event when the run is too short to be worth folding.
    fn fold(
        &self,
        out: &mut String,
        run: &mut Vec<&Event>,
        width: usize,
        line: &dyn Fn(&mut String, &Event),
    ) {
        let (Some(first), Some(last)) = (run.first(), run.last()) else {
            return;
        };
        if run.len() < MIN_FOLDED_RUN {
            for e in run.iter() {
                line(out, e);
            }
            run.clear();
            return;
        }
        let mut kinds: BTreeMap<EventKind, usize> = BTreeMap::new();
        for e in run.iter() {
            *kinds.entry(e.kind).or_default() += 1;
        }
        let counts: Vec<String> = kinds
            .iter()
            .map(|(k, n)| format!("{n} {}", k.label()))
            .collect();
        let until = if last.offset_ms == first.offset_ms {
            String::new()
        } else {
            format!(" to {}", offset(last.offset_ms))
        };
        let _ = writeln!(
            out,
            "  {:<width$}  {}  {:<12} {} routine events{until} ({}), see -o json",
            offset(first.offset_ms),
            self.clock_at(first.offset_ms),
            "…",
            run.len(),
            counts.join(", ")
        );
        run.clear();
    }

    /// The summary alone (`simulate --summary`): the text's last paragraph, the answer.
    pub fn summary_text(&self) -> String {
        escaped(&self.summary.text()).into_owned()
    }
}

impl Summary {
    /// The summary lines for people.
    /// The answer comes last, so that `tail` shows it whatever the Job's size: every
    /// other line, then the message, then the result.
    pub fn text(&self) -> String {
        let (answer, rest): (Vec<_>, Vec<_>) = self
            .capped_lines(MAX_TEXT_ROWS)
            .into_iter()
            .partition(|(k, _)| matches!(*k, "Result:" | "Message:" | "Unfinished:"));
        rest.into_iter()
            .chain(answer.into_iter().rev())
            .map(|(k, v)| format!("{k:<18} {v}\n"))
            .collect::<String>()
    }

    /// [`Summary::lines`] with at most `cap` per-index lines, those worth reading
    /// first (an index that did not end in a success, then one that took more than
    /// one attempt), back in index order, and a last line counting the rest.
    pub fn capped_lines(&self, cap: usize) -> Vec<(&'static str, String)> {
        let mut lines = self.lines();
        lines.retain(|(k, _)| *k != INDEX_LABEL);
        let ranks: Vec<u8> = self.per_index.values().map(|o| worth(o)).collect();
        let kept = keep(&ranks, cap, 2);
        for ((i, outcomes), _) in self.per_index.iter().zip(&kept).filter(|(_, k)| **k) {
            lines.push((INDEX_LABEL, format!("{i}: {}", outcomes.join(", "))));
        }
        let (more, plain) = left_out(&ranks, &kept);
        if more > 0 {
            lines.push((
                INDEX_LABEL,
                format!("… {more} more indexes ({plain} of them a single success), see -o json"),
            ));
        }
        lines
    }

    fn backoff_text(&self) -> String {
        if self.backoff_waits == 0 {
            return "0".to_string();
        }
        format!(
            "{} (longest {}, {} in all)",
            self.backoff_waits,
            human(self.longest_backoff_wait_ms * 1_000_000),
            human(self.backoff_wait_ms * 1_000_000)
        )
    }

    /// The summary as (label, value) lines: the text and `--compare`'s columns.
    pub fn lines(&self) -> Vec<(&'static str, String)> {
        let mut result = self.result.clone();
        if !self.reason.is_empty() {
            result += &format!(" ({})", self.reason);
        }
        let mut lines = vec![
            ("Result:", result),
            (
                "Stopped:",
                if self.stop_reason.is_empty() {
                    self.stopped.clone()
                } else {
                    format!("{} ({})", self.stopped, self.stop_reason)
                },
            ),
            ("Wall time:", self.wall_time.clone()),
            ("Pods created:", self.pods_created.to_string()),
            ("Pods failed:", self.pods_failed.to_string()),
            ("Failures counted:", self.failures_counted.to_string()),
            ("Failures ignored:", self.failures_ignored.to_string()),
            ("Succeeded:", self.succeeded.to_string()),
            ("Backoff waits:", self.backoff_text()),
            ("Syncs:", self.syncs.to_string()),
        ];
        if !self.message.is_empty() {
            lines.insert(1, ("Message:", self.message.clone()));
        }
        if !self.unfinished.is_empty() {
            lines.insert(1, ("Unfinished:", self.unfinished.clone()));
        }
        if self.restarts > 0 {
            lines.push(("Restarts:", self.restarts.to_string()));
        }
        if self.crash_loop_back_off_ms > 0 {
            let all = human(self.crash_loop_back_off_ms.saturating_mul(1_000_000));
            lines.push(("CrashLoopBackOff:", format!("{all} in all")));
        }
        if self.suspended_ms > 0 {
            let all = human(self.suspended_ms.saturating_mul(1_000_000));
            lines.push(("Suspended:", all));
        }
        if !self.completed_indexes.is_empty() {
            lines.push(("Completed indexes:", self.completed_indexes.clone()));
        }
        if !self.failed_indexes.is_empty() {
            lines.push(("Failed indexes:", self.failed_indexes.clone()));
        }
        for (i, outcomes) in &self.per_index {
            lines.push((INDEX_LABEL, format!("{i}: {}", outcomes.join(", "))));
        }
        lines
    }
}

/// Where two timelines of one script part: the first event that differs.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Divergence {
    /// How many events of the story (pods and conditions; not status counters,
    /// requeues or recorded events) the two share from the start.
    pub common_events: usize,
    /// The left timeline's first event that differs, if it has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub left: Option<Event>,
    /// The right timeline's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub right: Option<Event>,
}

/// The first place two timelines differ (pod names aside: the Jobs may differ in name),
/// or `None` when they tell the same story.
pub fn diverge(left: &Timeline, right: &Timeline) -> Option<Divergence> {
    // What a person compares: the pods' story and the Job's conditions, not the
    // bookkeeping (status counters, requeues) that follows from them.
    let story = |e: &&Event| {
        !matches!(
            e.kind,
            EventKind::Status | EventKind::Requeue | EventKind::JobEvent
        )
    };
    let key = |e: &Event| {
        (
            e.offset_ms,
            e.kind,
            e.index,
            e.detail
                .replace(&job_name(&left.job), "JOB")
                .replace(&job_name(&right.job), "JOB"),
        )
    };
    let l: Vec<&Event> = left.events.iter().filter(story).collect();
    let r: Vec<&Event> = right.events.iter().filter(story).collect();
    let common = l
        .iter()
        .zip(&r)
        .take_while(|(a, b)| key(a) == key(b))
        .count();
    if common == l.len() && common == r.len() {
        return None;
    }
    Some(Divergence {
        common_events: common,
        left: l.get(common).map(|e| (*e).clone()),
        right: r.get(common).map(|e| (*e).clone()),
    })
}

fn job_name(job: &str) -> String {
    job.rsplit('/').next().unwrap_or(job).to_string()
}

/// Where the timelines first part (the time and what each side did), then the
/// two summaries side by side, the indexes capped (those that differ first).
pub fn compare_text(
    left_name: &str,
    left: &Timeline,
    right_name: &str,
    right: &Timeline,
) -> String {
    let mut out = parting(left_name, left, right_name, right, "  ");
    out.push_str("\n\n");
    let l = left.summary.lines();
    let r = right.summary.lines();
    let lw = l
        .iter()
        .filter(|(k, _)| *k != "Message:")
        .map(|(_, v)| v.chars().count())
        .chain([left_name.chars().count()])
        .max()
        .unwrap_or(0)
        .min(60);
    let _ = writeln!(out, "{:<19} {left_name:<lw$}  {right_name}", "");
    let mut labels: Vec<&str> = Vec::new();
    for (k, _) in l.iter().chain(r.iter()) {
        if !labels.contains(k) && *k != INDEX_LABEL && *k != "Message:" {
            labels.push(k);
        }
    }
    let get = |lines: &[(&str, String)], k: &str| {
        lines
            .iter()
            .find(|(key, _)| *key == k)
            .map(|(_, v)| v.clone())
            .unwrap_or_else(|| "-".to_string())
    };
    for k in labels {
        let (a, b) = (get(&l, k), get(&r, k));
        let mark = if a == b { " " } else { "*" };
        let _ = writeln!(out, "{mark}{k:<18} {a:<lw$}  {b}");
    }
    let (lp, rp) = (&left.summary.per_index, &right.summary.per_index);
    let indexes: Vec<i32> = lp
        .keys()
        .chain(rp.keys())
        .copied()
        .collect::<std::collections::BTreeSet<i32>>()
        .into_iter()
        .collect();
    let none = Vec::new();
    let sides = |i: &i32| (lp.get(i).unwrap_or(&none), rp.get(i).unwrap_or(&none));
    // Indexes that differ first, then those worth reading on either side.
    let ranks: Vec<u8> = indexes
        .iter()
        .map(|i| {
            let (a, b) = sides(i);
            if a == b {
                1 + worth(a).min(worth(b))
            } else {
                0
            }
        })
        .collect();
    let kept = keep(&ranks, MAX_TEXT_ROWS, 3);
    for (i, _) in indexes.iter().zip(&kept).filter(|(_, k)| **k) {
        let (a, b) = sides(i);
        let (a, b) = (a.join(", "), b.join(", "));
        let mark = if a == b { " " } else { "*" };
        let _ = writeln!(out, "{mark}{:<18} {a:<lw$}  {b}", format!("Index {i}:"));
    }
    let more = kept.iter().filter(|k| !**k).count();
    if more > 0 {
        let same = ranks
            .iter()
            .zip(&kept)
            .filter(|(r, k)| **r > 0 && !**k)
            .count();
        let _ = writeln!(
            out,
            " … {more} more indexes ({same} of them the same on both sides), see -o json"
        );
    }
    for (name, t) in [(left_name, left), (right_name, right)] {
        if !t.summary.message.is_empty() {
            let _ = writeln!(out, "{name}: {}", t.summary.message);
        }
    }
    escaped(&out).into_owned()
}

/// Where the two stories part, for people (the text and the HTML report say the same):
/// how many events they share, then each side's first differing event on its own line,
/// each line starting with `indent`.
pub fn parting(
    left_name: &str,
    left: &Timeline,
    right_name: &str,
    right: &Timeline,
    indent: &str,
) -> String {
    let Some(d) = diverge(left, right) else {
        return "The two timelines are the same.".to_string();
    };
    let line = |e: &Option<Event>| match e {
        Some(e) => format!(
            "{} {} {}{}",
            offset(e.offset_ms),
            e.kind.label(),
            e.pod.as_ref().map(|p| format!("{p} ")).unwrap_or_default(),
            e.detail
        ),
        None => "(nothing more)".to_string(),
    };
    format!(
        "The stories agree for {} event(s) (pods and conditions), then part:\n{indent}{left_name}: {}\n{indent}{right_name}: {}",
        d.common_events,
        line(&d.left),
        line(&d.right)
    )
}

/// RFC 3339 of `start + offset_ms`, shared by the world and tests.
pub fn at(start_nanos: i64, offset_ms: i64) -> String {
    rfc3339(start_nanos.saturating_add(offset_ms.saturating_mul(1_000_000)))
}

#[cfg(test)]
mod tests;

/// Rows a cap left out, and how many of those were a single success (rank 2).
fn left_out(ranks: &[u8], kept: &[bool]) -> (usize, usize) {
    let more = kept.iter().filter(|k| !**k).count();
    let plain = ranks
        .iter()
        .zip(kept)
        .filter(|(r, k)| **r == 2 && !**k)
        .count();
    (more, plain)
}
