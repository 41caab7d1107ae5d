//! Monte Carlo: many lives of one Job under one script, summed up as the odds
//! and costs someone planning a large run asks for ("how likely is my Job to
//! finish, how long will it take, how many GPU-hours will retries burn?").
//!
//! Life `i` (from 1) plays the script with the seed [`Script::life_seed`]`(S, i)`
//! ([`crate::Script::life`] draws its events; its attempts draw their ends and
//! times from it as their pods are created). Each life is summed up by
//! [`Life::of`] from its [`Timeline`]; [`Report::of`] sums the lives up in life
//! order, so the report is the same whatever order or threads played them. Two
//! Jobs played over the same lives see the same attempts fail and run as long
//! (common random numbers): their difference is their policies'.
//!
//! [`Script::life_seed`]: crate::Script::life_seed

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::Serialize;

use crate::duration::human;
use crate::timeline::{Ending, Timeline};

mod html;
pub use html::{compare_html, html};

/// A pod's resource requests: resource name to quantity, in the resource's base
/// unit (cores, bytes, devices), as the scheduler sums a pod's containers.
pub type Requests = BTreeMap<String, f64>;

/// Hours of something held by pods, by how each pod ended.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Hours {
    /// Held by pods that succeeded: the work the Job needed.
    pub succeeded: f64,
    /// Held by pods that failed or were deleted (evicted, preempted, deleted by the
    /// controller or a user): burned.
    pub burned: f64,
    /// Held by pods still running or pending when the life stopped.
    pub open: f64,
}

impl Hours {
    /// All the hours.
    pub fn total(&self) -> f64 {
        self.succeeded + self.burned + self.open
    }

    fn add(&mut self, ending: Ending, hours: f64) {
        match ending {
            Ending::Succeeded => self.succeeded += hours,
            Ending::Running | Ending::Pending => self.open += hours,
            _ => self.burned += hours,
        }
    }

    fn scaled(&self, by: f64) -> Hours {
        Hours {
            succeeded: self.succeeded * by,
            burned: self.burned * by,
            open: self.open * by,
        }
    }
}

/// One life summed up: what the CSV has a row of.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Life {
    /// Its number, from 1.
    pub life: u64,
    /// Its seed ([`crate::Script::life_seed`]).
    pub seed: u64,
    /// `Complete`, `Failed` or `Unfinished`.
    pub result: String,
    /// The finishing condition's reason, if it finished.
    pub reason: String,
    /// Why the simulation stopped (`finished`, `horizon`, ...).
    pub stopped: String,
    /// From the start to the finishing condition (or the stop), ms.
    pub wall_time_ms: i64,
    /// Pods the controller created.
    pub pods_created: u32,
    /// Attempts that failed.
    pub pods_failed: u32,
    /// The Job's final `status.failed`.
    pub failures_counted: i32,
    /// Failures an `Ignore` rule matched.
    pub failures_ignored: u32,
    /// Backoff waits the controller imposed.
    pub backoff_waits: u32,
    /// The time they held pods back, ms.
    pub backoff_held_ms: i64,
    /// Pod-hours: each pod from its creation to its end (or the life's stop).
    pub pod_hours: Hours,
    /// Resource-hours: the pod-hours times each request of the template, in
    /// [`unit`]'s unit (a byte resource in GiB-hours).
    pub resource_hours: BTreeMap<String, Hours>,
}

/// Hours in a millisecond.
const MS_PER_HOUR: f64 = 3_600_000.0;

impl Life {
    /// The life `life` (seed `seed`) summed up from its timeline, with the pods'
    /// `requests`.
    pub fn of(life: u64, seed: u64, t: &Timeline, requests: &Requests) -> Life {
        let s = &t.summary;
        // A pod (a name) from its creation to the end of its last run; a pod restarted
        // in place has an attempt per run. The simulation's start bounds pods given
        // at the start.
        let mut pods: BTreeMap<&str, (i64, i64, Ending)> = BTreeMap::new();
        for a in &t.attempts {
            let end = a.ended_ms.unwrap_or(s.wall_time_ms).max(a.created_ms);
            let entry = pods
                .entry(a.pod.as_str())
                .or_insert((a.created_ms, end, a.ending));
            entry.0 = entry.0.min(a.created_ms);
            if end >= entry.1 {
                entry.1 = end;
                entry.2 = a.ending;
            }
        }
        let mut pod_hours = Hours::default();
        for (start, end, ending) in pods.values() {
            #[allow(clippy::cast_precision_loss)]
            let hours = (end - start.max(&0)).max(0) as f64 / MS_PER_HOUR;
            pod_hours.add(*ending, hours);
        }
        let resource_hours = requests
            .iter()
            // In the unit people read them in (bytes as GiB), for every output alike.
            .map(|(name, q)| (name.clone(), pod_hours.scaled(*q * unit(name).1)))
            .collect();
        Life {
            life,
            seed,
            result: s.result.clone(),
            reason: s.reason.clone(),
            stopped: s.stopped.clone(),
            wall_time_ms: s.wall_time_ms,
            pods_created: s.pods_created,
            pods_failed: s.pods_failed,
            failures_counted: s.failures_counted,
            failures_ignored: s.failures_ignored,
            backoff_waits: s.backoff_waits,
            backoff_held_ms: s.backoff_wait_ms,
            pod_hours,
            resource_hours,
        }
    }

