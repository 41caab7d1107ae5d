package tests

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"job-decider.dev/e2e/harness"
)

const crashShimName = "job-decider.dev/crash-test"

// The crash test runs Jobs under a shim that is killed and restarted at
// random points, while the test plays the kubelet and decides every pod's
// outcome. The final status of each Job must equal what the test decided:
// no pod lost, none counted twice, none created twice, none left with the
// finalizer.
func TestCrashAndRestart(t *testing.T) {
	t.Parallel()
	const (
		minKills  = 50
		maxRounds = 6
		timeout   = 10 * time.Minute
	)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	ns := newNamespace(t)
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 7))

	shim, err := harness.NewShim(harness.ShimOptions{
		Kubeconfig:     e.cluster.Kubeconfig,
		DeciderAddr:    e.decider.Addr,
		ControllerName: crashShimName,
		LogPath:        filepath.Join(e.dir, "crash-shim.log"),
		Args: append(fastShimArgs("crash"),
			"--namespace="+ns,
			// Exits on its own between the steps of some plans, on top
			// of the SIGKILLs at arbitrary points.
			"--testing-exit-between-steps=0.03",
			// And sees some of its pod and Job writes fail: before they
			// are sent, or (pod patches, status writes) after they landed.
			"--testing-write-fault-rate=0.03"),
	})
	if err != nil {
		t.Fatal(err)
	}
	shim.SetIdentity("crash-0")
	k := &killer{t: t, shim: shim, rng: rand.New(rand.NewPCG(seed, 11))}
	k.start(ctx)
	defer shim.Stop()

	kub := &crashKubelet{ns: ns, rng: rng, truth: map[string]*truth{}, seen: map[types.UID]bool{}}
	kubCtx, stopKubelet := context.WithCancel(ctx)
	kubDone := make(chan struct{})
	go func() {
		defer close(kubDone)
		kub.run(kubCtx)
	}()

	killCtx, stopKilling := context.WithCancel(ctx)
	killDone := make(chan struct{})
	go func() {
		defer close(killDone)
		k.loop(killCtx)
	}()

	var jobs []*batchv1.Job
	roundStart := time.Now()
	for round := 0; round < maxRounds && (round == 0 || k.total() < minKills); round++ {
		batch := crashJobs(ns, round)
		for _, job := range batch {
			kub.register(job)
			created, err := e.client.BatchV1().Jobs(ns).Create(ctx, job, metav1.CreateOptions{})
			if err != nil {
				t.Fatalf("creating %s: %v", job.Name, err)
			}
			jobs = append(jobs, created)
		}
		err := harness.Poll(ctx, 200*time.Millisecond, time.Until(deadline(ctx)), func(ctx context.Context) (bool, error) {
			for _, job := range batch {
				cur, err := e.client.BatchV1().Jobs(ns).Get(ctx, job.Name, metav1.GetOptions{})
				if err != nil {
					return false, err
				}
				if !hasCondition(cur, batchv1.JobComplete) && !hasCondition(cur, batchv1.JobFailed) {
					return false, nil
				}
			}
			return true, nil
		})
		if err != nil {
			stopKilling()
			<-killDone
			t.Fatalf("round %d did not finish: %v\n%s\nshim log:\n%s", round, err, describeJobs(ns, batch), shim.Process().Tail(40))
		}
		t.Logf("round %d: %d jobs finished; %d kills so far (%s)", round, len(batch), k.total(), time.Since(roundStart).Round(time.Second))
	}
	stopKilling()
	<-killDone
	// A live shim takes the last finalizers off.
	k.ensureRunning(ctx)
	for _, job := range jobs {
		jj := &jt{t: t, ctx: ctx, client: e.client, job: job}
		jj.waitFinalizersGone()
	}
	stopKubelet()
	<-kubDone

	if errs := kub.errors(); len(errs) > 0 {
		t.Errorf("the controller misbehaved:\n%s", strings.Join(errs, "\n"))
	}
	for _, job := range jobs {
		kub.check(t, ctx, job)
	}
	notSent, landed := countFaults(t, filepath.Join(e.dir, "crash-shim.log"))
	stuck := kub.stuckCount()
	t.Logf("kills: %d SIGKILL at random moments, %d exits between the steps of a plan, %d starts; write faults: %d not sent, %d landed but reported failed; %d jobs, %d pods (%d left stuck Pending for the controller to fail)",
		k.sigkills, k.stepExits, shim.Starts, notSent, landed, len(jobs), kub.podCount(), stuck)
	if stuck == 0 {
		t.Errorf("no pod was left stuck: the pending timeout went untested")
	}
	if notSent == 0 || landed == 0 {
		t.Errorf("write faults: %d not sent, %d landed; want both kinds", notSent, landed)
	}
	if k.total() < minKills {
		t.Errorf("only %d kills, want at least %d", k.total(), minKills)
	}
	if k.stepExits == 0 {
		t.Errorf("no kill happened between the steps of a plan")
	}
}

