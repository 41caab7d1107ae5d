# syntax=docker/dockerfile:1
# The job-decider service. Build from the repository root; the release path
# (deploy/README.md, "Images") builds it for linux/amd64 and linux/arm64:
#   docker buildx build -f deploy/docker/decider.Dockerfile \
#     --platform linux/amd64,linux/arm64 --build-arg VERSION=v0.26.0 \
#     --build-arg SOURCE_DATE_EPOCH="$(git log -1 --format=%ct)" \
#     -t registry.example.com/job-decider:v0.26.0 --push .
# Base images are pinned by the digest of their multi-platform index, so a
# rebuild starts from the same bytes; deploy/README.md says how to move them.
# Not built in CI (no container engine there): e2e/deploycheck checks these
# rules instead.

# The Rust toolchain: rust-version is 1.89, CI builds with 1.95. Built per
# platform (under emulation for the other one): cross-linking jemalloc and
# ring is not worth its complexity for one binary.
FROM docker.io/library/rust:1.95-bookworm@sha256:6258907abe69656e41cd992e0b705cdcfabcbbe3db374f92ed2d47121282d4a1 AS build
ARG SOURCE_DATE_EPOCH
WORKDIR /src
# Reproducible: no incremental state, no build paths in the binary, symbols
# stripped, the dependency versions of Cargo.lock exactly (--locked).
ENV CARGO_INCREMENTAL=0 \
    CARGO_PROFILE_RELEASE_STRIP=symbols \
    CARGO_TERM_COLOR=never \
    RUSTFLAGS="--remap-path-prefix=/src=. --remap-path-prefix=/usr/local/cargo/registry=registry"
# Only what the server's build reads (.dockerignore keeps everything else out
# of the context too): the workspace manifests, its members, the contract.
COPY Cargo.toml Cargo.lock ./
COPY src src
COPY crates crates
COPY load load
COPY benches benches
COPY proto proto
RUN cargo build --release --locked --bin job-decider

FROM gcr.io/distroless/cc-debian12:nonroot@sha256:9dac0a79194e45a7da0158a9c6da57b217585af0786db3845d1f0ec1a0dd182f
ARG VERSION=dev
LABEL org.opencontainers.image.title="job-decider" \
      org.opencontainers.image.description="The Kubernetes Job controller's decisions as a stateless gRPC service" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.licenses="Apache-2.0"
COPY --from=build /src/target/release/job-decider /job-decider
USER 65532:65532
# gRPC, plaintext health (--health-addr), metrics.
EXPOSE 50051 8081 9090
ENTRYPOINT ["/job-decider"]
CMD ["serve", "--addr=0.0.0.0:50051", "--health-addr=0.0.0.0:8081", "--metrics-addr=0.0.0.0:9090"]
