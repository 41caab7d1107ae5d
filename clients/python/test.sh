#!/usr/bin/env bash
# The Python client's checks: installs its dependencies from requirements.lock (fast when already
# installed), type-checks the package, the example and the tests with mypy --strict, then runs
# pytest. The live tests need a server: run it as `tools/with-server.sh bash clients/python/test.sh`
# (which sets JOB_DECIDER_ADDR). Two more servers are started here, with tools/with-server.sh and
# the same JOB_DECIDER_BIN: one on a Unix socket, one at a single decision slot. Last, the wheel
# and sdist are built, the wheel installed into a throwaway venv, imported, and a user's file
# (typecheck/user_code.py) type-checked against it with mypy --strict.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
with_server="$here/../../tools/with-server.sh"
"$here/../../tools/install-python.sh"
cd "$here"
.venv/bin/mypy
.venv/bin/pytest -q -m "not unix_socket and not one_slot" "$@"
WITH_SERVER_SOCKET=1 "$with_server" .venv/bin/pytest -q -m unix_socket tests/test_unix_socket.py
WITH_SERVER_ARGS="--max-concurrent-requests 1" "$with_server" .venv/bin/pytest -q -m one_slot tests/test_overload.py

# The package: built with the locked backend (no isolation, nothing downloaded).
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
.venv/bin/python -m build --no-isolation --outdir "$tmp/dist" . >"$tmp/build.log" 2>&1 || {
	cat "$tmp/build.log" >&2
	exit 1
}
wheel=("$tmp"/dist/job_decider-*.whl)
sdist=("$tmp"/dist/job_decider-*.tar.gz)
.venv/bin/python - "${wheel[0]}" "${sdist[0]}" <<'PY'
import sys, tarfile, zipfile
wheel, sdist = zipfile.ZipFile(sys.argv[1]), tarfile.open(sys.argv[2])
names = wheel.namelist()
tops = {n.split("/")[0] for n in names if not n.split("/")[0].endswith(".dist-info")}
assert tops == {"jobdecider"}, f"one import name, found {tops}"
for want in ("jobdecider/py.typed", "jobdecider/v1/job_decider_pb2.pyi", "jobdecider/rpc/status_pb2.pyi"):
    assert want in names, want
meta = wheel.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
assert "Classifier: Typing :: Typed" in meta and "License-Expression: Apache-2.0" in meta, meta
assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)
in_sdist = {n.split("/", 1)[-1] for n in sdist.getnames()}
assert {"LICENSE", "CHANGELOG.md", "README.md", "pyproject.toml"} <= in_sdist, in_sdist
PY
# A throwaway venv: the wheel installed into it, its dependencies (and mypy) seen through a .pth
# on this venv's site-packages, which is not a site directory there, so the editable install of
# the checkout stays invisible.
python="$(readlink -f .venv/bin/python)"
"$python" -m venv --without-pip "$tmp/venv"
site="$("$tmp/venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
.venv/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])' >"$site/deps.pth"
.venv/bin/python -m pip --python "$tmp/venv/bin/python" install --quiet --disable-pip-version-check --no-deps "${wheel[0]}"
(cd "$tmp" && venv/bin/python -c '
import jobdecider, sys
assert jobdecider.__file__.startswith(sys.prefix), jobdecider.__file__
from jobdecider.rpc import error_details_pb2
from google.rpc import error_details_pb2 as upstream
assert error_details_pb2.BadRequest is upstream.BadRequest
print("wheel:", jobdecider.__file__)
')
cp typecheck/user_code.py "$tmp/user_code.py"
(cd "$tmp" && venv/bin/python -m mypy --strict --no-incremental user_code.py)
