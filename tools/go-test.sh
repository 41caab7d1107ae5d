#!/usr/bin/env bash
# The Go side of `make test`: the conformance harness (upstream's own controller
# against every vector, 8,000 random single-sync scenarios and 2,000 multi-sync
# lifecycles through the real server; see conformance/run.sh for N, L, SEED,
# MAX_TIME), the JobSet harness (conformance/jobset), the simulator against upstream
# (conformance/simulate.sh), then the shim's and the
# end-to-end tests.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
cargo build --bin job-decider
decider="$root/target/debug/job-decider"
# The harness starts `job-decider serve --addr {addr} --metrics-addr 127.0.0.1:0
# --log-level error` unless JOB_DECIDER_SERVE_ARGS says otherwise.
bash conformance/run.sh "$decider"
# The JobSet vectors' expected plans against sigs.k8s.io/jobset v0.12.0's own
# reconciler (a separate module: its k8s versions differ). No package argument,
# so go test prints the "N vectors: ..." result line on success too.
echo "== conformance: jobset"
(cd conformance/jobset && go test -count=1)
# The simulator against upstream: every examples/simulate script and R seeded random
# scripts played with job-decider's decisions and with upstream's (reference-server)
# must give byte-identical timelines.
echo "== conformance: simulate"
bash conformance/simulate.sh "$decider"
# The documents' field schema (src/schema/kubernetes.json) is what the pinned
# k8s.io/api and JobSet modules give today.
echo "== go test: tools/schemagen"
(cd tools/schemagen && go test -count=1 ./...)
echo "== go test: clients/go"
(cd clients/go && go test -count=1 ./...)
# The harnesses' vectors reader and diffs, kept out of the public module.
echo "== go test: testkit"
(cd testkit && go test -count=1 ./...)
echo "== go test: clients/go/apply"
(cd clients/go/apply && go test -count=1 ./...)
echo "== go test: shim"
(cd shim && go test -count=1 ./...)
# The Grafana dashboard: its JSON's shape, every query parsed as PromQL, every
# metric and label it reads one the server or the shim serves (the lists beside it).
echo "== go test: deploy/grafana"
(cd deploy/grafana && go test -count=1 ./...)
# The end-to-end suite: a real kube-apiserver and etcd built from Go modules
# (cached after the first build), the server and the shim. JOB_DECIDER_E2E=0
# skips it for a quick local loop; CI always runs it.
if [[ "${JOB_DECIDER_E2E:-1}" != "0" ]]; then
	echo "== go test: e2e"
	# Verbose, so that the log shows each test's outcome and the crash test's
	# figures (kills, write faults, Jobs, pods); go test's RUN/PAUSE/CONT
	# bookkeeping lines are dropped. pipefail keeps go test's exit status.
	(cd e2e && JOB_DECIDER_BIN="$decider" go test -count=1 -timeout 40m -v ./... 2>&1 |
		grep --line-buffered -vE '^=== (RUN|PAUSE|CONT|NAME)')
fi
