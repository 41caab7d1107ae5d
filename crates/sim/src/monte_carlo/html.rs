//! The Monte Carlo report as one self-contained HTML page: the report's lines
//! (both Jobs' side by side for a compare), then histograms and cumulative
//! distributions of the time to finish, pods created and pod-hours burned, as
//! inline SVG (no scripts, no external resources).

use std::fmt::Write as _;

use super::{Life, Report};
use crate::render::escape;

/// Bars of a histogram.
const BINS: usize = 30;
/// A chart's size and margins, px.
const WIDTH: f64 = 560.0;
const HEIGHT: f64 = 220.0;
const LEFT: f64 = 56.0;
const BOTTOM: f64 = 36.0;
const TOP: f64 = 12.0;
const RIGHT: f64 = 12.0;
/// The two Jobs' colours (the left Job's, the right's).
const COLOURS: [&str; 2] = ["#3b6fb6", "#d9822b"];

/// One series of a chart: a Job's name and its lives' values.
type Series<'a> = (&'a str, Vec<f64>);

/// The report of one Job's lives.
pub fn html(report: &Report, lives: &[Life]) -> String {
    let mut body = format!(
        "<h1>Monte Carlo: <code>{}</code></h1><p class=\"note\">{} lives, seed {}; life i plays the script with a seed drawn from the seed and i (<code>--replay i</code> plays one).</p>",
        escape(&report.job),
        report.runs,
        report.seed
    );
    body.push_str("<section id=\"report\"><h2>Report</h2><table class=\"summary\">");
    for (k, v) in report.lines() {
        let _ = write!(
            body,
            "<tr><th>{}</th><td>{}</td></tr>",
            escape(&k),
            escape(&v)
        );
    }
    body.push_str("</table></section>");
    charts(&mut body, &[(report.job.as_str(), lives)]);
    page(&format!("Monte Carlo of {}", report.job), &body)
}

/// Two Jobs' reports over the same lives: the lines side by side (differing
/// ones marked), and each chart with both Jobs.
pub fn compare_html(
    left_name: &str,
    left: (&Report, &[Life]),
    right_name: &str,
    right: (&Report, &[Life]),
) -> String {
    let mut body = format!(
        "<h1>Monte Carlo: <code>{}</code> vs <code>{}</code></h1><p class=\"note\">{} lives of each Job, seed {}: the same lives, so each attempt fails and runs alike under both.</p>",
        escape(left_name),
        escape(right_name),
        left.0.runs,
        left.0.seed
    );
    let _ = write!(
        body,
        "<section id=\"report\"><h2>Report</h2><table class=\"summary\"><tr><th></th><th>{}</th><th>{}</th></tr>",
        escape(left_name),
        escape(right_name)
    );
    for (k, a, b) in super::compare_rows(left.0, right.0) {
        let class = if a == b { "" } else { " class=\"differs\"" };
        let _ = write!(
            body,
            "<tr{class}><th>{}</th><td>{}</td><td>{}</td></tr>",
            escape(&k),
            escape(&a),
            escape(&b)
        );
    }
    body.push_str("</table></section>");
    charts(&mut body, &[(left_name, left.1), (right_name, right.1)]);
    page(&format!("Monte Carlo: {left_name} vs {right_name}"), &body)
}

/// The charts of each quantity, every Job in each.
fn charts(body: &mut String, jobs: &[(&str, &[Life])]) {
    #[allow(clippy::cast_precision_loss)]
    let minutes = |l: &Life| l.wall_time_ms as f64 / 60_000.0;
    let series = |f: &dyn Fn(&Life) -> Option<f64>| -> Vec<Series<'_>> {
        jobs.iter()
            .map(|(name, lives)| (*name, lives.iter().filter_map(f).collect()))
            .collect()
    };
    let quantities: [(&str, &str, Vec<Series<'_>>); 4] = [
        (
            "time-to-finish",
            "Time to finish, minutes (lives that finished)",
            series(&|l| l.finished().then(|| minutes(l))),
        ),
        (
            "pods-created",
            "Pods created",
            series(&|l| Some(f64::from(l.pods_created))),
        ),
        (
            "pod-hours",
            "Pod-hours",
            series(&|l| Some(l.pod_hours.total())),
        ),
        (
            "pod-hours-burned",
            "Pod-hours burned (pods that failed or were deleted)",
            series(&|l| Some(l.pod_hours.burned)),
        ),
    ];
    for (id, title, s) in &quantities {
        let _ = write!(
            body,
            "<section id=\"{id}\"><h2>{}</h2>{}{}{}</section>",
            escape(title),
            legend(s),
            histogram(title, s),
            cdf(title, s)
        );
    }
}

