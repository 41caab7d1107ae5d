#!/usr/bin/env bash
# The Python client's checks: installs its dependencies from requirements.lock (fast when already
# installed), type-checks the package, the example and the tests with mypy --strict, then runs
# pytest. The live tests need a server: run it as `tools/with-server.sh bash clients/python/test.sh`
# (which sets JOB_DECIDER_ADDR). Two more servers are started here, with tools/with-server.sh and
# the same JOB_DECIDER_BIN: one on a Unix socket, one at a single decision slot.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
with_server="$here/../../tools/with-server.sh"
"$here/../../tools/install-python.sh"
cd "$here"
.venv/bin/mypy
.venv/bin/pytest -q -m "not unix_socket and not one_slot" "$@"
WITH_SERVER_SOCKET=1 "$with_server" .venv/bin/pytest -q -m unix_socket tests/test_unix_socket.py
WITH_SERVER_ARGS="--max-concurrent-requests 1" "$with_server" .venv/bin/pytest -q -m one_slot tests/test_overload.py
