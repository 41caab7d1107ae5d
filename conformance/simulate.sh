#!/usr/bin/env bash
# The simulator against upstream: every script in examples/simulate/ is played
# on every Job beside it (job.yaml, compare.yaml) three times, once with
# job-decider's own decisions (in process) and twice with upstream's
# controller answering over gRPC (bin/conformance reference-server): with the
# requests as the simulator prunes them and with every pod in every request
# (--carry-all-pods); the three timelines (`simulate -o json`) must be identical
# byte for byte. Then R
# seeded random scripts on the same Jobs, the same way; last, a reference server
# that answers wrongly on purpose must give a different timeline (the check can fail).
#
#   conformance/simulate.sh [path/to/job-decider]   (default target/debug/job-decider)
#
# Environment:
#   R     random scripts (default 20); each is played on every example Job
#   SEED  first random script's seed (default 1); a failure prints the script to replay
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
decider="${1:-$root/target/debug/job-decider}"
random_scripts="${R:-20}"
seed0="${SEED:-1}"

t0=$(date +%s)
elapsed() { echo "$(($(date +%s) - t0))s"; }

if [[ ! -x "$here/bin/conformance" ]]; then
	echo "== build bin/conformance"
	(cd "$here" && GOFLAGS="${GOFLAGS:-} -ldflags=-checklinkname=0" go build -o bin/conformance .)
fi

work="$(mktemp -d)"
ref_pid=""
cleanup() {
	if [[ -n "$ref_pid" ]]; then kill "$ref_pid" 2>/dev/null || true; fi
	rm -rf "$work"
}
trap cleanup EXIT

# start_reference_server LOG [ARGS...]: starts bin/conformance reference-server with
# ARGS, its stderr in $work/LOG; sets server_pid, and server_addr once it listens
# (empty if it did not start within 10 s).
start_reference_server() {
	local log="$work/$1"
	shift
	# The log exists before the server starts: the wait below reads it at once (set -e).
	: >"$log"
	"$here/bin/conformance" reference-server "$@" --listen 127.0.0.1:0 2>"$log" &
	server_pid=$!
	server_addr=""
	for _ in $(seq 100); do
		server_addr="$(sed -n 's/^reference-server listening on //p' "$log")"
		[[ -n "$server_addr" ]] && break
		sleep 0.1
	done
}

start_reference_server ref.log
ref_pid=$server_pid
addr=$server_addr
if [[ -z "$addr" ]]; then
	echo "reference-server did not start:" >&2
	cat "$work/ref.log" >&2
	exit 1
fi
echo "upstream's decisions from reference-server at $addr"

jobs=()
for dir in "$root"/examples/simulate/*/; do
	for j in job.yaml compare.yaml; do
		# Random scripts run on the Jobs upstream can decide (see extended below), and
		# small ones: a 512-index Job plays its own script (the examples, below); random shapes are
		# the small Jobs' work, and each random life of a large one costs seconds.
		[[ -f "$dir$j" ]] || continue
		grep -q 'job-decider.dev/failure-policy' "$dir$j" && continue
		completions="$(sed -n 's/^  completions: *\([0-9]*\).*/\1/p' "$dir$j" | head -1)"
		((${completions:-1} > 100)) && continue
		jobs+=("$dir$j")
	done
done

played=0
failed=0
# play JOB SCRIPT: both ways, byte for byte.
play() {
	local job="$1" script="$2" name="$3"
	played=$((played + 1))
	if ! "$decider" simulate --job "$job" --script "$script" -o json >"$work/ours.json" 2>"$work/ours.err"; then
		echo "FAILED (job-decider) $name: $(cat "$work/ours.err")"
		failed=$((failed + 1))
		return
	fi
	if ! "$decider" simulate --job "$job" --script "$script" -o json --decider-addr "$addr" >"$work/up.json" 2>"$work/up.err"; then
		echo "FAILED (upstream) $name: $(cat "$work/up.err")"
		failed=$((failed + 1))
		return
	fi
	if ! cmp -s "$work/ours.json" "$work/up.json"; then
		echo "MISMATCH $name (< job-decider, > upstream):"
		diff "$work/ours.json" "$work/up.json" | head -40 || true
		failed=$((failed + 1))
		return
	fi
	# The requests leave out counted pods no decision reads; upstream given every pod
	# in every sync, as its informer lists them, must decide the same.
	if ! "$decider" simulate --job "$job" --script "$script" -o json --decider-addr "$addr" --carry-all-pods >"$work/all.json" 2>"$work/all.err"; then
		echo "FAILED (upstream, --carry-all-pods) $name: $(cat "$work/all.err")"
		failed=$((failed + 1))
		return
	fi
	if ! cmp -s "$work/ours.json" "$work/all.json"; then
		echo "MISMATCH $name (< job-decider, > upstream with --carry-all-pods):"
		diff "$work/ours.json" "$work/all.json" | head -40 || true
		failed=$((failed + 1))
	fi
}

