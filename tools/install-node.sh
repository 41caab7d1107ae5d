#!/usr/bin/env bash
# Installs the TypeScript client's npm dependencies (clients/typescript/node_modules, git-ignored)
# exactly as package-lock.json pins them, with `npm ci`: the runtime (@bufbuild/protobuf,
# @connectrpc/connect, @connectrpc/connect-node) and the tools (protoc-gen-es, which
# buf.gen.yaml runs, typescript and @types/node). Skipped when node_modules is newer than the
# lock and package.json, so a second run costs nothing. Needs Node.js 20 or later with npm.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dir="$root/clients/typescript"
stamp="$dir/node_modules/.installed-from-lock"

if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
	echo "install-node: node and npm are needed (Node.js 20 or later)" >&2
	exit 1
fi
major="$(node -p 'process.versions.node.split(".")[0]')"
if ((major < 20)); then
	echo "install-node: Node.js $(node --version) is too old; the client needs 20 or later" >&2
	exit 1
fi

if [[ -f "$stamp" && "$stamp" -nt "$dir/package-lock.json" && "$stamp" -nt "$dir/package.json" ]]; then
	exit 0
fi
echo "installing clients/typescript dependencies (npm ci)" >&2
# No install scripts: none of the pinned packages needs one.
(cd "$dir" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error)
touch "$stamp"
