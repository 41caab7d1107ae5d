#!/usr/bin/env bash
# The TypeScript client's checks: installs its dependencies from package-lock.json
# (tools/install-node.sh), type-checks everything strictly (tsc --noEmit), builds dist/ and runs
# the tests with Node's test runner against the server at JOB_DECIDER_ADDR, which
# tools/with-server.sh starts:  tools/with-server.sh bash clients/typescript/test.sh
# The tests in test/separate need a server of their own, which this script starts the same way
# (JOB_DECIDER_BIN chooses the binary): on a Unix socket, and at one slot.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
bash "$here/../../tools/install-node.sh"
: "${JOB_DECIDER_ADDR:?set JOB_DECIDER_ADDR to a running server (tools/with-server.sh does)}"
cd "$here"
echo "== tsc --noEmit (strict): src, examples, tests"
node_modules/.bin/tsc -p tsconfig.json --noEmit
echo "== tsc: build dist/"
rm -rf dist
node_modules/.bin/tsc -p tsconfig.json
echo "== node --test against $JOB_DECIDER_ADDR"
node --test dist/test/*.test.js
with_server="$here/../../tools/with-server.sh"
echo "== node --test over a Unix socket (a second server, WITH_SERVER_SOCKET=1)"
WITH_SERVER_SOCKET=1 WITH_SERVER_ARGS="" "$with_server" node --test dist/test/separate/unix-socket.test.js
echo "== node --test against a server at one slot (--max-concurrent-requests 1)"
WITH_SERVER_SOCKET="" WITH_SERVER_ARGS="--max-concurrent-requests 1" "$with_server" node --test dist/test/separate/retry-one-slot.test.js
echo "== npm pack, installed into a throwaway project and imported by name"
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
npm pack --silent --pack-destination "$scratch" >/dev/null
tarball="$(ls "$scratch"/*.tgz)"
(
	cd "$scratch"
	printf '{"name":"pack-check","private":true,"type":"module"}\n' >package.json
	# The dependencies come from npm's cache (npm ci filled it), else from the registry.
	npm install --prefer-offline --no-audit --no-fund --loglevel=error "$tarball" >/dev/null
	TARBALL="$(basename "$tarball")" node --input-type=module -e '
		import { readFileSync } from "node:fs";
		import { CONNECTION_DEFAULTS, createJobDeciderClient, decideJobRequest } from "@job-decider/client";
		const [job, pods] = process.argv.slice(1).map((f) => JSON.parse(readFileSync(f, "utf8")));
		const request = decideJobRequest(job, pods);
		if (request.leanPods.length === 0 || CONNECTION_DEFAULTS.defaultTimeoutMs !== 10000) throw new Error("the packed client is not this one");
		createJobDeciderClient("unix:///nonexistent.sock");
		console.log(`packed ${process.env.TARBALL}: imported, built a request of ${request.leanPods.length} lean pods`);
	' "$here/../../examples/kep-3329-failjob-exit-code-42/job.json" "$here/../../examples/kep-3329-failjob-exit-code-42/pods.json"
)