// crashJobs is one round of Jobs of different kinds.
func crashJobs(ns string, round int) []*batchv1.Job {
	name := func(s string) string { return fmt.Sprintf("r%d-%s", round, s) }
	forCrash := func(job *batchv1.Job) { job.Spec.ManagedBy = ptr.To(crashShimName) }
	return []*batchv1.Job{
		newJob(ns, name("nonindexed"), forCrash, func(job *batchv1.Job) {
			job.Spec.Parallelism = ptr.To[int32](6)
			job.Spec.Completions = ptr.To[int32](30)
			job.Spec.BackoffLimit = ptr.To[int32](1000)
		}),
		newJob(ns, name("indexed"), forCrash, func(job *batchv1.Job) {
			job.Spec.CompletionMode = ptr.To(batchv1.IndexedCompletion)
			job.Spec.Parallelism = ptr.To[int32](8)
			job.Spec.Completions = ptr.To[int32](16)
			job.Spec.BackoffLimit = ptr.To[int32](1000)
		}),
		newJob(ns, name("per-index"), forCrash, func(job *batchv1.Job) {
			job.Spec.CompletionMode = ptr.To(batchv1.IndexedCompletion)
			job.Spec.Parallelism = ptr.To[int32](5)
			job.Spec.Completions = ptr.To[int32](10)
			job.Spec.BackoffLimitPerIndex = ptr.To[int32](1)
		}),
		newJob(ns, name("ignore"), forCrash, func(job *batchv1.Job) {
			job.Spec.Parallelism = ptr.To[int32](4)
			job.Spec.Completions = ptr.To[int32](16)
			job.Spec.BackoffLimit = ptr.To[int32](1000)
			job.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{
				onDisruption(batchv1.PodFailurePolicyActionIgnore),
			}}
		}),
		// Some pods stay stuck pulling their image: the shim fails them
		// (FailPods: a status patch, then a delete) under the same kills
		// and write faults, and each must be counted exactly once.
		newJob(ns, name("pending"), forCrash, withPolicy(`
pendingTimeout:
  seconds: 1
backoff:
  baseSeconds: 1
  maxSeconds: 2
`), func(job *batchv1.Job) {
			job.Spec.Parallelism = ptr.To[int32](4)
			job.Spec.Completions = ptr.To[int32](12)
			job.Spec.BackoffLimit = ptr.To[int32](1000)
		}),
	}
}

// killer kills and restarts the shim.
type killer struct {
	t         *testing.T
	shim      *harness.Shim
	rng       *rand.Rand
	mu        sync.Mutex
	sigkills  int
	stepExits int
}

func (k *killer) total() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.sigkills + k.stepExits
}

func (k *killer) start(ctx context.Context) {
	k.t.Helper()
	if err := k.shim.Start(ctx); err != nil {
		k.t.Fatalf("starting the crash shim: %v\n%s", err, k.shim.Process().Tail(30))
	}
}

