#!/usr/bin/env bash
# CI entry point for the conformance harness.
#
#   conformance/run.sh                       build, gofmt/vet, go test (vectors == upstream,
#                                            the lifecycle simulator against upstream itself)
#   conformance/run.sh path/to/job-decider   ... then check every vector, N single-sync
#                                            scenarios and L multi-sync lifecycles against
#                                            that binary, and time both sides by job size
#
# Environment:
#   N         single-sync random scenarios (default 8000)
#   L         multi-sync lifecycles (default 2000); N + L is the scenario count (>= 10,000 in CI)
#   SEED      default: from the clock; printed, so any failure replays with
#             bin/conformance random --seed SEED --only I  /  lifecycle --seed SEED --only I -v
#   MAX_TIME  bound on the random run (default 20m); a run cut short fails
#   WORKERS   scenarios at once (default 2)
#   BENCH     0 skips the timing by job size (default 1)
#   JOB_DECIDER_SERVE_ARGS  default "serve --addr {addr} --metrics-addr 127.0.0.1:0 --log-level error"
#   SAVE_DIR  where mismatching snapshots go as vector files (default conformance/mismatches/SEED)
#
# A longer run: N=1000000 L=100000 MAX_TIME=10h conformance/run.sh target/release/job-decider
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
cd "$here"

# go:linkname pulls into k8s.io/kubernetes; -checklinkname=0 keeps them
# working should the linker ever restrict them beyond the standard library.
export GOFLAGS="${GOFLAGS:-} -ldflags=-checklinkname=0"

t0=$(date +%s)
elapsed() { echo "$(( $(date +%s) - t0 ))s"; }

echo "== build"
go build -o bin/conformance .
echo "built bin/conformance ($(elapsed))"

echo "== gofmt / go vet"
unformatted="$(gofmt -l .)"
if [[ -n "$unformatted" ]]; then
	echo "gofmt needed on: $unformatted" >&2
	exit 1
fi
go vet ./...

echo "== go test (every vector's expected is what upstream does; the simulator against upstream itself)"
go test -count=1 -timeout 20m ./...
echo "go test done ($(elapsed))"

if [[ $# -lt 1 ]]; then
	echo "no job-decider binary given: skipping check, random and lifecycles"
	exit 0
fi
decider="$1"
seed="${SEED:-$(date +%s%N)}"
save_dir="${SAVE_DIR:-$here/mismatches/$seed}"

status=0
echo "== check: every vector against $decider"
bin/conformance check --serve "$decider" --save-dir "$save_dir" "$root/tests/vectors" | grep -v '^ok ' || status=1
echo "check done ($(elapsed))"

echo "== random: ${N:-8000} single-sync scenarios and ${L:-2000} lifecycles against $decider (seed $seed)"
bin/conformance random --serve "$decider" --save-dir "$save_dir" --seed "$seed" \
	-n "${N:-8000}" --lifecycles "${L:-2000}" --workers "${WORKERS:-2}" --max-time "${MAX_TIME:-20m}" || status=1
echo "random done ($(elapsed))"

if [[ "${BENCH:-1}" != 0 ]]; then
	echo "== timing by job size (informational)"
	bin/conformance bench --serve "$decider" || true
fi

if [[ $status -ne 0 ]]; then
	echo "conformance: FAILED (seed $seed; mismatching snapshots in $save_dir)" >&2
fi
echo "conformance finished in $(elapsed)"
exit $status