    /// Whether the Job finished (Complete or Failed) in this life.
    pub fn finished(&self) -> bool {
        matches!(self.result.as_str(), "Complete" | "Failed")
    }

    /// Its outcome's name in the report: `Complete`, `Failed (Reason)` or
    /// `Unfinished (stopped)`.
    pub fn outcome(&self) -> String {
        match self.result.as_str() {
            "Complete" => "Complete".to_string(),
            "Failed" if self.reason.is_empty() => "Failed".to_string(),
            "Failed" => format!("Failed ({})", self.reason),
            other => format!("{other} ({})", self.stopped),
        }
    }
}

/// A quantity's distribution over the lives: mean, percentiles (nearest rank) and extremes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Stats {
    /// How many values.
    pub n: usize,
    /// Their mean.
    pub mean: f64,
    /// The least.
    pub min: f64,
    /// The median.
    pub p50: f64,
    /// The 90th percentile.
    pub p90: f64,
    /// The 99th percentile.
    pub p99: f64,
    /// The greatest.
    pub max: f64,
}

impl Stats {
    /// The statistics of `values` (in any order).
    pub fn of(values: &[f64]) -> Stats {
        if values.is_empty() {
            return Stats::default();
        }
        let mut sorted = values.to_vec();
        sorted.sort_by(f64::total_cmp);
        let rank = |q: f64| {
            #[allow(
                clippy::cast_precision_loss,
                clippy::cast_possible_truncation,
                clippy::cast_sign_loss
            )]
            let r = (q * sorted.len() as f64).ceil() as usize;
            sorted[r.clamp(1, sorted.len()) - 1]
        };
        #[allow(clippy::cast_precision_loss)]
        let mean = values.iter().sum::<f64>() / values.len() as f64;
        Stats {
            n: values.len(),
            mean,
            min: sorted[0],
            p50: rank(0.5),
            p90: rank(0.9),
            p99: rank(0.99),
            max: sorted[sorted.len() - 1],
        }
    }
}

/// One outcome's share of the lives.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Outcome {
    /// `Complete`, `Failed (BackoffLimitExceeded)`, `Unfinished (horizon)`, ...
    pub outcome: String,
    /// Lives that ended so.
    pub lives: usize,
    /// Their share, 0 to 1.
    pub p: f64,
    /// The half-width of its 95% confidence interval (normal approximation:
    /// 1.96·√(p(1−p)/n)).
    pub ci95: f64,
}

/// Hours' statistics, by how the pods ended.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HoursStats {
    /// All the hours of a life.
    pub total: Stats,
    /// Those of pods that succeeded.
    pub succeeded: Stats,
    /// Those burned by pods that failed or were deleted.
    pub burned: Stats,
}

impl HoursStats {
    fn of<'l>(hours: impl Iterator<Item = &'l Hours> + Clone) -> HoursStats {
        let pick = |f: fn(&Hours) -> f64| Stats::of(&hours.clone().map(f).collect::<Vec<_>>());
        HoursStats {
            total: pick(Hours::total),
            succeeded: pick(|h| h.succeeded),
            burned: pick(|h| h.burned),
        }
    }
}

