//! The one way the wire crate collects field violations while it converts a
//! request: each names its JSON path, built only when something is wrong.

use pbjson_types::Timestamp;

use crate::pb;
use crate::wire_time::time_from_pb;
use job_decider_core::time::Time;
use job_decider_core::validate::{
    MAX_VIOLATION_VALUE_BYTES, Severity, Violation, ViolationKind, truncated,
};

/// Longest `description` one listed violation carries, in bytes: room for upstream's longest
/// messages (the RFC 1123 pattern, ~330 bytes) while a huge quoted value is cut.
pub const MAX_DETAIL_DESCRIPTION_BYTES: usize = 512;

/// One violation as every response and error detail lists it: the field and the
/// description bounded, whatever the request put in them.
pub(crate) fn violation_to_pb(v: &Violation) -> pb::FieldViolation {
    pb::FieldViolation {
        field: truncated(&v.field, MAX_VIOLATION_VALUE_BYTES).into_owned(),
        reason: v.kind.reason().to_string(),
        description: truncated(&v.description(), MAX_DETAIL_DESCRIPTION_BYTES).into_owned(),
    }
}

/// Collects violations; paths are built only when something is wrong.
#[derive(Default)]
pub(crate) struct Violations(Vec<Violation>);

impl Violations {
    /// Adds `later`'s violations after these.
    pub(crate) fn append(&mut self, mut later: Violations) {
        self.0.append(&mut later.0);
    }

    /// Whether nothing is wrong so far.
    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The violations collected, in order.
    pub(crate) fn into_vec(self) -> Vec<Violation> {
        self.0
    }

    /// How many violations so far.
    pub(crate) fn len(&self) -> usize {
        self.0.len()
    }

    /// The paths of the fields named so far (tests).
    #[cfg(test)]
    pub(crate) fn fields(&self) -> Vec<String> {
        self.0.iter().map(|v| v.field.clone()).collect()
    }

    /// Adds one violation of `kind` at `field`.
    pub(crate) fn push(
        &mut self,
        field: impl Into<String>,
        kind: ViolationKind,
        value: Option<String>,
        detail: impl Into<String>,
    ) {
        self.0.push(Violation {
            severity: Severity::Rejected,
            field: field.into(),
            kind,
            value,
            detail: detail.into(),
        });
    }

    pub(crate) fn required(&mut self, field: impl Into<String>, detail: &str) {
        self.push(field.into(), ViolationKind::Required, None, detail);
    }

    pub(crate) fn invalid(&mut self, field: impl Into<String>, value: impl ToString, detail: &str) {
        self.push(
            field.into(),
            ViolationKind::Invalid,
            Some(value.to_string()),
            detail,
        );
    }

    pub(crate) fn not_supported(
        &mut self,
        field: impl Into<String>,
        value: &str,
        supported: &[&str],
    ) {
        let listed: Vec<String> = supported.iter().map(|s| format!("\"{s}\"")).collect();
        self.push(
            field.into(),
            ViolationKind::NotSupported,
            Some(format!("\"{value}\"")),
            format!("supported values: {}", listed.join(", ")),
        );
    }

    /// A count that must not be negative.
    pub(crate) fn non_negative(&mut self, value: i32, field: impl FnOnce() -> String) {
        if value < 0 {
            self.invalid(field(), value, "must be greater than or equal to 0");
        }
    }

    /// A timestamp the domain can hold, or a violation.
    pub(crate) fn time(
        &mut self,
        ts: Option<&Timestamp>,
        field: impl FnOnce() -> String,
    ) -> Option<Time> {
        let ts = ts?;
        let converted = time_from_pb(ts);
        if converted.is_none() {
            self.invalid(
                field(),
                format!("{{seconds: {}, nanos: {}}}", ts.seconds, ts.nanos),
                "must be a time between the years 1678 and 2262",
            );
        }
        converted
    }

    /// The value, or every violation collected.
    pub(crate) fn into_result<T>(self, value: T) -> Result<T, Vec<Violation>> {
        if self.0.is_empty() {
            Ok(value)
        } else {
            Err(self.0)
        }
    }
}
