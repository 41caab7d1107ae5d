//! What the chart shows, before any markup: rows of bars, gaps, marks and the time scale.

use std::collections::{BTreeMap, HashSet};

use crate::duration::human;
use crate::timeline::{Attempt, EventKind, Timeline, offset};

use super::{MAX_BARS, MAX_BARS_PER_ROW, MAX_ROWS, MIN_BARS_PER_ROW};

/// At most this many condition changes are marked per chart.
pub const MAX_MARKS: usize = 100;

/// How an attempt ended, as the chart colours it: the timeline's own [`Ending`],
/// which the world sets; the chart never reads the wording of reasons.
pub use crate::timeline::Ending as Outcome;

impl Outcome {
    /// Every outcome, in legend order.
    pub const ALL: [Outcome; 9] = [
        Outcome::Succeeded,
        Outcome::Counted,
        Outcome::Ignored,
        Outcome::Fatal,
        Outcome::Disrupted,
        Outcome::Deleted,
        Outcome::Restarted,
        Outcome::Running,
        Outcome::Pending,
    ];

    /// The CSS class of its bars (`o-succeeded`, ...).
    pub fn class(self) -> &'static str {
        match self {
            Outcome::Succeeded => "o-succeeded",
            Outcome::Counted => "o-counted",
            Outcome::Ignored => "o-ignored",
            Outcome::Fatal => "o-fatal",
            Outcome::Disrupted => "o-disrupted",
            Outcome::Deleted => "o-deleted",
            Outcome::Restarted => "o-restarted",
            Outcome::Running => "o-running",
            Outcome::Pending => "o-pending",
        }
    }

    /// Its legend text.
    pub fn label(self) -> &'static str {
        match self {
            Outcome::Succeeded => "succeeded",
            Outcome::Counted => "failed, counted",
            Outcome::Ignored => "failed, ignored by a rule",
            Outcome::Fatal => "failed the Job or index",
            Outcome::Disrupted => "evicted / preempted",
            Outcome::Deleted => "deleted by the controller",
            Outcome::Restarted => "crashed, restarted in place",
            Outcome::Running => "running at the end",
            Outcome::Pending => "pending at the end",
        }
    }

    /// Its fill colour.
    pub fn colour(self) -> &'static str {
        match self {
            Outcome::Succeeded => "#3a9d4a",
            Outcome::Counted => "#d9453c",
            Outcome::Ignored => "#e8b923",
            Outcome::Fatal => "#5c1a63",
            Outcome::Disrupted => "#3f74d1",
            Outcome::Deleted => "#9b9b9b",
            Outcome::Restarted => "#f08a3c",
            Outcome::Running => "#8fd1e8",
            Outcome::Pending => "#dedede",
        }
    }
}

/// The outcome of every attempt, in order.
pub fn classify(t: &Timeline) -> Vec<Outcome> {
    t.attempts.iter().map(|a| a.ending).collect()
}

/// One drawn attempt.
#[derive(Clone, Debug)]
pub struct Bar<'a> {
    pub attempt: &'a Attempt,
    pub outcome: Outcome,
    /// Where the bar starts: the pod's creation, or the run's start for a restart in place.
    pub from: i64,
    /// When its containers started, if after `from`.
    pub started: Option<i64>,
    /// Where it ends: its end, or the chart's end if it had not ended.
    pub to: i64,
    pub open: bool,
}

/// The wait between two attempts of a row.
#[derive(Clone, Debug)]
pub struct Gap {
    pub from: i64,
    pub to: i64,
    /// Why the row waited: `backoff` or `crash-loop back-off`.
    pub what: &'static str,
}

/// One row: an index, or a pod.
#[derive(Clone, Debug)]
pub struct Row<'a> {
    /// What the row is: `index 3`, or the pod's name.
    pub key: String,
    pub label: String,
    pub title: String,
    pub bars: Vec<Bar<'a>>,
    pub gaps: Vec<Gap>,
    /// Attempts of the row left out by the caps on bars.
    pub more_bars: usize,
}

/// A Job condition change, drawn as a vertical line.
#[derive(Clone, Debug)]
pub struct Mark {
    pub at: i64,
    pub label: String,
    pub title: String,
    /// The condition type (a CSS class: `c-Failed`, ...).
    pub kind: String,
}

/// A span on the Job's own row: a backoff wait or a suspension.
#[derive(Clone, Debug)]
pub struct Band {
    pub from: i64,
    pub to: i64,
    pub class: &'static str,
    pub title: String,
}

/// Everything one chart draws.
#[derive(Clone, Debug)]
pub struct Chart<'a> {
    pub rows: Vec<Row<'a>>,
    /// Rows left out by [`MAX_ROWS`], and how many of those were a single success.
    pub more_rows: usize,
    pub more_rows_plain: usize,
    /// `index` or `pod`: what a row is.
    pub row_kind: &'static str,
    pub marks: Vec<Mark>,
    /// Condition changes left out by [`MAX_MARKS`].
    pub more_marks: usize,
    pub bands: Vec<Band>,
    /// The chart's time range, ms from the start.
    pub t0: i64,
    pub t1: i64,
}

