//! The one place where errors become gRPC statuses.
//!
//! Every failure the service can answer with is an [`ApiError`]; its
//! `From<ApiError> for tonic::Status` picks the code and attaches the
//! google.rpc details (AIP-193: a `BadRequest` with field violations for bad
//! input, and an `ErrorInfo` with a stable reason on every error).

use std::collections::HashMap;
use std::time::Duration;

use tonic::Code;
use tonic_types::{ErrorDetails, FieldViolation, StatusExt};

use crate::violations::violation_to_pb;
use job_decider_core::validate::{Violation, truncated};

/// The `ErrorInfo.domain` of every error this service returns.
pub const ERROR_DOMAIN: &str = "jobdecider.dev";

/// The trailer (gRPC A6) that tells a retrying gRPC client how many milliseconds to wait;
/// grpc-core and grpc-go honour it under a service-config retry policy.
pub const RETRY_PUSHBACK_TRAILER: &str = "grpc-retry-pushback-ms";

/// Why a request was not answered with a plan.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// The request cannot be decided: each violation names the offending field.
    #[error("{}", summary(what, violations))]
    BadRequest {
        /// What is wrong, in a few words, e.g. "job is invalid".
        what: &'static str,
        /// Stable machine-readable reason, e.g. `INVALID_SNAPSHOT` or `INVALID_JOB`.
        reason: &'static str,
        /// The offending fields.
        violations: Vec<Violation>,
    },
    /// The request is larger than the server accepts.
    #[error("request too large: {detail}")]
    TooLarge {
        /// What the transport reported (the size and the limit).
        detail: String,
    },
    /// Every decision slot is busy; the request was shed without queueing.
    #[error("server overloaded: {in_flight} requests in flight, try again")]
    Overloaded {
        /// The concurrency limit that was reached.
        in_flight: usize,
        /// How long the caller should wait before trying again, sent as
        /// `google.rpc.RetryInfo` and as the `grpc-retry-pushback-ms` trailer. The
        /// server shell picks it (with jitter): this crate holds no clock or randomness.
        retry_after: Duration,
    },
    /// The server is shutting down and takes no new calls.
    #[error("server is shutting down")]
    ShuttingDown,
    /// The decision did not finish within the server's per-request timeout.
    #[error("decision did not finish within {0:?}")]
    Timeout(Duration),
    /// A bug or a failure of the server itself, never of the input.
    #[error("internal error: {0}")]
    Internal(String),
    /// The request body is not a protobuf message of the RPC's request type
    /// (garbage, a truncated body, a version-skewed client): the caller's fault.
    #[error("request body is not a valid {request_type}: {detail}")]
    Undecodable {
        /// The RPC's request message, e.g. `DecideJobRequest`.
        request_type: &'static str,
        /// What the decoder reported.
        detail: String,
    },
    /// The request body did not arrive in full within the body read timeout.
    #[error("request body not received within {0:?}; the client sent it too slowly or stalled")]
    BodyTimeout(Duration),
    /// The request body ended in a transport error (the client reset the call).
    #[error("request body could not be read: {0}")]
    BodyFailed(String),
    /// Taking this request's bytes would pass the server's budget of request
    /// bytes in flight; shed at once rather than queued.
    #[error(
        "server busy: this request would take request bytes in flight past the {budget}-byte budget, try again"
    )]
    ByteBudgetExhausted {
        /// The budget, in bytes.
        budget: usize,
    },
    /// The work stopped before it decided anything: its deadline passed or its
    /// client went away (the server stops work nobody waits for any more).
    #[error("the decision was stopped before it finished: its deadline passed or its caller left")]
    Cancelled,
}

impl From<job_decider_core::cancel::Cancelled> for ApiError {
    fn from(_: job_decider_core::cancel::Cancelled) -> Self {
        ApiError::Cancelled
    }
}

impl ApiError {
    /// A bad snapshot (structure the decision cannot work with).
    pub fn invalid_snapshot(violations: Vec<Violation>) -> Self {
        ApiError::BadRequest {
            what: "snapshot cannot be decided",
            reason: "INVALID_SNAPSHOT",
            violations,
        }
    }

    /// A Job that fails API validation.
    pub fn invalid_job(violations: Vec<Violation>) -> Self {
        ApiError::BadRequest {
            what: "job is invalid",
            reason: "INVALID_JOB",
            violations,
        }
    }

