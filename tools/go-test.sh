#!/usr/bin/env bash
# The Go side of `make test`: the conformance harness (upstream's own controller
# against every vector and N random scenarios, through the real server), then
# the shim's and the end-to-end tests where present.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
cargo build --bin job-decider
decider="$root/target/debug/job-decider"
export JOB_DECIDER_SERVE_ARGS="${JOB_DECIDER_SERVE_ARGS:-serve --addr {addr} --metrics-addr 127.0.0.1:0}"
bash conformance/run.sh "$decider"
for module in shim e2e; do
	[[ -f "$module/go.mod" ]] || continue
	echo "== go test: $module"
	(cd "$module" && JOB_DECIDER_BIN="$decider" go test -count=1 -timeout 60m ./...)
done
