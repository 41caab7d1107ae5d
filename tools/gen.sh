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
# The typed google.rpc modules of the Python client (jobdecider.rpc): stubs only, not from buf.
bash clients/python/codegen/gen_rpc_stubs.sh
checked=("${generated[@]}" clients/python/src/jobdecider/rpc)

if [[ "${1:-}" == "--check" ]]; then
	if ! git diff --exit-code --stat -- "${checked[@]}" ||
		[[ -n "$(git ls-files --others --exclude-standard -- "${checked[@]}")" ]]; then
		echo "generated code is stale: run tools/gen.sh and commit the result" >&2
		git ls-files --others --exclude-standard -- "${checked[@]}" >&2
		exit 1
	fi
	echo "generated code is current (${checked[*]})"
fi
