#!/usr/bin/env bash
# Regenerates the Go client (clients/go/jobdecider/v1) from proto/ and lints the contract.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
tools/install-go-tools.sh
export PATH="$root/bin:$PATH"
buf lint
rm -f clients/go/jobdecider/v1/*.pb.go
buf generate
(cd clients/go && go mod tidy && go build ./... && go vet ./...)
