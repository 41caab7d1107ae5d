//! Points in time, without a clock: every `Time` comes from the snapshot.

use std::fmt;
use std::time::Duration;

/// A point in time, in nanoseconds since the Unix epoch (UTC).
///
/// The range (years 1678 to 2262) covers every timestamp Kubernetes writes; the
/// API boundary rejects anything outside it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Time(i64);

impl Time {
    /// The time `nanos` nanoseconds after the epoch.
    pub const fn from_unix_nanos(nanos: i64) -> Self {
        Time(nanos)
    }

    /// The time `secs` whole seconds after the epoch, or `None` outside the range.
    pub fn from_unix_secs(secs: i64) -> Option<Self> {
        secs.checked_mul(1_000_000_000).map(Time)
    }

    /// Nanoseconds since the epoch.
    pub const fn unix_nanos(self) -> i64 {
        self.0
    }

    /// `self - earlier`, or zero when `earlier` is later.
    pub fn saturating_since(self, earlier: Time) -> Duration {
        let diff = self.0.saturating_sub(earlier.0);
        Duration::from_nanos(u64::try_from(diff).unwrap_or(0))
    }

    /// `self - earlier` as signed nanoseconds (negative when `earlier` is later).
    pub fn signed_nanos_since(self, earlier: Time) -> i128 {
        i128::from(self.0) - i128::from(earlier.0)
    }

    /// This time moved by `d`, saturating at the ends of the range.
    pub fn saturating_add(self, d: Duration) -> Time {
        let nanos = i64::try_from(d.as_nanos()).unwrap_or(i64::MAX);
        Time(self.0.saturating_add(nanos))
    }

    /// This time moved back by `secs` seconds, saturating at the ends of the range.
    pub fn saturating_sub_secs(self, secs: i64) -> Time {
        Time(self.0.saturating_sub(secs.saturating_mul(1_000_000_000)))
    }
}

impl fmt::Display for Time {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let secs = self.0.div_euclid(1_000_000_000);
        let nanos = self.0.rem_euclid(1_000_000_000);
        write!(f, "{secs}.{nanos:09}")
    }
}

/// Whole seconds as a duration, a negative count as none: the document's and
/// the API's second counts, which validation keeps non-negative.
pub fn secs(seconds: i64) -> Duration {
    Duration::from_secs(u64::try_from(seconds).unwrap_or(0))
}
