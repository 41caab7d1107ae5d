#!/usr/bin/env bash
# Runs a command against a live job-decider server that this script starts and stops:
#   tools/with-server.sh CMD [ARGS...]
# The server (target/debug/job-decider unless JOB_DECIDER_BIN says otherwise) listens on a
# free loopback port; CMD sees it as JOB_DECIDER_ADDR (host:port). The script waits until
# the port accepts connections, runs CMD, stops the server and exits with CMD's status.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bin="${JOB_DECIDER_BIN:-$root/target/debug/job-decider}"
if [[ ! -x "$bin" ]]; then
	(cd "$root" && cargo build --quiet --bin job-decider)
fi
port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
log="$(mktemp)"
"$bin" serve --addr "127.0.0.1:$port" --metrics-addr 127.0.0.1:0 --log-level warn >"$log" 2>&1 &
server=$!
stop() {
	kill "$server" 2>/dev/null || true
	wait "$server" 2>/dev/null || true
	rm -f "$log"
}
trap stop EXIT
for _ in $(seq 1 200); do
	if python3 -c "import socket,sys; socket.create_connection(('127.0.0.1', $port), 0.2)" 2>/dev/null; then
		break
	fi
	if ! kill -0 "$server" 2>/dev/null; then
		echo "with-server: the server exited:" >&2
		cat "$log" >&2
		exit 1
	fi
	sleep 0.05
done
export JOB_DECIDER_ADDR="127.0.0.1:$port"
set +e
"$@"
status=$?
set -e
exit "$status"
