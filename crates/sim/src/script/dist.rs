//! Distributions of time in a script: a run time, a start delay or an event's time
//! is a fixed duration (`40m`) or drawn per attempt (per life, for an event) from
//! one of a few distributions people can write:
//!
//! ```yaml
//! runTime: 40m                                   # fixed
//! runTime: {uniform: [30m, 50m]}                 # every time in the range as likely
//! runTime: {exponential: {mean: 10m}}            # memoryless, e.g. the time to a node failure
//! runTime: {logNormal: {median: 40m, sigma: 0.3}} # skewed to the right, as run times are
//! ```

use std::fmt;

use serde::Deserialize;
use serde::de::{self, Deserializer, MapAccess, Visitor};

use super::ScriptError;
use crate::duration::Span;

/// A duration, fixed or drawn from a distribution.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Dist {
    /// Always this long.
    Fixed(Span),
    /// Uniform between the two (inclusive of the first).
    Uniform(Span, Span),
    /// Exponential with this mean.
    Exponential {
        /// The mean.
        mean: Span,
    },
    /// Log-normal: the logarithm is normal with `ln(median)` and `sigma`.
    LogNormal {
        /// The median (half the draws are shorter).
        median: Span,
        /// The standard deviation of the logarithm (0 is always the median).
        sigma: f64,
    },
}

impl Default for Dist {
    fn default() -> Dist {
        Dist::Fixed(Span::default())
    }
}

impl From<Span> for Dist {
    fn from(s: Span) -> Dist {
        Dist::Fixed(s)
    }
}

/// The largest `sigma` a log-normal may have: e^(3·5) is a factor of three million
/// between the median and a one-in-a-thousand draw, already far past any use.
pub const MAX_SIGMA: f64 = 5.0;

/// The longest duration a draw gives (the longest a script may write: about 31 years).
const MAX_DRAW_NANOS: f64 = 1e9 * 1e9;

impl Dist {
    /// The fixed duration, if it is one.
    pub fn fixed(&self) -> Option<Span> {
        match self {
            Dist::Fixed(s) => Some(*s),
            _ => None,
        }
    }

    /// Its nominal value in nanoseconds: the fixed duration, or for a distribution
    /// its uniform low end, exponential mean or log-normal median. The world plays
    /// an event time as this: [`crate::Script::life`] draws every event's time first.
    pub fn nanos(&self) -> i64 {
        match self {
            Dist::Fixed(s) | Dist::Uniform(s, _) => s.nanos(),
            Dist::Exponential { mean } => mean.nanos(),
            Dist::LogNormal { median, .. } => median.nanos(),
        }
    }

    /// The mean of the distribution, in nanoseconds (for people and tests).
    pub fn mean_nanos(&self) -> f64 {
        #[allow(clippy::cast_precision_loss)]
        match self {
            Dist::Fixed(s) => s.nanos() as f64,
            Dist::Uniform(a, b) => (a.nanos() as f64 + b.nanos() as f64) / 2.0,
            Dist::Exponential { mean } => mean.nanos() as f64,
            Dist::LogNormal { median, sigma } => {
                median.nanos() as f64 * (sigma * sigma / 2.0).exp()
            }
        }
    }

    /// A draw, given two independent uniform numbers in [0, 1) (the second is used
    /// only by the log-normal): whole milliseconds, from 0 to about 31 years.
    pub fn sample(&self, u1: f64, u2: f64) -> Span {
        #[allow(clippy::cast_precision_loss)]
        let nanos = match self {
            Dist::Fixed(s) => return *s,
            Dist::Uniform(a, b) => a.nanos() as f64 + u1 * (b.nanos() as f64 - a.nanos() as f64),
            // 1 - u is in (0, 1]: its logarithm is finite.
            Dist::Exponential { mean } => -(mean.nanos() as f64) * (1.0 - u1).ln(),
            Dist::LogNormal { median, sigma } => {
                // Box-Muller: a standard normal from the two uniforms.
                let z = (-2.0 * (1.0 - u1).ln()).sqrt() * (std::f64::consts::TAU * u2).cos();
                median.nanos() as f64 * (sigma * z).exp()
            }
        };
        let nanos = if nanos.is_finite() {
            nanos.clamp(0.0, MAX_DRAW_NANOS)
        } else {
            MAX_DRAW_NANOS
        };
        #[allow(clippy::cast_possible_truncation)]
        let millis = (nanos / 1e6).round() as i64;
        Span(millis.saturating_mul(1_000_000))
    }

