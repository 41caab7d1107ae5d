//! Text and its bounds, which every decision's messages and explanations share:
//! the one truncation, the capped list, durations and ordinals for people, and
//! the size limits an explanation keeps to. It names no other module of the
//! core, so anything may use it without tying a circle.

use std::fmt::Write as _;
use std::time::Duration;

/// Most entries each list of an explanation (a Job's or a JobSet's) keeps; the rest are only counted.
pub const MAX_EXPLANATION_ENTRIES: usize = 100;
/// Longest name, match or detail an explanation repeats, in bytes (they may quote the request).
pub const MAX_TEXT_BYTES: usize = 256;
/// Longest explanation summary or message, in bytes.
pub const MAX_MESSAGE_BYTES: usize = 1024;

/// `s` cut to at most `max` bytes on a UTF-8 boundary, ending in a mark that says it was cut
/// and how long it was; unchanged (borrowed) when it fits. The one truncation every error
/// message, error detail and log line of the service goes through.
pub fn truncated(s: &str, max: usize) -> std::borrow::Cow<'_, str> {
    if s.len() <= max {
        return std::borrow::Cow::Borrowed(s);
    }
    let mark = format!("…[truncated from {} bytes]", s.len());
    // With a limit shorter than the mark itself, a bare cut is all that fits.
    let (keep, mark) = match max.checked_sub(mark.len()) {
        Some(keep) => (keep, mark),
        None => (max, String::new()),
    };
    // The last char boundary at or before `keep` (index 0 always is one).
    let cut = (0..=keep.min(s.len()))
        .rev()
        .find(|&i| s.is_char_boundary(i))
        .unwrap_or(0);
    std::borrow::Cow::Owned(format!("{}{mark}", &s[..cut]))
}

/// A list kept to its first few entries, counting the ones left out, so an explanation stays
/// small however many Jobs or rules the request carries.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Capped<T> {
    /// The entries kept, in order.
    pub items: Vec<T>,
    /// How many more were offered and left out.
    pub omitted: usize,
    cap: usize,
}

impl<T> Capped<T> {
    /// An empty list that keeps at most `cap` entries.
    pub fn new(cap: usize) -> Self {
        Capped {
            items: Vec::new(),
            omitted: 0,
            cap,
        }
    }

    /// Adds the entry `make` builds, or only counts it once the list is full (so a left-out
    /// entry costs nothing to build).
    pub fn push_with(&mut self, make: impl FnOnce() -> T) {
        if self.items.len() < self.cap {
            self.items.push(make());
        } else {
            self.omitted += 1;
        }
    }
}

impl<T> Default for Capped<T> {
    fn default() -> Self {
        Capped::new(MAX_EXPLANATION_ENTRIES)
    }
}

impl<T> std::ops::Deref for Capped<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        &self.items
    }
}

/// `1st`, `2nd`, `3rd`, `4th`…
pub fn ordinal(n: i64) -> String {
    let suffix = match (n % 10, n % 100) {
        (_, 11..=13) => "th",
        (1, _) => "st",
        (2, _) => "nd",
        (3, _) => "rd",
        _ => "th",
    };
    format!("{n}{suffix}")
}

/// What a list cut to its first `shown` of `total` entries leaves unsaid:
/// ` and N more`, or nothing when none was left out.
pub fn and_more(total: usize, shown: usize) -> String {
    match total.saturating_sub(shown) {
        0 => String::new(),
        more => format!(" and {more} more"),
    }
}

/// A duration for people: `7s`, `4m10s`, `2h3m`, `3d4h`; below a second in
/// milliseconds; past a year, "more than a year" rather than a huge number.
pub fn human_duration(d: Duration) -> String {
    const YEAR: u64 = 365 * 24 * 3600;
    let secs = d.as_secs();
    if secs == 0 {
        let ms = d.as_millis();
        return if ms == 0 && !d.is_zero() {
            "<1ms".into()
        } else {
            format!("{ms}ms")
        };
    }
    if secs > YEAR {
        return "more than a year".into();
    }
    let units = [(86_400, "d"), (3600, "h"), (60, "m"), (1, "s")];
    let mut out = String::new();
    let mut shown = 0;
    let mut left = secs;
    for (size, unit) in units {
        let n = left / size;
        left %= size;
        if n > 0 || shown > 0 {
            if n > 0 {
                let _ = write!(out, "{n}{unit}");
            }
            shown += 1;
        }
        // Two units say enough: `2h3m`, not `2h3m4s`.
        if shown == 2 {
            break;
        }
    }
    out
}

#[cfg(test)]
mod tests;