/// The time range a timeline spans: from its earliest pod (or the start) to its last event.
pub fn range(t: &Timeline) -> (i64, i64) {
    let t0 = t
        .attempts
        .iter()
        .map(|a| a.created_ms)
        .chain([0])
        .min()
        .unwrap_or(0);
    let t1 = t
        .attempts
        .iter()
        .flat_map(|a| [a.ended_ms, a.started_ms, Some(a.created_ms)])
        .flatten()
        .chain(t.events.iter().map(|e| e.offset_ms))
        .chain([t.summary.wall_time_ms])
        .max()
        .unwrap_or(0);
    (t0, t1.max(t0.saturating_add(1000)))
}

/// Lays out a timeline over the range `t0..t1` (shared by both charts of a comparison).
pub fn chart(t: &Timeline, (t0, t1): (i64, i64)) -> Chart<'_> {
    let classes = classify(t);
    let indexed = t.attempts.iter().any(|a| a.index.is_some());
    // Rows keyed by index (Indexed Jobs) or by pod, in that order.
    let mut keyed: BTreeMap<(i64, usize), Vec<(&Attempt, Outcome)>> = BTreeMap::new();
    let mut pods: BTreeMap<&str, usize> = BTreeMap::new();
    for (a, class) in t.attempts.iter().zip(classes) {
        let key = match a.index {
            Some(i) if indexed => (i64::from(i), 0),
            _ => {
                let next = pods.len();
                (i64::MIN, *pods.entry(a.pod.as_str()).or_insert(next))
            }
        };
        keyed.entry(key).or_default().push((a, class));
    }
    let total = keyed.len();
    // Over the cap, the rows with a story (a failure, more than one attempt) come first.
    let plain = |v: &Vec<(&Attempt, Outcome)>| v.len() == 1 && v[0].1 == Outcome::Succeeded;
    let mut order: Vec<(bool, (i64, usize))> = keyed.iter().map(|(k, v)| (plain(v), *k)).collect();
    order.sort();
    let kept: HashSet<(i64, usize)> = order.iter().take(MAX_ROWS).map(|(_, k)| *k).collect();
    let more_rows_plain = order.iter().skip(MAX_ROWS).filter(|(p, _)| *p).count();
    let marks = marks(t);
    let per_row = (MAX_BARS / kept.len().max(1)).clamp(MIN_BARS_PER_ROW, MAX_BARS_PER_ROW);
    let rows = keyed
        .into_iter()
        .filter(|(k, _)| kept.contains(k))
        .map(|(k, attempts)| row(k.0, attempts, t1, per_row))
        .collect();
    Chart {
        rows,
        more_rows: total.saturating_sub(MAX_ROWS),
        more_rows_plain,
        row_kind: if indexed { "index" } else { "pod" },
        more_marks: marks.len().saturating_sub(MAX_MARKS),
        marks: marks.into_iter().take(MAX_MARKS).collect(),
        bands: merge(bands(t, t1), (t1 - t0) / 1000),
        t0,
        t1,
    }
}

fn row<'a>(index: i64, attempts: Vec<(&'a Attempt, Outcome)>, t1: i64, cap: usize) -> Row<'a> {
    let first = attempts.first().map(|(a, _)| a.pod.as_str()).unwrap_or("");
    let (key, label, title) = if index == i64::MIN {
        (first.to_string(), short(first, 24), first.to_string())
    } else {
        let mut unique: Vec<&str> = attempts.iter().map(|(a, _)| a.pod.as_str()).collect();
        unique.dedup();
        // The hover text names a few pods, not thousands.
        let more = unique.len().saturating_sub(10);
        unique.truncate(10);
        let more = if more > 0 {
            format!(" and {more} more")
        } else {
            String::new()
        };
        (
            format!("index {index}"),
            format!("index {index}"),
            format!(
                "index {index}: {} attempt(s), pods {}{more}",
                attempts.len(),
                unique.join(", ")
            ),
        )
    };
    let mut bars: Vec<Bar> = Vec::new();
    let mut gaps = Vec::new();
    let more_bars = attempts.len().saturating_sub(cap);
    for (a, outcome) in attempts.into_iter().take(cap) {
        let restart = bars.last().is_some_and(|b| b.attempt.pod == a.pod);
        let from = if restart {
            a.started_ms.unwrap_or(a.created_ms)
        } else {
            a.created_ms
        };
        let to = a.ended_ms.unwrap_or(t1).max(from);
        if let Some(prev) = bars.last()
            && from > prev.to
        {
            gaps.push(Gap {
                from: prev.to,
                to: from,
                what: if restart {
                    "crash-loop back-off"
                } else {
                    "backoff"
                },
            });
        }
        bars.push(Bar {
            attempt: a,
            outcome,
            from,
            started: a.started_ms.filter(|s| *s > from),
            to,
            open: a.ended_ms.is_none(),
        });
    }
    Row {
        key,
        label,
        title,
        bars,
        gaps,
        more_bars,
    }
}