    /// What is wrong with it, naming `path` (the field's) and the part.
    pub fn errors(&self, path: &str, errors: &mut Vec<ScriptError>) {
        match self {
            Dist::Fixed(_) => {}
            Dist::Uniform(a, b) => {
                if a > b {
                    errors.push(ScriptError::at(
                        format!("{path}.uniform"),
                        format!("the range {a} to {b} is backwards: give [low, high]"),
                    ));
                }
            }
            Dist::Exponential { mean } => {
                if mean.nanos() <= 0 {
                    errors.push(ScriptError::at(
                        format!("{path}.exponential.mean"),
                        "must be more than 0s (a fixed 0s is `0s`)",
                    ));
                }
            }
            Dist::LogNormal { median, sigma } => {
                if median.nanos() <= 0 {
                    errors.push(ScriptError::at(
                        format!("{path}.logNormal.median"),
                        "must be more than 0s (a log-normal is never 0)",
                    ));
                }
                if !sigma.is_finite() || !(0.0..=MAX_SIGMA).contains(sigma) {
                    errors.push(ScriptError::at(
                        format!("{path}.logNormal.sigma"),
                        format!("{sigma} is not between 0 and {MAX_SIGMA}"),
                    ));
                }
            }
        }
    }
}

impl fmt::Display for Dist {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Dist::Fixed(s) => write!(f, "{s}"),
            Dist::Uniform(a, b) => write!(f, "uniform {a} to {b}"),
            Dist::Exponential { mean } => write!(f, "exponential (mean {mean})"),
            Dist::LogNormal { median, sigma } => {
                write!(f, "log-normal (median {median}, sigma {sigma})")
            }
        }
    }
}

/// `{mean: 10m}`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ExponentialParams {
    mean: Span,
}

/// `{median: 40m, sigma: 0.3}`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct LogNormalParams {
    median: Span,
    sigma: f64,
}

const KINDS: &[&str] = &["uniform", "exponential", "logNormal"];

impl<'de> Deserialize<'de> for Dist {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Dist, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Dist;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(
                    "a duration such as 90s, or {uniform: [30m, 50m]}, {exponential: {mean: 10m}} or {logNormal: {median: 40m, sigma: 0.3}}",
                )
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Dist, E> {
                Span::deserialize(de::value::U64Deserializer::<E>::new(v)).map(Dist::Fixed)
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Dist, E> {
                Span::deserialize(de::value::I64Deserializer::<E>::new(v)).map(Dist::Fixed)
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Dist, E> {
                crate::duration::parse_span(&v.to_string())
                    .map(Dist::Fixed)
                    .map_err(E::custom)
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Dist, E> {
                crate::duration::parse_span(v)
                    .map(Dist::Fixed)
                    .map_err(E::custom)
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Dist, A::Error> {
                let Some(kind) = map.next_key::<String>()? else {
                    return Err(de::Error::custom(
                        "give one distribution: uniform, exponential or logNormal",
                    ));
                };
                let dist = match kind.as_str() {
                    "uniform" => {
                        let [a, b]: [Span; 2] = map.next_value()?;
                        Dist::Uniform(a, b)
                    }
                    "exponential" => {
                        let p: ExponentialParams = map.next_value()?;
                        Dist::Exponential { mean: p.mean }
                    }
                    "logNormal" => {
                        let p: LogNormalParams = map.next_value()?;
                        Dist::LogNormal {
                            median: p.median,
                            sigma: p.sigma,
                        }
                    }
                    other => return Err(de::Error::unknown_field(other, KINDS)),
                };
                if map.next_key::<String>()?.is_some() {
                    return Err(de::Error::custom(
                        "give one distribution: uniform, exponential or logNormal, not several",
                    ));
                }
                Ok(dist)
            }
        }
        d.deserialize_any(V)
    }
}

/// A uniform number in [0, 1) for the parts given (splitmix64 over them): the
/// draws of lives and of events, which the attempts' draws do not share.
pub fn unit(parts: &[u64]) -> f64 {
    #[allow(clippy::cast_precision_loss)]
    let unit = (mix(parts) >> 11) as f64 / (1u64 << 53) as f64;
    unit
}

/// splitmix64 folded over the parts.
pub fn mix(parts: &[u64]) -> u64 {
    let mut x: u64 = 0x243F_6A88_85A3_08D3;
    for &p in parts {
        x ^= p;
        x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = x;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        x = z ^ (z >> 31);
    }
    x
}
