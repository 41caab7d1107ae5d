#!/usr/bin/env bash
# Prints the memory table of docs/performance.md ("Memory"): for realistic DecideJob
# requests of 1,000, 10,000 and 100,000 pods, five 100,000-pod calls in a row and
# eight at once, the server's resident set before (baseline), at its highest
# during the calls (peak) and once they are over (after), against the bytes sent.
#
# The server is the release binary, run as a child process with its default
# limits; the numbers come from its /proc/PID/status (VmRSS, and VmHWM reset
# through /proc/PID/clear_refs before the calls). Linux only.
#
#   tools/memory-table.sh                       # the default build (jemalloc)
#   tools/memory-table.sh --no-default-features # glibc malloc
#   tools/memory-table.sh --no-default-features --features mimalloc
#   MALLOC_ARENA_MAX=2 tools/memory-table.sh --no-default-features
#
# Extra arguments go to cargo; the server inherits the environment, and
# JOB_DECIDER_BIN=path measures another build of the server (e.g. an older commit's).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo test --release --quiet "$@" --test memory -- \
    --ignored --exact memory_table --nocapture --test-threads 1 |
    grep '^|'
