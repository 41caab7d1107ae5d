package tests

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
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
	for _, name := range []string{"job_decider_shim_sync_duration_seconds_bucket", "job_decider_shim_workqueue_depth{name=\"job\"}", "job_decider_shim_build_info{", "go_goroutines", "process_cpu_seconds_total"} {
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

// Two replicas: one leads, the other stands by; when the leader is killed,
// the standby takes over once the Lease expires and finishes the Job.
func TestTwoReplicasFailOver(t *testing.T) {
	t.Parallel()
	const name = "job-decider.dev/ha-test"
	newReplica := func(id string) *harness.Shim {
		return startShimReplica(t, harness.ShimOptions{
			Kubeconfig:     e.cluster.Kubeconfig,
			DeciderAddr:    e.decider.Addr,
			ControllerName: name,
			LogPath:        filepath.Join(e.dir, "ha-"+id+".log"),
			Args:           fastShimArgs("ha"),
			Identity:       id,
		})
	}
	holder := func(ctx context.Context) string { return leaseHolder(ctx, "shim-ha") }
	a := newReplica("a")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := harness.Poll(ctx, 50*time.Millisecond, 20*time.Second, func(ctx context.Context) (bool, error) { return holder(ctx) == "a", nil }); err != nil {
		t.Fatalf("a did not lead: %v", err)
	}
	b := newReplica("b")

	ns := newNamespace(t)
	j := start(t, newJob(ns, "ha", func(job *batchv1.Job) {
		job.Spec.ManagedBy = ptr.To(name)
		job.Spec.Parallelism = ptr.To[int32](2)
		job.Spec.Completions = ptr.To[int32](4)
	}), 2*time.Minute)
	pods := j.waitActive(2)
	if strings.Contains(readFile(b.Process().LogPath), "Became the leader") {
		t.Fatal("the standby leads while the leader runs")
	}
	a.Kill()
	j.finish(pods, harness.Succeeded())
	if err := harness.Poll(ctx, 50*time.Millisecond, 20*time.Second, func(ctx context.Context) (bool, error) { return holder(ctx) == "b", nil }); err != nil {
		t.Fatalf("b did not take over: %v", err)
	}
	pods = j.waitActive(2)
	j.finish(pods, harness.Succeeded())
	j.waitCondition(batchv1.JobComplete)
	j.expectCounts(0, 4, 0)
	j.waitFinalizersGone()
}

// A Job deleted while its pods run leaves orphans (no garbage collector runs
// here); the shim takes the tracking finalizer off them.
func TestFinalizersOfADeletedJobAreRemoved(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	j := start(t, newJob(ns, "deleted-job", func(job *batchv1.Job) {
		job.Spec.Parallelism = ptr.To[int32](3)
		job.Spec.Completions = ptr.To[int32](3)
	}), time.Minute)
	pods := j.waitActive(3)
	j.finish(pods[:1], harness.Succeeded())
	if err := e.client.BatchV1().Jobs(ns).Delete(j.ctx, j.job.Name, metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationOrphan)}); err != nil {
		t.Fatalf("deleting the job: %v", err)
	}
	j.waitFinalizersGone()
}

func readFile(path string) string {
	data, _ := os.ReadFile(path)
	return string(data)
}

// At the shim's default client QPS and burst (50/100) and default workers,
// with every worker creating pods, the Lease stays held: its renewals do not
// queue behind the pod writes (issue 23 hole 1; the shared shim runs at
// 500 QPS, which hid this).
func TestRegressionLeaseHeldAtDefaultQPSUnderLoad(t *testing.T) {
	t.Parallel()
	const name = "job-decider.dev/default-qps-test"
	shim, err := harness.NewShim(harness.ShimOptions{
		Kubeconfig:     e.cluster.Kubeconfig,
		DeciderAddr:    e.decider.Addr,
		ControllerName: name,
		LogPath:        filepath.Join(e.dir, "default-qps-shim.log"),
		// The defaults but for the Lease's name: QPS, burst, workers, the
		// Lease's durations and the decide timeout are the shim's own.
		Args:     []string{"--leader-elect-name=shim-default-qps", "--v=2"},
		Identity: "default-qps",
	})
	if err != nil {
		t.Fatal(err)
	}
	shim.RequireStarted(t)
	defer shim.Kill()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	holder := func(ctx context.Context) string { return leaseHolder(ctx, "shim-default-qps") }
	if err := harness.Poll(ctx, 100*time.Millisecond, 30*time.Second, func(ctx context.Context) (bool, error) { return holder(ctx) == "default-qps", nil }); err != nil {
		t.Fatalf("the shim did not lead: %v\n%s", err, shim.Process().Tail(20))
	}
	// Five Jobs of 500 pods: each worker's plan is 500 creations in
	// slow-start batches, about 2,500 writes queued behind a 50 QPS limiter.
	const jobs, perJob = 5, 500
	ns := newNamespace(t)
	for i := range jobs {
		job := newJob(ns, fmt.Sprint("load-", i), func(job *batchv1.Job) {
			job.Spec.ManagedBy = ptr.To(name)
			job.Spec.Parallelism = ptr.To[int32](perJob)
			job.Spec.Completions = ptr.To[int32](perJob)
		})
		if _, err := e.client.BatchV1().Jobs(ns).Create(ctx, job, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// Until every pod exists, the Lease must stay with the one process,
	// renewed within its duration.
	var lastRenew time.Time
	err = harness.Poll(ctx, 500*time.Millisecond, 3*time.Minute, func(ctx context.Context) (bool, error) {
		if p := shim.Process(); p.Exited() {
			return false, fmt.Errorf("the shim exited: %v\n%s", p.Err(), p.Tail(30))
		}
		lease, err := e.client.CoordinationV1().Leases("default").Get(ctx, "shim-default-qps", metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		if h := ptr.Deref(lease.Spec.HolderIdentity, ""); h != "default-qps" {
			return false, fmt.Errorf("the Lease is held by %q", h)
		}
		if lease.Spec.RenewTime != nil {
			lastRenew = lease.Spec.RenewTime.Time
		}
		if age := time.Since(lastRenew); !lastRenew.IsZero() && age > 15*time.Second {
			return false, fmt.Errorf("the Lease was last renewed %s ago, past its 15s duration", age.Round(time.Second))
		}
		pods, err := e.client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		return len(pods.Items) == jobs*perJob, nil
	})
	if err != nil {
		t.Fatalf("under load at the default QPS: %v\n%s", err, shim.Process().Tail(20))
	}
	if log := readFile(shim.Process().LogPath); strings.Contains(log, "Lost the leader Lease") || strings.Contains(log, "failed to renew lease") {
		t.Errorf("the shim lost or failed to renew its Lease:\n%s", shim.Process().Tail(30))
	}
}
