use super::*;

fn event(ms: i64, kind: EventKind, detail: &str) -> Event {
    Event {
        at: at(0, ms),
        offset_ms: ms,
        kind,
        pod: None,
        index: None,
        detail: detail.to_string(),
    }
}

fn timeline(job: &str, events: Vec<Event>) -> Timeline {
    Timeline {
        job: job.to_string(),
        description: None,
        start: at(0, 0),
        start_nanos: 0,
        events,
        attempts: Vec::new(),
        backoff_waits: Vec::new(),
        summary: Summary::default(),
    }
}

#[test]
fn divergence_is_the_first_different_pod_or_condition_event() {
    let a = timeline(
        "ns/a",
        vec![
            event(0, EventKind::PodCreated, "a-xyz attempt 1"),
            event(0, EventKind::Status, "active 0→1"),
            event(60_000, EventKind::PodFailed, "exited 1; counted"),
        ],
    );
    let b = timeline(
        "ns/b",
        vec![
            event(0, EventKind::PodCreated, "b-xyz attempt 1"),
            event(0, EventKind::Status, "active 0→1, failedIndexes \"\""),
            event(60_000, EventKind::PodFailed, "exited 1; not counted"),
        ],
    );
    let d = diverge(&a, &b).expect("they part");
    // The Jobs' names and status bookkeeping do not count as parting.
    assert_eq!(d.common_events, 1);
    assert_eq!(
        d.left.map(|e| e.detail),
        Some("exited 1; counted".to_string())
    );
    assert_eq!(diverge(&a, &a), None);
}

#[test]
fn offsets_read_as_durations_from_the_start() {
    assert_eq!(offset(0), "+0s");
    assert_eq!(offset(65_000), "+1m05s");
    assert_eq!(offset(-120_000), "-2m");
}

#[test]
fn the_result_sat_above_the_per_index_lines_so_tail_never_showed_it() {
    let mut t = timeline("ns/a", Vec::new());
    t.summary.result = "Failed".to_string();
    t.summary.reason = "BackoffLimitExceeded".to_string();
    t.summary.message = "Job has reached the specified backoff limit".to_string();
    for i in 0..50 {
        t.summary.per_index.insert(i, vec!["succeeded".to_string()]);
    }
    let text = t.text();
    let last: Vec<&str> = text.lines().rev().take(2).collect();
    assert_eq!(
        last,
        [
            "Result:            Failed (BackoffLimitExceeded)",
            "Message:           Job has reached the specified backoff limit"
        ],
        "{text}"
    );
}

fn pod_event(ms: i64, kind: EventKind, index: i32, detail: &str) -> Event {
    Event {
        pod: Some(format!("big-{index}-x")),
        index: Some(index),
        ..event(ms, kind, detail)
    }
}

fn attempt(index: i32, attempt: u32, outcome: &str) -> Attempt {
    Attempt {
        pod: format!("big-{index}-{attempt}"),
        index: Some(index),
        attempt,
        created_ms: 0,
        started_ms: Some(5_000),
        ended_ms: Some(600_000),
        outcome: outcome.to_string(),
        ending: if outcome == "succeeded" {
            Ending::Succeeded
        } else {
            Ending::Counted
        },
        exit_code: None,
        why: String::new(),
        policy: None,
    }
}

/// A 1,000-index Job: every index created, started and succeeded, except that
/// indexes 100, 200, ... 900 failed once and were held for a backoff, index 500
/// is still pending at the end and index 700 failed for good.
fn thousand_indexes() -> Timeline {
    let mut events = Vec::new();
    let mut attempts = Vec::new();
    let mut t = timeline("ns/big", Vec::new());
    for i in 0..1000 {
        events.push(pod_event(0, EventKind::PodCreated, i, "attempt 1"));
        events.push(pod_event(0, EventKind::Status, i, "active 0→1"));
    }
    for i in 0..1000 {
        events.push(pod_event(5_000, EventKind::PodStarted, i, "running"));
    }
    let outcomes = |i: i32| -> Vec<&str> {
        match i {
            500 => vec!["pending"],
            700 => vec!["failed(1)", "failed(1)"],
            i if i % 100 == 0 => vec!["failed(1)", "succeeded"],
            _ => vec!["succeeded"],
        }
    };
    for i in 0..1000 {
        for (n, o) in outcomes(i).into_iter().enumerate() {
            let ms = 600_000 + 1_000 * n as i64;
            let kind = if o == "succeeded" {
                EventKind::PodSucceeded
            } else {
                EventKind::PodFailed
            };
            events.push(pod_event(ms, kind, i, o));
            if kind == EventKind::PodFailed {
                events.push(pod_event(ms, EventKind::Status, i, "failed 0→1"));
                events.push(event(ms, EventKind::Requeue, "decide again in 10s"));
            }
            let outcome = o.split('(').next().unwrap_or(o);
            attempts.push(attempt(i, n as u32 + 1, outcome));
        }
        t.summary
            .per_index
            .insert(i, outcomes(i).into_iter().map(str::to_string).collect());
    }
    events.push(event(700_000, EventKind::Condition, "Failed=True"));
    events.sort_by_key(|e| e.offset_ms);
    t.events = events;
    t.attempts = attempts;
    t.summary.result = "Failed".to_string();
    t.summary.reason = "FailedIndexes".to_string();
    t
}

fn index_lines(text: &str) -> Vec<&str> {
    text.lines()
        .filter(|l| l.starts_with("Index attempts:"))
        .collect()
}