// loop kills the shim at random moments, and restarts it whenever it is down.
func (k *killer) loop(ctx context.Context) {
	leaseWait := time.Duration(0)
	for ctx.Err() == nil {
		p := k.shim.Process()
		wait := leaseWait + time.Duration(200+k.rng.IntN(1300))*time.Millisecond
		select {
		case <-ctx.Done():
			return
		case <-p.Done():
			// It exited on its own: between the steps of a plan.
			k.mu.Lock()
			if ee, ok := p.Err().(*exec.ExitError); ok && ee.ExitCode() == 3 {
				k.stepExits++
			}
			k.mu.Unlock()
		case <-time.After(wait):
			p.Kill()
			k.mu.Lock()
			k.sigkills++
			k.mu.Unlock()
		}
		// Mostly restart as the same identity, as a restarted container
		// of the same pod would, and take the Lease over at once; every
		// fifth time as a new replica that must wait for the Lease to
		// expire.
		leaseWait = 0
		if k.shim.Starts%5 == 4 {
			k.shim.SetIdentity(fmt.Sprintf("crash-%d", k.shim.Starts))
			leaseWait = 2500 * time.Millisecond
		}
		k.restart(ctx)
	}
}

func (k *killer) restart(ctx context.Context) {
	for ctx.Err() == nil {
		if err := k.shim.Start(ctx); err == nil {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// ensureRunning restarts the shim if it is down, without the testing exits.
func (k *killer) ensureRunning(ctx context.Context) {
	if p := k.shim.Process(); p != nil && !p.Exited() {
		p.Stop(10 * time.Second)
	}
	k.shim.DropArg("--testing-exit-between-steps=0.03")
	k.restart(ctx)
}

// truth is what the test decided for one Job's pods.
type truth struct {
	indexed   bool
	perIndex  int // backoffLimitPerIndex, or -1
	succeeded int
	failed    int
	ignored   int
	// stuck pods were left Pending for the pending timeout; counted in
	// failed, and gone at the end (the controller deletes them).
	stuck     int
	completed map[int]bool
	failures  map[int]int
}

// crashKubelet gives every new pod an outcome and records it.
type crashKubelet struct {
	ns    string
	rng   *rand.Rand
	mu    sync.Mutex
	truth map[string]*truth
	seen  map[types.UID]bool
	errs  []string
	pods  int
}

func (c *crashKubelet) register(job *batchv1.Job) {
	c.mu.Lock()
	defer c.mu.Unlock()
	tr := &truth{perIndex: -1, completed: map[int]bool{}, failures: map[int]int{}}
	tr.indexed = ptr.Deref(job.Spec.CompletionMode, batchv1.NonIndexedCompletion) == batchv1.IndexedCompletion
	if job.Spec.BackoffLimitPerIndex != nil {
		tr.perIndex = int(*job.Spec.BackoffLimitPerIndex)
	}
	c.truth[job.Name] = tr
}

func (c *crashKubelet) errorf(format string, args ...any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.errs = append(c.errs, fmt.Sprintf(format, args...))
}

func (c *crashKubelet) errors() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.errs)
}

func (c *crashKubelet) podCount() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.pods
}

func (c *crashKubelet) stuckCount() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, tr := range c.truth {
		n += tr.stuck
	}
	return n
}

func (c *crashKubelet) run(ctx context.Context) {
	for ctx.Err() == nil {
		list, err := e.client.CoreV1().Pods(c.ns).List(ctx, metav1.ListOptions{})
		if err == nil {
			for _, pod := range list.Items {
				c.visit(ctx, pod)
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Duration(50+c.rng.IntN(150)) * time.Millisecond):
		}
	}
}

