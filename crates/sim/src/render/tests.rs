//! Tests of the pictures: escaping, bounded size, one bar per attempt, the waits
//! between attempts, condition marks, outcome classes on the bundled examples, compare.

use std::collections::{BTreeMap, BTreeSet};

use super::*;
use crate::timeline::{Attempt, Event, EventKind, Summary, at};
use crate::{DecideError, Options, Script, simulate};
use job_decider_api::pb;

fn decide(request: pb::DecideJobRequest) -> Result<pb::DecideJobResponse, DecideError> {
    job_decider_api::decide(request)
        .map(|d| d.response())
        .map_err(|e| DecideError {
            bad_input: true,
            message: e.to_string(),
        })
}

fn job(yaml: &str) -> pb::Job {
    let value: serde_json::Value = serde_yaml::from_str(yaml).expect("YAML");
    serde_json::from_value(value).expect("a Job")
}

fn play(job_yaml: &str, script: &str) -> Timeline {
    let script = Script::from_yaml(script).expect("script");
    simulate(
        job(job_yaml),
        Vec::new(),
        &script,
        &Options::default(),
        &mut decide,
    )
    .expect("simulated")
}

macro_rules! example {
    ($dir:literal) => {
        play(
            include_str!(concat!("../../../../examples/simulate/", $dir, "/job.yaml")),
            include_str!(concat!(
                "../../../../examples/simulate/",
                $dir,
                "/script.yaml"
            )),
        )
    };
    ($dir:literal, compare) => {
        play(
            include_str!(concat!(
                "../../../../examples/simulate/",
                $dir,
                "/compare.yaml"
            )),
            include_str!(concat!(
                "../../../../examples/simulate/",
                $dir,
                "/script.yaml"
            )),
        )
    };
}

/// How many times `needle` occurs in `hay`.
fn count(hay: &str, needle: &str) -> usize {
    hay.matches(needle).count()
}

/// A small well-formedness check: every tag closes in order, attribute values
/// are quoted, and `&` only starts an entity. (The browser test parses it too.)
fn well_formed(xml: &str) -> Result<(), String> {
    let body = xml
        .strip_prefix("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n")
        .unwrap_or(xml);
    let mut stack: Vec<String> = Vec::new();
    let mut rest = body;
    while let Some(lt) = rest.find('<') {
        check_text(&rest[..lt])?;
        let gt = rest[lt..].find('>').ok_or("unclosed tag")? + lt;
        let tag = &rest[lt + 1..gt];
        if let Some(name) = tag.strip_prefix('/') {
            let open = stack.pop().ok_or(format!("</{name}> closes nothing"))?;
            if open != name {
                return Err(format!("<{open}> closed by </{name}>"));
            }
        } else {
            let self_closing = tag.ends_with('/');
            let inner = tag.trim_end_matches('/');
            let name = inner.split_whitespace().next().ok_or("empty tag")?;
            // Attribute values: name="value" pairs, no raw < or & in values.
            let mut attrs = inner[name.len()..].trim();
            while !attrs.is_empty() {
                let eq = attrs
                    .find("=\"")
                    .ok_or(format!("unquoted attribute in <{tag}>"))?;
                let close = attrs[eq + 2..]
                    .find('"')
                    .ok_or(format!("unterminated attribute in <{tag}>"))?
                    + eq
                    + 2;
                check_text(&attrs[eq + 2..close])?;
                attrs = attrs[close + 1..].trim_start();
            }
            if !self_closing {
                stack.push(name.to_string());
            }
        }
        rest = &rest[gt + 1..];
    }
    check_text(rest)?;
    if stack.is_empty() {
        Ok(())
    } else {
        Err(format!("unclosed: {stack:?}"))
    }
}

