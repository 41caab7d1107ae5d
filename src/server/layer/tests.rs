use super::*;

#[test]
fn paths_map_to_a_closed_set_of_rpcs() {
    assert_eq!(
        Rpc::of_path("/jobdecider.v1.JobDecider/DecideJobSet").request_type,
        "DecideJobSetRequest"
    );
    assert_eq!(Rpc::of_path("/x.Y/Unknown"), UNKNOWN_RPC);
    assert_eq!(Rpc::of_path(""), UNKNOWN_RPC);
}

#[test]
fn truncation_keeps_a_char_boundary_and_counts_the_rest() {
    assert_eq!(truncated("short", 10), "short");
    let cut = truncated("ééééé", 3);
    assert_eq!(cut, "é… (8 more bytes)");
}

/// Every RPC the service descriptor declares is in [`RPCS`], so none is
/// labelled "other" or named wrongly in an error message.
#[test]
fn every_rpc_of_the_service_is_named() {
    use prost::Message;
    let set = prost_types::FileDescriptorSet::decode(job_decider_api::pb::FILE_DESCRIPTOR_SET)
        .unwrap_or_default();
    let service = set
        .file
        .iter()
        .flat_map(|f| f.service.iter())
        .find(|s| s.name() == "JobDecider");
    let Some(service) = service else {
        panic!("no JobDecider service in the descriptor set");
    };
    assert_eq!(service.method.len(), RPCS.len());
    for method in &service.method {
        let rpc = Rpc::of_path(&format!("/jobdecider.v1.JobDecider/{}", method.name()));
        assert_eq!(rpc.method, method.name());
        assert!(
            method
                .input_type()
                .ends_with(&format!(".{}", rpc.request_type)),
            "{} takes {}",
            method.name(),
            method.input_type()
        );
    }
}
