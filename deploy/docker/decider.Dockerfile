# The job-decider service. Build from the repository root:
#   docker build -f deploy/docker/decider.Dockerfile -t job-decider .
# Not built in CI (no container engine there).
FROM rust:1-bookworm AS build
WORKDIR /src
COPY . .
RUN cargo build --release --locked --bin job-decider

FROM gcr.io/distroless/cc-debian12:nonroot
COPY --from=build /src/target/release/job-decider /job-decider
USER 65532:65532
EXPOSE 50051 9090
ENTRYPOINT ["/job-decider"]
CMD ["serve", "--addr=0.0.0.0:50051", "--metrics-addr=0.0.0.0:9090"]
