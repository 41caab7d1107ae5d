# The project's commands. `make test` is the one command that runs every test;
# `make lint` runs the format and lint checks; CI (.ci/run) runs both.

SHELL := /bin/bash
export PATH := $(CURDIR)/bin:$(PATH)

.PHONY: all build test test-e2e test-rust test-go test-clients test-browser fuzz fuzz-seeds lint lint-rust lint-go lint-gen lint-docker lint-versions lint-package tools run example bench load load-smoke bench-cluster bench-cluster-smoke bench-cluster-faults bench-cluster-shards hostile

all: build

build:
	cargo build --release

## Everything a fresh machine needs beyond Rust and Go: pinned Go tools into ./bin, the
## Python client's virtualenv and the TypeScript client's node_modules, each from a lock;
## Debian's chromium for the browser test.
tools:
	bash tools/install-go-tools.sh
	bash tools/install-python.sh
	bash tools/install-node.sh
	bash tools/install-chromium.sh

## Every test: Rust unit, vector and service tests; Go tests; conformance against upstream;
## the end-to-end suite against a real kube-apiserver and etcd; a bounded fuzz run; the load suite's smoke.
test: test-rust test-go test-clients test-browser fuzz load-smoke

test-rust:
	cargo test --workspace --all-targets

test-go: tools
	bash tools/go-test.sh

## Generated code is current; then each client (clients/README.md) against a live server that
## tools/with-server.sh starts:
## its own tests, its quickstart on a bundled example, a bad request's field path; then
## clients/README.md's examples must equal the files those tests ran; the grpcurl and ghz
## recipes of README.md, docs/api.md and docs/performance.md run as written (tools/readme-recipes.sh).
test-clients: tools
	bash tools/gen.sh --check
	cargo build --bin job-decider
	tools/with-server.sh bash clients/python/test.sh
	tools/with-server.sh bash clients/typescript/test.sh
	tools/with-server.sh bash clients/go/test.sh
	tools/with-server.sh bash clients/rust/test.sh
	bash tools/readme-recipes.sh
	python3 tools/readme-copies.py clients/README.md

## The simulation reports in a real browser (Debian's chromium, headless): every bundled
## example's HTML report shows its rows, one bar per attempt and its summary.
test-browser: tools
	bash tools/browser-test.sh

## The end-to-end suite alone (`make test` runs it too).
test-e2e:
	cargo build --bin job-decider
	cd e2e && JOB_DECIDER_BIN=$(CURDIR)/target/debug/job-decider go test -count=1 -timeout 40m ./...

## A bounded fuzz run: each target in fuzz/ for FUZZ_SECONDS from a seed corpus written from
## tests/vectors. A crash fails the run and leaves its input in fuzz/artifacts/<target>/.
## libFuzzer's line per new input is dropped from the log; its final stats and any crash stay.
FUZZ_SECONDS ?= 20
FUZZ_TARGETS := decide_job decide_jobset documents index_set
# Outside the checkout, like the e2e control plane: a fresh clone on the same machine
# reuses the nightly-built dependencies instead of compiling them again.
FUZZ_CACHE ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/job-decider-fuzz

fuzz: fuzz-seeds
	FUZZ_CACHE=$(FUZZ_CACHE) bash tools/install-fuzz.sh
	@set -o pipefail; for t in $(FUZZ_TARGETS); do \
		echo "== fuzz: $$t ($(FUZZ_SECONDS) s)"; \
		cargo +nightly fuzz run --fuzz-dir fuzz --target-dir $(FUZZ_CACHE)/target --sanitizer none $$t fuzz/corpus/$$t -- \
			-max_total_time=$(FUZZ_SECONDS) -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 2>&1 \
			| grep -vE '^#[0-9]+[[:space:]]+(NEW|REDUCE|pulse)|^[[:space:]]+NEW_FUNC' \
			|| exit 1; \
	done

## The seed corpus (fuzz/corpus, git-ignored), from the vectors and examples.
fuzz-seeds:
	# The main build directory: the seed writer reuses the library the tests just built.
	cargo run --quiet --manifest-path fuzz/Cargo.toml -p fuzz-seeds --target-dir $(CURDIR)/target -- $(CURDIR) fuzz/corpus

lint: lint-rust lint-go lint-gen lint-docker lint-versions lint-package

lint-rust:
	cargo fmt --all --check
	cargo clippy --workspace --all-targets -- -D warnings

lint-go: tools
	bash tools/go-lint.sh

## Generated clients are exactly what one `buf generate` writes from proto/ (tools/gen.sh).
lint-gen: tools
	bash tools/gen.sh --check

## Every package, image tag and chart carries the contract's version, proto/VERSION.
lint-versions:
	python3 tools/versions.py

## The Rust crates a user depends on, packaged and built from their .crate files as
## crates.io would (nothing uploaded). k8s-openapi's version comes from the environment,
## as a binary's feature would give it; `--all-features` builds `apply` (kube) too.
lint-package:
	K8S_OPENAPI_ENABLED_VERSION=1.33 cargo package --allow-dirty --all-features \
		-p job-decider-core -p job-decider-api -p job-decider-k8s