/// The lives summed up.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    /// `namespace/name` of the Job.
    pub job: String,
    /// Lives played.
    pub runs: u64,
    /// The seed the lives' seeds derive from.
    pub seed: u64,
    /// The share of lives that completed.
    pub p_complete: f64,
    /// The share that failed (any reason).
    pub p_failed: f64,
    /// The share still unfinished when the life stopped (the horizon, mostly).
    pub p_unfinished: f64,
    /// Every outcome, most likely first (ties by name).
    pub outcomes: Vec<Outcome>,
    /// Time to finish (Complete or Failed), seconds, over the lives that finished.
    pub time_to_finish_s: Stats,
    /// Time to complete, seconds, over the lives that completed.
    pub time_to_complete_s: Stats,
    /// Pods created per life.
    pub pods_created: Stats,
    /// Failures counted per life (`status.failed`).
    pub failures_counted: Stats,
    /// Failures ignored per life.
    pub failures_ignored: Stats,
    /// Time held in backoff per life, seconds.
    pub backoff_held_s: Stats,
    /// Pod-hours per life.
    pub pod_hours: HoursStats,
    /// Resource-hours per life, by resource (the template's requests).
    pub resource_hours: BTreeMap<String, HoursStats>,
}

/// The share and its 95% half-width.
fn share(count: usize, n: usize) -> (f64, f64) {
    if n == 0 {
        return (0.0, 0.0);
    }
    #[allow(clippy::cast_precision_loss)]
    let (c, n) = (count as f64, n as f64);
    let p = c / n;
    (p, 1.96 * (p * (1.0 - p) / n).sqrt())
}

impl Report {
    /// The lives summed up, in the order given (life order: the sums are then the
    /// same whatever threads played them).
    pub fn of(job: &str, seed: u64, lives: &[Life]) -> Report {
        let n = lives.len();
        let mut counts: BTreeMap<String, usize> = BTreeMap::new();
        for l in lives {
            *counts.entry(l.outcome()).or_default() += 1;
        }
        let mut outcomes: Vec<Outcome> = counts
            .into_iter()
            .map(|(outcome, c)| {
                let (p, ci95) = share(c, n);
                Outcome {
                    outcome,
                    lives: c,
                    p,
                    ci95,
                }
            })
            .collect();
        outcomes.sort_by(|a, b| b.lives.cmp(&a.lives).then(a.outcome.cmp(&b.outcome)));
        let count = |r: &str| lives.iter().filter(|l| l.result == r).count();
        #[allow(clippy::cast_precision_loss)]
        let secs = |ms: i64| ms as f64 / 1000.0;
        let stats = |f: &dyn Fn(&Life) -> Option<f64>| {
            Stats::of(&lives.iter().filter_map(f).collect::<Vec<_>>())
        };
        let mut names: Vec<&String> = lives.iter().flat_map(|l| l.resource_hours.keys()).collect();
        names.sort();
        names.dedup();
        Report {
            job: job.to_string(),
            runs: n as u64,
            seed,
            p_complete: share(count("Complete"), n).0,
            p_failed: share(count("Failed"), n).0,
            p_unfinished: share(n - count("Complete") - count("Failed"), n).0,
            outcomes,
            time_to_finish_s: stats(&|l| l.finished().then(|| secs(l.wall_time_ms))),
            time_to_complete_s: stats(&|l| (l.result == "Complete").then(|| secs(l.wall_time_ms))),
            pods_created: stats(&|l| Some(f64::from(l.pods_created))),
            failures_counted: stats(&|l| Some(f64::from(l.failures_counted))),
            failures_ignored: stats(&|l| Some(f64::from(l.failures_ignored))),
            backoff_held_s: stats(&|l| Some(secs(l.backoff_held_ms))),
            pod_hours: HoursStats::of(lives.iter().map(|l| &l.pod_hours)),
            resource_hours: names
                .into_iter()
                .map(|name| {
                    let hours: Vec<Hours> = lives
                        .iter()
                        .map(|l| l.resource_hours.get(name).copied().unwrap_or_default())
                        .collect();
                    (name.clone(), HoursStats::of(hours.iter()))
                })
                .collect(),
        }
    }

    /// The report as (label, value) lines, the answer last: the text and
    /// `--compare`'s columns.
    pub fn lines(&self) -> Vec<(String, String)> {
        let mut lines: Vec<(String, String)> = Vec::new();
        let mut push = |k: &str, v: String| lines.push((k.to_string(), v));
        push("Lives:", format!("{} (seed {})", self.runs, self.seed));
        push("Time to finish:", time_stats(&self.time_to_finish_s));
        push("Time to complete:", time_stats(&self.time_to_complete_s));
        push("Pods created:", count_stats(&self.pods_created));
        push("Failures counted:", count_stats(&self.failures_counted));
        push("Failures ignored:", count_stats(&self.failures_ignored));
        push("Held in backoff:", time_stats(&self.backoff_held_s));
        push("Pod-hours:", hours_stats(&self.pod_hours));
        for (name, h) in &self.resource_hours {
            let (label, _) = unit(name);
            push(&format!("{label}:"), hours_stats(h));
        }
        // Each outcome is a line of its own, so that a compare pairs them by name.
        for o in &self.outcomes {
            push(
                &format!("{}:", o.outcome),
                format!("{} ({} lives)", percent(o.p, o.ci95), o.lives),
            );
        }
        let (pc, cc) = share_of(self.p_complete, self.runs);
        let (pf, cf) = share_of(self.p_failed, self.runs);
        let (pu, cu) = share_of(self.p_unfinished, self.runs);
        push(
            "Result:",
            format!(
                "P(Complete) {}, P(Failed) {}, P(Unfinished) {}",
                percent(pc, cc),
                percent(pf, cf),
                percent(pu, cu)
            ),
        );
        lines
    }

