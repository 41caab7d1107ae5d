package tests

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"job-decider.dev/e2e/harness"
)

// podWatch polls a namespace's pods in the background and remembers the
// worst it saw: the most pods active at once, per Job and per completion
// index, and every pod that ever existed.
type podWatch struct {
	mu sync.Mutex
	// maxActive is the most active pods of one Job seen at once.
	maxActive map[string]int
	// maxPerIndex is the most active pods of one Job's index seen at once, as "job/index".
	maxPerIndex map[string]int
	// seen is every pod name seen, by Job.
	seen map[string]map[string]bool
}

func watchPods(ctx context.Context, ns string) *podWatch {
	w := &podWatch{maxActive: map[string]int{}, maxPerIndex: map[string]int{}, seen: map[string]map[string]bool{}}
	go func() {
		for ctx.Err() == nil {
			if pods, err := e.client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{}); err == nil {
				w.observe(pods.Items)
			}
			select {
			case <-ctx.Done():
			case <-time.After(30 * time.Millisecond):
			}
		}
	}()
	return w
}

func (w *podWatch) observe(pods []corev1.Pod) {
	w.mu.Lock()
	defer w.mu.Unlock()
	active := map[string]int{}
	perIndex := map[string]int{}
	for _, p := range pods {
		job := p.Labels["job-name"]
		if w.seen[job] == nil {
			w.seen[job] = map[string]bool{}
		}
		w.seen[job][p.Name] = true
		if len(harness.ActivePods([]corev1.Pod{p})) == 0 {
			continue
		}
		active[job]++
		if idx, ok := p.Labels[indexLabel]; ok {
			perIndex[job+"/"+idx]++
		}
	}
	for k, n := range active {
		w.maxActive[k] = max(w.maxActive[k], n)
	}
	for k, n := range perIndex {
		w.maxPerIndex[k] = max(w.maxPerIndex[k], n)
	}
}

// check fails the test on any Job that had more than parallelism pods
// active at once, or an index with two active pods at once.
func (w *podWatch) check(t *testing.T, parallelism map[string]int) {
	t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	for job, p := range parallelism {
		if w.maxActive[job] > p {
			t.Errorf("job %s: %d pods active at once, parallelism %d", job, w.maxActive[job], p)
		}
	}
	var dup []string
	for k, n := range w.maxPerIndex {
		if n > 1 {
			dup = append(dup, fmt.Sprintf("%s×%d", k, n))
		}
	}
	sort.Strings(dup)
	if len(dup) > 0 {
		t.Errorf("indexes with two active pods at once: %v", dup)
	}
}

// podsPerIndex counts a Job's pods (every pod that exists, whatever its
// state) by completion index.
func podsPerIndex(pods []corev1.Pod) map[string]int {
	out := map[string]int{}
	for _, p := range pods {
		out[p.Labels[indexLabel]]++
	}
	return out
}