fn check_text(text: &str) -> Result<(), String> {
    if text.contains('<') {
        return Err(format!("raw < in {text:?}"));
    }
    for (i, _) in text.match_indices('&') {
        let entity = &text[i..];
        if !["&amp;", "&lt;", "&gt;", "&quot;", "&#39;"]
            .iter()
            .any(|e| entity.starts_with(e))
        {
            return Err(format!("raw & in {text:?}"));
        }
    }
    if text
        .chars()
        .any(|c| (c as u32) < 0x20 && !matches!(c, '\t' | '\n' | '\r'))
    {
        return Err(format!("control character in {text:?}"));
    }
    Ok(())
}

fn attempt(
    pod: &str,
    index: Option<i32>,
    n: u32,
    from: i64,
    to: Option<i64>,
    outcome: &str,
) -> Attempt {
    Attempt {
        pod: pod.to_string(),
        index,
        attempt: n,
        created_ms: from,
        started_ms: Some(from + 2000),
        ended_ms: to,
        outcome: outcome.to_string(),
        ending: match outcome {
            "succeeded" => Outcome::Succeeded,
            "running" => Outcome::Running,
            "pending" => Outcome::Pending,
            "removed" => Outcome::Deleted,
            _ => Outcome::Counted,
        },
        exit_code: None,
        why: String::new(),
        policy: None,
    }
}

fn event(ms: i64, kind: EventKind, pod: Option<&str>, detail: &str) -> Event {
    Event {
        at: at(0, ms),
        offset_ms: ms,
        kind,
        pod: pod.map(str::to_string),
        index: None,
        detail: detail.to_string(),
    }
}

fn timeline(job: &str, attempts: Vec<Attempt>, events: Vec<Event>) -> Timeline {
    Timeline {
        job: job.to_string(),
        description: None,
        start: at(0, 0),
        start_nanos: 0,
        events,
        attempts,
        backoff_waits: Vec::new(),
        summary: Summary {
            result: "Failed".to_string(),
            reason: "BackoffLimitExceeded".to_string(),
            stopped: "finished".to_string(),
            wall_time: "1m".to_string(),
            wall_time_ms: 60_000,
            ..Summary::default()
        },
    }
}

#[test]
fn names_and_messages_with_markup_are_escaped() {
    let evil = "<script>alert('x')</script>&amp\"";
    let mut t = timeline(
        &format!("ns/{evil}"),
        vec![
            Attempt {
                why: format!("exit 1 {evil}"),
                policy: Some(format!("rule {evil}")),
                ..attempt(evil, None, 1, 0, Some(30_000), "failed")
            },
            attempt("b&b", None, 1, 31_000, None, "running"),
        ],
        vec![
            event(0, EventKind::PodCreated, Some(evil), evil),
            event(
                30_000,
                EventKind::Condition,
                None,
                &format!("Failed=True ({evil}): {evil}"),
            ),
        ],
    );
    t.description = Some(format!("desc {evil}\u{1}"));
    t.summary.reason = evil.to_string();
    t.summary.message = evil.to_string();
    let svg = svg(&t);
    let html = html(&t);
    let both = compare_html(evil, &t, "other&", &t);
    let both_svg = compare_svg(evil, &t, "other&", &t);
    for (name, out) in [("svg", &svg), ("compare svg", &both_svg)] {
        assert!(!out.contains("<script"), "{name}: {out}");
        assert!(out.contains("&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;&amp;amp&quot;"));
        well_formed(out).unwrap_or_else(|e| panic!("{name} is not well-formed: {e}"));
    }
    for (name, out) in [("html", &html), ("compare html", &both)] {
        // The report's own filter script is the only script element.
        assert_eq!(count(out, "<script"), 1, "{name}");
        assert!(out.contains("&lt;script&gt;"), "{name}");
        assert!(out.contains("b&amp;b"), "{name}");
        assert!(
            !out.contains('\u{1}'),
            "{name}: a control character got through"
        );
    }
    assert!(both.contains("other&amp;"));
    // The pod still running at the end runs to the chart's edge, open.
    assert_eq!(count(&svg, "class=\"bar o-running open\""), 1);
}

