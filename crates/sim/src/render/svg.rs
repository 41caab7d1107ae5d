//! The Gantt chart as SVG: one row per index (or pod), attempts as bars coloured by
//! outcome, the waits between them, the Job's backoff and suspensions, condition marks.

use std::fmt::Write as _;

use super::escape;
use super::layout::{self, Chart, Outcome};
use crate::duration::human;
use crate::timeline::{Timeline, offset};

/// The chart's width in pixels (it scales: the SVG has a viewBox).
const WIDTH: f64 = 1200.0;
/// Where the plot starts (row labels to its left).
const LEFT: f64 = 160.0;
const RIGHT: f64 = 24.0;
const ROW: f64 = 18.0;
const BAR: f64 = 12.0;
const LANE: f64 = 14.0;
const MAX_LANES: usize = 4;

/// The standalone SVG document of one timeline.
pub fn svg(timeline: &Timeline) -> String {
    let range = layout::range(timeline);
    let chart = layout::chart(timeline, range);
    XML_DECLARATION.to_string() + &document(&[(timeline.job.as_str(), timeline, &chart)])
}

const XML_DECLARATION: &str = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";

/// One SVG with both timelines of a `--compare`, on the same time scale.
pub fn compare_svg(left_name: &str, left: &Timeline, right_name: &str, right: &Timeline) -> String {
    let range = shared_range(left, right);
    let l = layout::chart(left, range);
    let r = layout::chart(right, range);
    XML_DECLARATION.to_string() + &document(&[(left_name, left, &l), (right_name, right, &r)])
}

/// The range covering both timelines.
pub(super) fn shared_range(left: &Timeline, right: &Timeline) -> (i64, i64) {
    let (a0, a1) = layout::range(left);
    let (b0, b1) = layout::range(right);
    (a0.min(b0), a1.max(b1))
}

/// The `<svg>` element (no XML declaration: the HTML report embeds it as is).
pub(super) fn document(panels: &[(&str, &Timeline, &Chart)]) -> String {
    let mut body = String::new();
    let mut y = 8.0;
    y = legend(&mut body, y);
    for (name, timeline, chart) in panels {
        y = panel(&mut body, name, timeline, chart, y + 10.0);
    }
    let height = y + 8.0;
    let title = panels
        .iter()
        .map(|(name, _, _)| escape(name))
        .collect::<Vec<_>>()
        .join(" vs ");
    format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"gantt\" viewBox=\"0 0 {w} {h}\" \
         width=\"{w}\" height=\"{h}\" role=\"img\" aria-label=\"Gantt chart of {title}\">\
         <title>Gantt chart of {title}</title><style>{STYLE}</style>\
         <defs><pattern id=\"hatch\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\" \
         patternTransform=\"rotate(45)\"><rect width=\"6\" height=\"6\" fill=\"#eeeeee\"/>\
         <line x1=\"0\" y1=\"0\" x2=\"0\" y2=\"6\" stroke=\"#bbbbbb\" stroke-width=\"3\"/></pattern></defs>\
         <rect class=\"bg\" width=\"{w}\" height=\"{h}\"/>{body}</svg>\n",
        w = n(WIDTH),
        h = n(height),
    )
}

const STYLE: &str = "text{font:11px sans-serif;fill:#222}\
.bg{fill:#fff}.head{font-weight:bold;font-size:13px}.sub{fill:#555}\
.stripe{fill:#f4f6f8}.label{fill:#333}.more{fill:#777;font-style:italic}\
.tick{stroke:#e2e2e2}.ticklabel{fill:#666;font-size:10px}\
.pend{fill:#fff;fill-opacity:.6}.open{stroke:#333;stroke-width:1;stroke-dasharray:2 2}\
.gap line{stroke:#888;stroke-dasharray:3 2}.gap text{fill:#777;font-size:9px}\
.backoff{fill:#f3b6b1}.suspended{fill:url(#hatch)}.jobrow{fill:#555;font-weight:bold}\
.mark line{stroke:#555;stroke-dasharray:4 3}.mark text{font-size:10px;font-weight:bold}\
.c-Failed line,.c-FailureTarget line{stroke:#b3261e}.c-Failed text,.c-FailureTarget text{fill:#b3261e}\
.c-Complete line,.c-SuccessCriteriaMet line{stroke:#1e7b34}.c-Complete text,.c-SuccessCriteriaMet text{fill:#1e7b34}\
.c-Suspended line{stroke:#777}.c-Suspended text{fill:#666}";

