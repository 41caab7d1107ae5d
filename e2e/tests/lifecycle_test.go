package tests

import (
	"context"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"job-decider.dev/e2e/harness"
)

// The shim serves health and metrics, holds the Lease while it runs, and on
// SIGTERM drains, releases the Lease and exits 0.
func TestShimHealthMetricsAndGracefulShutdown(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	shim, err := harness.NewShim(harness.ShimOptions{
		Kubeconfig:     e.cluster.Kubeconfig,
		DeciderAddr:    e.decider.Addr,
		ControllerName: "job-decider.dev/lifecycle-test",
		LogPath:        filepath.Join(e.dir, "lifecycle-shim.log"),
		Args:           fastShimArgs("lifecycle"),
		Identity:       "lifecycle",
	})
	if err != nil {
		t.Fatal(err)
	}
	shim.RequireStarted(t)
	defer shim.Kill()

	get := func(path string) (int, string) {
		resp, err := http.Get("http://" + shim.HTTPAddr + path)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	err = harness.Poll(ctx, 50*time.Millisecond, 20*time.Second, func(ctx context.Context) (bool, error) {
		lease, err := e.client.CoordinationV1().Leases("default").Get(ctx, "shim-lifecycle", metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		code, _ := get("/readyz")
		return ptr.Deref(lease.Spec.HolderIdentity, "") == "lifecycle" && code == http.StatusOK, nil
	})
	if err != nil {
		t.Fatalf("the shim did not become a ready leader: %v\n%s", err, shim.Process().Tail(20))
	}
	if code, body := get("/healthz"); code != http.StatusOK {
		t.Errorf("/healthz: %d %s", code, body)
	}
	// Labelled series appear once observed; these are there from the start.
	_, metrics := get("/metrics")
	for _, name := range []string{"job_decider_shim_sync_duration_seconds_bucket", "go_goroutines", "process_cpu_seconds_total"} {
		if !strings.Contains(metrics, name) {
			t.Errorf("/metrics has no %s", name)
		}
	}

	p := shim.Process()
	start := time.Now()
	p.Stop(20 * time.Second)
	if p.Err() != nil {
		t.Errorf("exit after SIGTERM: %v\n%s", p.Err(), p.Tail(20))
	}
	t.Logf("stopped in %s", time.Since(start).Round(time.Millisecond))
	lease, err := e.client.CoordinationV1().Leases("default").Get(ctx, "shim-lifecycle", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if h := ptr.Deref(lease.Spec.HolderIdentity, ""); h != "" {
		t.Errorf("the Lease is still held by %q after a graceful shutdown", h)
	}
}
