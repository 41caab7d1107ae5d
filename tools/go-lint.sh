#!/usr/bin/env bash
# buf lint and buf breaking on the contract, then gofmt and go vet on every Go module.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
bash tools/install-go-tools.sh
echo "== buf lint"
bin/buf lint
# The contract only grows: against the last released one (proto/released/README.md). The
# proto module alone: the workspace also holds a vendored file that is not part of the contract.
echo "== buf breaking"
bin/buf breaking proto --against proto/released/jobdecider-v1.binpb
for module in clients/go clients/go/apply clients/go/examples/controller testkit conformance conformance/jobset shim e2e tools/schemagen deploy/grafana; do
	[[ -f "$module/go.mod" ]] || continue
	echo "== gofmt / go vet: $module"
	unformatted="$(gofmt -l "$module")"
	if [[ -n "$unformatted" ]]; then
		echo "gofmt needed on:" >&2
		echo "$unformatted" >&2
		exit 1
	fi
	(cd "$module" && GOFLAGS="${GOFLAGS:-} -ldflags=-checklinkname=0" go vet ./...)
done