    /// A request missing what it must carry (other than a snapshot).
    pub fn invalid_request(violations: Vec<Violation>) -> Self {
        ApiError::BadRequest {
            what: "request is incomplete",
            reason: "INVALID_REQUEST",
            violations,
        }
    }

    /// The gRPC code this error is answered with.
    pub fn code(&self) -> Code {
        match self {
            ApiError::BadRequest { .. } => Code::InvalidArgument,
            ApiError::TooLarge { .. } => Code::ResourceExhausted,
            // UNAVAILABLE is what gRPC clients retry by default, which is right for shedding.
            ApiError::Overloaded { .. } | ApiError::ShuttingDown => Code::Unavailable,
            ApiError::Timeout(_) => Code::DeadlineExceeded,
            ApiError::Internal(_) => Code::Internal,
            ApiError::Undecodable { .. } => Code::InvalidArgument,
            ApiError::BodyTimeout(_) => Code::DeadlineExceeded,
            ApiError::BodyFailed(_) => Code::Cancelled,
            ApiError::ByteBudgetExhausted { .. } => Code::ResourceExhausted,
            ApiError::Cancelled => Code::Cancelled,
        }
    }

    /// The stable `ErrorInfo.reason`.
    pub fn reason(&self) -> &'static str {
        match self {
            ApiError::BadRequest { reason, .. } => reason,
            ApiError::TooLarge { .. } => "MESSAGE_TOO_LARGE",
            ApiError::Overloaded { .. } => "OVERLOADED",
            ApiError::ShuttingDown => "SHUTTING_DOWN",
            ApiError::Timeout(_) => "DECISION_TIMEOUT",
            ApiError::Internal(_) => "INTERNAL",
            ApiError::Undecodable { .. } => "UNDECODABLE_REQUEST",
            ApiError::BodyTimeout(_) => "REQUEST_BODY_TIMEOUT",
            ApiError::BodyFailed(_) => "REQUEST_BODY_FAILED",
            ApiError::ByteBudgetExhausted { .. } => "REQUEST_BYTES_BUDGET",
            ApiError::Cancelled => "DECISION_CANCELLED",
        }
    }

    /// Rewrites a status produced by the transport (not by this service) into
    /// the one this service promises, or `None` to leave it alone.
    ///
    /// tonic answers an oversized message with OUT_OF_RANGE; the contract says RESOURCE_EXHAUSTED.
    /// A body that does not decode is named for a generic "request message";
    /// [`ApiError::from_transport_status_for`] names the RPC's request type.
    pub fn from_transport_status(status: &tonic::Status) -> Option<ApiError> {
        Self::from_transport_status_for(status, "request message")
    }

    /// [`ApiError::from_transport_status`] for an RPC whose request message is `request_type`.
    ///
    /// tonic (following grpc's status code guide) answers a body that does not
    /// decode with INTERNAL; here that is the caller's bad input, INVALID_ARGUMENT,
    /// so INTERNAL stays for this server's own bugs.
    pub fn from_transport_status_for(
        status: &tonic::Status,
        request_type: &'static str,
    ) -> Option<ApiError> {
        let message = status.message();
        match status.code() {
            Code::OutOfRange if message.contains("decoded message length too large") => {
                Some(ApiError::TooLarge {
                    detail: message.to_string(),
                })
            }
            Code::Internal if is_decode_failure(message) => Some(ApiError::Undecodable {
                request_type,
                detail: message.to_string(),
            }),
            _ => None,
        }
    }
}

/// The messages tonic and prost give a request body that is not one well-formed message.
fn is_decode_failure(message: &str) -> bool {
    const PREFIXES: [&str; 4] = [
        // prost's DecodeError, as tonic-prost passes it on.
        "failed to decode Protobuf message",
        // A compressed-flag byte other than 0 with no grpc-encoding, or an unknown flag.
        "protocol error: received message with",
        // The body ended inside the 5-byte prefix or the message.
        "Unexpected EOF decoding stream",
        // An empty body: no message at all.
        "Missing request message",
    ];
    PREFIXES.iter().any(|p| message.starts_with(p))
}

