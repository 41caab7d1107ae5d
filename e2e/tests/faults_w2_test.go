package tests

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"job-decider.dev/e2e/harness"
)

// w2Outcome is what the test's kubelet makes of attempt a of index i of
// Job j, the same on every run: most pods succeed; index 1 fails once
// (exit 1, retried under backoffLimitPerIndex); in even Jobs index 2 exits
// 42, which the podFailurePolicy turns into a failed index; in Job 1
// index 3 is disrupted first, which the policy ignores.
func w2Outcome(j, i, a int) harness.PodOutcome {
	switch {
	case i == 1 && a == 0:
		return harness.Failed(1)
	case i == 2 && j%2 == 0 && a == 0:
		return harness.Failed(42)
	case i == 3 && j == 1 && a == 0:
		return harness.Disrupted()
	}
	return harness.Succeeded()
}

// A small W2 (issue 23 §3): Indexed Jobs with backoffLimitPerIndex and a
// podFailurePolicy, run by a shim whose every request goes through the
// fault proxy: 5% of pod and Job writes answered 409, 429 or 500 without
// reaching the API server, every watch cut every few seconds, and watch
// events held 0–300 ms. The shim and the service lose nothing: no index
// ever has two active pods, never more than parallelism run, the counts are
// exact, every Job finishes as its outcomes say, and every finalizer goes.
func TestFaultsW2LikeWorkloadLosesNothing(t *testing.T) {
	t.Parallel()
	const (
		name        = "job-decider.dev/faults-w2-test"
		jobs        = 4
		completions = 8
		parallelism = 4
	)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	proxy, err := harness.StartFaultProxy(e.dir, e.cluster.Config, e.cluster.Kubeconfig, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer proxy.Close()
	// The Lease's own writes are spared: losing it is another test's subject.
	proxy.SetWriteFaults(0.05, "pods", "jobs")
	proxy.DropWatchesEvery(3 * time.Second)
	proxy.SetWatchDelay(0, 300*time.Millisecond)
	shim, err := harness.NewShim(harness.ShimOptions{
		Kubeconfig:     proxy.Kubeconfig,
		DeciderAddr:    e.decider.Addr,
		ControllerName: name,
		LogPath:        filepath.Join(e.dir, "faults-w2-shim.log"),
		Args:           fastShimArgs("faults-w2"),
		Identity:       "faults-w2",
	})
	if err != nil {
		t.Fatal(err)
	}
	shim.RequireStarted(t)
	defer shim.Kill()

	ns := newNamespace(t)
	kctx, stopKubelet := context.WithCancel(ctx)
	defer stopKubelet()
	go harness.Kubelet(kctx, e.client, ns)
	watch := watchPods(kctx, ns)
	var created []*batchv1.Job
	for j := range jobs {
		job := newJob(ns, fmt.Sprint("w2-", j), func(job *batchv1.Job) {
			job.Spec.ManagedBy = ptr.To(name)
			job.Spec.CompletionMode = ptr.To(batchv1.IndexedCompletion)
			job.Spec.Parallelism = ptr.To[int32](parallelism)
			job.Spec.Completions = ptr.To[int32](completions)
			job.Spec.BackoffLimitPerIndex = ptr.To[int32](1)
			job.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{
				{Action: batchv1.PodFailurePolicyActionFailIndex, OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{
					Operator: batchv1.PodFailurePolicyOnExitCodesOpIn, Values: []int32{42},
				}},
				onDisruption(batchv1.PodFailurePolicyActionIgnore),
			}}
		})
		c, err := e.client.BatchV1().Jobs(ns).Create(ctx, job, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		created = append(created, c)
	}

	// The kubelet: each new pod gets its outcome by Job, index and attempt.
	var mu sync.Mutex
	handled := map[string]bool{}
	attempts := map[string]int{}
	playKubelet := func() {
		pods, err := e.client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		for _, p := range harness.ActivePods(pods.Items) {
			if handled[p.Name] {
				continue
			}
			var j int
			if _, err := fmt.Sscanf(p.Labels["job-name"], "w2-%d", &j); err != nil {
				continue
			}
			i, err := strconv.Atoi(p.Labels[indexLabel])
			if err != nil {
				continue
			}
			key := fmt.Sprintf("%d/%d", j, i)
			if err := harness.SetPodStatus(ctx, e.client, ns, p.Name, w2Outcome(j, i, attempts[key])); err != nil {
				continue
			}
			handled[p.Name] = true
			attempts[key]++
		}
	}
	finished := func(job *batchv1.Job) bool {
		return hasCondition(job, batchv1.JobComplete) || hasCondition(job, batchv1.JobFailed)
	}
	err = harness.Poll(ctx, 100*time.Millisecond, 90*time.Second, func(ctx context.Context) (bool, error) {
		playKubelet()
		list, err := e.client.BatchV1().Jobs(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		done := 0
		for i := range list.Items {
			if finished(&list.Items[i]) {
				done++
			}
		}
		return done == jobs, nil
	})
	t.Logf("proxy: %s", proxy.Stats())
	if err != nil {
		for _, c := range created {
			if job, gerr := e.client.BatchV1().Jobs(ns).Get(ctx, c.Name, metav1.GetOptions{}); gerr == nil {
				t.Logf("%s: %s", c.Name, describeStatus(&job.Status))
			}
		}
		t.Fatalf("not every Job finished: %v\n%s", err, shim.Process().Tail(30))
	}
	for j, c := range created {
		jj := &jt{t: t, ctx: ctx, client: e.client, job: c}
		job := jj.get()
		wantFailed, wantSucceeded := int32(1), int32(completions)
		if j%2 == 0 {
			wantFailed, wantSucceeded = 2, completions-1
			if got := conditionReason(job, batchv1.JobFailed); got != batchv1.JobReasonFailedIndexes {
				t.Errorf("%s: Failed reason %q, want %s (%s)", c.Name, got, batchv1.JobReasonFailedIndexes, describeStatus(&job.Status))
			}
			if got := ptr.Deref(job.Status.FailedIndexes, ""); got != "2" {
				t.Errorf("%s: failedIndexes %q, want 2", c.Name, got)
			}
		} else if !hasCondition(job, batchv1.JobComplete) {
			t.Errorf("%s did not complete: %s", c.Name, describeStatus(&job.Status))
		}
		if s := job.Status; s.Succeeded != wantSucceeded || s.Failed != wantFailed || s.Active != 0 {
			t.Errorf("%s: counts %s, want succeeded=%d failed=%d", c.Name, describeStatus(&s), wantSucceeded, wantFailed)
		}
		jj.waitFinalizersGone()
		// Every pod the Job ever had: one per index, one more for each
		// retried index (index 1; index 3 of Job 1).
		want := map[string]int{}
		for i := range completions {
			want[strconv.Itoa(i)] = 1
		}
		want["1"] = 2
		if j == 1 {
			want["3"] = 2
		}
		got := podsPerIndex(jj.pods())
		for idx, n := range want {
			if got[idx] != n {
				t.Errorf("%s index %s: %d pods, want %d", c.Name, idx, got[idx], n)
			}
		}
	}
	stopKubelet()
	par := map[string]int{}
	for _, c := range created {
		par[c.Name] = parallelism
	}
	watch.check(t, par)
	if s := proxy.Stats(); s.Conflicts+s.TooManyRequests+s.InternalErrors == 0 || s.DroppedWatches == 0 {
		t.Errorf("the proxy injected no write faults or dropped no watch: %s", s)
	}
}
