package tests

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/utils/ptr"

	"job-decider.dev/e2e/harness"
)

// The sidecar layout as far as a cluster without a kubelet allows: the shim
// and the decider as processes sharing a Unix socket in a directory (the
// pod's emptyDir), no TCP between them. A Job with a failed pod completes
// with exact counts; the socket has mode 0660 while served and is gone after
// the decider's graceful stop.
func TestShimAndDeciderShareAUnixSocket(t *testing.T) {
	t.Parallel()
	socketDir := t.TempDir()
	socket := filepath.Join(socketDir, "decider.sock")
	logDir := filepath.Join(e.dir, "unix-socket")
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		t.Fatal(err)
	}
	decider, err := harness.StartDeciderOnSocket(logDir, socket)
	if err != nil {
		t.Fatal(err)
	}
	defer decider.Stop(10 * time.Second)
	info, err := os.Stat(socket)
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode()&os.ModeSocket == 0 || info.Mode().Perm() != 0o660 {
		t.Errorf("socket mode %v, want a socket with 0660", info.Mode())
	}

	const name = "job-decider.dev/unix-socket-test"
	shim, err := harness.NewShim(harness.ShimOptions{
		Kubeconfig:     e.cluster.Kubeconfig,
		DeciderAddr:    decider.Addr,
		ControllerName: name,
		LogPath:        filepath.Join(logDir, "shim.log"),
		Args:           fastShimArgs("unix-socket"),
	})
	if err != nil {
		t.Fatal(err)
	}
	shim.RequireStarted(t)
	defer shim.Stop()

	ns := newNamespace(t)
	j := start(t, newJob(ns, "over-a-socket", func(job *batchv1.Job) {
		job.Spec.ManagedBy = ptr.To(name)
		job.Spec.Parallelism = ptr.To[int32](2)
		job.Spec.Completions = ptr.To[int32](2)
	}), time.Minute)
	pods := j.waitActive(2)
	j.finish(pods[:1], harness.Succeeded())
	j.finish(pods[1:], harness.Failed(1))
	pods = j.waitActive(1)
	j.finish(pods, harness.Succeeded())
	j.waitCondition(batchv1.JobComplete)
	j.expectCounts(0, 2, 1)
	j.waitFinalizersGone()

	shim.Stop()
	decider.Stop(10 * time.Second)
	if err := decider.Err(); err != nil {
		t.Errorf("the decider's exit: %v\n%s", err, decider.Tail(20))
	}
	if _, err := os.Lstat(socket); !os.IsNotExist(err) {
		t.Errorf("the socket is still there after a graceful stop: %v", err)
	}
}
