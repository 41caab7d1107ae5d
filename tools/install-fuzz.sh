#!/usr/bin/env bash
# Installs the pinned cargo-fuzz into ./bin (git-ignored) from crates.io, as install-go-tools.sh
# does for the Go tools; `make fuzz` runs it first. The fuzz targets build with the nightly
# toolchain (libFuzzer's sanitizer flags need it), which `rustup` provides.
set -euo pipefail

CARGO_FUZZ_VERSION=0.13.2

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bin="$root/bin"
mkdir -p "$bin"

if ! rustup run nightly rustc --version >/dev/null 2>&1; then
	echo "make fuzz needs the nightly Rust toolchain (cargo-fuzz builds with -Z flags)" >&2
	exit 1
fi

if [[ -x "$bin/cargo-fuzz" && -f "$bin/.cargo-fuzz.version" && "$(cat "$bin/.cargo-fuzz.version")" == "$CARGO_FUZZ_VERSION" ]]; then
	exit 0
fi
echo "installing cargo-fuzz $CARGO_FUZZ_VERSION" >&2
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
# The build directory outlives the checkout (make passes FUZZ_CACHE), so a fresh
# clone on the same machine links the tool again instead of compiling it.
build="${FUZZ_CACHE:-$tmp}/install-target"
# --locked: the versions cargo-fuzz's own lock file names, so a fresh machine builds the same tool.
cargo install cargo-fuzz --version "$CARGO_FUZZ_VERSION" --locked --root "$tmp/root" --target-dir "$build"
cp "$tmp/root/bin/cargo-fuzz" "$bin/cargo-fuzz"
echo "$CARGO_FUZZ_VERSION" >"$bin/.cargo-fuzz.version"
