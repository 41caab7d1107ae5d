#!/usr/bin/env bash
# The load suite (load/README.md) in one command.
#
#   load/run.sh full    `make load`: release server pinned to core 0, ghz on core 1, every size
#                       (10 to 100,000 pods) in both encodings, upstream's syncJob on the same
#                       files; rewrites docs/load/results.md, docs/load/chart.svg and the
#                       table in docs/performance.md. About 5-10 minutes on 2 cores.
#   load/run.sh smoke   `make load-smoke` (part of `make test`): the debug server, 10 and
#                       1,000 pods, a few calls each; fails on any call that is not OK or
#                       on a missing table or a malformed chart. Writes under target/ only.
#
# Extra arguments go to `job-decider-load run` (e.g. --seconds 10, --server-arg=--log-level=warn).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
mode="${1:-full}"
shift || true

bash tools/install-go-tools.sh # ghz, pinned
echo "== build: upstream's timer (conformance loadtime)"
(cd conformance && GOFLAGS="${GOFLAGS:-} -ldflags=-checklinkname=0" go build -o bin/conformance .)

check_svg() {
	if command -v python3 >/dev/null; then
		python3 -c 'import sys, xml.etree.ElementTree as ET; ET.parse(sys.argv[1])' "$1"
		echo "chart is well-formed XML: $1"
	else
		echo "python3 not found: chart's XML not checked"
	fi
}

case "$mode" in
full)
	echo "== build: release server and the load tool"
	cargo build --release --quiet -p job-decider -p job-decider-load --bin job-decider --bin job-decider-load
	echo "== requests"
	target/release/job-decider-load gen --out load/requests
	echo "== run"
	target/release/job-decider-load run --readme docs/performance.md "$@"
	check_svg docs/load/chart.svg
	;;
smoke)
	out=target/load-smoke
	rm -rf "$out"
	echo "== build: debug server and the load tool"
	cargo build --quiet -p job-decider -p job-decider-load --bin job-decider --bin job-decider-load
	target/debug/job-decider-load gen --out "$out/requests" --sizes 10,1000
	target/debug/job-decider-load run --server target/debug/job-decider --requests "$out/requests" \
		--sizes 10,1000 --seconds 0.2 --min-calls 3 --out "$out" --raw "$out/raw" \
		--command "make load-smoke" "$@"
	test -s "$out/results.md" || { echo "load-smoke: no table" >&2; exit 1; }
	grep -q '| 1,000 | NonIndexed | lean |' "$out/results.md" || { echo "load-smoke: table lacks rows" >&2; exit 1; }
	check_svg "$out/chart.svg"
	echo "load-smoke: ok"
	;;
*)
	echo "usage: load/run.sh full|smoke [job-decider-load run flags]" >&2
	exit 2
	;;
esac
