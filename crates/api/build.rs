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
    let fds = protox::compile(files, ["../../proto"])?;
    let out = PathBuf::from(std::env::var("OUT_DIR")?);
    let descriptor_bytes = fds.encode_to_vec();
    std::fs::write(out.join("jobdecider_descriptor.bin"), &descriptor_bytes)?;

    tonic_prost_build::configure()
        .build_client(true)
        .build_server(true)
        .compile_well_known_types(true)
        // Ordered maps: the same plan must print the same bytes.
        .btree_map(".")
        // Large requests are decoded off the reactor (src/codec.rs).
        .codec_path("crate::codec::OffReactorProstCodec")
        .extern_path(".google.protobuf", "::pbjson_types")
        .compile_fds(fds)?;

    pbjson_build::Builder::new()
        .register_descriptors(&descriptor_bytes)?
        .ignore_unknown_fields()
        .btree_map(["."])
        .build(&[".jobdecider.v1"])?;

    println!("cargo:rerun-if-changed=../../proto");
    Ok(())
}