/// Colours by outcome (also the legend swatches).
fn outcome_style() -> String {
    Outcome::ALL
        .iter()
        .map(|o| format!(".{}{{fill:{}}}", o.class(), o.colour()))
        .collect()
}

/// A number for an attribute: one decimal at most.
fn n(v: f64) -> String {
    let s = format!("{v:.1}");
    s.strip_suffix(".0").map(str::to_string).unwrap_or(s)
}

fn legend(out: &mut String, y: f64) -> f64 {
    let _ = write!(
        out,
        "<style>{}</style><g class=\"legend\">",
        outcome_style()
    );
    let mut items: Vec<(String, &str)> = Outcome::ALL
        .iter()
        .map(|o| {
            (
                format!(
                    "<rect class=\"swatch {}\" width=\"14\" height=\"10\"/>",
                    o.class()
                ),
                o.label(),
            )
        })
        .collect();
    items.push((
        "<rect class=\"backoff\" width=\"14\" height=\"10\"/>".to_string(),
        "backoff wait (Job row)",
    ));
    items.push((
        "<rect class=\"suspended\" width=\"14\" height=\"10\"/>".to_string(),
        "suspended (Job row)",
    ));
    items.push((
        "<line x1=\"4\" y1=\"5\" x2=\"14\" y2=\"5\" stroke=\"#888\" stroke-dasharray=\"3 2\"/>"
            .to_string(),
        "wait between attempts",
    ));
    items.push((
        "<line x1=\"7\" y1=\"0\" x2=\"7\" y2=\"11\" stroke=\"#555\" stroke-dasharray=\"4 3\"/>"
            .to_string(),
        "condition change",
    ));
    let (mut x, mut y) = (8.0, y);
    for (swatch, text) in items {
        let w = 18.0 + text.chars().count() as f64 * 6.0 + 14.0;
        if x + w > WIDTH - RIGHT {
            x = 8.0;
            y += 16.0;
        }
        let _ = write!(
            out,
            "<g class=\"key\" transform=\"translate({},{})\">{swatch}<text x=\"18\" y=\"9\">{}</text></g>",
            n(x),
            n(y),
            escape(text)
        );
        x += w;
    }
    out.push_str("</g>");
    y + 22.0
}

