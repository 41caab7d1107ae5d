//! The HTML report: one self-contained page (no external resources) with the
//! summary, the SVG chart inline and the event table. The page reads without
//! scripts; a few lines of inline JavaScript only filter the table.

use std::fmt::Write as _;

use super::layout;
use super::svg::{document, shared_range};
use super::{MAX_EVENT_ROWS, MAX_ROWS, escape};
use crate::duration::clock;
use crate::timeline::{Summary, Timeline, offset, parting};

/// The report of one timeline.
pub fn html(timeline: &Timeline) -> String {
    let range = layout::range(timeline);
    let chart = layout::chart(timeline, range);
    let mut body = String::new();
    header(&mut body, timeline);
    let _ = write!(
        body,
        "<section id=\"chart\"><div class=\"scroll\">{}</div>{NOTE}</section>",
        document(&[(timeline.job.as_str(), timeline, &chart)])
    );
    let _ = write!(
        body,
        "<section id=\"summary\"><h2>Summary</h2>{}</section>",
        summary_table(&timeline.summary)
    );
    events(&mut body, "events", "Events", timeline);
    page(&format!("Simulation of {}", timeline.job), &body)
}

/// The report of a `--compare`: both summaries side by side, where the
/// timelines part, both charts on one time scale, both event tables.
pub fn compare_html(
    left_name: &str,
    left: &Timeline,
    right_name: &str,
    right: &Timeline,
) -> String {
    let range = shared_range(left, right);
    let l = layout::chart(left, range);
    let r = layout::chart(right, range);
    let mut body = String::new();
    let _ = write!(
        body,
        "<h1>Simulation: <code>{}</code> vs <code>{}</code></h1>",
        escape(left_name),
        escape(right_name)
    );
    if let Some(d) = &left.description {
        let _ = write!(
            body,
            "<p class=\"description\">{}</p>",
            escape(d.trim_end())
        );
    }
    let _ = write!(
        body,
        "<section id=\"chart\"><div class=\"scroll\">{}</div>{NOTE}</section>",
        document(&[(left_name, left, &l), (right_name, right, &r)])
    );
    let _ = write!(
        body,
        "<section id=\"summary\"><h2>Summary</h2>{}",
        compare_table(left_name, &left.summary, right_name, &right.summary)
    );
    let parting = parting(left_name, left, right_name, right, "");
    let _ = write!(
        body,
        "<pre class=\"divergence\">{}</pre></section>",
        escape(&parting)
    );
    events(
        &mut body,
        "events-left",
        &format!("Events of {left_name}"),
        left,
    );
    events(
        &mut body,
        "events-right",
        &format!("Events of {right_name}"),
        right,
    );
    page(&format!("Simulation of {left_name} vs {right_name}"), &body)
}

const NOTE: &str = "<p class=\"note\">Rows are completion indexes (or pods); a bar runs from \
the pod's creation (lighter while pending) to its end. Hover a bar, gap or mark for details.</p>";

fn header(body: &mut String, t: &Timeline) {
    let _ = write!(
        body,
        "<h1>Simulation of Job <code>{}</code></h1><p class=\"start\">from {}</p>",
        escape(&t.job),
        escape(&t.start)
    );
    if let Some(d) = &t.description {
        let _ = write!(
            body,
            "<p class=\"description\">{}</p>",
            escape(d.trim_end())
        );
    }
}

