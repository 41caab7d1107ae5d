#!/usr/bin/env bash
# The Go client's checks against a live server (JOB_DECIDER_ADDR; tools/with-server.sh sets it):
# the quickstart (examples/quickstart) on the bundled FailJob example, compared with what
# `job-decider decide -o json` prints; bad requests whose errors must name their field; and
# the package's Example functions. Dependencies come from go.mod/go.sum (the module proxy).
# Without JOB_DECIDER_ADDR the live tests skip; tools/go-test.sh runs the module that way too.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
: "${JOB_DECIDER_ADDR:?set JOB_DECIDER_ADDR (host:port), e.g. run this under tools/with-server.sh}"
# The quickstart's output is compared with the CLI's.
(cd "$root" && cargo build --quiet --bin job-decider -p job-decider)
export JOB_DECIDER_BIN="${JOB_DECIDER_BIN:-$root/target/debug/job-decider}"
cd "$root/clients/go"
go mod download
go test -count=1 -v ./examples/... ./jobdecider/... ./request/... -run 'Quickstart|BadRequests|Example' 2>&1 |
	grep --line-buffered -vE '^=== (RUN|PAUSE|CONT|NAME)'