func (c *crashKubelet) visit(ctx context.Context, pod corev1.Pod) {
	if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return
	}
	if pod.DeletionTimestamp != nil {
		c.mu.Lock()
		already := c.seen["deleted/"+pod.UID]
		c.seen["deleted/"+pod.UID] = true
		c.mu.Unlock()
		if !already {
			c.errorf("pod %s was deleted by the controller while active (a duplicate?)", pod.Name)
		}
		return
	}
	jobName := pod.Labels["batch.kubernetes.io/job-name"]
	c.mu.Lock()
	tr := c.truth[jobName]
	if tr == nil {
		c.mu.Unlock()
		return
	}
	if c.seen["stuck/"+pod.UID] {
		c.mu.Unlock()
		return // the controller's to fail
	}
	if !c.seen[pod.UID] {
		// First sight: running for a while, finished on a later visit;
		// or, for the pending Job, sometimes stuck for good.
		c.seen[pod.UID] = true
		c.pods++
		stuck := strings.HasSuffix(jobName, "pending") && c.rng.IntN(4) == 0
		c.mu.Unlock()
		if !stuck {
			_ = harness.SetPodStatus(ctx, e.client, c.ns, pod.Name, harness.Running(c.rng.IntN(2) == 0))
			return
		}
		if err := harness.SetPodStatus(ctx, e.client, c.ns, pod.Name, harness.Waiting("ImagePullBackOff")); err != nil {
			c.mu.Lock()
			delete(c.seen, pod.UID) // decide again on a later visit
			c.pods--
			c.mu.Unlock()
			return
		}
		c.mu.Lock()
		c.seen["stuck/"+pod.UID] = true
		tr.failed++
		tr.stuck++
		c.mu.Unlock()
		return
	}
	if c.rng.IntN(3) == 0 {
		c.mu.Unlock()
		return // not yet
	}
	idx := -1
	if tr.indexed {
		idx, _ = strconv.Atoi(pod.Labels[indexLabel])
		if tr.completed[idx] {
			c.errs = append(c.errs, fmt.Sprintf("job %s: pod %s created for completed index %d", jobName, pod.Name, idx))
		}
		if tr.perIndex >= 0 && tr.failures[idx] > tr.perIndex {
			c.errs = append(c.errs, fmt.Sprintf("job %s: pod %s created for failed index %d", jobName, pod.Name, idx))
		}
	}
	var outcome harness.PodOutcome
	roll := c.rng.IntN(100)
	switch {
	case roll < 20:
		outcome = harness.Failed(1)
	case roll < 30 && strings.HasSuffix(jobName, "ignore"):
		outcome = harness.Disrupted()
	default:
		outcome = harness.Succeeded()
	}
	c.mu.Unlock()
	if err := harness.SetPodStatus(ctx, e.client, c.ns, pod.Name, outcome); err != nil {
		return // try again on a later visit (or the pod is gone)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case outcome.Phase == corev1.PodSucceeded:
		tr.succeeded++
		if tr.indexed {
			tr.completed[idx] = true
		}
	case len(outcome.Conditions) > 0:
		tr.ignored++
	default:
		tr.failed++
		if tr.indexed {
			tr.failures[idx]++
		}
	}
	c.seen["done/"+pod.UID] = true
}