    /// The report for people: a header, the lines, the answer last.
    pub fn text(&self) -> String {
        let mut out = format!(
            "Monte Carlo: {} lives of Job {} (life i plays the script with a seed drawn from {} and i; --replay i plays one)\n\n",
            self.runs, self.job, self.seed
        );
        let lines = self.lines();
        let width = lines
            .iter()
            .map(|(k, _)| k.chars().count())
            .max()
            .unwrap_or(0);
        for (k, v) in lines {
            let _ = writeln!(out, "{k:<width$} {v}");
        }
        out
    }
}

/// A share's half-width back from its value (for the Result line).
fn share_of(p: f64, n: u64) -> (f64, f64) {
    #[allow(clippy::cast_precision_loss)]
    let n = n as f64;
    if n == 0.0 {
        return (p, 0.0);
    }
    (p, 1.96 * (p * (1.0 - p) / n).sqrt())
}

/// `93.1% ± 1.6%`.
fn percent(p: f64, ci: f64) -> String {
    format!("{:.1}% ± {:.1}%", p * 100.0, ci * 100.0)
}

/// A resource's line label and the factor from its base unit (bytes are GiB).
pub fn unit(name: &str) -> (String, f64) {
    if name == "memory" || name == "ephemeral-storage" || name.starts_with("hugepages-") {
        (format!("{name} GiB-hours"), 1.0 / f64::from(1u32 << 30))
    } else {
        (format!("{name}-hours"), 1.0)
    }
}

/// A duration in seconds for people, to the second.
fn secs_text(s: f64) -> String {
    #[allow(clippy::cast_possible_truncation)]
    let ms = (s * 1000.0).round() as i64;
    human((ms - ms % 1000).saturating_mul(1_000_000))
}

fn time_stats(s: &Stats) -> String {
    if s.n == 0 {
        return "no life".to_string();
    }
    format!(
        "p50 {}, p90 {}, p99 {}, mean {}, max {} ({} lives)",
        secs_text(s.p50),
        secs_text(s.p90),
        secs_text(s.p99),
        secs_text(s.mean),
        secs_text(s.max),
        s.n
    )
}

fn count_stats(s: &Stats) -> String {
    format!(
        "p50 {}, p90 {}, p99 {}, mean {:.2}, max {}",
        s.p50, s.p90, s.p99, s.mean, s.max
    )
}

fn hours_stats(h: &HoursStats) -> String {
    format!(
        "mean {:.2} (succeeded {:.2}, burned {:.2}), p50 {:.2}, p90 {:.2}, p99 {:.2}, max {:.2}",
        h.total.mean,
        h.succeeded.mean,
        h.burned.mean,
        h.total.p50,
        h.total.p90,
        h.total.p99,
        h.total.max
    )
}

/// Two reports' lines paired by label, in the order they first appear and the
/// Result last, as (label, left, right): a label only one Job has is `0 lives`
/// on the other side for an outcome (none of its lives ended so), else `-`. The
/// text and the HTML of `--compare` both print these rows.
pub fn compare_rows(left: &Report, right: &Report) -> Vec<(String, String, String)> {
    let l = left.lines();
    let r = right.lines();
    let mut keys: Vec<String> = Vec::new();
    for (k, _) in l.iter().chain(r.iter()) {
        if !keys.contains(k) {
            keys.push(k.clone());
        }
    }
    keys.retain(|k| k != "Result:");
    keys.push("Result:".to_string());
    let value = |lines: &[(String, String)], k: &str| -> Option<String> {
        lines
            .iter()
            .find(|(key, _)| key == k)
            .map(|(_, v)| v.clone())
    };
    let outcomes: Vec<String> = left
        .outcomes
        .iter()
        .chain(&right.outcomes)
        .map(|o| format!("{}:", o.outcome))
        .collect();
    keys.into_iter()
        .map(|k| {
            let missing = if outcomes.contains(&k) {
                "0 lives"
            } else {
                "-"
            };
            let a = value(&l, &k).unwrap_or_else(|| missing.to_string());
            let b = value(&r, &k).unwrap_or_else(|| missing.to_string());
            (k, a, b)
        })
        .collect()
}