#[test]
fn escape_covers_markup_quotes_and_control_characters() {
    assert_eq!(escape("a<b>&\"'"), "a&lt;b&gt;&amp;&quot;&#39;");
    assert_eq!(escape("tab\tnew\nline\u{0}"), "tab\tnew\nline\u{fffd}");
    assert_eq!(escape("plain pod-1"), "plain pod-1");
}

#[test]
fn escape_writes_bidi_overrides_and_c1_controls_visibly() {
    // A character reference (`&#x202e;`) would still reorder the page: written as text.
    assert_eq!(escape("inv\u{202e}fdp.exe"), "inv\\u{202e}fdp.exe");
    assert_eq!(
        escape("\u{2066}x\u{2069}\u{200f}\u{85}\u{7f}<"),
        "\\u{2066}x\\u{2069}\\u{200f}\\u{85}\\u{7f}&lt;"
    );
    assert_eq!(escape("é 日本"), "é 日本");
}

/// A Job of `n` pods: NonIndexed (one row per pod) or Indexed (one per index),
/// each pod with a long name, a failure every tenth pod and its events.
fn huge(n: usize, indexed: bool) -> Timeline {
    let mut attempts = Vec::new();
    let mut events = Vec::new();
    for k in 0..n {
        let pod = format!("a-rather-long-job-name-for-a-big-run-{k:06}-abcde");
        let index = indexed.then_some(i32::try_from(k).unwrap_or(i32::MAX));
        let from = i64::try_from(k).unwrap_or(0) * 100;
        let outcome = if k % 10 == 0 { "failed" } else { "succeeded" };
        attempts.push(attempt(&pod, index, 1, from, Some(from + 600_000), outcome));
        for kind in [
            EventKind::PodCreated,
            EventKind::PodStarted,
            EventKind::PodSucceeded,
        ] {
            events.push(event(
                from,
                kind,
                Some(&pod),
                "something happened to this pod",
            ));
        }
    }
    // A backoff wait after every failure, a suspension every 100 pods.
    let mut waits = Vec::new();
    for k in (0..n).step_by(10) {
        let ms = i64::try_from(k).unwrap_or(0) * 100 + 600_000;
        events.push(event(ms, EventKind::Requeue, None, "decide again in 10s (at 10:00:10); backoff record: 1 failure(s) since the last success"));
        waits.push(crate::timeline::BackoffWait {
            at_ms: ms,
            wait_ms: 10_000,
            held_ms: 10_000,
            indexes: Vec::new(),
        });
        if k % 100 == 0 {
            events.push(event(
                ms,
                EventKind::Condition,
                None,
                "Suspended=True (JobSuspended): Job suspended",
            ));
            events.push(event(
                ms + 50,
                EventKind::Condition,
                None,
                "Suspended=False (JobResumed): Job resumed",
            ));
        }
    }
    events.sort_by_key(|e| e.offset_ms);
    let mut t = timeline("ns/big", attempts, events);
    t.summary.backoff_waits = u32::try_from(waits.len()).unwrap_or(u32::MAX);
    t.backoff_waits = waits;
    for i in 0..n {
        t.summary
            .per_index
            .insert(i32::try_from(i).unwrap_or(0), vec!["succeeded".to_string()]);
    }
    t
}

