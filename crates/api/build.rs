//! Compiles the contract in `proto/` with protox (no system `protoc`), generating
//! prost messages, the tonic service, pbjson serde impls for the proto3 JSON
//! form, and the encoded descriptor set that server reflection serves.

use prost::Message;
use std::path::PathBuf;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let files = [
        "jobdecider/v1/kubernetes.proto",
        "jobdecider/v1/jobset.proto",
        "jobdecider/v1/job_decider.proto",
    ];
    // `proto/jobdecider` is a link to the repository's `proto/jobdecider`, so that the
    // packaged crate carries the contract (cargo packages what a link points at).
    let fds = protox::compile(files, ["proto"])?;
    let out = PathBuf::from(std::env::var("OUT_DIR")?);
    let descriptor_bytes = fds.encode_to_vec();
    std::fs::write(out.join("jobdecider_descriptor.bin"), &descriptor_bytes)?;

    // Messages and the client.
    tonic_prost_build::configure()
        .build_client(true)
        .build_server(false)
        .compile_well_known_types(true)
        // Ordered maps: the same plan must print the same bytes.
        .btree_map(".")
        .codec_path("crate::codec::OffReactorProstCodec")
        .extern_path(".google.protobuf", "::pbjson_types")
        .compile_fds(fds.clone())?;

    // The server alone, over the messages above, except that DecideJob receives
    // a request whose pods stay encoded until conversion (src/lazy.rs): the
    // whole decoded request never exists at once.
    let server_out = out.join("server");
    std::fs::create_dir_all(&server_out)?;
    tonic_prost_build::configure()
        .build_client(false)
        .build_server(true)
        .out_dir(&server_out)
        .compile_well_known_types(true)
        // Large requests are decoded off the reactor (src/codec.rs).
        .codec_path("crate::codec::OffReactorProstCodec")
        .extern_path(".google.protobuf", "::pbjson_types")
        .extern_path(
            ".jobdecider.v1.DecideJobRequest",
            "crate::lazy::LazyDecideJobRequest",
        )
        .extern_path(".jobdecider.v1", "crate::pb")
        .compile_fds(fds)?;

    pbjson_build::Builder::new()
        .register_descriptors(&descriptor_bytes)?
        .ignore_unknown_fields()
        .btree_map(["."])
        .build(&[".jobdecider.v1"])?;

    // Each file, not the directory: a changed file is found through the link.
    for file in files {
        println!("cargo:rerun-if-changed=proto/{file}");
    }
    Ok(())
}