/// The two reports side by side, lines that differ marked `*`, the answers last.
pub fn compare_text(left_name: &str, left: &Report, right_name: &str, right: &Report) -> String {
    let rows = compare_rows(left, right);
    let mut out = format!(
        "Monte Carlo: {} lives of each Job, the same lives (seed {}): each life's attempts fail and run alike under both\n\n",
        left.runs, left.seed
    );
    let width = rows
        .iter()
        .map(|(k, _, _)| k.chars().count())
        .max()
        .unwrap_or(0);
    let _ = writeln!(out, "  {:<width$}   {left_name}", "");
    let _ = writeln!(out, "  {:<width$}   {right_name}", "");
    for (k, a, b) in rows {
        let mark = if a == b { ' ' } else { '*' };
        let _ = writeln!(out, "{mark} {k:<width$}   {a}");
        let _ = writeln!(out, "  {:<width$}   {b}", "");
    }
    out
}

/// The CSV header: one column per field of [`Life`], then three per resource.
pub fn csv_header(resources: &[String]) -> String {
    let mut cols: Vec<String> = [
        "life",
        "seed",
        "result",
        "reason",
        "stopped",
        "wall_time_s",
        "pods_created",
        "pods_failed",
        "failures_counted",
        "failures_ignored",
        "backoff_waits",
        "backoff_held_s",
        "pod_hours",
        "pod_hours_succeeded",
        "pod_hours_burned",
    ]
    .iter()
    .map(|s| (*s).to_string())
    .collect();
    for r in resources {
        let (label, _) = unit(r);
        let label = label.replace(' ', "_");
        cols.push(label.clone());
        cols.push(format!("{label}_succeeded"));
        cols.push(format!("{label}_burned"));
    }
    cols.join(",")
}

/// A CSV field, quoted when it holds a comma, a quote or a line break.
fn field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// The lives as CSV: the header, then a row per life in life order.
pub fn csv(lives: &[Life], resources: &[String]) -> String {
    let mut out = csv_header(resources);
    out.push('\n');
    for l in lives {
        #[allow(clippy::cast_precision_loss)]
        let secs = |ms: i64| ms as f64 / 1000.0;
        let _ = write!(
            out,
            "{},{},{},{},{},{},{},{},{},{},{},{},{:.4},{:.4},{:.4}",
            l.life,
            l.seed,
            field(&l.result),
            field(&l.reason),
            field(&l.stopped),
            secs(l.wall_time_ms),
            l.pods_created,
            l.pods_failed,
            l.failures_counted,
            l.failures_ignored,
            l.backoff_waits,
            secs(l.backoff_held_ms),
            l.pod_hours.total(),
            l.pod_hours.succeeded,
            l.pod_hours.burned,
        );
        for r in resources {
            let h = l.resource_hours.get(r).copied().unwrap_or_default();
            let _ = write!(out, ",{:.4},{:.4},{:.4}", h.total(), h.succeeded, h.burned);
        }
        out.push('\n');
    }
    out
}

/// A Kubernetes quantity (`2`, `500m`, `16Gi`, `1.5`, `1e3`) in its base unit,
/// or `None` when it is not one.
pub fn quantity(text: &str) -> Option<f64> {
    let t = text.trim();
    let split = t
        .find(|c: char| c.is_ascii_alphabetic() && c != 'e' && c != 'E')
        .unwrap_or(t.len());
    let (number, suffix) = t.split_at(split);
    let factor = match suffix {
        "" => 1.0,
        "m" => 1e-3,
        "k" => 1e3,
        "M" => 1e6,
        "G" => 1e9,
        "T" => 1e12,
        "P" => 1e15,
        "E" => 1e18,
        "Ki" => 1024.0,
        "Mi" => 1024.0_f64.powi(2),
        "Gi" => 1024.0_f64.powi(3),
        "Ti" => 1024.0_f64.powi(4),
        "Pi" => 1024.0_f64.powi(5),
        "Ei" => 1024.0_f64.powi(6),
        _ => return None,
    };
    let value: f64 = number.parse().ok()?;
    (value.is_finite() && value >= 0.0).then_some(value * factor)
}

#[cfg(test)]
mod tests;
