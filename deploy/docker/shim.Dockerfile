# syntax=docker/dockerfile:1
# The shim controller. Build from the repository root (it uses the generated
# client in clients/go); the release path (deploy/README.md, "Images"):
#   docker buildx build -f deploy/docker/shim.Dockerfile \
#     --platform linux/amd64,linux/arm64 --build-arg VERSION=v0.26.0 \
#     -t registry.example.com/job-decider-shim:v0.26.0 --push .
# Base images are pinned by the digest of their multi-platform index.
# Not built in CI (no container engine there): e2e/deploycheck checks these
# rules instead.

# Go cross-compiles: the build stage runs on the builder's own platform and
# writes a binary for the target's.
FROM --platform=$BUILDPLATFORM docker.io/library/golang:1.26-bookworm@sha256:a688600ca24f8a4d3ca77f95b0dd40704a9fc787c826660eb7ba0b641b8b175d AS build
ARG TARGETOS
ARG TARGETARCH
WORKDIR /src
# Modules first, so that a source change reuses the download layer.
COPY clients/go/go.mod clients/go/go.sum clients/go/
COPY testkit/go.mod testkit/go.sum testkit/
COPY clients/go/apply/go.mod clients/go/apply/go.sum clients/go/apply/
COPY shim/go.mod shim/go.sum shim/
WORKDIR /src/shim
RUN go mod download && go mod verify
WORKDIR /src
COPY clients/go clients/go
COPY testkit testkit
COPY shim shim
WORKDIR /src/shim
# Reproducible: no paths, no VCS stamp, no build id; go.sum pins every module.
RUN CGO_ENABLED=0 GOOS=$TARGETOS GOARCH=$TARGETARCH GOFLAGS=-mod=readonly \
    go build -trimpath -buildvcs=false -ldflags="-s -w -buildid=" \
      -o /out/job-decider-shim ./cmd/job-decider-shim

FROM gcr.io/distroless/static-debian12:nonroot@sha256:d093aa3e30dbadd3efe1310db061a14da60299baff8450a17fe0ccc514a16639
ARG VERSION=dev
LABEL org.opencontainers.image.title="job-decider-shim" \
      org.opencontainers.image.description="Runs Kubernetes Jobs through the job-decider service" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.licenses="Apache-2.0"
COPY --from=build /out/job-decider-shim /job-decider-shim
USER 65532:65532
EXPOSE 8080
ENTRYPOINT ["/job-decider-shim"]