#[test]
fn a_job_of_10000_pods_gives_a_bounded_chart_and_report() {
    for indexed in [false, true] {
        let t = huge(10_000, indexed);
        let svg = svg(&t);
        let html = html(&t);
        eprintln!(
            "10,000 pods, indexed {indexed}: SVG {} bytes, HTML {} bytes",
            svg.len(),
            html.len()
        );
        // Measured: about 115 KB of SVG and 500 KB of HTML; the bounds leave room.
        assert!(
            svg.len() < 200_000,
            "indexed {indexed}: SVG of {} bytes",
            svg.len()
        );
        assert!(
            html.len() < 800_000,
            "indexed {indexed}: HTML of {} bytes",
            html.len()
        );
        assert_eq!(
            count(&svg, "<g class=\"row\""),
            MAX_ROWS,
            "indexed {indexed}"
        );
        let kind = if indexed { "indexes" } else { "pods" };
        assert!(
            svg.contains(&format!("{} more {kind} not drawn", 10_000 - MAX_ROWS)),
            "indexed {indexed}: the chart says how many rows it left out"
        );
        // The rows with a failure are the ones kept: every tenth pod failed.
        assert_eq!(count(&svg, "class=\"bar o-counted"), 1000.min(MAX_ROWS));
        let events = t.events.len();
        assert!(html.contains(&format!(
            "{} more events not listed",
            events - MAX_EVENT_ROWS
        )));
        assert!(svg.contains(&format!(
            "{} more condition changes not marked",
            200 - layout::MAX_MARKS
        )));
        assert!(count(&svg, "<rect class=\"backoff\" x=") <= 1000);
        well_formed(&svg).unwrap_or_else(|e| panic!("{e}"));
    }
    // The summary's per-index lines are capped too.
    let html = html(&huge(10_000, true));
    assert!(html.contains(&format!("{} more indexes", 10_000 - MAX_ROWS)));
}

#[test]
fn the_worst_case_every_row_full_stays_within_its_bound() {
    // 200 indexes of 60 failed attempts: both caps reached at once.
    let mut attempts = Vec::new();
    for i in 0..200 {
        for k in 0..60 {
            let from = i64::from(k) * 20_000;
            let pod = format!("a-rather-long-job-name-for-a-big-run-{i:06}-{k:03}-abcde");
            attempts.push(Attempt {
                why: "container main exited 137 (OOMKilled)".to_string(),
                policy: Some("no pod failure policy rule matches: counted".to_string()),
                ..attempt(
                    &pod,
                    Some(i),
                    k as u32 + 1,
                    from,
                    Some(from + 15_000),
                    "failed",
                )
            });
        }
    }
    let t = timeline("ns/worst", attempts, Vec::new());
    let svg = svg(&t);
    eprintln!("worst case: SVG {} bytes", svg.len());
    let per_row = MAX_BARS / MAX_ROWS;
    assert_eq!(count(&svg, "<rect class=\"bar "), MAX_ROWS * per_row);
    assert_eq!(
        count(&svg, &format!("+{} more attempts", 60 - per_row)),
        MAX_ROWS
    );
    // Measured: about 1.45 MB (each bar says in its hover text how its attempt ended).
    assert!(svg.len() < 1_700_000, "SVG of {} bytes", svg.len());
}

#[test]
fn one_row_with_many_attempts_draws_a_bounded_number_of_bars() {
    let attempts = (0..500)
        .map(|k| {
            attempt(
                &format!("p-{k}"),
                Some(0),
                k + 1,
                i64::from(k) * 10_000,
                Some(i64::from(k) * 10_000 + 5000),
                "failed",
            )
        })
        .collect();
    let t = timeline("ns/retry", attempts, Vec::new());
    let svg = svg(&t);
    assert_eq!(count(&svg, "<rect class=\"bar "), MAX_BARS_PER_ROW);
    // The row's hover text names ten pods and counts the rest.
    let pods: Vec<String> = (0..10).map(|k| format!("p-{k}")).collect();
    assert!(svg.contains(&format!(
        "index 0: 500 attempt(s), pods {} and 490 more</title>",
        pods.join(", ")
    )));
    assert!(svg.contains(&format!("+{} more attempts", 500 - MAX_BARS_PER_ROW)));
}