// A standby whose watch lags takes over from a leader that was creating
// pods a moment before it died. Without a freshness barrier the new leader
// acts on a cache that lacks the old leader's last creations and creates
// those indexes again: duplicate pods, over-parallelism, extra counts
// (issue 23 hole 2; kubernetes/kubernetes#130103's class of bug).
func TestRegressionStandbyWithLaggingCacheCreatesNoDuplicatePods(t *testing.T) {
	t.Parallel()
	const (
		name        = "job-decider.dev/failover-lag-test"
		lease       = "failover-lag"
		parallelism = 6
		completions = 2 * parallelism
		lag         = 5 * time.Second
	)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	proxy, err := harness.StartFaultProxy(e.dir, e.cluster.Config, e.cluster.Kubeconfig, 23)
	if err != nil {
		t.Fatal(err)
	}
	defer proxy.Close()
	newReplica := func(id, kubeconfig string, extra ...string) *harness.Shim {
		return startShimReplica(t, harness.ShimOptions{
			Kubeconfig:     kubeconfig,
			DeciderAddr:    e.decider.Addr,
			ControllerName: name,
			LogPath:        filepath.Join(e.dir, "failover-lag-"+id+".log"),
			Args:           append(fastShimArgs(lease), extra...),
			Identity:       id,
		})
	}
	holder := func(ctx context.Context) string { return leaseHolder(ctx, "shim-"+lease) }
	// The leader batches pod events for a second: its replacements land
	// well after the completions that caused them, which is the window a
	// lagging successor acts in.
	a := newReplica("a", e.cluster.Kubeconfig, "--pod-event-batch-period=1s")
	if err := harness.Poll(ctx, 50*time.Millisecond, 20*time.Second, func(ctx context.Context) (bool, error) { return holder(ctx) == "a", nil }); err != nil {
		t.Fatalf("a did not lead: %v", err)
	}
	b := newReplica("b", proxy.Kubeconfig)
	if err := harness.Poll(ctx, 50*time.Millisecond, 20*time.Second, func(context.Context) (bool, error) {
		return proxy.Stats().Watches >= 2, nil
	}); err != nil {
		t.Fatalf("the standby did not watch through the proxy: %v (%s)", err, proxy.Stats())
	}

	ns := newNamespace(t)
	kctx, stopKubelet := context.WithCancel(ctx)
	defer stopKubelet()
	go harness.Kubelet(kctx, e.client, ns)
	watch := watchPods(kctx, ns)
	j := start(t, newJob(ns, "lag", func(job *batchv1.Job) {
		job.Spec.ManagedBy = ptr.To(name)
		job.Spec.CompletionMode = ptr.To(batchv1.IndexedCompletion)
		job.Spec.Parallelism = ptr.To[int32](parallelism)
		job.Spec.Completions = ptr.To[int32](completions)
	}), 2*time.Minute)
	first := j.waitActive(parallelism)
	j.finish(first, harness.Running(true))
	// The standby has seen the first pods running; from now on its watch
	// runs lag behind.
	time.Sleep(time.Second)
	proxy.SetWatchDelay(lag, lag)
	j.finish(first, harness.Succeeded())
	// The leader replaces them; it dies the moment its pods exist.
	if err := harness.Poll(ctx, 20*time.Millisecond, 20*time.Second, func(context.Context) (bool, error) {
		return len(j.pods()) >= completions, nil
	}); err != nil {
		j.fatalf("the leader did not replace the finished pods: %v", err)
	}
	a.Kill()
	killed := time.Now()
	if err := harness.Poll(ctx, 50*time.Millisecond, 20*time.Second, func(ctx context.Context) (bool, error) { return holder(ctx) == "b", nil }); err != nil {
		t.Fatalf("b did not take over: %v", err)
	}
	t.Logf("b leads %s after the kill", time.Since(killed).Round(time.Millisecond))
	// Give the successor the whole lag to act (or not) on its old cache,
	// then let its watch run live again so the rest finishes quickly.
	time.Sleep(lag + 2*time.Second)
	proxy.SetWatchDelay(0, 0)
	t.Logf("proxy: %s", proxy.Stats())

	// Play the kubelet until the Job is done: every active pod succeeds.
	err = harness.Poll(ctx, 100*time.Millisecond, time.Minute, func(context.Context) (bool, error) {
		if hasCondition(j.get(), batchv1.JobComplete) || hasCondition(j.job, batchv1.JobFailed) {
			return true, nil
		}
		for _, p := range harness.ActivePods(j.pods()) {
			_ = harness.SetPodStatus(ctx, e.client, ns, p.Name, harness.Succeeded())
		}
		return false, nil
	})
	if err != nil {
		j.fatalf("the Job did not finish: %v\n%s", err, b.Process().Tail(20))
	}
	j.waitFinalizersGone()
	stopKubelet()

	watch.check(t, map[string]int{"lag": parallelism})
	pods := j.pods()
	var extra []string
	for idx, n := range podsPerIndex(pods) {
		if n != 1 {
			extra = append(extra, fmt.Sprintf("index %s: %d pods", idx, n))
		}
	}
	sort.Strings(extra)
	if len(pods) != completions || len(extra) > 0 {
		t.Errorf("%d pods for %d completions; %s", len(pods), completions, strings.Join(extra, ", "))
	}
	if !hasCondition(j.job, batchv1.JobComplete) {
		t.Errorf("the Job did not complete: %s", describeStatus(&j.job.Status))
	}
	j.expectCounts(0, completions, 0)
	if log := readFile(b.Process().LogPath); !strings.Contains(log, "Became the leader") {
		t.Errorf("b never said it leads")
	}
}
