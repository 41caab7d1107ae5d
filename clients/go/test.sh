#!/usr/bin/env bash
# The Go client's checks against a live server (JOB_DECIDER_ADDR; tools/with-server.sh sets it):
# the quickstart (examples/quickstart) on the bundled FailJob example, compared with what
# `job-decider decide -o json` prints; bad requests whose errors must name their field; the
# package's Example functions; then, each under a server of its own (tools/with-server.sh),
# NewClient over a Unix socket and NewClient's retries at one slot. Dependencies come from
# go.mod/go.sum (the module proxy). Without JOB_DECIDER_ADDR the live tests skip;
# tools/go-test.sh runs the module that way too.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
: "${JOB_DECIDER_ADDR:?set JOB_DECIDER_ADDR (host:port), e.g. run this under tools/with-server.sh}"
# The quickstart's output is compared with the CLI's (a given JOB_DECIDER_BIN is used as is).
if [[ -z "${JOB_DECIDER_BIN:-}" ]]; then
	(cd "$root" && cargo build --quiet --bin job-decider -p job-decider)
fi
export JOB_DECIDER_BIN="${JOB_DECIDER_BIN:-$root/target/debug/job-decider}"
cd "$root/clients/go"
go mod download
verbose() { grep --line-buffered -vE '^=== (RUN|PAUSE|CONT|NAME)'; }
go test -count=1 -v ./examples/... ./jobdecider/... ./request/... -run 'Quickstart|BadRequests|Example|Conformance' 2>&1 | verbose
# The connection behaviour against servers of their own: a Unix socket, and one slot.
unset JOB_DECIDER_ADDR
WITH_SERVER_SOCKET=1 "$root/tools/with-server.sh" \
	go test -count=1 -v ./jobdecider/ -run 'UnixSocket' 2>&1 | verbose
WITH_SERVER_ARGS="--max-concurrent-requests 1" JOB_DECIDER_MAX_CONCURRENT=1 "$root/tools/with-server.sh" \
	go test -count=1 -v ./jobdecider/ -run 'OneSlot' 2>&1 | verbose
