// The CRDs that the deploy manifests' dry run needs installed in the test API
// server, pinned by version and go.sum hash: the Go modules that ship them as
// plain YAML (cert-manager's deploy/crds, the Prometheus Operator's
// example/prometheus-operator-crd). harness.CRDs downloads them through the
// module proxy with `go mod download`; nothing is compiled from them, so this
// module has no Go files (do not `go mod tidy` it: tidy would drop both).
module job-decider.dev/e2e/crds

go 1.26.0

require (
	github.com/cert-manager/cert-manager v1.19.1
	github.com/prometheus-operator/prometheus-operator v0.85.0
)