# A Job carrying the extended failure policy (job-decider.dev/failure-policy) has no
# upstream counterpart: its own timeline is checked by tests/it/simulate.rs; its
# compare.yaml, the same Job without the document, is played both ways here.
extended() { grep -q 'job-decider.dev/failure-policy' "$1"; }

echo "== the example scripts"
skipped=0
for dir in "$root"/examples/simulate/*/; do
	for j in job.yaml compare.yaml; do
		[[ -f "$dir$j" ]] || continue
		if extended "$dir$j"; then
			skipped=$((skipped + 1))
			continue
		fi
		play "$dir$j" "$dir/script.yaml" "$(basename "$dir")/$j"
	done
done
echo "examples: $played timelines played three ways, $skipped with an extended failure policy (job-decider's only) ($(elapsed))"

# A small deterministic generator (no $RANDOM: the same seed, the same scripts everywhere).
state=0
rnd() { # rnd N: sets r to a number in [0, N)
	state=$(((state * 1103515245 + 12345) % 2147483648))
	r=$(((state / 65536) % $1))
}

echo "== $random_scripts random scripts from seed $seed0"
for ((i = 0; i < random_scripts; i++)); do
	seed=$((seed0 + i))
	state=$seed
	script="$work/random-$seed.yaml"
	{
		echo "seed: $seed"
		echo "horizon: 3h"
		rnd 20
		echo "defaults: {runTime: $((r + 1))m, startDelay: $((r % 5))s, stopTime: $((r % 31))s}"
		echo "attempts:"
		rnd 3
		echo "  - {attempt: $((r + 1)), exitCode: $(((r * 41) % 138)), runTime: $((r + 2))m}"
		rnd 40
		echo "  - {percent: $((r + 5)), exitCodes: [1, 42, 137]}"
		echo "events:"
		t=0
		rnd 4
		n=$r
		for ((k = 0; k < n; k++)); do
			rnd 15
			t=$((t + r + 1))
			rnd 6
			pod=$((r + 1))
			rnd 5
			case $r in
			0) echo "  - {at: ${t}m, drain: {pod: $pod}}" ;;
			1) echo "  - {at: ${t}m, preempt: {pod: $pod}}" ;;
			2) echo "  - {at: ${t}m, deletePod: {pod: $pod}}" ;;
			3)
				echo "  - {at: ${t}m, suspend: true}"
				rnd 10
				t=$((t + r + 1))
				echo "  - {at: ${t}m, resume: true}"
				;;
			4)
				rnd 6
				echo "  - {at: ${t}m, parallelism: $r}"
				;;
			esac
		done
		[[ $n -eq 0 ]] && echo "  []"
	} >"$script"
	# An empty list is written `events:\n  []`; make it one line.
	sed -i -e ':a' -e 'N' -e '$!ba' -e 's/events:\n  \[\]/events: []/' "$script"
	for job in "${jobs[@]}"; do
		play "$job" "$script" "random seed $seed on ${job#"$root"/}"
		if [[ $failed -gt 0 && ! -f "$work/kept" ]]; then
			echo "the script:"
			cat "$script"
			touch "$work/kept"
		fi
	done
done

# The check can fail: a reference server that answers wrongly on purpose
# (ready+1 in every status write) must give a different timeline.
start_reference_server tamper.log --tamper
tamper_pid=$server_pid
taddr=$server_addr
example="$root/examples/simulate/kep-3850-story1"
"$decider" simulate --job "$example/job.yaml" --script "$example/script.yaml" -o json >"$work/ours.json"
"$decider" simulate --job "$example/job.yaml" --script "$example/script.yaml" -o json --decider-addr "$taddr" >"$work/tampered.json" || true
kill "$tamper_pid" 2>/dev/null || true
if [[ -z "$taddr" ]] || cmp -s "$work/ours.json" "$work/tampered.json"; then
	echo "SELF-TEST FAILED: a tampering reference server gave the same timeline"
	failed=$((failed + 1))
fi

echo "simulate: $played timelines, $failed differing or failing ($(elapsed))"
[[ $failed -eq 0 ]]
