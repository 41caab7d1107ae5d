#!/usr/bin/env bash
# One `buf generate` for every client (buf.gen.yaml), with the local, pinned plugins the
# project's install scripts put in place. `tools/gen.sh --check` regenerates and fails
# when the committed code differs from what the contract generates (CI runs it).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
bash tools/install-go-tools.sh
# The Python plugins run from the client's virtualenv (clients/python/requirements.lock).
bash tools/install-python.sh
# protoc-gen-es runs from clients/typescript/node_modules (clients/typescript/package-lock.json).
bash tools/install-node.sh
export PATH="$root/bin:$PATH"

# Every directory buf.gen.yaml writes into: emptied first, so a message removed from the
# contract leaves no stale file behind.
generated=(clients/go/jobdecider/v1 clients/python/src/jobdecider/v1 clients/typescript/src/gen)

bin/buf lint
for dir in "${generated[@]}"; do
	find "$dir" -type f -delete 2>/dev/null || true
done
bin/buf generate

if [[ "${1:-}" == "--check" ]]; then
	if ! git diff --exit-code --stat -- "${generated[@]}" ||
		[[ -n "$(git ls-files --others --exclude-standard -- "${generated[@]}")" ]]; then
		echo "generated code is stale: run tools/gen.sh and commit the result" >&2
		git ls-files --others --exclude-standard -- "${generated[@]}" >&2
		exit 1
	fi
	echo "generated code is current (${generated[*]})"
fi
