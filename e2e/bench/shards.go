package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"job-decider.dev/e2e/harness"
)

const (
	// shardGate turns on KEP-5866's server-side sharded list and watch.
	shardGate = "--feature-gates=ShardedListAndWatch=true"
	// leaseName is the shim's default --leader-elect-name; leaseNamespace
	// its Lease namespace when POD_NAMESPACE is unset.
	leaseName      = "job-decider-shim"
	leaseNamespace = "default"
)

// shardOpts make a shim run a sharded one: count replicas, each its own
// process with leader election on and a home shard, and optionally one of
// them killed mid-run.
type shardOpts struct {
	count int
	// kill is the shard whose home replica is SIGKILLed killAfter after the
	// Jobs were created; -1: none.
	kill      int
	killAfter time.Duration
}

// tag names the run: shim-2shards, shim-2shards-failover.
func (o *shardOpts) tag() string {
	t := fmt.Sprintf("shim-%dshards", o.count)
	if o.kill >= 0 {
		t += "-failover"
	}
	return t
}

// shardLease is the name of shard i's Lease among count.
func shardLease(i, count int) string {
	if count == 1 {
		return leaseName
	}
	return fmt.Sprintf("%s-shard-%d", leaseName, i)
}

// shardResult is what a sharded run adds to the benchmark's figures.
type shardResult struct {
	Shards int
	// Per shard: its namespaces, Jobs and the pods the runner saw.
	Namespaces, Jobs, Pods []int
	// ReplicaSyncs are each replica's job_decider_shim_syncs_total (a
	// killed replica's as read just before the kill).
	ReplicaSyncs []float64
	// DecideCalls are the service's DecideJob calls during the run.
	DecideCalls float64
	// SelectorMode is where the shim applied its range (its log), and
	// ShardedWatches the API server's apiserver_watch_shards_total at the
	// end by resource (the watches open with a shardSelector).
	SelectorMode   string
	ShardedWatches map[string]float64
	Failover       *failoverResult `json:",omitempty"`
}

// failoverResult is what happened after one replica was killed.
type failoverResult struct {
	Shard  int
	Victim string
	// KilledAfter is from the first Job created to the kill; JobsLeft the
	// shard's Jobs not finished then.
	KilledAfter time.Duration
	JobsLeft    int
	// NewHolder took the shard's Lease LeaseTaken after the kill (the
	// Lease's acquireTime); FirstPod and FirstJobWrite are the first pod
	// created and the first Job status written in the shard after that,
	// counted from the kill (0: none seen).
	NewHolder                        string
	LeaseTaken, FirstPod, FirstWrite time.Duration
}

// shardSet is a run's shim replicas and the one service they share.
type shardSet struct {
	o        shardOpts
	decider  *harness.Decider
	replicas []*harness.Shim
	specs    []jobSpec

	mu sync.Mutex
	// killedAt is when the victim was killed; its CPU seconds, metrics
	// text and the writes seen in its shard since then.
	killedAt   time.Time
	killedCPU  float64
	killedText string
	jobsLeft   int
	writes     []shardWrite
	shardOfNS  map[string]int
}

// shardWrite is one write the runner's watch saw in the victim's shard after
// the kill: a pod created or a Job updated.
type shardWrite struct {
	at  time.Time
	pod bool
}

func identity(i int) string { return fmt.Sprintf("shim-%d", i) }

// startShards starts the service and o.count shim replicas, each held to
// lim, and waits until replica i holds shard i's Lease and every replica is
// ready.
func startShards(ctx context.Context, dir, kubeconfig string, client kubernetes.Interface, lim Limits, o shardOpts, specs []jobSpec, logf func(string, ...any)) (_ *shardSet, err error) {
	d, err := harness.StartDecider(dir)
	if err != nil {
		return nil, err
	}
	s := &shardSet{o: o, decider: d, specs: specs, shardOfNS: map[string]int{}}
	for _, sp := range specs {
		s.shardOfNS[sp.ns] = harness.ShardOf(sp.ns, o.count)
	}
	defer func() {
		if err != nil {
			s.stop()
		}
	}()
	for i := range o.count {
		shim, err := harness.NewShim(harness.ShimOptions{
			Kubeconfig:     kubeconfig,
			DeciderAddr:    d.Addr,
			ControllerName: managedBy,
			LogPath:        filepath.Join(dir, identity(i)+".log"),
			Identity:       identity(i),
			Args: []string{
				"--kube-api-qps=" + strconv.FormatFloat(lim.QPS, 'f', -1, 64),
				"--kube-api-burst=" + strconv.Itoa(lim.Burst),
				"--workers=" + strconv.Itoa(lim.Workers),
				"--shards=" + strconv.Itoa(o.count),
				"--home-shard=" + strconv.Itoa(i),
				// Leader election on, at the shim's (and deploy/'s) timings.
				"--leader-elect=true",
			},
		})
		if err != nil {
			return nil, err
		}
		sctx, cancel := context.WithTimeout(ctx, time.Minute)
		err = shim.Start(sctx)
		cancel()
		s.replicas = append(s.replicas, shim)
		if err != nil {
			return nil, fmt.Errorf("starting shim replica %d: %v\n%s", i, err, shim.Process().Tail(20))
		}
	}
	deadline := time.Now().Add(90 * time.Second)
	for {
		missing := s.notReady(ctx, client)
		if missing == "" {
			break
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("shim replicas not in place after 90 s: %s", missing)
		}
		time.Sleep(200 * time.Millisecond)
	}
	logf("%d shim replica(s) hold their shards and are ready", o.count)
	return s, nil
}

