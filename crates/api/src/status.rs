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

use job_decider_core::validate::Violation;

/// The `ErrorInfo.domain` of every error this service returns.
pub const ERROR_DOMAIN: &str = "jobdecider.dev";

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

/// "what: first violation (and N more)".
fn summary(what: &str, violations: &[Violation]) -> String {
    match violations {
        [] => what.to_string(),
        [only] => format!("{what}: {only}"),
        [first, rest @ ..] => format!("{what}: {first} (and {} more)", rest.len()),
    }
}

impl From<ApiError> for tonic::Status {
    fn from(err: ApiError) -> Self {
        let code = err.code();
        let message = err.to_string();
        let mut details = match &err {
            ApiError::BadRequest { violations, .. } => ErrorDetails::with_bad_request(
                violations
                    .iter()
                    .map(|v| FieldViolation {
                        field: v.field.clone(),
                        description: v.description(),
                        reason: v.kind.reason().to_string(),
                        localized_message: None,
                    })
                    .collect::<Vec<_>>(),
            ),
            _ => ErrorDetails::new(),
        };
        let mut metadata = HashMap::new();
        if let ApiError::Overloaded { in_flight } = &err {
            metadata.insert("maxConcurrentRequests".to_string(), in_flight.to_string());
        }
        details.set_error_info(err.reason(), ERROR_DOMAIN, metadata);
        tonic::Status::with_error_details(code, message, details)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use job_decider_core::validate::ViolationKind;

    fn violation(field: &str) -> Violation {
        Violation {
            field: field.into(),
            kind: ViolationKind::Required,
            value: None,
            detail: String::new(),
        }
    }

    #[test]
    fn bad_request_carries_field_violations_and_error_info() {
        let status: tonic::Status =
            ApiError::invalid_snapshot(vec![violation("pods[3].metadata.uid"), violation("now")])
                .into();
        assert_eq!(status.code(), Code::InvalidArgument);
        assert!(
            status
                .message()
                .contains("pods[3].metadata.uid: Required value")
        );
        assert!(status.message().contains("(and 1 more)"));
        let details = status.get_error_details();
        let bad = details.bad_request().expect("bad request details");
        let fields: Vec<_> = bad
            .field_violations
            .iter()
            .map(|v| v.field.as_str())
            .collect();
        assert_eq!(fields, ["pods[3].metadata.uid", "now"]);
        assert_eq!(bad.field_violations[0].reason, "FieldValueRequired");
        let info = details.error_info().expect("error info");
        assert_eq!(info.reason, "INVALID_SNAPSHOT");
        assert_eq!(info.domain, ERROR_DOMAIN);
    }

    #[test]
    fn codes_per_class() {
        let too_large = tonic::Status::out_of_range(
            "Error, decoded message length too large: found 9 bytes, the limit is: 4 bytes",
        );
        let mapped = ApiError::from_transport_status(&too_large).expect("mapped");
        assert_eq!(tonic::Status::from(mapped).code(), Code::ResourceExhausted);
        assert!(ApiError::from_transport_status(&tonic::Status::out_of_range("other")).is_none());
        let overloaded = tonic::Status::from(ApiError::Overloaded { in_flight: 4 });
        assert_eq!(overloaded.code(), Code::Unavailable);
        assert_eq!(
            overloaded
                .get_error_details()
                .error_info()
                .map(|i| i.reason.clone()),
            Some("OVERLOADED".to_string())
        );
        assert_eq!(
            tonic::Status::from(ApiError::Timeout(Duration::from_secs(1))).code(),
            Code::DeadlineExceeded
        );
    }
}
