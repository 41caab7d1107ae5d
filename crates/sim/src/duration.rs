//! Durations as people write them in scripts (`90s`, `5m`, `1h30m`, `250ms`)
//! and as the timeline prints them (`+1m05s`), and instants as RFC 3339.

use std::fmt;

use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize, Serializer};

/// Nanoseconds in a second.
pub const SECOND: i64 = 1_000_000_000;

/// A non-negative span of virtual time, in nanoseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Span(pub i64);

impl Span {
    /// `n` whole seconds.
    pub const fn secs(n: i64) -> Span {
        Span(n * SECOND)
    }

    /// Nanoseconds.
    pub const fn nanos(self) -> i64 {
        self.0
    }
}

impl fmt::Display for Span {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&human(self.0))
    }
}

impl Serialize for Span {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&human(self.0))
    }
}

impl<'de> Deserialize<'de> for Span {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Span, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Span;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a duration such as 90s, 5m, 1h30m or 250ms (a bare number is seconds)")
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Span, E> {
                i64::try_from(v)
                    .ok()
                    .filter(|s| *s <= MAX_SECONDS)
                    .map(|s| Span(s * SECOND))
                    .ok_or_else(|| E::custom(format!("{v} seconds is too long")))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Span, E> {
                if v < 0 {
                    return Err(E::custom(format!("{v}: a duration cannot be negative")));
                }
                self.visit_u64(v.unsigned_abs())
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Span, E> {
                parse_span(v).map_err(E::custom)
            }
        }
        d.deserialize_any(V)
    }
}

/// Parses `1h30m`, `90s`, `250ms`, `2m5s`, `1.5s`; a bare number is seconds.
pub fn parse_span(text: &str) -> Result<Span, String> {
    let bad = || format!("{text:?} is not a duration such as 90s, 5m, 1h30m or 250ms");
    let t = text.trim();
    if t.is_empty() {
        return Err(bad());
    }
    if let Ok(secs) = t.parse::<f64>() {
        return from_secs_f64(secs).ok_or_else(bad);
    }
    let mut total: i64 = 0;
    let mut rest = t;
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .ok_or_else(bad)?;
        if digits == 0 {
            return Err(bad());
        }
        let (number, tail) = rest.split_at(digits);
        let unit_len = tail
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(tail.len());
        let (unit, next) = tail.split_at(unit_len);
        let value: f64 = number.parse().map_err(|_| bad())?;
        let scale = match unit {
            "ms" => 0.001,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            _ => {
                return Err(format!(
                    "{text:?}: unknown unit {unit:?} (use ms, s, m or h)"
                ));
            }
        };
        let part = from_secs_f64(value * scale).ok_or_else(bad)?;
        total = total.checked_add(part.0).ok_or_else(bad)?;
        rest = next;
    }
    if total > MAX_SECONDS * SECOND {
        return Err(format!("{text:?} is longer than {MAX_SECONDS} seconds"));
    }
    Ok(Span(total))
}

/// The longest span a script may give: about 31 years, far past any horizon.
const MAX_SECONDS: i64 = 1_000_000_000;

fn from_secs_f64(secs: f64) -> Option<Span> {
    #[allow(clippy::cast_precision_loss)]
    let most = MAX_SECONDS as f64;
    if !secs.is_finite() || !(0.0..=most).contains(&secs) {
        return None;
    }
    // Whole milliseconds: scripts never need finer, and the float stays exact.
    #[allow(clippy::cast_possible_truncation)]
    let millis = (secs * 1000.0).round() as i64;
    Some(Span(millis * 1_000_000))
}

/// `1h02m05s`, `5m`, `42s`, `1.250s`, `0s`: the shortest exact form, to the millisecond.
pub fn human(nanos: i64) -> String {
    let sign = if nanos < 0 { "-" } else { "" };
    let n = nanos.unsigned_abs();
    let millis_total = n / 1_000_000;
    let sub_ms = n % 1_000_000;
    let secs_total = millis_total / 1000;
    let millis = millis_total % 1000;
    let (h, m, s) = (secs_total / 3600, (secs_total / 60) % 60, secs_total % 60);
    let mut out = String::from(sign);
    let frac = if millis != 0 || sub_ms != 0 {
        if sub_ms != 0 {
            format!(".{:06}", millis * 1000 + sub_ms / 1000)
        } else {
            format!(".{millis:03}")
        }
    } else {
        String::new()
    };
    if h > 0 {
        out += &format!("{h}h{m:02}m");
        if s != 0 || !frac.is_empty() {
            out += &format!("{s:02}{frac}s");
        }
    } else if m > 0 {
        out += &format!("{m}m");
        if s != 0 || !frac.is_empty() {
            out += &format!("{s:02}{frac}s");
        }
    } else {
        out += &format!("{s}{frac}s");
    }
    out
}

/// An instant in RFC 3339 (UTC), with the fraction only when there is one.
pub fn rfc3339(unix_nanos: i64) -> String {
    let secs = unix_nanos.div_euclid(SECOND);
    let nanos = unix_nanos.rem_euclid(SECOND);
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    let (y, mo, d) = civil_from_days(days);
    let frac = if nanos == 0 {
        String::new()
    } else if nanos % 1_000_000 == 0 {
        format!(".{:03}", nanos / 1_000_000)
    } else {
        format!(".{nanos:09}")
    };
    format!(
        "{y:04}-{mo:02}-{d:02}T{:02}:{:02}:{:02}{frac}Z",
        rem / 3600,
        (rem / 60) % 60,
        rem % 60
    )
}

/// The clock time of an instant (`10:01:05`), for compact text.
pub fn clock(unix_nanos: i64) -> String {
    let full = rfc3339(unix_nanos);
    full.get(11..full.len() - 1).unwrap_or(&full).to_string()
}

/// Days since 1970-01-01 to (year, month, day) in the proleptic Gregorian calendar.
fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (if m <= 2 { y + 1 } else { y }, m, d)
}

#[cfg(test)]
mod tests;
