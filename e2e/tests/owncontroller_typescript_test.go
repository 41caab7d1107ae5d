package tests

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
)

// buildTypeScriptController returns node and the built TypeScript example
// controller (clients/typescript/dist/examples/controller.js), installing the
// client's dependencies and running tsc first when dist lacks it.
func buildTypeScriptController(t *testing.T) (node, script string) {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed: the TypeScript example needs Node.js 20 or later")
	}
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..")
	dir := filepath.Join(root, "clients", "typescript")
	script = filepath.Join(dir, "dist", "examples", "controller.js")
	if _, err := os.Stat(script); err == nil {
		return node, script
	}
	install := exec.Command("bash", filepath.Join(root, "tools", "install-node.sh"))
	if out, err := install.CombinedOutput(); err != nil {
		t.Fatalf("installing the TypeScript client's dependencies: %v\n%s", err, out)
	}
	tsc := exec.Command(filepath.Join(dir, "node_modules", ".bin", "tsc"), "-p", "tsconfig.json")
	tsc.Dir = dir
	if out, err := tsc.CombinedOutput(); err != nil {
		t.Fatalf("building the TypeScript client: %v\n%s", err, out)
	}
	return node, script
}

// The TypeScript "your own controller" example (clients/typescript/examples/
// controller.ts: client-node watches, a fresh read of the Job and its pods per
// sync, decideJobRequest, the job-decider client and the client-node plan
// applier) runs the scenario the Go example runs: a podFailurePolicy Job
// through a disruption, a counted failure (replaced only after the backoff, so
// requeueAfter must be honoured and the state kept) and three successes, ending
// with exact counts, five pods and no tracking finalizer left.
func TestTypeScriptOwnControllerExampleRunsAJobWithAPodFailurePolicy(t *testing.T) {
	t.Parallel()
	node, script := buildTypeScriptController(t)
	const name = "example.com/my-controller-ts"
	runOwnControllerScenario(t, "typescript", name, node, script,
		"--kubeconfig="+e.cluster.Kubeconfig, "--decider="+e.decider.Addr, "--controller-name="+name)
}
