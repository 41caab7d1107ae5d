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
