package tests

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// The Python "your own controller" example (clients/python/examples/controller.py:
// a list+watch loop with the official kubernetes package, decide_job_request,
// jobdecider.Client and jobdecider.apply) runs the own-controller scenario:
// a podFailurePolicy through a disruption, a counted failure replaced only
// after the plan's requeue_after, and three successes, ending with exact
// counts, five pods and no tracking finalizer. It runs on the venv `make
// tools` installs (tools/install-python.sh); without it the test fails.
func TestPythonOwnControllerExampleRunsAJobWithAPodFailurePolicy(t *testing.T) {
	t.Parallel()
	const name = "example.com/my-controller-python"
	_, file, _, _ := runtime.Caller(0)
	pkg := filepath.Join(filepath.Dir(file), "..", "..", "clients", "python")
	pythonPath := filepath.Join(pkg, ".venv", "bin", "python")
	scriptPath := filepath.Join(pkg, "examples", "controller.py")
	if _, err := os.Stat(pythonPath); err != nil {
		t.Fatalf("the Python client's venv is missing (run tools/install-python.sh): %v", err)
	}
	runOwnControllerScenario(t, "python", name, pythonPath, scriptPath,
		"--kubeconfig="+e.cluster.Kubeconfig, "--decider="+e.decider.Addr, "--controller-name="+name)
}