// notReady says what is not in place yet: a shard not held by its home
// replica, or a replica not ready; "" when all is.
func (s *shardSet) notReady(ctx context.Context, client kubernetes.Interface) string {
	for i := range s.o.count {
		if h := harness.LeaseHolder(ctx, client, leaseNamespace, shardLease(i, s.o.count)); h != identity(i) {
			return fmt.Sprintf("shard %d held by %q", i, h)
		}
	}
	for i, r := range s.replicas {
		if _, err := httpGet(ctx, "http://"+r.HTTPAddr+"/readyz"); err != nil {
			return fmt.Sprintf("replica %d not ready: %v", i, err)
		}
	}
	return ""
}

// procs are the processes whose CPU the run reads: shim-<i> and service.
func (s *shardSet) procs() map[string]func() int {
	out := map[string]func() int{"service": s.decider.Pid}
	for i, r := range s.replicas {
		out[identity(i)] = r.Process().Pid
	}
	return out
}

// scrape is every replica's /metrics, one after the other (a killed
// replica's as read before the kill): histograms parsed from it add up.
func (s *shardSet) scrape(ctx context.Context) (string, error) {
	var b strings.Builder
	s.mu.Lock()
	b.WriteString(s.killedText)
	s.mu.Unlock()
	for i, r := range s.replicas {
		if s.isKilled(i) {
			continue
		}
		text, err := httpGet(ctx, "http://"+r.HTTPAddr+"/metrics")
		if err != nil {
			return "", err
		}
		b.WriteString(text)
	}
	return b.String(), nil
}

func (s *shardSet) isKilled(i int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return i == s.o.kill && !s.killedAt.IsZero()
}

// decideCalls is the service's DecideJob calls so far, every status code.
func (s *shardSet) decideCalls(ctx context.Context) (float64, error) {
	text, err := httpGet(ctx, "http://"+s.decider.MetricsAddr+"/metrics")
	if err != nil {
		return 0, err
	}
	return sumMetric(text, "job_decider_grpc_requests_total", `method="DecideJob"`), nil
}

// sumMetric adds up every sample of a metric whose labels contain match.
func sumMetric(text, metric, match string) float64 {
	total := 0.0
	for _, line := range strings.Split(text, "\n") {
		if !strings.HasPrefix(line, metric+"{") && !strings.HasPrefix(line, metric+" ") {
			continue
		}
		if match != "" && !strings.Contains(line, match) {
			continue
		}
		if v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64); err == nil {
			total += v
		}
	}
	return total
}

// kill SIGKILLs shard o.kill's home replica killAfter after start, having
// read its CPU and metrics; jobsLeft counts the shard's unfinished Jobs then.
func (s *shardSet) kill(ctx context.Context, start time.Time, finished func(name string) bool, logf func(string, ...any)) {
	select {
	case <-time.After(time.Until(start.Add(s.o.killAfter))):
	case <-ctx.Done():
		return
	}
	r := s.replicas[s.o.kill]
	text, _ := httpGet(ctx, "http://"+r.HTTPAddr+"/metrics")
	u, _ := readProc(r.Process().Pid())
	left := 0
	for _, sp := range s.specs {
		if s.shardOfNS[sp.ns] == s.o.kill && !finished(sp.name) {
			left++
		}
	}
	r.Kill()
	s.mu.Lock()
	s.killedAt, s.killedCPU, s.killedText, s.jobsLeft = time.Now(), u.CPUSeconds, text, left
	s.mu.Unlock()
	logf("failover: killed %s (home of shard %d, %d of its Jobs unfinished)", identity(s.o.kill), s.o.kill, left)
}

// saw records a write in the victim's shard after the kill.
func (s *shardSet) saw(ns string, pod bool) {
	if s.o.kill < 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.killedAt.IsZero() || s.shardOfNS[ns] != s.o.kill {
		return
	}
	s.writes = append(s.writes, shardWrite{at: time.Now(), pod: pod})
}

