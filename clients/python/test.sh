#!/usr/bin/env bash
# The Python client's checks: installs its dependencies from requirements.lock (fast when already
# installed), type-checks the package, the example and the tests with mypy --strict, then runs
# pytest. The live tests need a server: run it as `tools/with-server.sh bash clients/python/test.sh`
# (which sets JOB_DECIDER_ADDR).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
"$here/../../tools/install-python.sh"
cd "$here"
.venv/bin/mypy
.venv/bin/pytest -q "$@"
