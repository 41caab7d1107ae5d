// Package tests runs the shim and the job-decider server against a real
// kube-apiserver and etcd, with the test playing the kubelet.
package tests

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"job-decider.dev/e2e/cluster"
	"job-decider.dev/e2e/harness"
)

// shimName is the controller name of the shared shim; tests that run
// their own shim use other names, so that each Job has exactly one manager.
const shimName = "job-decider.dev/shim"

// env is the environment every test in this package shares.
type env struct {
	cluster *cluster.Cluster
	client  kubernetes.Interface
	decider *harness.Decider
	shim    *harness.Shim
	dir     string
}

var (
	e       *env
	setupOK bool
	nsSeq   atomic.Int64
)

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	start := time.Now()
	var err error
	e, err = setup()
	if err != nil {
		fmt.Fprintf(os.Stderr, "e2e setup: %v\n", err)
		if e != nil {
			e.teardown()
		}
		return 1
	}
	setupOK = true
	fmt.Fprintf(os.Stderr, "e2e setup: cluster, job-decider and shim ready in %s (logs in %s)\n", time.Since(start).Round(time.Millisecond), e.dir)
	code := m.Run()
	if code != 0 {
		fmt.Fprintf(os.Stderr, "--- shim log (tail):\n%s\n--- job-decider log (tail):\n%s\n", e.shim.Process().Tail(60), e.decider.Tail(30))
	}
	e.teardown()
	return code
}

func setup() (*env, error) {
	dir, err := os.MkdirTemp("", "job-decider-e2e-")
	if err != nil {
		return nil, err
	}
	en := &env{dir: dir}
	en.cluster, err = cluster.Start(cluster.Options{Dir: filepath.Join(dir, "cluster"), Logf: func(f string, a ...any) {
		fmt.Fprintf(os.Stderr, f+"\n", a...)
	},
		// KEP-5866's server-side sharded list and watch, alpha: the sharded
		// shim's informers use it (shards_test.go); a request without a
		// shardSelector is served as without the gate.
		ExtraAPIServerArgs: []string{"--feature-gates=ShardedListAndWatch=true"},
	})
	if err != nil {
		return en, err
	}
	en.client = kubernetes.NewForConfigOrDie(en.cluster.Config)
	if en.decider, err = startSharedDecider(dir); err != nil {
		return en, err
	}
	en.shim, err = harness.NewShim(harness.ShimOptions{
		Kubeconfig:     en.cluster.Kubeconfig,
		DeciderAddr:    en.decider.Addr,
		ControllerName: shimName,
		LogPath:        filepath.Join(dir, "shim.log"),
		Args:           fastShimArgs("shared"),
	})
	if err != nil {
		return en, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := en.shim.Start(ctx); err != nil {
		return en, fmt.Errorf("starting the shim: %v\n%s", err, en.shim.Process().Tail(30))
	}
	return en, nil
}

// startSharedDecider starts the decider every test's shared shim uses: on a
// loopback port, or with E2E_DECIDER_SOCKET=1 on a Unix socket in dir (the
// whole suite then runs over the sidecar layout's transport).
func startSharedDecider(dir string) (*harness.Decider, error) {
	if os.Getenv("E2E_DECIDER_SOCKET") != "" {
		return harness.StartDeciderOnSocket(dir, filepath.Join(dir, "decider.sock"))
	}
	return harness.StartDecider(dir)
}

// fastShimArgs are shim flags for tests: short batching and retry delays,
// and a short Lease so that a restarted shim takes over quickly.
func fastShimArgs(lease string) []string {
	return []string{
		"--pod-event-batch-period=50ms",
		"--retry-base-delay=50ms",
		"--retry-max-delay=2s",
		"--workers=4",
		"--kube-api-qps=500",
		"--kube-api-burst=1000",
		"--leader-elect-name=shim-" + lease,
		"--leader-elect-lease-duration=2s",
		"--leader-elect-renew-deadline=1500ms",
		"--leader-elect-retry-period=250ms",
		"--v=4",
	}
}

func (en *env) teardown() {
	if en.shim != nil {
		en.shim.Stop()
	}
	if en.decider != nil && en.decider.Process != nil {
		en.decider.Stop(10 * time.Second)
	}
	if en.cluster != nil {
		en.cluster.Stop()
	}
	if os.Getenv("E2E_KEEP_LOGS") == "" {
		_ = os.RemoveAll(en.dir)
	}
}

// newNamespace creates a namespace for one test. Namespaces are not deleted:
// there is no namespace controller, and the cluster goes away at the end.
func newNamespace(t *testing.T) string {
	t.Helper()
	if !setupOK {
		t.Fatal("no test environment")
	}
	name := fmt.Sprintf("%s-%d", strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(t.Name())), nsSeq.Add(1))
	if len(name) > 60 {
		name = name[len(name)-60:]
		name = strings.TrimLeft(name, "-")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := e.client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating namespace %s: %v", name, err)
	}
	return name
}

// jobSpec is a Job for the shared shim: one container, restartPolicy Never.
func newJob(ns, name string, mutate ...func(*batchv1.Job)) *batchv1.Job {
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: batchv1.JobSpec{
			ManagedBy: ptr.To(shimName),
			Template: corev1.PodTemplateSpec{
				Spec: corev1.PodSpec{
					RestartPolicy: corev1.RestartPolicyNever,
					Containers:    []corev1.Container{{Name: "main", Image: "busybox"}},
				},
			},
		},
	}
	for _, m := range mutate {
		m(job)
	}
	return job
}
