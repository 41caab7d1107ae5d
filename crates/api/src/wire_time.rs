//! Times and durations between the wire (protobuf well-known types) and the domain.

use std::time::Duration;

use pbjson_types::{Duration as PbDuration, Timestamp};

use job_decider_core::time::Time;

pub(crate) const NANOS_PER_SEC: i64 = 1_000_000_000;

/// A wire timestamp as a domain time; `None` when out of the domain's range or malformed.
pub fn time_from_pb(ts: &Timestamp) -> Option<Time> {
    if !(0..1_000_000_000).contains(&ts.nanos) {
        return None;
    }
    let nanos = ts
        .seconds
        .checked_mul(NANOS_PER_SEC)?
        .checked_add(i64::from(ts.nanos))?;
    Some(Time::from_unix_nanos(nanos))
}

/// A domain time as a wire timestamp.
pub fn time_to_pb(t: Time) -> Timestamp {
    let nanos = t.unix_nanos();
    Timestamp {
        seconds: nanos.div_euclid(NANOS_PER_SEC),
        // rem_euclid of 1e9 always fits an i32.
        nanos: i32::try_from(nanos.rem_euclid(NANOS_PER_SEC)).unwrap_or(0),
    }
}

/// A domain duration as a wire duration (saturating at i64::MAX seconds).
pub fn duration_to_pb(d: Duration) -> PbDuration {
    PbDuration {
        seconds: i64::try_from(d.as_secs()).unwrap_or(i64::MAX),
        // subsec_nanos is below 1e9.
        nanos: i32::try_from(d.subsec_nanos()).unwrap_or(0),
    }
}
