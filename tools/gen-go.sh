#!/usr/bin/env bash
# Regenerates the clients (buf.gen.yaml: Go in clients/go/jobdecider/v1, TypeScript in
# clients/typescript/src/gen) from proto/ and lints the contract.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
tools/install-go-tools.sh
# buf.gen.yaml also runs the TypeScript client's protoc-gen-es, from clients/typescript/node_modules.
bash tools/install-node.sh
export PATH="$root/bin:$PATH"
buf lint
rm -f clients/go/jobdecider/v1/*.pb.go
rm -rf clients/typescript/src/gen
buf generate
(cd clients/go && go mod tidy && go build ./... && go vet ./...)
