# The shim controller. Build from the repository root (the shim uses the
# generated client in clients/go):
#   docker build -f deploy/docker/shim.Dockerfile -t job-decider-shim .
# Not built in CI (no container engine there).
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY clients/go clients/go
COPY shim shim
WORKDIR /src/shim
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/job-decider-shim ./cmd/job-decider-shim

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/job-decider-shim /job-decider-shim
USER 65532:65532
EXPOSE 8080
ENTRYPOINT ["/job-decider-shim"]