/// One timeline's panel: header, condition labels, axis, the Job's row, then the rows.
fn panel(out: &mut String, name: &str, t: &Timeline, chart: &Chart, y: f64) -> f64 {
    let scale = (WIDTH - LEFT - RIGHT) / (chart.t1 - chart.t0).max(1) as f64;
    let x = |ms: i64| LEFT + (ms - chart.t0) as f64 * scale;
    let s = &t.summary;
    let mut result = s.result.clone();
    if !s.reason.is_empty() {
        result += &format!(" ({})", s.reason);
    }
    let _ = write!(
        out,
        "<g class=\"panel\" data-job=\"{}\"><text class=\"head\" x=\"8\" y=\"{}\">{}: {} after {}</text>\
         <text class=\"sub\" x=\"8\" y=\"{}\">{} pods created, {} failures counted, {} ignored, {} backoff waits ({}); from {}</text>",
        escape(&t.job),
        n(y + 12.0),
        escape(name),
        escape(&result),
        escape(&s.wall_time),
        n(y + 28.0),
        s.pods_created,
        s.failures_counted,
        s.failures_ignored,
        s.backoff_waits,
        human(s.backoff_wait_ms.saturating_mul(1_000_000)),
        escape(&t.start),
    );
    let mut y = y + 38.0;

    // Condition labels, in lanes so that labels at nearby times do not overlap.
    let mut lanes: Vec<f64> = Vec::new();
    let mut placed = Vec::new();
    for m in &chart.marks {
        let mx = x(m.at);
        let w = m.label.chars().count() as f64 * 6.2 + 6.0;
        // Near the right edge a label reads leftwards from its line.
        let end_anchored = mx + w > WIDTH - 4.0;
        let (from, to) = if end_anchored {
            (mx - w, mx)
        } else {
            (mx, mx + w)
        };
        let lane = lanes
            .iter()
            .position(|end| *end < from)
            .unwrap_or_else(|| {
                lanes.push(f64::MIN);
                lanes.len() - 1
            })
            .min(MAX_LANES - 1);
        lanes[lane] = to;
        placed.push((m, mx, lane, end_anchored));
    }
    let label_top = y;
    let lanes_h = lanes.len().min(MAX_LANES) as f64 * LANE;
    y += lanes_h + 4.0;

    // The axis: tick labels, then grid lines through every row.
    let rows_h = (chart.rows.len() + 1) as f64 * ROW;
    let _ = write!(out, "<g class=\"axis\">");
    for tick in layout::ticks(chart.t0, chart.t1) {
        let tx = x(tick);
        let _ = write!(
            out,
            "<line class=\"tick\" x1=\"{a}\" y1=\"{}\" x2=\"{a}\" y2=\"{}\"/>\
             <text class=\"ticklabel\" x=\"{a}\" y=\"{}\" text-anchor=\"middle\">{}</text>",
            n(y + 14.0),
            n(y + 14.0 + rows_h),
            n(y + 10.0),
            escape(&offset(tick)),
            a = n(tx),
        );
    }
    out.push_str("</g>");
    y += 14.0;
    let rows_top = y;

    // The Job's own row: backoff waits and suspensions.
    let _ = write!(
        out,
        "<g class=\"jobrow-g\"><text class=\"jobrow\" x=\"8\" y=\"{}\">Job</text>",
        n(y + 13.0)
    );
    for b in &chart.bands {
        let _ = write!(
            out,
            "<rect class=\"{}\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"><title>{}</title></rect>",
            b.class,
            n(x(b.from)),
            n(y + 3.0),
            n((x(b.to) - x(b.from)).max(2.0)),
            n(BAR),
            escape(&b.title)
        );
    }
    out.push_str("</g>");
    y += ROW;

    for (k, row) in chart.rows.iter().enumerate() {
        let _ = write!(out, "<g class=\"row\" data-row=\"{}\">", escape(&row.key));
        if k % 2 == 0 {
            let _ = write!(
                out,
                "<rect class=\"stripe\" x=\"0\" y=\"{}\" width=\"{}\" height=\"{}\"/>",
                n(y),
                n(WIDTH),
                n(ROW)
            );
        }
        let _ = write!(
            out,
            "<text class=\"label\" x=\"8\" y=\"{}\">{}<title>{}</title></text>",
            n(y + 13.0),
            escape(&row.label),
            escape(&row.title)
        );
        for g in &row.gaps {
            let (gx0, gx1) = (x(g.from), x(g.to));
            let wait = human((g.to - g.from).saturating_mul(1_000_000));
            let rough = human(rounded(g.to - g.from).saturating_mul(1_000_000));
            let _ = write!(
                out,
                "<g class=\"gap\"><line x1=\"{}\" y1=\"{my}\" x2=\"{}\" y2=\"{my}\"/>",
                n(gx0),
                n(gx1),
                my = n(y + ROW / 2.0)
            );
            if gx1 - gx0 >= rough.len() as f64 * 5.0 + 4.0 {
                let _ = write!(
                    out,
                    "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>",
                    n((gx0 + gx1) / 2.0),
                    n(y + ROW / 2.0 - 2.0),
                    escape(&rough)
                );
            }
            let _ = write!(
                out,
                "<title>{} {wait} ({} to {})</title></g>",
                g.what,
                offset(g.from),
                offset(g.to)
            );
        }
        for b in &row.bars {
            let (bx0, bx1) = (x(b.from), x(b.to));
            let w = (bx1 - bx0).max(1.5);
            let open = if b.open { " open" } else { "" };
            let _ = write!(
                out,
                "<g><rect class=\"bar {c}{open}\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"/>",
                n(bx0),
                n(y + (ROW - BAR) / 2.0),
                n(w),
                n(BAR),
                c = b.outcome.class(),
            );
            if let Some(started) = b.started {
                let _ = write!(
                    out,
                    "<rect class=\"pend\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"/>",
                    n(bx0),
                    n(y + (ROW - BAR) / 2.0),
                    n((x(started) - bx0).clamp(0.0, w)),
                    n(BAR)
                );
            }
            let _ = write!(out, "<title>{}</title></g>", escape(&bar_title(b)));
        }
        if row.more_bars > 0 {
            let last = row.bars.last().map(|b| x(b.to)).unwrap_or(LEFT);
            let _ = write!(
                out,
                "<text class=\"more\" x=\"{}\" y=\"{}\">+{} more attempts</text>",
                n((last + 4.0).min(WIDTH - RIGHT - 90.0)),
                n(y + 13.0),
                row.more_bars
            );
        }
        out.push_str("</g>");
        y += ROW;
    }
    if chart.more_rows > 0 {
        let _ = write!(
            out,
            "<text class=\"more\" x=\"8\" y=\"{}\">{} more {} not drawn ({} of them a single successful attempt); \
             the JSON output (-o json) lists every attempt</text>",
            n(y + 13.0),
            chart.more_rows,
            if chart.row_kind == "index" {
                "indexes"
            } else {
                "pods"
            },
            chart.more_rows_plain
        );
        y += ROW;
    }

    if chart.more_marks > 0 {
        let _ = write!(
            out,
            "<text class=\"more\" x=\"8\" y=\"{}\">{} more condition changes not marked</text>",
            n(y + 13.0),
            chart.more_marks
        );
        y += ROW;
    }
    // Condition marks last, over the bars.
    for (m, mx, lane, end_anchored) in placed {
        let (tx, anchor) = if end_anchored {
            (mx - 2.0, " text-anchor=\"end\"")
        } else {
            (mx + 2.0, "")
        };
        let _ = write!(
            out,
            "<g class=\"mark c-{}\"><line x1=\"{a}\" y1=\"{}\" x2=\"{a}\" y2=\"{}\"/>\
             <text x=\"{}\" y=\"{}\"{anchor}>{}</text><title>{}</title></g>",
            escape(&m.kind),
            n(label_top + lane as f64 * LANE + 12.0),
            n(rows_top + rows_h),
            n(tx),
            n(label_top + lane as f64 * LANE + 10.0),
            escape(&m.label),
            escape(&m.title),
            a = n(mx),
        );
    }
    out.push_str("</g>");
    y
}

/// A wait for a label: to the second from ten seconds on (the hover text is exact).
fn rounded(ms: i64) -> i64 {
    if ms >= 10_000 {
        (ms + 500) / 1000 * 1000
    } else {
        ms
    }
}

/// The hover text of a bar: the pod, its attempt, when, how it ended and why.
fn bar_title(b: &layout::Bar) -> String {
    let a = b.attempt;
    let mut text = a.pod.clone();
    match a.index {
        Some(i) => text += &format!(" (index {i}, attempt {})", a.attempt),
        None => text += &format!(" (attempt {})", a.attempt),
    }
    text += &format!(": {}", b.outcome.label());
    text += &format!("; from {}", offset(b.from));
    if let Some(s) = a.started_ms {
        text += &format!(", started {}", offset(s));
    }
    match a.ended_ms {
        Some(e) => text += &format!(", ended {}", offset(e)),
        None => text += ", not ended",
    }
    if !a.why.is_empty() {
        text += &format!("; {}", a.why);
    }
    if let Some(p) = &a.policy {
        text += &format!("; {p}");
    }
    text
}