// check compares a Job's final status with what the test decided.
func (c *crashKubelet) check(t *testing.T, ctx context.Context, job *batchv1.Job) {
	t.Helper()
	c.mu.Lock()
	tr := c.truth[job.Name]
	c.mu.Unlock()
	cur, err := e.client.BatchV1().Jobs(c.ns).Get(ctx, job.Name, metav1.GetOptions{})
	if err != nil {
		t.Errorf("job %s: %v", job.Name, err)
		return
	}
	s := cur.Status
	wantSucceeded := tr.succeeded
	var failedIdx []int
	if tr.indexed {
		wantSucceeded = len(tr.completed)
		if tr.perIndex >= 0 {
			for i, f := range tr.failures {
				if f > tr.perIndex {
					failedIdx = append(failedIdx, i)
				}
			}
		}
	}
	var problems []string
	if int(s.Succeeded) != wantSucceeded || int(s.Failed) != tr.failed || s.Active != 0 {
		problems = append(problems, fmt.Sprintf("counts active=%d succeeded=%d failed=%d, want 0/%d/%d", s.Active, s.Succeeded, s.Failed, wantSucceeded, tr.failed))
	}
	if u := s.UncountedTerminatedPods; u != nil && len(u.Succeeded)+len(u.Failed) > 0 {
		problems = append(problems, fmt.Sprintf("uncounted pods left: %v", u))
	}
	wantCond := batchv1.JobComplete
	if len(failedIdx) > 0 {
		wantCond = batchv1.JobFailed
	}
	if !hasCondition(cur, wantCond) {
		problems = append(problems, fmt.Sprintf("no %s condition", wantCond))
	}
	if tr.indexed {
		var done []int
		for i := range tr.completed {
			done = append(done, i)
		}
		if got, want := s.CompletedIndexes, formatIndexes(done); got != want {
			problems = append(problems, fmt.Sprintf("completedIndexes %q, want %q", got, want))
		}
		if got, want := ptr.Deref(s.FailedIndexes, ""), formatIndexes(failedIdx); tr.perIndex >= 0 && got != want {
			problems = append(problems, fmt.Sprintf("failedIndexes %q, want %q", got, want))
		}
	}
	pods, err := harness.JobPods(ctx, e.client, cur)
	if err != nil {
		t.Errorf("job %s: %v", job.Name, err)
		return
	}
	// A stuck pod the controller failed is deleted, unless the delete was
	// cut off (a kill, or a status patch that landed but was reported
	// failed): then it stays, Failed, as other failed pods do.
	stuckLeft := 0
	for _, p := range pods {
		if c := podCondition(&p, pendingTimeoutCondition); c != nil && c.Status == corev1.ConditionTrue && p.Status.Phase == corev1.PodFailed {
			stuckLeft++
		}
	}
	if want := tr.succeeded + tr.failed + tr.ignored - tr.stuck + stuckLeft; len(pods) != want || stuckLeft > tr.stuck {
		problems = append(problems, fmt.Sprintf("%d pods exist, the test finished %d (%d of them left stuck, %d still there failed)", len(pods), tr.succeeded+tr.failed+tr.ignored, tr.stuck, stuckLeft))
	}
	for _, p := range pods {
		if slices.Contains(p.Finalizers, trackingFinalizer) {
			problems = append(problems, fmt.Sprintf("pod %s still has the finalizer", p.Name))
		}
	}
	if len(problems) > 0 {
		t.Errorf("job %s (%s):\n  %s", job.Name, describeStatus(&s), strings.Join(problems, "\n  "))
	}
}

// formatIndexes renders sorted indexes as upstream's interval list
// ("1,3-5,7"; an interval of two is written "8,9").
func formatIndexes(idx []int) string {
	sort.Ints(idx)
	var parts []string
	for i := 0; i < len(idx); {
		j := i
		for j+1 < len(idx) && idx[j+1] == idx[j]+1 {
			j++
		}
		switch j - i {
		case 0:
			parts = append(parts, strconv.Itoa(idx[i]))
		case 1:
			parts = append(parts, fmt.Sprintf("%d,%d", idx[i], idx[j]))
		default:
			parts = append(parts, fmt.Sprintf("%d-%d", idx[i], idx[j]))
		}
		i = j + 1
	}
	return strings.Join(parts, ",")
}

func describeJobs(ns string, jobs []*batchv1.Job) string {
	var b strings.Builder
	for _, job := range jobs {
		cur, err := e.client.BatchV1().Jobs(ns).Get(context.Background(), job.Name, metav1.GetOptions{})
		if err != nil {
			fmt.Fprintf(&b, "%s: %v\n", job.Name, err)
			continue
		}
		fmt.Fprintf(&b, "%s: %s\n", job.Name, describeStatus(&cur.Status))
	}
	return b.String()
}

func TestFormatIndexes(t *testing.T) {
	for _, c := range []struct {
		in   []int
		want string
	}{{nil, ""}, {[]int{3}, "3"}, {[]int{9, 8}, "8,9"}, {[]int{1, 3, 4, 5, 7}, "1,3-5,7"}} {
		if got := formatIndexes(c.in); got != c.want {
			t.Errorf("formatIndexes(%v) = %q, want %q", c.in, got, c.want)
		}
	}
}

// countFaults counts the write faults the shim's log reports.
func countFaults(t *testing.T, logPath string) (notSent, landed int) {
	t.Helper()
	data, err := os.ReadFile(logPath)
	if err != nil {
		t.Errorf("reading the shim log: %v", err)
		return 0, 0
	}
	log := string(data)
	return strings.Count(log, "Testing: failing an API write before sending it"),
		strings.Count(log, "Testing: an API write was sent but reported failed")
}