// failover reads the victim shard's Lease and the first writes after its
// new holder took it.
func (s *shardSet) failover(ctx context.Context, client kubernetes.Interface, start time.Time) (*failoverResult, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.killedAt.IsZero() {
		return nil, fmt.Errorf("failover: the replica was not killed before every Job finished (kill after %s)", s.o.killAfter)
	}
	f := &failoverResult{Shard: s.o.kill, Victim: identity(s.o.kill), KilledAfter: s.killedAt.Sub(start), JobsLeft: s.jobsLeft}
	l, err := client.CoordinationV1().Leases(leaseNamespace).Get(ctx, shardLease(s.o.kill, s.o.count), metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	f.NewHolder = ptr.Deref(l.Spec.HolderIdentity, "")
	if l.Spec.AcquireTime == nil || f.NewHolder == f.Victim {
		return f, nil
	}
	taken := l.Spec.AcquireTime.Time
	f.LeaseTaken = taken.Sub(s.killedAt)
	for _, w := range s.writes {
		if w.at.Before(taken) {
			continue
		}
		if w.pod && f.FirstPod == 0 {
			f.FirstPod = w.at.Sub(s.killedAt)
		}
		if !w.pod && f.FirstWrite == 0 {
			f.FirstWrite = w.at.Sub(s.killedAt)
		}
	}
	return f, nil
}

func (s *shardSet) stop() {
	for i, r := range s.replicas {
		if !s.isKilled(i) {
			r.Stop()
		}
	}
	s.decider.Stop(10 * time.Second)
}

// selectorMode is the range's place the replicas logged ("server", "client").
func (s *shardSet) selectorMode() string {
	modes := map[string]bool{}
	for _, r := range s.replicas {
		data, err := os.ReadFile(r.Process().LogPath)
		if err != nil {
			continue
		}
		if i := strings.Index(string(data), `selectorMode="`); i >= 0 {
			rest := string(data[i+len(`selectorMode="`):])
			if j := strings.IndexByte(rest, '"'); j >= 0 {
				modes[rest[:j]] = true
			}
		}
	}
	var out []string
	for m := range modes {
		out = append(out, m)
	}
	sort.Strings(out)
	if len(out) == 0 {
		return "one Lease (no shard ranges)"
	}
	return strings.Join(out, ",")
}

// machineTicks is the machine's busy and total CPU ticks (/proc/stat).
func machineTicks() (busy, total float64) {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0
	}
	line, _, _ := strings.Cut(string(data), "\n")
	f := strings.Fields(line)
	if len(f) < 8 || f[0] != "cpu" {
		return 0, 0
	}
	for i, v := range f[1:] {
		n, err := strconv.ParseFloat(v, 64)
		if err != nil {
			continue
		}
		// guest and guest_nice are inside user and nice already.
		if i >= 8 {
			break
		}
		total += n
		if i != 3 && i != 4 { // idle, iowait
			busy += n
		}
	}
	return busy, total
}

// result is the run's per-shard figures, read once every Job finished.
func (s *shardSet) result(ctx context.Context, client kubernetes.Interface, specs []jobSpec, pods *podTracker, callsBefore float64, start time.Time) (*shardResult, error) {
	n := s.o.count
	r := &shardResult{Shards: n, Namespaces: make([]int, n), Jobs: make([]int, n), Pods: make([]int, n), ReplicaSyncs: make([]float64, n)}
	// The namespaces that hold Jobs (a shrunk workload fills fewer).
	for _, i := range s.shardOfNS {
		r.Namespaces[i]++
	}
	for _, sp := range specs {
		r.Jobs[s.shardOfNS[sp.ns]]++
	}
	if pods != nil {
		pods.mu.Lock()
		for _, sp := range specs {
			r.Pods[s.shardOfNS[sp.ns]] += len(pods.perJob[sp.name])
		}
		pods.mu.Unlock()
	}
	for i, rep := range s.replicas {
		var text string
		if s.isKilled(i) {
			s.mu.Lock()
			text = s.killedText
			s.mu.Unlock()
		} else {
			var err error
			if text, err = httpGet(ctx, "http://"+rep.HTTPAddr+"/metrics"); err != nil {
				return nil, err
			}
		}
		r.ReplicaSyncs[i] = sumMetric(text, "job_decider_shim_syncs_total", "")
	}
	calls, err := s.decideCalls(ctx)
	if err != nil {
		return nil, err
	}
	r.DecideCalls = calls - callsBefore
	r.SelectorMode = s.selectorMode()
	if body, err := client.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx); err == nil {
		r.ShardedWatches = map[string]float64{}
		for _, res := range []string{"jobs", "pods"} {
			r.ShardedWatches[res] = sumMetric(string(body), "apiserver_watch_shards_total", `resource="`+res+`"`)
		}
	}
	if s.o.kill >= 0 {
		if r.Failover, err = s.failover(ctx, client, start); err != nil {
			return nil, err
		}
	}
	return r, nil
}