/// `name` cut to `n` characters with an ellipsis.
pub fn short(name: &str, n: usize) -> String {
    if name.chars().count() <= n {
        return name.to_string();
    }
    let head: String = name.chars().take(n.saturating_sub(1)).collect();
    format!("{head}…")
}

/// Condition changes: `Failed=True (BackoffLimitExceeded): ...` events.
fn marks(t: &Timeline) -> Vec<Mark> {
    t.events
        .iter()
        .filter(|e| e.kind == EventKind::Condition)
        .map(|e| {
            let (head, _) = e.detail.split_once(':').unwrap_or((&e.detail, ""));
            let (kind, rest) = head.split_once('=').unwrap_or((head, "True"));
            let status = rest.split_whitespace().next().unwrap_or("True");
            let label = match (kind, status) {
                (k, "True") => k.to_string(),
                ("Suspended", "False") => "Resumed".to_string(),
                (k, s) => format!("{k}={s}"),
            };
            Mark {
                at: e.offset_ms,
                label,
                title: format!("{} {}", offset(e.offset_ms), e.detail),
                kind: kind.to_string(),
            }
        })
        .collect()
}

/// Backoff waits (the timeline's own list) and suspensions.
fn bands(t: &Timeline, t1: i64) -> Vec<Band> {
    let mut out: Vec<Band> = t
        .backoff_waits
        .iter()
        .map(|w| {
            let held = match w.indexes.as_slice() {
                [] => "the Job's backoff record holds failures".to_string(),
                [i] => format!("index {i} waits out its own backoff"),
                many => format!("{} indexes wait out their own backoff", many.len()),
            };
            Band {
                from: w.at_ms,
                // What pods were held for, not the requeue asked (a success cuts it short).
                to: w.at_ms.saturating_add(w.held_ms).min(t1),
                class: "backoff",
                title: format!(
                    "{} backoff: the controller decides again in {}; {held}{}",
                    offset(w.at_ms),
                    human(w.wait_ms.saturating_mul(1_000_000)),
                    if w.held_ms < w.wait_ms {
                        format!("; held {}", human(w.held_ms.saturating_mul(1_000_000)))
                    } else {
                        String::new()
                    }
                ),
            }
        })
        .collect();
    let mut suspended: Option<i64> = None;
    for e in &t.events {
        match e.kind {
            EventKind::Condition if e.detail.starts_with("Suspended=True") => {
                suspended.get_or_insert(e.offset_ms);
            }
            EventKind::Condition if e.detail.starts_with("Suspended=False") => {
                if let Some(from) = suspended.take() {
                    out.push(suspension(from, e.offset_ms));
                }
            }
            _ => {}
        }
    }
    if let Some(from) = suspended {
        out.push(suspension(from, t1));
    }
    // In time order, as the events are: the chart draws them in this order.
    out.sort_by_key(|b| b.from);
    out
}

/// Bands of one kind closer than `slack` (about a pixel) drawn as one, so that a
/// Job with thousands of backoff waits still draws a bounded number of them.
fn merge(bands: Vec<Band>, slack: i64) -> Vec<Band> {
    let mut out: Vec<(Band, usize)> = Vec::new();
    let mut last_of: [Option<usize>; 2] = [None, None];
    for b in bands {
        let kind = usize::from(b.class == "suspended");
        if let Some(k) = last_of[kind]
            && b.from <= out[k].0.to.saturating_add(slack)
        {
            let (m, n) = &mut out[k];
            m.to = m.to.max(b.to);
            *n += 1;
            continue;
        }
        last_of[kind] = Some(out.len());
        out.push((b, 1));
    }
    out.into_iter()
        .map(|(mut b, n)| {
            if n > 1 {
                b.title = format!(
                    "{n} {} from {} to {}",
                    if b.class == "backoff" {
                        "backoff waits"
                    } else {
                        "suspensions"
                    },
                    offset(b.from),
                    offset(b.to)
                );
            }
            b
        })
        .collect()
}

fn suspension(from: i64, to: i64) -> Band {
    Band {
        from,
        to,
        class: "suspended",
        title: format!(
            "suspended from {} to {} ({})",
            offset(from),
            offset(to),
            human((to - from).saturating_mul(1_000_000))
        ),
    }
}

/// Tick positions (ms) for the axis: a round step giving at most about ten ticks.
pub fn ticks(t0: i64, t1: i64) -> Vec<i64> {
    const STEPS: [i64; 20] = [
        1, 5, 10, 50, 100, 500, 1_000, 2_000, 5_000, 10_000, 15_000, 30_000, 60_000, 120_000,
        300_000, 600_000, 900_000, 1_800_000, 3_600_000, 7_200_000,
    ];
    let span = (t1 - t0).max(1);
    let step = STEPS
        .iter()
        .copied()
        .find(|s| span / s <= 10)
        // Beyond 20 hours: whole multiples of two hours.
        .unwrap_or_else(|| (span / 10 / 7_200_000 + 1) * 7_200_000);
    let first = t0.div_euclid(step) * step + if t0.rem_euclid(step) == 0 { 0 } else { step };
    (0..=20)
        .map(|k| first + k * step)
        .take_while(|x| *x <= t1)
        .collect()
}
