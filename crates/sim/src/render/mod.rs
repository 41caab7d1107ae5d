//! Pictures of a [`Timeline`]: an SVG Gantt chart ([`svg`], [`compare_svg`]) and a
//! self-contained HTML report embedding it ([`html`], [`compare_html`]).
//!
//! Pure functions from the timeline to a `String`, like [`Timeline::text`]: the
//! caller writes the files. Every string that comes from the input (names,
//! messages, reasons, the description) is escaped, and the output is bounded
//! whatever the Job's size: rows, bars per row and event-table lines are capped,
//! and the picture says how many it left out.

mod html;
mod layout;
mod svg;

pub use html::{compare_html, html};
pub use layout::Outcome;
pub use svg::{compare_svg, svg};

use crate::timeline::Timeline;

/// At most this many rows (indexes or pods) are drawn per chart: as many as the
/// text lists (the cap is the timeline's, so that pictures depend on it, not back).
pub const MAX_ROWS: usize = crate::timeline::MAX_TEXT_ROWS;
/// At most this many attempts are drawn in one row.
pub const MAX_BARS_PER_ROW: usize = 40;
/// At most about this many attempts are drawn per chart: with many rows, each row
/// draws fewer (`MAX_BARS / rows`, at least [`MIN_BARS_PER_ROW`]).
pub const MAX_BARS: usize = 2000;
/// Each row draws at least this many attempts, however many rows there are.
pub const MIN_BARS_PER_ROW: usize = 4;
/// At most this many events are listed in the HTML report's table.
pub const MAX_EVENT_ROWS: usize = 2000;

/// Text for XML and HTML: `& < > " '` as entities, the characters XML 1.0
/// cannot carry at all (C0 controls other than tab and newlines) as U+FFFD,
/// and DEL, C1 controls and bidi overrides written visibly as `\u{..}`
/// (`safe_text`): a character reference would still reorder the text.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            c if u32::from(c) >= 0x7f && job_decider_api::safe_text::is_unsafe(c) => {
                out.push_str(&job_decider_api::safe_text::escaped(
                    c.encode_utf8(&mut [0; 4]),
                ));
            }
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            '\t' | '\n' | '\r' => out.push(c),
            c if (c as u32) < 0x20 || c == '\u{fffe}' || c == '\u{ffff}' => out.push('\u{fffd}'),
            c => out.push(c),
        }
    }
    out
}

/// The outcome class of each of the timeline's attempts, in order (what the
/// chart colours them by).
pub fn outcomes(timeline: &Timeline) -> Vec<Outcome> {
    layout::classify(timeline)
}

#[cfg(test)]
mod tests;