#[test]
fn every_attempt_of_an_example_is_one_bar_in_its_row() {
    let t = example!("what-if-oom-and-drain");
    let svg = svg(&t);
    assert_eq!(count(&svg, "<rect class=\"bar "), t.attempts.len());
    let indexes: BTreeSet<i32> = t.attempts.iter().filter_map(|a| a.index).collect();
    assert_eq!(count(&svg, "<g class=\"row\""), indexes.len());
    // Each row holds its index's attempts.
    for i in indexes {
        let start = svg
            .find(&format!("data-row=\"index {i}\""))
            .expect("a row per index");
        let row = &svg[start
            ..start
                + svg[start..]
                    .find("</g><g class=\"row\"")
                    .unwrap_or(svg.len() - start)];
        let n = t.attempts.iter().filter(|a| a.index == Some(i)).count();
        assert_eq!(count(row, "<rect class=\"bar "), n, "index {i}");
    }
    well_formed(&svg).unwrap_or_else(|e| panic!("{e}"));
}

#[test]
fn a_non_indexed_job_has_one_row_per_pod() {
    let t = example!("kep-3329-story2");
    assert!(t.attempts.iter().all(|a| a.index.is_none()));
    let pods: BTreeSet<&str> = t.attempts.iter().map(|a| a.pod.as_str()).collect();
    let svg = svg(&t);
    assert_eq!(count(&svg, "<g class=\"row\""), pods.len());
    for p in pods {
        assert!(svg.contains(&format!("data-row=\"{p}\"")), "{p}");
    }
}

#[test]
fn the_wait_between_two_attempts_of_an_index_is_drawn() {
    let t = example!("what-if-oom-and-drain");
    let svg = svg(&t);
    // Every pair of consecutive attempts of an index with time between them has its gap.
    let mut by_index: BTreeMap<i32, Vec<&Attempt>> = BTreeMap::new();
    for a in &t.attempts {
        if let Some(i) = a.index {
            by_index.entry(i).or_default().push(a);
        }
    }
    let mut gaps = 0;
    for attempts in by_index.values() {
        for pair in attempts.windows(2) {
            let (end, next) = (pair[0].ended_ms.unwrap_or(0), pair[1].created_ms);
            if next > end {
                gaps += 1;
                let title = format!(
                    "<title>backoff {} ({} to {})</title>",
                    crate::duration::human((next - end) * 1_000_000),
                    crate::timeline::offset(end),
                    crate::timeline::offset(next)
                );
                assert!(svg.contains(&title), "missing {title}");
            }
        }
    }
    assert!(gaps > 0, "the example has waits");
    assert_eq!(count(&svg, "<g class=\"gap\">"), gaps);
    // The Job's backoff waits are on its own row, as many as the summary counts.
    assert_eq!(
        count(&svg, "<rect class=\"backoff\" x="),
        t.summary.backoff_waits as usize
    );
    // And the suspension from 20m to 25m.
    assert_eq!(count(&svg, "<rect class=\"suspended\" x="), 1);
}

#[test]
fn crash_loop_restarts_are_gaps_within_the_pod_row() {
    let t = example!("restart-on-failure");
    let svg = svg(&t);
    let restarted = outcomes(&t)
        .iter()
        .filter(|o| **o == Outcome::Restarted)
        .count();
    assert!(restarted > 0);
    assert_eq!(count(&svg, "class=\"bar o-restarted"), restarted);
    assert!(svg.contains("<title>crash-loop back-off"));
}

#[test]
fn condition_changes_are_marked_with_their_labels() {
    let t = example!("what-if-oom-and-drain");
    let svg = svg(&t);
    let conditions = t
        .events
        .iter()
        .filter(|e| e.kind == EventKind::Condition)
        .count();
    assert_eq!(count(&svg, "<g class=\"mark "), conditions);
    for label in [
        ">Suspended<",
        ">Resumed<",
        ">SuccessCriteriaMet<",
        ">Complete<",
    ] {
        assert!(svg.contains(label), "{label}");
    }
    let failed = svg_of("kep-3850-story1");
    assert!(failed.contains("<g class=\"mark c-Failed\">"));
    assert!(failed.contains(">FailureTarget<"));
}

