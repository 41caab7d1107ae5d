#!/usr/bin/env bash
# CI entry point for the conformance harness.
#
#   conformance/run.sh                       build, gofmt/vet, go test (vectors == upstream)
#   conformance/run.sh path/to/job-decider   ... then check every vector and N random
#                                            scenarios against that binary
#
# Environment: N (random scenarios, default 10000), SEED (default: from the clock;
# printed), JOB_DECIDER_SERVE_ARGS (default "serve --listen {addr}"),
# SAVE_DIR (where mismatching snapshots go, default conformance/mismatches).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
cd "$here"

# go:linkname pulls into k8s.io/kubernetes; -checklinkname=0 keeps them
# working should the linker ever restrict them beyond the standard library.
export GOFLAGS="${GOFLAGS:-} -ldflags=-checklinkname=0"

echo "== build"
start=$(date +%s)
go build -o bin/conformance .
echo "built bin/conformance in $(( $(date +%s) - start ))s"

echo "== gofmt / go vet"
unformatted="$(gofmt -l .)"
if [[ -n "$unformatted" ]]; then
	echo "gofmt needed on: $unformatted" >&2
	exit 1
fi
go vet ./...

echo "== go test (every vector's expected is what upstream does)"
go test ./...

if [[ $# -lt 1 ]]; then
	echo "no job-decider binary given: skipping check and random"
	exit 0
fi
decider="$1"
save_dir="${SAVE_DIR:-$here/mismatches}"
n="${N:-10000}"
seed_args=()
if [[ -n "${SEED:-}" ]]; then
	seed_args=(--seed "$SEED")
fi

status=0
echo "== check: every vector against $decider"
bin/conformance check --serve "$decider" --save-dir "$save_dir" "$root/tests/vectors" || status=1

echo "== random: $n scenarios against $decider"
bin/conformance random --serve "$decider" --save-dir "$save_dir" -n "$n" "${seed_args[@]}" || status=1

echo "== timing by job size (informational)"
bin/conformance bench --serve "$decider" || true

exit $status
