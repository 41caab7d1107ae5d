#!/usr/bin/env bash
# Creates clients/python/.venv (git-ignored) with Python 3.11 and installs into it exactly what
# clients/python/requirements.lock pins, hash-checked, then the client package itself (editable).
# Idempotent: when the venv already holds this lock and package, it returns at once.
#   PYTHON=/path/to/python3.11 tools/install-python.sh   # to choose the interpreter
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
pkg="$root/clients/python"
venv="$pkg/.venv"
lock="$pkg/requirements.lock"

# One install at a time (make -j may run the generator and the tests together); the lock file
# lives beside the venv because the venv itself may be removed below.
exec 9>"$pkg/.install.lock"
flock 9

# The stamp records what the venv was built from: the lock and the package's metadata.
stamp_want="$(cat "$lock" "$pkg/pyproject.toml" | sha256sum | cut -d' ' -f1)"
if [[ -x "$venv/bin/python" && -f "$venv/.installed" && "$(cat "$venv/.installed")" == "$stamp_want" ]]; then
	exit 0
fi

python="${PYTHON:-}"
if [[ -z "$python" ]]; then
	for candidate in python3.11 python3; do
		if command -v "$candidate" >/dev/null &&
			"$candidate" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))' 2>/dev/null; then
			python="$(command -v "$candidate")"
			break
		fi
	done
fi
if [[ -z "$python" ]]; then
	echo "install-python: Python 3.11 not found (set PYTHON=/path/to/python3.11)" >&2
	exit 1
fi

echo "install-python: installing clients/python/requirements.lock into clients/python/.venv" >&2
# A venv from another lock may hold packages this one dropped: start from an empty one.
rm -rf "$venv"
"$python" -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check --require-hashes --no-deps -r "$lock"
# The package from its path; no build isolation, so the build uses the locked setuptools and
# downloads nothing unhashed.
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-deps --no-build-isolation -e "$pkg"
echo "$stamp_want" >"$venv/.installed"