#[test]
fn the_summary_of_a_large_job_printed_a_line_for_every_index() {
    // Defect 9 (issue 25): `--summary` of a 1,000-index Job printed 1,000
    // "Index attempts:" lines.
    let t = thousand_indexes();
    let text = t.summary_text();
    let lines = index_lines(&text);
    assert!(lines.len() <= 200, "{} index lines", lines.len());
    // Every index worth reading is there: the failed, the pending, the retried.
    for i in [100, 200, 300, 400, 500, 600, 700, 800, 900] {
        assert!(
            lines.iter().any(|l| l.contains(&format!(" {i}: "))),
            "index {i}: {text}"
        );
    }
    assert!(
        lines
            .iter()
            .any(|l| l.contains(" 500: pending") || l.contains(" 700: failed(1), failed(1)")),
        "{text}"
    );
    let shown = lines.iter().filter(|l| !l.contains("more indexes")).count();
    let more = 1000 - shown;
    assert_eq!(
        lines.last().copied(),
        Some(
            format!(
                "Index attempts:    … {more} more indexes ({more} of them a single success), see -o json"
            )
            .as_str()
        ),
        "{text}"
    );
    // Still in index order, and the answer still last.
    assert!(
        text.ends_with("Result:            Failed (FailedIndexes)\n"),
        "{text}"
    );
    // JSON keeps them all.
    let json = serde_json::to_value(&t).expect("json");
    assert_eq!(
        json["summary"]["perIndex"].as_object().map(|o| o.len()),
        Some(1000)
    );
}

#[test]
fn the_text_of_a_large_job_listed_thousands_of_routine_events() {
    // Defect 9 (issue 25): the full text of a 1,000-pod Job ran to thousands of lines.
    let t = thousand_indexes();
    let text = t.text();
    assert!(text.lines().count() < 800, "{} lines", text.lines().count());
    let timeline_part = text.split("\nAttempts:").next().expect("a timeline part");
    // Every failure, failed counter, requeue and condition is listed.
    let count = |kind: &str| {
        timeline_part
            .lines()
            .filter(|l| l.contains(&format!("  {kind:<12} ")))
            .count()
    };
    let want = |kind: EventKind| t.events.iter().filter(|e| e.kind == kind).count();
    assert_eq!(count("failed"), want(EventKind::PodFailed));
    assert_eq!(count("requeue"), want(EventKind::Requeue));
    assert_eq!(count("condition"), 1);
    assert_eq!(
        timeline_part.matches("failed 0→1").count(),
        want(EventKind::PodFailed)
    );
    // The routine ones are folded, and the fold lines account for every one.
    let folds: Vec<&str> = timeline_part
        .lines()
        .filter(|l| l.contains(" routine events"))
        .collect();
    assert!(!folds.is_empty(), "{timeline_part}");
    assert!(
        folds.iter().all(|l| l.ends_with("see -o json")),
        "{folds:?}"
    );
    let folded: usize = folds
        .iter()
        .filter_map(|l| {
            l.split(" routine events")
                .next()?
                .rsplit(' ')
                .next()?
                .parse::<usize>()
                .ok()
        })
        .sum();
    let listed = timeline_part.lines().count() - 3 - folds.len();
    assert_eq!(listed + folded, t.events.len(), "{timeline_part}");
    // The attempts too: the failed and retried ones first, the rest counted.
    let attempts = text
        .split("\nAttempts:\n")
        .nth(1)
        .and_then(|s| s.split("\n\n").next())
        .expect("attempts");
    assert!(attempts.lines().count() <= 200, "{attempts}");
    assert!(
        attempts.contains("big-700-2 (index 700, attempt 2): failed"),
        "{attempts}"
    );
    assert!(
        attempts
            .lines()
            .last()
            .is_some_and(|l| l.contains("more attempts") && l.ends_with("see -o json")),
        "{attempts}"
    );
}

#[test]
fn a_small_job_text_is_not_folded() {
    let mut t = thousand_indexes();
    t.events.truncate(150);
    t.attempts.truncate(100);
    t.summary.per_index = t.summary.per_index.clone().into_iter().take(100).collect();
    let text = t.text();
    assert!(!text.contains("routine events"), "{text}");
    assert!(!text.contains("more attempts"), "{text}");
    assert_eq!(index_lines(&text).len(), 100);
}

#[test]
fn compare_printed_every_index_row_before_the_divergence() {
    // Defect 9 (issue 25): `--compare` printed 1,000 index rows before saying where
    // the two timelines part.
    let left = thousand_indexes();
    let mut right = thousand_indexes();
    right.job = "ns/other".to_string();
    right
        .summary
        .per_index
        .insert(700, vec!["failed(1)".into(), "succeeded".into()]);
    right.summary.result = "Complete".to_string();
    right.summary.reason = String::new();
    if let Some(e) = right
        .events
        .iter_mut()
        .find(|e| e.kind == EventKind::Condition)
    {
        e.detail = "Complete=True".to_string();
    }
    let text = compare_text("left", &left, "right", &right);
    let first: Vec<&str> = text.lines().take(3).collect();
    assert!(first[0].starts_with("The stories agree for "), "{text}");
    assert!(
        first[1].contains("+11m40s") && first[1].contains("Failed=True"),
        "{text}"
    );
    assert!(first[2].contains("Complete=True"), "{text}");
    let rows: Vec<&str> = text.lines().filter(|l| l.contains("Index ")).collect();
    assert!(rows.len() <= 200, "{} index rows", rows.len());
    assert!(
        rows.iter()
            .any(|l| l.starts_with("*Index 700:") && l.contains("succeeded")),
        "the index that differs is shown: {text}"
    );
    assert!(
        text.lines()
            .any(|l| l.contains("more indexes") && l.ends_with("see -o json")),
        "{text}"
    );
}
