package tests

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
		s := harness.ShardOf(ns, 2)
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
	holder := func(i int) string {
		return harness.LeaseHolder(ctx, client, "default", fmt.Sprintf("shim-%s-shard-%d", lease, i))
	}
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
		// The API server itself cuts the collection by the selector the
		// shim sends (its log above says it sends one): a list with shard
		// 0's selector answers with shardInfo and only shard 0's Jobs.
		// (apiserver_watch_shards_total, the alpha gauge of open sharded
		// watches, goes negative once sharded watchers are killed, as other
		// tests here do: it cannot say how many are open.)
		checkServerCutsShard0(t, ctx, client, namespaces)
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

// checkServerCutsShard0 lists Jobs with shard 0's selector (of 2) and
// requires the API server's shardInfo and exactly the Jobs of shard 0's
// namespaces among this test's.
func checkServerCutsShard0(t *testing.T, ctx context.Context, client kubernetes.Interface, namespaces [2][]string) {
	t.Helper()
	selector := "shardRange(object.metadata.namespace, '0x0000000000000000', '0x8000000000000000')"
	list, err := client.BatchV1().Jobs("").List(ctx, metav1.ListOptions{ShardSelector: selector})
	if err != nil {
		t.Fatal(err)
	}
	if list.ShardInfo == nil || list.ShardInfo.Selector != selector {
		t.Fatalf("the API server answered a list with shard 0's selector with shardInfo %+v: not cut by it", list.ShardInfo)
	}
	seen := map[string]bool{}
	for _, j := range list.Items {
		if harness.ShardOf(j.Namespace, 2) != 0 {
			t.Errorf("shard 0's list holds Job %s/%s of shard %d", j.Namespace, j.Name, harness.ShardOf(j.Namespace, 2))
		}
		seen[j.Namespace] = true
	}
	for _, ns := range namespaces[0] {
		if !seen[ns] {
			t.Errorf("shard 0's list misses namespace %s", ns)
		}
	}
	for _, ns := range namespaces[1] {
		if seen[ns] {
			t.Errorf("shard 0's list holds namespace %s of shard 1", ns)
		}
	}
}

// The sharded overlay, run as its StatefulSet would run it: one shim per
// ordinal with the manifest's own arguments and POD_NAME from the pod's name
// (the home shard), all calling one decider started with the sidecar's
// arguments. Each replica takes the shard of its ordinal, and a Job in a
// namespace of every shard completes.
func TestShardedManifestRunsAJobOnEveryShard(t *testing.T) {
	t.Parallel()
	set := &appsv1.StatefulSet{}
	if !renderedObject(t, "StatefulSet", "job-decider-shim", set, "overlays", "sharded") || set.Spec.Replicas == nil {
		t.Fatal("the sharded overlay has no shim StatefulSet with replicas")
	}
	pod := set.Spec.Template.Spec
	if len(pod.InitContainers) != 1 || len(pod.Containers) != 1 {
		t.Fatal("the sharded overlay's pod has no decider beside the shim")
	}
	replicas := int(*set.Spec.Replicas)
	const mount = "/run/job-decider"
	dir := t.TempDir()
	logDir := filepath.Join(e.dir, "sharded-manifest")
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		t.Fatal(err)
	}
	var deciderArgs []string
	for _, a := range pod.InitContainers[0].Args {
		// Its probe and metrics ports, on free loopback ports here.
		for _, flag := range []string{"--health-addr=", "--metrics-addr="} {
			if strings.HasPrefix(a, flag) {
				port, err := cluster.FreePort()
				if err != nil {
					t.Fatal(err)
				}
				a = fmt.Sprintf("%s127.0.0.1:%d", flag, port)
			}
		}
		deciderArgs = append(deciderArgs, strings.ReplaceAll(a, mount, dir))
	}
	decider, err := harness.StartDeciderWithArgs(logDir, filepath.Join(dir, "decider.sock"), deciderArgs)
	if err != nil {
		t.Fatal(err)
	}
	defer decider.Stop(10 * time.Second)

	const name = "job-decider.dev/sharded-manifest-test"
	var shimArgs []string
	shards := 0
	for _, a := range pod.Containers[0].Args {
		a = strings.ReplaceAll(a, mount, dir)
		switch {
		case strings.HasPrefix(a, "--decider-addr="), strings.HasPrefix(a, "--controller-name="), strings.HasPrefix(a, "--http-addr="):
		case strings.HasPrefix(a, "--shards="):
			if _, err := fmt.Sscanf(a, "--shards=%d", &shards); err != nil {
				t.Fatal(err)
			}
			shimArgs = append(shimArgs, a)
		default:
			shimArgs = append(shimArgs, a)
		}
	}
	if shards != replicas {
		t.Fatalf("%d replicas run --shards=%d", replicas, shards)
	}
	var envFromPod bool
	for _, env := range pod.Containers[0].Env {
		envFromPod = envFromPod || (env.Name == "POD_NAME" && env.ValueFrom != nil && env.ValueFrom.FieldRef != nil && env.ValueFrom.FieldRef.FieldPath == "metadata.name")
	}
	if !envFromPod {
		t.Fatal("the shim has no POD_NAME from metadata.name: no home shard")
	}
	for i := range replicas {
		startShimReplica(t, harness.ShimOptions{
			Kubeconfig:     e.cluster.Kubeconfig,
			DeciderAddr:    decider.Addr,
			ControllerName: name,
			LogPath:        filepath.Join(logDir, fmt.Sprintf("shim-%d.log", i)),
			Args: append(slices.Clone(shimArgs), "--leader-elect-namespace=default", "--leader-elect-name=shim-sharded-manifest",
				"--pod-event-batch-period=50ms"),
			Identity: fmt.Sprintf("replica-%d", i),
			Env:      []string{fmt.Sprintf("POD_NAME=%s-%d", set.Name, i)},
		})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// Each ordinal holds its own shard: the default Lease duration (15 s)
	// keeps the others from taking a peer's shard before it is up.
	if err := harness.Poll(ctx, 100*time.Millisecond, 60*time.Second, func(ctx context.Context) (bool, error) {
		for i := range replicas {
			if leaseHolder(ctx, fmt.Sprintf("shim-sharded-manifest-shard-%d", i)) != fmt.Sprintf("replica-%d", i) {
				return false, nil
			}
		}
		return true, nil
	}); err != nil {
		for i := range replicas {
			t.Logf("shard %d held by %q", i, leaseHolder(ctx, fmt.Sprintf("shim-sharded-manifest-shard-%d", i)))
		}
		t.Fatalf("every replica did not take its home shard: %v", err)
	}
	for s := range replicas {
		var ns string
		for ns == "" || harness.ShardOf(ns, replicas) != s {
			ns = fmt.Sprintf("sharded-manifest-%08x", rand.Uint32())
		}
		if _, err := e.client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		j := start(t, newJob(ns, "sharded-manifest", func(job *batchv1.Job) {
			job.Spec.ManagedBy = ptr.To(name)
			job.Spec.Parallelism = ptr.To[int32](2)
			job.Spec.Completions = ptr.To[int32](2)
		}), time.Minute)
		j.finish(j.waitActive(2), harness.Succeeded())
		j.waitCondition(batchv1.JobComplete)
		j.expectCounts(0, 2, 0)
	}
}