/// Most field violations one `google.rpc.BadRequest` lists; the rest are counted, not listed.
pub const MAX_DETAIL_VIOLATIONS: usize = 100;
/// Most bytes the listed field violations may take, encoded: with the message (at most
/// [`MAX_MESSAGE_BYTES`]) and the `ErrorInfo`, the `grpc-status-details-bin` trailer stays near
/// 10 KiB after base64, well under the 16 KiB many proxies and gRPC clients allow per header.
pub const MAX_DETAIL_VIOLATION_BYTES: usize = 6 * 1024;
pub use crate::violations::MAX_DETAIL_DESCRIPTION_BYTES;
/// Longest status message (and so log line) an error prints, in bytes.
pub const MAX_MESSAGE_BYTES: usize = 1024;

/// "what: first violation (and N more)", cut at [`MAX_MESSAGE_BYTES`]; when the details
/// cannot list every violation it also says how many they leave out.
fn summary(what: &str, violations: &[Violation]) -> String {
    let head = match violations {
        [] => return what.to_string(),
        [first, ..] => format!("{what}: {first}"),
    };
    let rest = violations.len() - 1;
    let omitted = violations.len() - listed_violations(violations).len();
    let tail = match (rest, omitted) {
        (0, _) => String::new(),
        (_, 0) => format!(" (and {rest} more)"),
        _ => format!(
            " (and {rest} more; the error details list {} and leave out {omitted})",
            violations.len() - omitted
        ),
    };
    // The tail is a few dozen bytes; the head gets the rest of the budget.
    let head = truncated(&head, MAX_MESSAGE_BYTES.saturating_sub(tail.len()));
    format!("{head}{tail}")
}

/// The field violations `google.rpc.BadRequest` lists: the first ones, in order, up to
/// [`MAX_DETAIL_VIOLATIONS`] and [`MAX_DETAIL_VIOLATION_BYTES`] encoded (always at least one).
fn listed_violations(violations: &[Violation]) -> Vec<FieldViolation> {
    let mut listed = Vec::new();
    let mut bytes = 0;
    for v in violations.iter().take(MAX_DETAIL_VIOLATIONS) {
        let pb = violation_to_pb(v);
        let fv = FieldViolation {
            field: pb.field,
            description: pb.description,
            reason: pb.reason,
            localized_message: None,
        };
        // Three length-delimited strings and the entry's own tag and length: ≤ 4 × 3 bytes.
        let size = fv.field.len() + fv.description.len() + fv.reason.len() + 12;
        if !listed.is_empty() && bytes + size > MAX_DETAIL_VIOLATION_BYTES {
            break;
        }
        bytes += size;
        listed.push(fv);
    }
    listed
}

impl From<ApiError> for tonic::Status {
    fn from(err: ApiError) -> Self {
        let code = err.code();
        let message = err.to_string();
        let mut details = match &err {
            ApiError::BadRequest { violations, .. } => {
                ErrorDetails::with_bad_request(listed_violations(violations))
            }
            _ => ErrorDetails::new(),
        };
        let mut metadata = HashMap::new();
        metadata.extend(bad_request_metadata(&err));
        let mut pushback = None;
        if let ApiError::Overloaded {
            in_flight,
            retry_after,
        } = &err
        {
            metadata.insert("maxConcurrentRequests".to_string(), in_flight.to_string());
            // Whole milliseconds, so that the detail and the trailer say the same.
            let millis = retry_after.as_millis();
            details.set_retry_info(Some(Duration::from_millis(
                u64::try_from(millis).unwrap_or(u64::MAX),
            )));
            pushback = Some(millis);
        }
        details.set_error_info(err.reason(), ERROR_DOMAIN, metadata);
        let mut status = tonic::Status::with_error_details(code, message, details);
        if let Some(millis) = pushback {
            status.metadata_mut().insert(
                RETRY_PUSHBACK_TRAILER,
                tonic::metadata::MetadataValue::from(u64::try_from(millis).unwrap_or(u64::MAX)),
            );
        }
        status
    }
}

/// For a `BadRequest` whose details cannot list every violation, the machine-readable twin of
/// the message's "leave out N": `violations` (the total) and `violationsOmitted`.
fn bad_request_metadata(err: &ApiError) -> HashMap<String, String> {
    let mut metadata = HashMap::new();
    if let ApiError::BadRequest { violations, .. } = err {
        let listed = listed_violations(violations).len();
        if listed < violations.len() {
            metadata.insert("violations".to_string(), violations.len().to_string());
            metadata.insert(
                "violationsOmitted".to_string(),
                (violations.len() - listed).to_string(),
            );
        }
    }
    metadata
}

#[cfg(test)]
mod tests;
