#!/usr/bin/env bash
# Writes the type stubs of google.rpc's status and error details into src/jobdecider/rpc, with
# mypy-protobuf (the lock's) from the .proto files googleapis-common-protos (the lock's) ships.
# googleapis-common-protos has .pyi files but no py.typed marker, so mypy --strict refuses
# `from google.rpc import error_details_pb2` in user code; jobdecider.rpc re-exports the same
# modules with these stubs. tools/gen.sh runs this after `buf generate`.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="$here/.venv"
site="$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
"$venv/bin/python" -m grpc_tools.protoc -I "$site" -I "$site/grpc_tools/_proto" \
	--plugin=protoc-gen-mypy="$venv/bin/protoc-gen-mypy" --mypy_out="$out" \
	google/rpc/error_details.proto google/rpc/status.proto >"$out/log" 2>&1 || {
	cat "$out/log" >&2
	exit 1
}
for name in error_details_pb2 status_pb2; do
	cp "$out/google/rpc/$name.pyi" "$here/src/jobdecider/rpc/$name.pyi"
done