fn svg_of(dir: &str) -> String {
    let t = match dir {
        "kep-3850-story1" => example!("kep-3850-story1"),
        "kep-3850-story2" => example!("kep-3850-story2"),
        _ => example!("kep-3329-story3"),
    };
    svg(&t)
}

#[test]
fn outcomes_follow_the_rule_each_failure_matched() {
    let t = example!("what-if-oom-and-drain");
    let o = outcomes(&t);
    let n = |x: Outcome| o.iter().filter(|y| **y == x).count();
    assert_eq!(n(Outcome::Ignored), t.summary.failures_ignored as usize);
    assert_eq!(n(Outcome::Succeeded), t.summary.succeeded as usize);
    // Four pods deleted by the controller when the Job was suspended.
    let deleted = t
        .events
        .iter()
        .filter(|e| e.kind == EventKind::PodDeleted)
        .count();
    assert_eq!(n(Outcome::Deleted), deleted);
    assert_eq!(n(Outcome::Counted), t.summary.failures_counted as usize);

    // FailIndex on exit 42 fails index 2 at its first attempt.
    let t = example!("kep-3850-story2");
    let fatal: Vec<_> = t
        .attempts
        .iter()
        .zip(outcomes(&t))
        .filter(|(_, o)| *o == Outcome::Fatal)
        .map(|(a, _)| a.index)
        .collect();
    assert_eq!(fatal, vec![Some(2)]);
    assert!(svg_of("kep-3850-story2").contains("class=\"bar o-fatal"));

    // FailJob on exit code 1: the bug fails the Job.
    let t = example!("kep-3329-story1");
    let fatal: Vec<_> = t
        .attempts
        .iter()
        .zip(outcomes(&t))
        .filter(|(_, o)| *o == Outcome::Fatal)
        .map(|(a, _)| a.policy.clone().unwrap_or_default())
        .collect();
    assert_eq!(fatal.len(), 1);
    assert!(fatal[0].contains("(FailJob)"), "{fatal:?}");

    // Drains under a Count rule are disruptions.
    let t = example!("kep-3329-story3");
    assert!(outcomes(&t).contains(&Outcome::Disrupted));
}

#[test]
fn the_failure_that_ends_an_index_or_the_job_is_marked_fatal() {
    // backoffLimitPerIndex 1: index 3's second failure fails the index.
    let t = example!("kep-3850-story1");
    assert_eq!(t.summary.failed_indexes, "3");
    let o = outcomes(&t);
    let fatal: Vec<(Option<i32>, u32)> = t
        .attempts
        .iter()
        .zip(&o)
        .filter(|(_, o)| **o == Outcome::Fatal)
        .map(|(a, _)| (a.index, a.attempt))
        .collect();
    let last_of_3 = t
        .attempts
        .iter()
        .filter(|a| a.index == Some(3))
        .map(|a| a.attempt)
        .max();
    assert_eq!(fatal, vec![(Some(3), last_of_3.unwrap_or(0))]);
    // BackoffLimitExceeded: the fourth counted disruption is the one that crossed the limit.
    let t = example!("kep-3329-story3");
    assert_eq!(t.summary.reason, "BackoffLimitExceeded");
    let o = outcomes(&t);
    let fatal: Vec<&Attempt> = t
        .attempts
        .iter()
        .zip(&o)
        .filter(|(_, o)| **o == Outcome::Fatal)
        .map(|(a, _)| a)
        .collect();
    assert_eq!(fatal.len(), 1);
    let verdict = t
        .events
        .iter()
        .find(|e| e.detail.starts_with("FailureTarget=True"))
        .map(|e| e.offset_ms);
    // No other failure ended between it and the verdict.
    let end = fatal[0].ended_ms;
    assert!(
        t.attempts
            .iter()
            .all(|a| { a.outcome != "failed" || a.ended_ms <= end || a.ended_ms > verdict })
    );
    // A Job that completes has no fatal failure.
    assert!(!outcomes(&example!("what-if-oom-and-drain")).contains(&Outcome::Fatal));
}

