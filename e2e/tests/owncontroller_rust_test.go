package tests

import (
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
)

// buildRustOwnController builds the Rust "your own controller" example
// (crates/k8s/examples/controller.rs: a list+watch loop with kube-rs, the
// crate's request builder, client::Connect and job_decider_k8s::apply) and
// returns the binary's path in the workspace's target directory.
func buildRustOwnController(t *testing.T) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..")
	cmd := exec.Command("cargo", "build", "--example", "controller", "-p", "job-decider-k8s", "--features", "kube")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building the Rust example controller: %v\n%s", err, out)
	}
	return filepath.Join(root, "target", "debug", "examples", "controller")
}

// The Rust example runs the same scenario as the Go one: a disruption
// ignored by the podFailurePolicy, a counted failure replaced only after the
// pod-failure backoff (the plan's state sent back, requeueAfter honoured),
// three successes, exact counts, five pods, no tracking finalizer left.
func TestRustOwnControllerExampleRunsAJobWithAPodFailurePolicy(t *testing.T) {
	t.Parallel()
	const name = "example.com/my-controller-rust"
	bin := buildRustOwnController(t)
	runOwnControllerScenario(t, "rust", name, bin,
		"--kubeconfig="+e.cluster.Kubeconfig, "--decider="+e.decider.Addr, "--controller-name="+name)
}
