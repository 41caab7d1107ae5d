//! A broken validation rule as the Kubernetes API reports it (a field path, a
//! kind, the offending value, an explanation), and the one bound on how much of
//! it any message, error detail or log line repeats.

use std::fmt;

use crate::go_text::go_quote;

/// The kind of a validation error, as the Kubernetes API names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ViolationKind {
    /// A required field is missing.
    Required,
    /// A value is malformed or out of range.
    Invalid,
    /// A value is not one of the supported values.
    NotSupported,
    /// A list has too many items.
    TooMany,
    /// A value is too long.
    TooLong,
    /// A value is repeated.
    Duplicate,
    /// A field may not be set in this context.
    Forbidden,
}

impl ViolationKind {
    /// The machine-readable reason, e.g. `FieldValueRequired`.
    pub fn reason(self) -> &'static str {
        match self {
            ViolationKind::Required => "FieldValueRequired",
            ViolationKind::Invalid => "FieldValueInvalid",
            ViolationKind::NotSupported => "FieldValueNotSupported",
            ViolationKind::TooMany => "FieldValueTooMany",
            ViolationKind::TooLong => "FieldValueTooLong",
            ViolationKind::Duplicate => "FieldValueDuplicate",
            ViolationKind::Forbidden => "FieldValueForbidden",
        }
    }

    /// The phrase upstream puts in its messages, e.g. `Required value`.
    pub fn phrase(self) -> &'static str {
        match self {
            ViolationKind::Required => "Required value",
            ViolationKind::Invalid => "Invalid value",
            ViolationKind::NotSupported => "Unsupported value",
            ViolationKind::TooMany => "Too many",
            ViolationKind::TooLong => "Too long",
            ViolationKind::Duplicate => "Duplicate value",
            ViolationKind::Forbidden => "Forbidden",
        }
    }
}

/// Whether a decision may go ahead despite a violation.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Severity {
    /// The API server rejects it, and so does DecideJob.
    #[default]
    Rejected,
    /// The API server rejects it today, but upstream's sync handles it on purpose,
    /// for Jobs a newer API server wrote (version skew): an unknown completion mode,
    /// pod failure policy action or exit-code operator. DecideJob decides such a
    /// Job as upstream does; ValidateJob still reports it.
    ToleratedAtSync,
}

/// One broken validation rule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    /// Path of the offending field, e.g. `spec.podFailurePolicy.rules[0].action`.
    pub field: String,
    /// What kind of error.
    pub kind: ViolationKind,
    /// The offending value as upstream prints it (quoted strings, bare numbers), when it names one.
    pub value: Option<String>,
    /// The explanation, e.g. `must be greater than or equal to 0`.
    pub detail: String,
    /// Whether DecideJob may decide despite it (set by the rule that found it).
    pub severity: Severity,
}

impl Violation {
    /// The same violation, marked as one upstream's sync tolerates (see [`Severity`]).
    pub fn tolerated_at_sync(self) -> Self {
        Violation {
            severity: Severity::ToleratedAtSync,
            ..self
        }
    }

    /// The same violation with its field path under `parent` (`spec.backoffLimit` under
    /// `job` is `job.spec.backoffLimit`): a service error names the field in the request,
    /// while the rules name it in the object they check.
    pub fn under(self, parent: &str) -> Self {
        Violation {
            field: format!("{parent}.{}", self.field),
            ..self
        }
    }

    /// The full message, as upstream formats a field error, with each part bounded
    /// (see [`fmt::Display`] for [`Violation`]).
    pub fn description(&self) -> String {
        self.to_string()
    }
}

/// Longest field path or offending value a violation prints, in bytes: a request may carry a
/// value of megabytes, and neither a log line nor an error trailer may repeat it.
pub const MAX_VIOLATION_VALUE_BYTES: usize = 256;
/// Longest explanation a violation prints, in bytes: ours are shorter, but some quote input.
pub const MAX_VIOLATION_DETAIL_BYTES: usize = 1024;

pub use crate::text::truncated;

impl fmt::Display for Violation {
    /// `field: Phrase: value: detail`, as upstream prints a field error, with the field and
    /// value cut at [`MAX_VIOLATION_VALUE_BYTES`] and the detail at
    /// [`MAX_VIOLATION_DETAIL_BYTES`], so a huge input never reaches a log line whole.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: {}",
            truncated(&self.field, MAX_VIOLATION_VALUE_BYTES),
            self.kind.phrase()
        )?;
        if let Some(value) = &self.value {
            write!(f, ": {}", truncated(value, MAX_VIOLATION_VALUE_BYTES))?;
        }
        if !self.detail.is_empty() {
            write!(
                f,
                ": {}",
                truncated(&self.detail, MAX_VIOLATION_DETAIL_BYTES)
            )?;
        }
        Ok(())
    }
}

// Constructors in the shape of apimachinery's field errors.

pub(crate) fn required(field: impl Into<String>, detail: impl Into<String>) -> Violation {
    Violation {
        severity: Severity::Rejected,
        field: field.into(),
        kind: ViolationKind::Required,
        value: None,
        detail: detail.into(),
    }
}

pub(crate) fn invalid(
    field: impl Into<String>,
    value: String,
    detail: impl Into<String>,
) -> Violation {
    Violation {
        severity: Severity::Rejected,
        field: field.into(),
        kind: ViolationKind::Invalid,
        value: Some(value),
        detail: detail.into(),
    }
}

/// An Invalid error about a whole object, where upstream omits the value.
pub(crate) fn invalid_omit_value(field: impl Into<String>, detail: impl Into<String>) -> Violation {
    Violation {
        severity: Severity::Rejected,
        field: field.into(),
        kind: ViolationKind::Invalid,
        value: None,
        detail: detail.into(),
    }
}

pub(crate) fn not_supported(
    field: impl Into<String>,
    value: String,
    supported: &[&str],
) -> Violation {
    let quoted: Vec<String> = supported.iter().map(|s| go_quote(s)).collect();
    Violation {
        severity: Severity::Rejected,
        field: field.into(),
        kind: ViolationKind::NotSupported,
        value: Some(value),
        detail: format!("supported values: {}", quoted.join(", ")),
    }
}

pub(crate) fn too_many(field: impl Into<String>, actual: usize, max: usize) -> Violation {
    let noun = if max == 1 { "item" } else { "items" };
    Violation {
        severity: Severity::Rejected,
        field: field.into(),
        kind: ViolationKind::TooMany,
        value: Some(actual.to_string()),
        detail: format!("must have at most {max} {noun}"),
    }
}

pub(crate) fn too_long(field: impl Into<String>, max: usize) -> Violation {
    let noun = if max == 1 { "byte" } else { "bytes" };
    Violation {
        severity: Severity::Rejected,
        field: field.into(),
        kind: ViolationKind::TooLong,
        value: None,
        detail: format!("may not be more than {max} {noun}"),
    }
}

pub(crate) fn duplicate(field: impl Into<String>, value: String) -> Violation {
    Violation {
        severity: Severity::Rejected,
        field: field.into(),
        kind: ViolationKind::Duplicate,
        value: Some(value),
        detail: String::new(),
    }
}