#[test]
fn the_report_has_the_summary_lines_and_every_event() {
    let t = example!("kep-3850-story1");
    let html = html(&t);
    for (k, v) in t.summary.lines() {
        let line = format!("<tr><th>{}</th><td>{}</td></tr>", escape(k), escape(&v));
        assert!(html.contains(&line), "missing {line}");
    }
    assert_eq!(count(&html, "<tr class=\"k-"), t.events.len());
    assert_eq!(count(&html, "<svg "), 1);
    // Nothing is fetched: no external resource of any kind.
    for external in ["src=", "href=", "url(http", "@import"] {
        assert!(!html.contains(external), "{external}");
    }
}

#[test]
fn compare_shows_both_timelines_on_one_scale() {
    let left = example!("what-if-oom-and-drain");
    let right = example!("what-if-oom-and-drain", compare);
    let html = compare_html("left-job", &left, "right-job", &right);
    let svg = compare_svg("left-job", &left, "right-job", &right);
    for out in [&html, &svg] {
        assert_eq!(count(out, "<g class=\"panel\""), 2);
        assert_eq!(
            count(out, "<rect class=\"bar "),
            left.attempts.len() + right.attempts.len()
        );
        assert!(out.contains("left-job: Complete") && out.contains("right-job: Complete"));
    }
    well_formed(&svg).unwrap_or_else(|e| panic!("{e}"));
    // The lines that differ are marked, the parting is told, both event tables are there.
    assert!(
        html.contains("<tr class=\"differs\"><th>Failures ignored:</th><td>1</td><td>0</td></tr>")
    );
    assert!(html.contains("then part:"));
    assert_eq!(
        count(&html, "<tr class=\"k-"),
        left.events.len() + right.events.len()
    );
    // One scale: the same tick labels in both panels.
    let panels: Vec<&str> = svg.split("<g class=\"panel\"").skip(1).collect();
    let ticks = |p: &str| p.matches("class=\"ticklabel\"").count();
    assert_eq!(ticks(panels[0]), ticks(panels[1]));
}

#[test]
fn axis_ticks_are_round_and_few() {
    use layout::ticks;
    assert_eq!(
        ticks(0, 60_000),
        (0..=6).map(|k| k * 10_000).collect::<Vec<_>>()
    );
    assert_eq!(ticks(0, 41 * 60_000 + 8000).len(), 9); // every 5m
    assert_eq!(ticks(-120_000, 600_000)[0], -120_000);
    for span in [1, 999, 7_777, 3_600_000, 100 * 3_600_000] {
        let t = ticks(0, span);
        assert!(!t.is_empty() && t.len() <= 11, "span {span}: {t:?}");
    }
}

#[test]
fn the_chart_colours_by_the_recorded_ending_not_the_wording_of_reasons() {
    // Words that once decided the colour, on attempts whose recorded ending says otherwise.
    let t = timeline(
        "ns/words",
        vec![
            Attempt {
                why: "evicted; restarted in place".to_string(),
                policy: Some("rule 0 (FailJob) matches: fails the Job".to_string()),
                ..attempt("a", None, 1, 0, Some(30_000), "failed")
            },
            Attempt {
                ending: Outcome::Disrupted,
                ..attempt("b", None, 1, 0, Some(30_000), "failed")
            },
        ],
        Vec::new(),
    );
    assert_eq!(outcomes(&t), vec![Outcome::Counted, Outcome::Disrupted]);
    let svg = svg(&t);
    assert_eq!(count(&svg, "class=\"bar o-counted"), 1);
    assert_eq!(count(&svg, "class=\"bar o-disrupted"), 1);
    assert_eq!(count(&svg, "class=\"bar o-fatal"), 0);
}
