use tonic::Code;

use super::*;

#[test]
fn an_undecodable_body_is_invalid_argument_naming_the_request_type() {
    let decode = tonic::Status::internal("failed to decode Protobuf message: invalid wire type");
    let Some(err) = ApiError::from_transport_status_for(&decode, "DecideJobSetRequest") else {
        panic!("a decode failure is rewritten");
    };
    let status = tonic::Status::from(err);
    assert_eq!(status.code(), Code::InvalidArgument);
    assert_eq!(
        status.message(),
        "request body is not a valid DecideJobSetRequest: failed to decode Protobuf message: invalid wire type"
    );
    // INTERNAL that is not a decode failure stays INTERNAL: it is ours.
    let ours = tonic::Status::internal("decision task failed: panicked");
    assert!(ApiError::from_transport_status_for(&ours, "DecideJobRequest").is_none());
}
