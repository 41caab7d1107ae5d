package tests

import (
	"context"
	"fmt"
	"io"
	"math/bits"
	"math/rand/v2"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/sharding"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"job-decider.dev/e2e/cluster"
	"job-decider.dev/e2e/harness"
)

// Issue 27: two shim replicas, two shards, on the shared cluster, whose API
// server has ShardedListAndWatch on: each replica's informers ask the API
// server for their range. One replica is killed mid-Job; the other takes its
// shard's Lease once it expires and finishes its Jobs with exact counts and
// no duplicate pod.
func TestTwoShardsOneReplicaKilledTheOtherFinishesItsJobs(t *testing.T) {
	t.Parallel()
	runShardFailover(t, e.client, e.cluster.Kubeconfig, "server")
}

// The same on an API server without the gate: the shim finds out (no
// shardInfo in the answer to a list with a shardSelector) and keeps its
// range on the client side.
func TestShardsFallBackToClientSideFilteringWithTheGateOff(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	c, err := cluster.Start(cluster.Options{Dir: filepath.Join(dir, "cluster"), Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Stop)
	runShardFailover(t, kubernetes.NewForConfigOrDie(c.Config), c.Kubeconfig, "client")
}

// shardOf is the shard of a namespace among count, as the API server cuts
// them (KEP-5866: FNV-1a of metadata.namespace, equal ranges of 2^64).
func shardOf(namespace string, count uint64) int {
	var h uint64
	if _, err := fmt.Sscanf(sharding.HashField(namespace), "%x", &h); err != nil {
		return -1
	}
	// floor(h·count / 2^64): the range that holds h.
	hi, _ := bits.Mul64(h, count)
	return int(hi)
}

func runShardFailover(t *testing.T, client kubernetes.Interface, kubeconfig, wantMode string) {
	name := "job-decider.dev/shards-" + wantMode
	lease := "shards-" + wantMode
	replica := func(id string, home int) *harness.Shim {
		return startShimReplica(t, harness.ShimOptions{
			Kubeconfig:     kubeconfig,
			DeciderAddr:    e.decider.Addr,
			ControllerName: name,
			LogPath:        filepath.Join(e.dir, lease+"-"+id+".log"),
			Args:           append(fastShimArgs(lease), "--shards=2", fmt.Sprintf("--home-shard=%d", home)),
			Identity:       id,
		})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	// Two namespaces on each shard.
	var namespaces [2][]string
	for len(namespaces[0]) < 2 || len(namespaces[1]) < 2 {
		ns := fmt.Sprintf("shards-%s-%08x", wantMode, rand.Uint32())
		s := shardOf(ns, 2)
		if len(namespaces[s]) == 2 {
			continue
		}
		if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		namespaces[s] = append(namespaces[s], ns)
	}

	a := replica("a", 0)
	b := replica("b", 1)
	holder := func(i int) string { return leaseHolderOn(ctx, client, fmt.Sprintf("shim-%s-shard-%d", lease, i)) }
	if err := harness.Poll(ctx, 50*time.Millisecond, 30*time.Second, func(context.Context) (bool, error) {
		return holder(0) == "a" && holder(1) == "b", nil
	}); err != nil {
		t.Fatalf("shard 0 held by %q, shard 1 by %q; want a and b: %v", holder(0), holder(1), err)
	}
	for _, s := range []*harness.Shim{a, b} {
		if log := readFile(s.Process().LogPath); !strings.Contains(log, `selectorMode="`+wantMode+`"`) {
			t.Fatalf("the shim did not pick the %s-side range:\n%s", wantMode, s.Process().Tail(20))
		}
	}

	var jobs [2][]*jt
	for s := range 2 {
		for _, ns := range namespaces[s] {
			jobs[s] = append(jobs[s], startOn(t, client, newJob(ns, "sharded", func(job *batchv1.Job) {
				job.Spec.ManagedBy = ptr.To(name)
				job.Spec.Parallelism = ptr.To[int32](2)
				job.Spec.Completions = ptr.To[int32](4)
			}), 3*time.Minute))
		}
	}
	first := map[*jt][]corev1.Pod{}
	for s := range 2 {
		for _, j := range jobs[s] {
			first[j] = j.waitActive(2)
		}
	}
	// Each replica acts on its own shard only.
	if got := shardOwned(t, a); got != "0=1 1=0" {
		t.Errorf("a's shard_owned: %s, want 0=1 1=0", got)
	}
	if got := shardOwned(t, b); got != "0=0 1=1" {
		t.Errorf("b's shard_owned: %s, want 0=0 1=1", got)
	}

	if wantMode == "server" {
		// The API server itself serves each replica's range: it counts
		// the sharded watches open on Jobs and on pods (two replicas, one
		// shard each; no other test here shards).
		for _, resource := range []string{"jobs", "pods"} {
			if n := apiserverShardedWatches(t, ctx, client, resource); n < 2 {
				t.Errorf("the API server serves %v sharded watches of %s, want 2 or more", n, resource)
			}
		}
	}

	b.Kill()
	killed := time.Now()
	for _, j := range append(jobs[0], jobs[1]...) {
		j.finish(first[j], harness.Succeeded())
	}
	if err := harness.Poll(ctx, 50*time.Millisecond, 30*time.Second, func(context.Context) (bool, error) { return holder(1) == "a", nil }); err != nil {
		t.Fatalf("shard 1 still held by %q 30 s after b was killed: %v", holder(1), err)
	}
	t.Logf("a took shard 1 %s after b was killed", time.Since(killed).Round(10*time.Millisecond))
	for _, j := range append(jobs[0], jobs[1]...) {
		j.finish(j.waitActive(2), harness.Succeeded())
	}
	for _, j := range append(jobs[0], jobs[1]...) {
		j.waitCondition(batchv1.JobComplete)
		j.expectCounts(0, 4, 0)
		j.waitFinalizersGone()
		// No pod is ever deleted here (no garbage collector), so every
		// pod ever created is listed: exactly one per completion.
		if pods := j.pods(); len(pods) != 4 {
			j.fatalf("%s: %d pods created, want 4 (none twice)", j.job.Namespace, len(pods))
		}
	}
	if got := shardOwned(t, a); got != "0=1 1=1" {
		t.Errorf("a's shard_owned after the failover: %s, want 0=1 1=1", got)
	}
}

// shardOwned reads a replica's job_decider_shim_shard_owned, as "0=1 1=0".
func shardOwned(t *testing.T, s *harness.Shim) string {
	t.Helper()
	resp, err := http.Get("http://" + s.HTTPAddr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for i := range 2 {
		v := "?"
		prefix := fmt.Sprintf(`job_decider_shim_shard_owned{shard="%d"} `, i)
		for _, line := range strings.Split(string(body), "\n") {
			if rest, ok := strings.CutPrefix(line, prefix); ok {
				v = rest
			}
		}
		out = append(out, fmt.Sprintf("%d=%s", i, v))
	}
	return strings.Join(out, " ")
}

// apiserverShardedWatches is the API server's apiserver_watch_shards_total
// for a resource: the watches open with a shardSelector.
func apiserverShardedWatches(t *testing.T, ctx context.Context, client kubernetes.Interface, resource string) float64 {
	t.Helper()
	body, err := client.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		t.Fatal(err)
	}
	total := 0.0
	for _, line := range strings.Split(string(body), "\n") {
		if !strings.HasPrefix(line, "apiserver_watch_shards_total{") || !strings.Contains(line, `resource="`+resource+`"`) {
			continue
		}
		var v float64
		if _, err := fmt.Sscan(line[strings.LastIndexByte(line, ' ')+1:], &v); err == nil {
			total += v
		}
	}
	return total
}
