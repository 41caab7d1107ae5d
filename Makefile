# The project's commands. `make test` is the one command that runs every test;
# `make lint` runs the format and lint checks; CI (.ci/run) runs both.

SHELL := /bin/bash
export PATH := $(CURDIR)/bin:$(PATH)

.PHONY: all build test test-e2e test-rust test-go lint lint-rust lint-go tools run example bench

all: build

build:
	cargo build --release

## Everything a fresh machine needs beyond Rust and Go: pinned Go tools into ./bin.
tools:
	bash tools/install-go-tools.sh

## Every test: Rust unit, vector and service tests; Go tests; conformance against upstream;
## the end-to-end suite against a real kube-apiserver and etcd.
test: test-rust test-go

test-rust:
	cargo test --workspace --all-targets

test-go: tools
	bash tools/go-test.sh

## The end-to-end suite alone (`make test` runs it too).
test-e2e:
	cargo build --bin job-decider
	cd e2e && JOB_DECIDER_BIN=$(CURDIR)/target/debug/job-decider go test -count=1 -timeout 40m ./...

lint: lint-rust lint-go

lint-rust:
	cargo fmt --all --check
	cargo clippy --workspace --all-targets -- -D warnings

lint-go: tools
	bash tools/go-lint.sh

## The main job: the server on 127.0.0.1:50051 (metrics on 127.0.0.1:9090).
run:
	cargo run --release -- serve

## decide on a bundled example (KEP-3329 story 1: FailJob on exit code 42).
example:
	cargo run --release -- decide --job examples/kep-3329-failjob-exit-code-42/job.json --pods examples/kep-3329-failjob-exit-code-42/pods.json --now 2025-06-02T10:00:00Z -o text

bench:
	cargo bench --bench decide