/// The summary lines with the per-index lines capped as the text caps them (those
/// worth reading first); how many were left out, and the line that says so.
fn capped_lines(s: &Summary) -> (Vec<(&'static str, String)>, usize, Option<String>) {
    let mut lines = s.capped_lines(MAX_ROWS);
    let mut more_line = None;
    if let Some(pos) = lines
        .iter()
        .position(|(k, v)| *k == "Index attempts:" && v.starts_with('…'))
    {
        more_line = Some(lines.remove(pos).1);
    }
    let shown = lines
        .iter()
        .filter(|(k, _)| *k == "Index attempts:")
        .count();
    (lines, s.per_index.len().saturating_sub(shown), more_line)
}

fn summary_table(s: &Summary) -> String {
    let (lines, _, more_line) = capped_lines(s);
    let mut out = String::from("<table class=\"summary\">");
    for (k, v) in &lines {
        let _ = write!(out, "<tr><th>{}</th><td>{}</td></tr>", escape(k), escape(v));
    }
    if let Some(more) = more_line {
        let _ = write!(
            out,
            "<tr><th>Index attempts:</th><td class=\"more\">{}</td></tr>",
            escape(&more)
        );
    }
    out.push_str("</table>");
    out
}

fn compare_table(left_name: &str, l: &Summary, right_name: &str, r: &Summary) -> String {
    let (ll, lmore, _) = capped_lines(l);
    let (rl, rmore, _) = capped_lines(r);
    let mut keys: Vec<(&str, Option<String>)> = Vec::new();
    for (k, v) in ll.iter().chain(rl.iter()) {
        // Index lines pair up by their index.
        let sub = (*k == "Index attempts:")
            .then(|| v.split_once(':').map(|(i, _)| i.to_string()))
            .flatten();
        if !keys.contains(&(*k, sub.clone())) {
            keys.push((k, sub));
        }
    }
    let get = |lines: &[(&str, String)], key: &(&str, Option<String>)| {
        lines
            .iter()
            .find(|(k, v)| {
                *k == key.0
                    && key
                        .1
                        .as_ref()
                        .is_none_or(|i| v.split_once(':').is_some_and(|(j, _)| j == i))
            })
            .map(|(_, v)| v.clone())
            .unwrap_or_else(|| "-".to_string())
    };
    let mut out = format!(
        "<table class=\"summary compare\"><tr><th></th><th>{}</th><th>{}</th></tr>",
        escape(left_name),
        escape(right_name)
    );
    for key in &keys {
        let (a, b) = (get(&ll, key), get(&rl, key));
        let class = if a == b { "" } else { " class=\"differs\"" };
        let _ = write!(
            out,
            "<tr{class}><th>{}</th><td>{}</td><td>{}</td></tr>",
            escape(key.0),
            escape(&a),
            escape(&b)
        );
    }
    if lmore + rmore > 0 {
        let _ = write!(
            out,
            "<tr><th>Index attempts:</th><td class=\"more\">{lmore} more</td><td class=\"more\">{rmore} more</td></tr>"
        );
    }
    out.push_str("</table>");
    out
}

fn events(body: &mut String, id: &str, title: &str, t: &Timeline) {
    let _ = write!(
        body,
        "<section class=\"events\" id=\"{id}\"><h2>{}</h2>\
         <p><label>Filter: <input class=\"filter\" type=\"search\" placeholder=\"kind, pod or text\"></label></p>\
         <table class=\"events\"><thead><tr><th>offset</th><th>time</th><th>kind</th><th>pod</th><th>index</th><th>what happened</th></tr></thead><tbody>",
        escape(title)
    );
    for e in t.events.iter().take(MAX_EVENT_ROWS) {
        let _ = write!(
            body,
            "<tr class=\"k-{kind}\"><td>{}</td><td>{}</td><td>{kind}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            escape(&offset(e.offset_ms)),
            escape(&clock(
                t.start_nanos
                    .saturating_add(e.offset_ms.saturating_mul(1_000_000))
            )),
            escape(e.pod.as_deref().unwrap_or("")),
            e.index.map(|i| i.to_string()).unwrap_or_default(),
            escape(&e.detail),
            kind = e.kind.label(),
        );
    }
    body.push_str("</tbody></table>");
    let more = t.events.len().saturating_sub(MAX_EVENT_ROWS);
    if more > 0 {
        let _ = write!(
            body,
            "<p class=\"more\">{more} more events not listed; the JSON output (<code>-o json</code>) has them all.</p>"
        );
    }
    body.push_str("</section>");
}

fn page(title: &str, body: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>{}</title><style>{CSS}</style></head><body>{body}<script>{JS}</script></body></html>\n",
        escape(title)
    )
}

const CSS: &str = "body{font:14px/1.4 sans-serif;margin:1.5em;color:#222;max-width:1260px}\
h1{font-size:1.3em}h2{font-size:1.1em;margin-top:1.4em}code{font-size:.95em}\
.description{white-space:pre-wrap;color:#444}.start{color:#666;margin-top:-.6em}\
table.summary{border-collapse:collapse}table.summary th{text-align:left;padding:1px 12px 1px 0;font-weight:600;white-space:nowrap;vertical-align:top}\
table.summary td{padding:1px 16px 1px 0}table.summary tr.differs{background:#fff3cd}\
.scroll{overflow-x:auto}svg.gantt{max-width:100%;height:auto;border:1px solid #ddd}\
.note,.more{color:#666;font-size:.9em}pre.divergence{white-space:pre-wrap;background:#f6f6f6;padding:.6em}\
table.events{border-collapse:collapse;font-size:12px}table.events td,table.events th{padding:1px 8px 1px 0;text-align:left;vertical-align:top}\
table.events tbody tr:nth-child(even){background:#f6f6f6}.k-failed td:nth-child(3),.k-evicted td:nth-child(3){color:#b3261e}\
.k-condition td{font-weight:600}.k-succeeded td:nth-child(3){color:#1e7b34}";

/// Filters each event table by the text in its box (the page works without it).
const JS: &str = "document.querySelectorAll('section.events').forEach(function(s){\
var box=s.querySelector('input.filter');var rows=s.querySelectorAll('tbody tr');\
box.addEventListener('input',function(){var q=box.value.toLowerCase();\
rows.forEach(function(r){r.style.display=r.textContent.toLowerCase().indexOf(q)<0?'none':'';});});});";