## hadolint on the Dockerfiles (CI builds no images: no container engine there).
lint-docker:
	bash tools/hadolint.sh

## The main job: the server on 127.0.0.1:50051 (metrics on 127.0.0.1:9090).
run:
	cargo run --release -- serve

## decide on a bundled example (KEP-3329 story 1: FailJob on exit code 42).
example:
	cargo run --release -- decide --job examples/kep-3329-failjob-exit-code-42/job.json --pods examples/kep-3329-failjob-exit-code-42/pods.json --now 2025-06-02T10:00:00Z -o text

bench:
	cargo bench --bench decide

## The load suite (load/README.md): the release server pinned to one core, ghz on the other, the
## health Check floor and DecideJob at 10 to 100,000 pods in both encodings, upstream's syncJob on
## the same files; prints the table and rewrites docs/load/ and docs/performance.md's table.
load: tools
	bash load/run.sh full

## A few seconds of the same (10 and 1,000 pods, debug server, output under target/): part of `make test`.
load-smoke: tools
	bash load/run.sh smoke

## The cluster benchmark (docs/bench-cluster.md): W1-W4 (e2e/bench/workloads) each on a fresh
## kube-apiserver + etcd with KWOK, (a) kube-controller-manager's Job controller against (b) the
## shim + the release service, at equal and raised limits; rewrites docs/bench-cluster.{md,svg}.
## Each run is saved in e2e/bench/results as it finishes; BENCH_RESUME=1 reuses the saved runs of
## the same workload and limits and runs the rest (the full run takes more than one sitting).
## Builds kube-controller-manager and kwok from Go modules the first time (cached). Hours, not minutes.
BENCH_WORKLOADS ?= workloads/w1.yaml,workloads/w2.yaml,workloads/w3.yaml,workloads/w4.yaml
bench-cluster:
	cargo build --release --bin job-decider
	cd e2e/bench && JOB_DECIDER_BIN=$${JOB_DECIDER_BIN:-$(CURDIR)/target/release/job-decider} go run . -workloads $(BENCH_WORKLOADS) -results $(CURDIR)/e2e/bench/results $${BENCH_RESUME:+-resume} -out $(CURDIR)/docs/bench-cluster

## The sharded shim (issue 27; docs/bench-cluster-shards.md): W5 (Jobs over 40 namespaces) on a
## fresh kube-apiserver + etcd with ShardedListAndWatch on and KWOK: kube-controller-manager, then
## the shim at BENCH_SHARDS shards (one process per shard, leader election on, each at the equal
## limits) sharing one release service, then a failover run at 2 shards with one replica SIGKILLed;
## rewrites docs/bench-cluster-shards.md. Fails on a duplicate pod or an end state unlike upstream's.
## About 20 minutes on 2 cores; BENCH_RESUME=1 reuses the runs saved in e2e/bench/results.
BENCH_SHARDS ?= 1,2,3
bench-cluster-shards:
	cargo build --release --bin job-decider
	cd e2e/bench && JOB_DECIDER_BIN=$${JOB_DECIDER_BIN:-$(CURDIR)/target/release/job-decider} go run . -shards $(BENCH_SHARDS) -shard-failover 2 -perf 10s -limits equal -workloads workloads/w5-namespaces.yaml -results $(CURDIR)/e2e/bench/results $${BENCH_RESUME:+-resume} -out $(CURDIR)/docs/bench-cluster-shards

## The same at small sizes (W1 and W2, at most 20 Jobs of 10 pods, equal limits, debug service):
## fails on any Job whose end state differs between the two controllers.
bench-cluster-smoke:
	cargo build --bin job-decider
	cd e2e/bench && JOB_DECIDER_BIN=$${JOB_DECIDER_BIN:-$(CURDIR)/target/debug/job-decider} go run . -smoke -limits equal -workloads workloads/w1.yaml,workloads/w2.yaml

## The fault run (e2e/README.md): W2 at 50 Jobs x 20 pods, both controllers behind the fault proxy,
## then the shim with the service stopped and hung; replaces the fault section of docs/bench-cluster.md.
bench-cluster-faults:
	cargo build --bin job-decider
	cd e2e/bench && JOB_DECIDER_BIN=$${JOB_DECIDER_BIN:-$(CURDIR)/target/debug/job-decider} go run . -faults -shrink 50x20 -limits equal -workloads workloads/w2.yaml -out $(CURDIR)/docs/bench-cluster

## Issue 22's hostile sequences from one client without credentials (load/README.md, "Hostile"):
## the release server with deploy/base's own flags pinned to one core, RSS, slots and 1 s health
## probes sampled throughout; prints docs/operations.md's table and fails if a bound is exceeded. Not in `make test`.
hostile:
	bash load/hostile.sh full
