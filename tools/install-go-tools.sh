#!/usr/bin/env bash
# Installs the pinned code-generation tools into ./bin (git-ignored) with `go install`.
# Only the Go module proxy is needed.
set -euo pipefail

BUF_VERSION=v1.75.0
PROTOC_GEN_GO_VERSION=v1.36.12
PROTOC_GEN_GO_GRPC_VERSION=v1.6.2
# The load generator of the load suite (load/) and the ghz recipe (docs/performance.md).
GHZ_VERSION=v0.121.0
# The grpcurl recipes of README.md and docs/api.md (tools/readme-recipes.sh runs them).
GRPCURL_VERSION=v1.9.4

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export GOBIN="$root/bin"
mkdir -p "$GOBIN"

install() {
	local pkg="$1" version="$2" name="$3"
	if [[ -x "$GOBIN/$name" && -f "$GOBIN/.$name.version" && "$(cat "$GOBIN/.$name.version")" == "$version" ]]; then
		return
	fi
	echo "installing $name $version" >&2
	go install "$pkg@$version"
	echo "$version" >"$GOBIN/.$name.version"
}

install github.com/bufbuild/buf/cmd/buf "$BUF_VERSION" buf
install google.golang.org/protobuf/cmd/protoc-gen-go "$PROTOC_GEN_GO_VERSION" protoc-gen-go
install google.golang.org/grpc/cmd/protoc-gen-go-grpc "$PROTOC_GEN_GO_GRPC_VERSION" protoc-gen-go-grpc
install github.com/bojand/ghz/cmd/ghz "$GHZ_VERSION" ghz
install github.com/fullstorydev/grpcurl/cmd/grpcurl "$GRPCURL_VERSION" grpcurl
