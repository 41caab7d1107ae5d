#!/usr/bin/env bash
# Issue 22's hostile sequences (load/README.md, "Hostile") in one command.
#
#   load/hostile.sh full    `make hostile`: the release server with the Deployment's own flags
#                           (deploy/base/decider-deployment.yaml) pinned to core 0, this client on
#                           core 1; the reviewer's sizes. About 4 minutes. Prints the table, writes it
#                           to target/hostile/results.md, exits non-zero if any bound is exceeded.
#   load/hostile.sh smoke   the debug server, sizes and loops at 1/100: a few seconds.
#
# Extra arguments go to `job-decider-load hostile` (e.g. --only a1,c1).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
mode="${1:-full}"
shift || true

# The client on core 1 when the server can have core 0 (the runner pins the server).
client=()
if [ "$(nproc)" -ge 2 ] && command -v taskset >/dev/null && taskset -c 1 true 2>/dev/null; then
	client=(taskset -c 1)
fi

case "$mode" in
full)
	echo "== build: release server and the load tool"
	cargo build --release --quiet --bin job-decider
	cargo build --release --quiet -p job-decider-load --bin job-decider-load
	"${client[@]}" target/release/job-decider-load hostile --server target/release/job-decider "$@"
	;;
smoke)
	echo "== build: debug server and the load tool"
	cargo build --quiet --bin job-decider
	cargo build --quiet -p job-decider-load --bin job-decider-load
	"${client[@]}" target/debug/job-decider-load hostile --server target/debug/job-decider \
		--scale 0.01 --out target/hostile-smoke --command "load/hostile.sh smoke" "$@"
	;;
*)
	echo "usage: load/hostile.sh full|smoke [job-decider-load hostile flags]" >&2
	exit 2
	;;
esac
