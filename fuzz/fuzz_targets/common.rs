//! Checks every decide target makes on an error answer.

/// The trailer an error is sent with stays under the 16 KiB a client or proxy accepts in a
/// header, whatever the input.
pub fn check_status(err: job_decider_api::ApiError) {
    let status = tonic::Status::from(err);
    let mut headers = http::HeaderMap::new();
    assert!(status.add_header(&mut headers).is_ok(), "status encodes");
    let bytes: usize = headers
        .iter()
        .map(|(k, v)| k.as_str().len() + v.len())
        .sum();
    assert!(bytes < 16 * 1024, "error trailer of {bytes} bytes");
}
