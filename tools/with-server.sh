#!/usr/bin/env bash
# Runs a command against a live job-decider server that this script starts and stops:
#   tools/with-server.sh CMD [ARGS...]
# The server (target/debug/job-decider unless JOB_DECIDER_BIN says otherwise) listens on a
# free loopback port; CMD sees it as JOB_DECIDER_ADDR (host:port). With WITH_SERVER_SOCKET=1
# it listens on a Unix socket in a temporary directory instead, and JOB_DECIDER_ADDR is
# unix:///that/path. WITH_SERVER_ARGS adds flags to `serve` (word-split), e.g.
# WITH_SERVER_ARGS="--max-concurrent-requests 1". The script waits until the server accepts connections, runs CMD, stops
# the server and exits with CMD's status.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bin="${JOB_DECIDER_BIN:-$root/target/debug/job-decider}"
if [[ ! -x "$bin" ]]; then
	(cd "$root" && cargo build --quiet --bin job-decider)
fi
log="$(mktemp)"
socket_dir=""
if [[ "${WITH_SERVER_SOCKET:-}" == 1 ]]; then
	socket_dir="$(mktemp -d)"
	addr="unix://$socket_dir/decider.sock"
	probe="import socket; s = socket.socket(socket.AF_UNIX); s.settimeout(0.2); s.connect('$socket_dir/decider.sock')"
else
	port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
	addr="127.0.0.1:$port"
	probe="import socket; socket.create_connection(('127.0.0.1', $port), 0.2)"
fi
# shellcheck disable=SC2086 # the extra flags are meant to be split into words
"$bin" serve --addr "$addr" --metrics-addr 127.0.0.1:0 --log-level warn ${WITH_SERVER_ARGS:-} >"$log" 2>&1 &
server=$!
stop() {
	kill "$server" 2>/dev/null || true
	wait "$server" 2>/dev/null || true
	rm -f "$log"
	if [[ -n "$socket_dir" ]]; then
		rm -rf "$socket_dir"
	fi
}
trap stop EXIT
for _ in $(seq 1 200); do
	if python3 -c "$probe" 2>/dev/null; then
		break
	fi
	if ! kill -0 "$server" 2>/dev/null; then
		echo "with-server: the server exited:" >&2
		cat "$log" >&2
		exit 1
	fi
	sleep 0.05
done
export JOB_DECIDER_ADDR="$addr"
set +e
"$@"
status=$?
set -e
exit "$status"
