use super::*;
use job_decider_core::validate::{Severity, ViolationKind};

fn violation(field: &str) -> Violation {
    Violation {
        severity: Severity::Rejected,
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
    let overloaded = tonic::Status::from(ApiError::Overloaded {
        in_flight: 4,
        retry_after: Duration::from_millis(87),
    });
    assert_eq!(overloaded.code(), Code::Unavailable);
    assert_eq!(
        overloaded
            .get_error_details()
            .retry_info()
            .and_then(|r| r.retry_delay),
        Some(Duration::from_millis(87))
    );
    assert_eq!(
        overloaded
            .metadata()
            .get(crate::status::RETRY_PUSHBACK_TRAILER)
            .map(|v| v.to_str().ok()),
        Some(Some("87"))
    );
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

/// SHUTTING_DOWN says nothing of waiting: the caller retries at once, on another
/// replica or a new connection (issue 26).
#[test]
fn shutting_down_carries_no_pushback() {
    let status = tonic::Status::from(ApiError::ShuttingDown);
    assert_eq!(status.code(), Code::Unavailable);
    assert!(status.get_error_details().retry_info().is_none());
    assert!(
        status
            .metadata()
            .get(crate::status::RETRY_PUSHBACK_TRAILER)
            .is_none()
    );
}

/// Bytes of the trailers (names and values) that carry a status on the wire.
fn trailer_bytes(status: &tonic::Status) -> (usize, usize) {
    let mut headers = tonic::codegen::http::HeaderMap::new();
    assert!(status.add_header(&mut headers).is_ok());
    let total = headers
        .iter()
        .map(|(k, v)| k.as_str().len() + v.len())
        .sum();
    let details = headers
        .get("grpc-status-details-bin")
        .map_or(0, tonic::codegen::http::HeaderValue::len);
    (total, details)
}

#[test]
fn a_million_violations_fit_a_small_trailer_that_counts_the_rest() {
    // What 10^6 empty pods convert to: a required name per pod.
    let violations: Vec<Violation> = (0..1_000_000)
        .map(|i| violation(&format!("pods[{i}].metadata.name")))
        .collect();
    let status = tonic::Status::from(ApiError::invalid_snapshot(violations));
    let (total, details) = trailer_bytes(&status);
    assert!(
        details < 12 * 1024,
        "grpc-status-details-bin: {details} bytes"
    );
    assert!(total < 16 * 1024, "trailers: {total} bytes");
    let got = status.get_error_details();
    let listed = got.bad_request().map_or(0, |b| b.field_violations.len());
    assert!((1..=MAX_DETAIL_VIOLATIONS).contains(&listed), "{listed}");
    let omitted = 1_000_000 - listed;
    let info = got.error_info().expect("error info");
    assert_eq!(
        info.metadata.get("violations"),
        Some(&"1000000".to_string())
    );
    assert_eq!(
        info.metadata.get("violationsOmitted"),
        Some(&omitted.to_string())
    );
    assert!(
        status.message().ends_with(&format!(
            "(and 999999 more; the error details list {listed} and leave out {omitted})"
        )),
        "{}",
        status.message()
    );
}

#[test]
fn a_ten_megabyte_name_gives_a_bounded_message_log_line_and_trailer() {
    let name = "n".repeat(10 << 20);
    let bad = Violation {
        severity: Severity::Rejected,
        field: "metadata.name".into(),
        kind: ViolationKind::Invalid,
        value: Some(format!("{name:?}")),
        detail: format!("a lowercase RFC 1123 subdomain, not {name:?}"),
    };
    let err = ApiError::invalid_job(vec![bad.clone(), bad]);
    // The log line is the error's Display.
    let line = err.to_string();
    assert!(line.len() <= MAX_MESSAGE_BYTES, "{} bytes", line.len());
    assert!(line.starts_with("job is invalid: metadata.name: Invalid value: \"nnn"));
    assert!(line.contains("[truncated from"));
    assert!(line.ends_with(" (and 1 more)"), "{line}");
    let status = tonic::Status::from(err);
    assert_eq!(status.message(), line);
    let (total, _) = trailer_bytes(&status);
    assert!(total < 8 * 1024, "trailers: {total} bytes");
    let details = status.get_error_details();
    let listed = details.bad_request().map(|b| b.field_violations.clone());
    let listed = listed.unwrap_or_default();
    assert_eq!(listed.len(), 2, "both fit the budget once cut");
    assert!(
        listed
            .iter()
            .all(|v| v.description.len() <= MAX_DETAIL_DESCRIPTION_BYTES)
    );
    let info = details.error_info().expect("error info");
    assert!(!info.metadata.contains_key("violationsOmitted"));
}
