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

// The shim talks to a service that requires mTLS; a shim without a client
// certificate gets nothing done.
func TestShimOverMutualTLS(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	files, err := harness.WriteTLSFiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	logDir := filepath.Join(e.dir, "mtls")
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		t.Fatal(err)
	}
	decider, err := harness.StartDecider(logDir, "--tls-cert", files.ServerCert, "--tls-key", files.ServerKey, "--tls-client-ca", files.CA)
	if err != nil {
		t.Fatal(err)
	}
	defer decider.Stop(10 * time.Second)

	const name = "job-decider.dev/mtls-test"
	shim, err := harness.NewShim(harness.ShimOptions{
		Kubeconfig:     e.cluster.Kubeconfig,
		DeciderAddr:    decider.Addr,
		ControllerName: name,
		LogPath:        filepath.Join(logDir, "shim.log"),
		Args: append(fastShimArgs("mtls"),
			"--decider-ca="+files.CA, "--decider-cert="+files.ClientCert, "--decider-key="+files.ClientKey),
	})
	if err != nil {
		t.Fatal(err)
	}
	shim.RequireStarted(t)
	defer shim.Stop()

	ns := newNamespace(t)
	j := start(t, newJob(ns, "mtls", func(job *batchv1.Job) {
		job.Spec.ManagedBy = ptr.To(name)
		job.Spec.Parallelism = ptr.To[int32](1)
		job.Spec.Completions = ptr.To[int32](1)
	}), time.Minute)
	pods := j.waitActive(1)
	j.finish(pods, harness.Succeeded())
	j.waitCondition(batchv1.JobComplete)
	j.expectCounts(0, 1, 0)
	j.waitFinalizersGone()
}
