package tests

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"job-decider.dev/e2e/cluster"
	"job-decider.dev/e2e/harness"
)

// holdFinalizer keeps a deleted Job in the API server after the garbage
// collector is done with it, so that the test decides when it goes.
const holdFinalizer = "e2e.job-decider.dev/hold"

// Issue 23 hole 3, end to end with upstream's garbage collector
// (kube-controller-manager --controllers=garbagecollector) on a cluster of
// the test's own (the shared one runs no garbage collector, and other tests
// rely on that). A Job is deleted with orphan propagation while the shim is
// frozen (SIGSTOP), so that the collector, not the shim, acts first: it
// takes the Job's owner reference off every pod and drops the Job's orphan
// finalizer; the pods then finish, still carrying the tracking finalizer.
// The shim is thawed while the Job is still there, being deleted (a
// finalizer of the test's holds it), then the Job goes. Every tracking
// finalizer must go: the pods are orphans, found by the deleted Job's
// selector, and a Job being deleted adopts nothing. Then a second Job is
// deleted in the background: the collector deletes its pods, the shim lets
// them go, and none is left.
//
// Not a regression test: the shim before the hole-3 fix (59bab25) passes it
// too, here and with the thaw after the Job is gone (3 of 3 runs each). Its
// sync of a Job being deleted sent the selector-matching orphans to the
// service, whose plan removed their finalizers; the leak needs the Job to
// vanish before any sync sees it being deleted, a race between the Job and
// pod informers that this test cannot force. The unit tests of the fix
// (shim/internal/controller) drive that order directly.
func TestOrphanFinalizersGoWithTheRealGarbageCollector(t *testing.T) {
	if _, ok := cluster.FindControllerManager(); !ok {
		t.Skip("needs kube-controller-manager (not part of make test): set TEST_ASSET_KUBE_CONTROLLER_MANAGER, or build it once with make bench-cluster (30+ minutes)")
	}
	t.Parallel()
	const name = "job-decider.dev/gc-test"
	dir := t.TempDir()
	c, err := cluster.Start(cluster.Options{Dir: filepath.Join(dir, "cluster"), Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Stop)
	gc, err := c.StartControllerManager(cluster.ControllerManagerOptions{
		Controllers: []string{"garbagecollector"},
		LogPath:     filepath.Join(e.dir, "gc-test-kube-controller-manager.log"),
	}, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { gc.Stop(10 * time.Second) })
	shim := startShimReplica(t, harness.ShimOptions{
		Kubeconfig:     c.Kubeconfig,
		DeciderAddr:    e.decider.Addr,
		ControllerName: name,
		LogPath:        filepath.Join(e.dir, "gc-test-shim.log"),
		// Frozen for seconds on purpose: no Lease to lose meanwhile.
		Args: append(fastShimArgs("gc-test"), "--leader-elect=false"),
	})
	client := kubernetes.NewForConfigOrDie(c.Config)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const ns = "gc"
	if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	g := &gcJob{t: t, ctx: ctx, client: client}

	// 1. Orphan propagation, the collector first.
	g.create(newJob(ns, "orphaned", func(job *batchv1.Job) {
		job.Spec.ManagedBy = ptr.To(name)
		job.Spec.Parallelism = ptr.To[int32](3)
		job.Spec.Completions = ptr.To[int32](3)
		job.Finalizers = []string{holdFinalizer}
	}))
	pods := g.waitPods(3, true)
	if err := shim.Process().Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	thawed := false
	thaw := func() {
		if !thawed {
			thawed = true
			if err := shim.Process().Signal(syscall.SIGCONT); err != nil {
				t.Errorf("thawing the shim: %v", err)
			}
		}
	}
	defer thaw()
	if err := client.BatchV1().Jobs(ns).Delete(ctx, g.job.Name, metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationOrphan)}); err != nil {
		t.Fatal(err)
	}
	// The collector has orphaned the pods when none has an owner left
	// and the Job's orphan finalizer is gone.
	g.poll("the garbage collector to orphan the pods", func() bool {
		job, err := client.BatchV1().Jobs(ns).Get(ctx, g.job.Name, metav1.GetOptions{})
		if err != nil || slices.Contains(job.Finalizers, metav1.FinalizerOrphanDependents) {
			return false
		}
		for _, p := range g.pods() {
			if len(p.OwnerReferences) > 0 {
				return false
			}
		}
		return true
	})
	for _, p := range pods {
		if err := harness.SetPodStatus(ctx, client, ns, p.Name, harness.Succeeded()); err != nil {
			t.Fatal(err)
		}
	}
	if left := g.withFinalizer(); len(left) != 3 {
		t.Fatalf("before the shim acts, %d pods carry the finalizer, want 3: %v", len(left), left)
	}
	thaw()
	// The Job, being deleted, stays a few seconds more: it must not
	// shield its former pods, nor adopt them.
	time.Sleep(3 * time.Second)
	job, err := client.BatchV1().Jobs(ns).Get(ctx, g.job.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	job.Finalizers = slices.DeleteFunc(job.Finalizers, func(f string) bool { return f == holdFinalizer })
	if _, err := client.BatchV1().Jobs(ns).Update(ctx, job, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	g.poll("the Job to be removed", func() bool {
		_, err := client.BatchV1().Jobs(ns).Get(ctx, g.job.Name, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
	g.poll("every tracking finalizer of the orphaned pods to go", func() bool { return len(g.withFinalizer()) == 0 })
	for _, p := range g.pods() {
		if ref := metav1.GetControllerOf(&p); ref != nil {
			t.Errorf("pod %s was adopted by %s %s after its Job was deleted", p.Name, ref.Kind, ref.Name)
		}
	}

	// 2. Background propagation: the collector deletes the pods, which
	// wait on the tracking finalizer until the shim removes it.
	g.create(newJob(ns, "background", func(job *batchv1.Job) {
		job.Spec.ManagedBy = ptr.To(name)
		job.Spec.Parallelism = ptr.To[int32](3)
		job.Spec.Completions = ptr.To[int32](3)
	}))
	g.waitPods(3, true)
	if err := client.BatchV1().Jobs(ns).Delete(ctx, g.job.Name, metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)}); err != nil {
		t.Fatal(err)
	}
	// The test's kubelet ends what is deleted (exit 137), as a real one would.
	kctx, stopKubelet := context.WithCancel(ctx)
	defer stopKubelet()
	go harness.Kubelet(kctx, client, ns)
	g.poll("the garbage collector to delete every pod of the deleted Job", func() bool { return len(g.pods()) == 0 })
}

// gcJob drives the current Job of the garbage-collector test on its own
// cluster.
type gcJob struct {
	t      *testing.T
	ctx    context.Context
	client kubernetes.Interface
	job    *batchv1.Job
}

func (g *gcJob) create(job *batchv1.Job) {
	g.t.Helper()
	created, err := g.client.BatchV1().Jobs(job.Namespace).Create(g.ctx, job, metav1.CreateOptions{})
	if err != nil {
		g.t.Fatalf("creating job %s: %v", job.Name, err)
	}
	g.job = created
}

// pods are the pods of the Job by its selector, owned or not.
func (g *gcJob) pods() []corev1.Pod {
	g.t.Helper()
	pods, err := harness.JobPods(g.ctx, g.client, g.job)
	if err != nil {
		g.t.Fatalf("listing pods: %v", err)
	}
	return pods
}

func (g *gcJob) withFinalizer() []string {
	var left []string
	for _, p := range g.pods() {
		if slices.Contains(p.Finalizers, trackingFinalizer) {
			left = append(left, p.Name)
		}
	}
	return left
}

// waitPods waits until n active pods exist, each with the finalizer when
// tracked says so.
func (g *gcJob) waitPods(n int, tracked bool) []corev1.Pod {
	g.t.Helper()
	var active []corev1.Pod
	g.poll(fmt.Sprintf("%d active pods", n), func() bool {
		active = harness.ActivePods(g.pods())
		if len(active) != n {
			return false
		}
		for _, p := range active {
			if tracked && !slices.Contains(p.Finalizers, trackingFinalizer) {
				return false
			}
		}
		return true
	})
	return active
}

func (g *gcJob) poll(what string, ok func() bool) {
	g.t.Helper()
	err := harness.Poll(g.ctx, 100*time.Millisecond, 45*time.Second, func(context.Context) (bool, error) { return ok(), nil })
	if err != nil {
		var b []string
		for _, p := range g.pods() {
			b = append(b, fmt.Sprintf("%s phase=%s deleting=%v owners=%d finalizers=%v", p.Name, p.Status.Phase, p.DeletionTimestamp != nil, len(p.OwnerReferences), p.Finalizers))
		}
		g.t.Fatalf("waiting for %s: %v\npods: %v", what, err, b)
	}
}
