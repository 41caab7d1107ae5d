package tests

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"job-decider.dev/e2e/harness"
)

// ownControllerName is the managedBy of the Jobs the example controller runs:
// neither the shared shim nor any other test's shim answers to it.
const ownControllerName = "example.com/my-controller"

// buildOwnController builds clients/go/examples/controller (its own module)
// into the test's directory.
func buildOwnController(t *testing.T) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	src := filepath.Join(filepath.Dir(file), "..", "..", "clients", "go", "examples", "controller")
	bin := filepath.Join(t.TempDir(), "my-controller")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	cmd.Dir = src
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building the example controller: %v\n%s", err, out)
	}
	return bin
}

// The Go "your own controller" example (clients/go/examples/controller: a
// client-go informer loop, request.Build, the job-decider client and the
// public plan applier) runs a Job with a podFailurePolicy through a
// disruption (ignored by the policy), a counted failure (replaced only after
// the pod-failure backoff: no event comes then, so the replacement needs the
// plan's requeueAfter honoured; with the AddAfter taken out of the example,
// this test times out) and three successes: the Job completes with exact
// counts, exactly five pods were ever created, and no pod keeps the tracking
// finalizer.
func TestGoOwnControllerExampleRunsAJobWithAPodFailurePolicy(t *testing.T) {
	t.Parallel()
	bin := buildOwnController(t)
	runOwnControllerScenario(t, "go", ownControllerName, bin,
		"--kubeconfig="+e.cluster.Kubeconfig, "--decider="+e.decider.Addr, "--controller-name="+ownControllerName)
}

// runOwnControllerScenario starts one language's "your own controller" example
// (program and args; it must serve the Jobs whose spec.managedBy is
// controllerName and log a line holding "job NAMESPACE/NAME:" when it syncs
// one) and runs the scenario above against it.
func runOwnControllerScenario(t *testing.T, language, controllerName, program string, args ...string) {
	t.Helper()
	logPath := filepath.Join(e.dir, "my-controller-"+language+".log")
	p, err := harness.StartProcess("my-controller-"+language, logPath, program, args...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.Stop(10 * time.Second)
		if t.Failed() {
			t.Logf("example controller log (tail):\n%s", p.Tail(40))
		}
	})

	ns := newNamespace(t)
	withKubelet(t, ns)
	j := start(t, newJob(ns, "own", func(job *batchv1.Job) {
		job.Spec.ManagedBy = ptr.To(controllerName)
		job.Spec.Parallelism = ptr.To[int32](2)
		job.Spec.Completions = ptr.To[int32](3)
		job.Spec.BackoffLimit = ptr.To[int32](1)
		job.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{
			onExitCodes(batchv1.PodFailurePolicyActionFailJob, 42),
			onDisruption(batchv1.PodFailurePolicyActionIgnore),
		}}
	}), 3*time.Minute)

	first := j.waitActive(2)
	// A disruption: ignored, replaced at once, not counted.
	j.finish(first[:1], harness.Disrupted())
	second := j.waitActive(2)
	if names(second)[0] == first[0].Name || names(second)[1] == first[0].Name {
		j.fatalf("the disrupted pod %s is still active", first[0].Name)
	}
	j.expectCounts(2, 0, 0)
	// A counted failure (exit code 1 matches no rule): one of backoffLimit 1.
	failed := second[0]
	if failed.Name != first[1].Name {
		failed = second[1]
	}
	j.finish([]corev1.Pod{failed}, harness.Failed(1))
	j.waitStatus("failed=1", func(s *batchv1.JobStatus) bool { return s.Failed == 1 })
	third := j.waitActive(2)
	j.finish(third, harness.Succeeded())
	j.waitStatus("succeeded=2", func(s *batchv1.JobStatus) bool { return s.Succeeded == 2 })
	last := j.waitActive(1)
	j.finish(last, harness.Succeeded())

	job := j.waitCondition(batchv1.JobComplete)
	if hasCondition(job, batchv1.JobFailed) {
		j.fatalf("the Job both completed and failed")
	}
	j.expectCounts(0, 3, 1)
	j.waitFinalizersGone()
	all := j.pods()
	if len(all) != 5 {
		j.fatalf("%d pods were created, want 5 (2, a replacement for the disruption, one for the failure, the last completion): %v", len(all), names(all))
	}
	var phases []string
	for _, p := range all {
		phases = append(phases, string(p.Status.Phase))
	}
	slices.Sort(phases)
	if got := strings.Join(phases, ","); got != "Failed,Failed,Succeeded,Succeeded,Succeeded" {
		j.fatalf("pod phases %s", got)
	}
	if log, err := os.ReadFile(logPath); err != nil || !strings.Contains(string(log), fmt.Sprintf("job %s/own:", ns)) {
		j.fatalf("the example controller's log does not show it syncing the Job (err %v)", err)
	}
}

func names(pods []corev1.Pod) []string {
	out := make([]string, len(pods))
	for i, p := range pods {
		out[i] = p.Name
	}
	return out
}