fn legend(series: &[Series<'_>]) -> String {
    if series.len() < 2 {
        return String::new();
    }
    let mut out = String::from("<p class=\"legend\">");
    for (i, (name, values)) in series.iter().enumerate() {
        let _ = write!(
            out,
            "<span style=\"color:{}\">&#9632;</span> {} ({} lives) ",
            COLOURS[i % 2],
            escape(name),
            values.len()
        );
    }
    out.push_str("</p>");
    out
}

/// The least and greatest value of every series (a zero-width range widened).
fn range(series: &[Series<'_>]) -> Option<(f64, f64)> {
    let all = series.iter().flat_map(|(_, v)| v.iter().copied());
    let lo = all.clone().fold(f64::INFINITY, f64::min);
    let hi = all.fold(f64::NEG_INFINITY, f64::max);
    if !lo.is_finite() || !hi.is_finite() {
        return None;
    }
    Some(if hi > lo {
        (lo, hi)
    } else {
        (lo - 0.5, hi + 0.5)
    })
}

fn x_of(v: f64, (lo, hi): (f64, f64)) -> f64 {
    LEFT + (v - lo) / (hi - lo) * (WIDTH - LEFT - RIGHT)
}

fn y_of(share: f64) -> f64 {
    HEIGHT - BOTTOM - share * (HEIGHT - BOTTOM - TOP)
}

/// The axes, the range's ends and middle under the x axis, and `top` at the y axis's top.
fn axes(out: &mut String, (lo, hi): (f64, f64), top: &str) {
    let _ = write!(
        out,
        "<line x1=\"{LEFT}\" y1=\"{y0}\" x2=\"{x1}\" y2=\"{y0}\" stroke=\"#888\"/>\
         <line x1=\"{LEFT}\" y1=\"{TOP}\" x2=\"{LEFT}\" y2=\"{y0}\" stroke=\"#888\"/>\
         <text x=\"{lx}\" y=\"{TOP}\" text-anchor=\"end\" dominant-baseline=\"hanging\">{top}</text>\
         <text x=\"{lx}\" y=\"{y0}\" text-anchor=\"end\">0</text>",
        y0 = HEIGHT - BOTTOM,
        x1 = WIDTH - RIGHT,
        lx = LEFT - 4.0,
    );
    for v in [lo, (lo + hi) / 2.0, hi] {
        let _ = write!(
            out,
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>",
            x_of(v, (lo, hi)),
            HEIGHT - BOTTOM + 16.0,
            number(v)
        );
    }
}

/// A value for an axis: whole when it is, else two decimals.
fn number(v: f64) -> String {
    if (v - v.round()).abs() < 1e-9 {
        format!("{v:.0}")
    } else {
        format!("{v:.2}")
    }
}

fn svg_open(title: &str, kind: &str) -> String {
    format!(
        "<svg class=\"mc {kind}\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{WIDTH}\" height=\"{HEIGHT}\" viewBox=\"0 0 {WIDTH} {HEIGHT}\" role=\"img\" aria-label=\"{} ({kind})\" font-size=\"11\" font-family=\"sans-serif\">",
        escape(title)
    )
}

/// A histogram: the share of each series' lives in each of [`BINS`] bins.
fn histogram(title: &str, series: &[Series<'_>]) -> String {
    let Some((lo, hi)) = range(series) else {
        return "<p class=\"note\">No life to draw.</p>".to_string();
    };
    let mut counts = vec![[0usize; 2]; BINS];
    for (s, (_, values)) in series.iter().enumerate().take(2) {
        for v in values {
            #[allow(
                clippy::cast_precision_loss,
                clippy::cast_possible_truncation,
                clippy::cast_sign_loss
            )]
            let bin = (((v - lo) / (hi - lo)) * BINS as f64).floor() as usize;
            counts[bin.min(BINS - 1)][s] += 1;
        }
    }
    #[allow(clippy::cast_precision_loss)]
    let shares: Vec<[f64; 2]> = counts
        .iter()
        .map(|c| {
            let mut out = [0.0; 2];
            for (s, (_, values)) in series.iter().enumerate().take(2) {
                if !values.is_empty() {
                    out[s] = c[s] as f64 / values.len() as f64;
                }
            }
            out
        })
        .collect();
    let most = shares
        .iter()
        .flat_map(|s| s.iter().copied())
        .fold(0.0_f64, f64::max)
        .max(f64::MIN_POSITIVE);
    let mut out = svg_open(title, "histogram");
    axes(&mut out, (lo, hi), &format!("{:.0}%", most * 100.0));
    #[allow(clippy::cast_precision_loss)]
    let bin_width = (WIDTH - LEFT - RIGHT) / BINS as f64;
    let n = series.len().clamp(1, 2);
    #[allow(clippy::cast_precision_loss)]
    let bar = bin_width / n as f64;
    for (b, share) in shares.iter().enumerate() {
        for (s, &p) in share.iter().enumerate().take(n) {
            if p == 0.0 {
                continue;
            }
            #[allow(clippy::cast_precision_loss)]
            let x = LEFT + b as f64 * bin_width + s as f64 * bar;
            let y = y_of(p / most);
            let _ = write!(
                out,
                "<rect x=\"{x:.1}\" y=\"{y:.1}\" width=\"{:.1}\" height=\"{:.1}\" fill=\"{}\"><title>{:.1}%</title></rect>",
                (bar - 0.5).max(0.5),
                HEIGHT - BOTTOM - y,
                COLOURS[s],
                p * 100.0
            );
        }
    }
    out.push_str("</svg>");
    out
}

/// The cumulative distribution: the share of lives at or below each value (a step line).
fn cdf(title: &str, series: &[Series<'_>]) -> String {
    let Some((lo, hi)) = range(series) else {
        return String::new();
    };
    let mut out = svg_open(title, "cdf");
    axes(&mut out, (lo, hi), "100%");
    for (s, (_, values)) in series.iter().enumerate().take(2) {
        if values.is_empty() {
            continue;
        }
        let mut sorted = values.clone();
        sorted.sort_by(f64::total_cmp);
        #[allow(clippy::cast_precision_loss)]
        let n = sorted.len() as f64;
        let mut points = format!("{LEFT:.1},{:.1}", y_of(0.0));
        let mut below = 0.0;
        for (i, v) in sorted.iter().enumerate() {
            // Equal values make one step.
            if sorted.get(i + 1) == Some(v) {
                continue;
            }
            #[allow(clippy::cast_precision_loss)]
            let share = (i + 1) as f64 / n;
            let x = x_of(*v, (lo, hi));
            let _ = write!(
                points,
                " {x:.1},{:.1} {x:.1},{:.1}",
                y_of(below),
                y_of(share)
            );
            below = share;
        }
        let _ = write!(points, " {:.1},{:.1}", WIDTH - RIGHT, y_of(below));
        let _ = write!(
            out,
            "<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"1.5\" points=\"{points}\"/>",
            COLOURS[s]
        );
    }
    out.push_str("</svg>");
    out
}

fn page(title: &str, body: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>{}</title><style>{CSS}</style></head><body>{body}</body></html>\n",
        escape(title)
    )
}

const CSS: &str = "body{font:14px/1.4 sans-serif;margin:1.5em;color:#222;max-width:1260px}\
h1{font-size:1.3em}h2{font-size:1.1em;margin-top:1.4em}code{font-size:.95em}\
table.summary{border-collapse:collapse}table.summary th{text-align:left;padding:1px 12px 1px 0;font-weight:600;white-space:nowrap;vertical-align:top}\
table.summary td{padding:1px 16px 1px 0}table.summary tr.differs{background:#fff3cd}\
svg.mc{max-width:100%;height:auto;border:1px solid #ddd;margin:0 8px 8px 0}.note,.legend{color:#666;font-size:.9em}";
