package main

import (
	"context"
	_ "embed"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"job-decider.dev/e2e/cluster"
	"job-decider.dev/e2e/harness"
)

//go:embed stages.yaml
var stagesYAML []byte

const (
	benchUserAgent = "bench-runner"
	namespace      = "bench"
	// managedBy is the shim's controller name in (b) runs.
	managedBy = "job-decider.dev/bench"
	// Every request is logged once, when it completes, with no bodies.
	auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived", "ResponseStarted"]
rules:
- level: Metadata
`
)

// Limits are the client rate limit and worker count both controllers get.
type Limits struct {
	Name    string
	QPS     float64
	Burst   int
	Workers int
}

// Result is one run: one workload, one controller, one set of limits.
type Result struct {
	Workload   string
	Controller string // "kcm" or "shim"
	Limits     Limits
	Jobs       int
	// PodsCreated is the controller's pod creates (audit log).
	PodsCreated int
	Wall        time.Duration
	// SyncP50/P99 are seconds from the controller's own histogram.
	SyncP50, SyncP99 float64
	Syncs            float64
	// Requests are the controller's API requests by "verb resource".
	Requests map[string]int
	// Refused are those answered 300 or above, by "verb resource code".
	Refused map[string]int `json:",omitempty"`
	CPU     float64        // seconds, every process of the controller
	PeakRSS int64          // bytes, summed over its processes
	End     map[string]jobEnd
	// Profile is CPU seconds per process between the first Job created and
	// the last one finished: the API server, etcd, KWOK, the runner and the
	// controller's own processes. It names a run's bottleneck.
	Profile map[string]float64
	// Started, Commit and the load averages say when and on what the run
	// was taken (runs saved with -results may come from several sittings).
	Started               time.Time
	Commit                string
	LoadBefore, LoadAfter string
	// WorkloadSum is the workload's fingerprint; -resume reuses a saved
	// run only for the same workload.
	WorkloadSum string
	// Fault is what a fault run saw (nil in the plain benchmark); the
	// shard benchmark fills it too (duplicates, end state = schedule).
	Fault *faultResult `json:",omitempty"`
	// MachineBusy is the share of the machine's CPU time not idle during
	// the run (/proc/stat: every process, the benchmark's and others').
	MachineBusy float64 `json:",omitempty"`
	// Perf is a system-wide profile taken during the run (-perf).
	Perf *perfResult `json:",omitempty"`
	// Shard is a sharded shim run's per-shard figures.
	Shard *shardResult `json:",omitempty"`
}

// jobEnd is the part of a finished Job both controllers must agree on.
type jobEnd struct {
	Succeeded, Failed               int32
	Conditions                      string
	CompletedIndexes, FailedIndexes string
}

// runOne runs one workload with one controller on a fresh control plane.
// With opts.faults the controller reaches the API server through the fault
// proxy, and opts.outage (shim only) stops or freezes the service mid-run.
func runOne(ctx context.Context, w *Workload, specs []jobSpec, controller string, lim Limits, workdir string, opts runOpts, logf func(string, ...any)) (_ *Result, err error) {
	tag := controller
	if opts.outage != "" {
		tag += "-service-" + opts.outage
	}
	if opts.shards != nil {
		if controller != "shim" {
			return nil, fmt.Errorf("shards are the shim's")
		}
		tag = opts.shards.tag()
	}
	dir := filepath.Join(workdir, fmt.Sprintf("%s-%s-%s", w.Name, tag, lim.Name))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	policy := filepath.Join(dir, "audit-policy.yaml")
	if err := os.WriteFile(policy, []byte(auditPolicy), 0o644); err != nil {
		return nil, err
	}
	auditLog := filepath.Join(dir, "audit.log")
	c, err := cluster.Start(cluster.Options{
		Dir:  filepath.Join(dir, "cluster"),
		Logf: logf,
		ExtraAPIServerArgs: append([]string{
			"--audit-policy-file=" + policy,
			"--audit-log-path=" + auditLog,
			"--audit-log-format=json",
			"--audit-log-mode=batch",
			"--audit-log-maxsize=0",
		}, opts.apiserverArgs...),
	})
	if err != nil {
		return nil, err
	}
	stopped := false
	stopCluster := func() {
		if !stopped {
			stopped = true
			c.Stop()
		}
	}
	defer stopCluster()

	cfg := rest.CopyConfig(c.Config)
	cfg.UserAgent = benchUserAgent
	cfg.QPS, cfg.Burst = 1000, 2000
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	for _, ns := range w.namespaceNames() {
		if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			return nil, err
		}
	}
	for i := range w.Nodes {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{
			Name:        fmt.Sprintf("kwok-node-%d", i),
			Annotations: map[string]string{nodeAnnotation: "fake"},
			Labels:      map[string]string{"type": "kwok"},
		}}
		if _, err := client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
			return nil, err
		}
	}
	stages := filepath.Join(dir, "kwok.yaml")
	if err := os.WriteFile(stages, stagesYAML, 0o644); err != nil {
		return nil, err
	}
	kwok, err := c.StartKWOK(cluster.KWOKOptions{Config: stages, NodeSelector: nodeAnnotation + "=fake", LogPath: filepath.Join(dir, "kwok.log")}, logf)
	if err != nil {
		return nil, err
	}
	defer kwok.Stop(10 * time.Second)
	if err := waitNodesReady(ctx, client, w.Nodes); err != nil {
		return nil, fmt.Errorf("%v\n%s", err, kwok.Tail(20))
	}

	// The controller's way to the API server: direct, or through the
	// fault proxy (KWOK and the runner always go direct).
	controllerKubeconfig := c.Kubeconfig
	var proxy *harness.FaultProxy
	if opts.faults != nil {
		proxy, err = harness.StartFaultProxy(dir, c.Config, c.Kubeconfig, opts.faults.seed)
		if err != nil {
			return nil, err
		}
		defer proxy.Close()
		opts.faults.apply(proxy)
		controllerKubeconfig = proxy.Kubeconfig
	}

	// The controller under test; its processes and a metrics reader for
	// the report.
	var ctlProcs map[string]func() int
	var decider *harness.Decider
	var scrape func(context.Context) (string, error)
	var histogramName string
	var stopController func()
	var shards *shardSet
	switch {
	case controller == "shim" && opts.shards != nil:
		set, err := startShards(ctx, dir, controllerKubeconfig, client, lim, *opts.shards, specs, logf)
		if err != nil {
			return nil, err
		}
		shards, decider = set, set.decider
		ctlProcs = set.procs()
		scrape = set.scrape
		histogramName = "job_decider_shim_sync_duration_seconds"
		stopController = set.stop
	case controller == "kcm":
		m, err := c.StartControllerManager(cluster.ControllerManagerOptions{
			Controllers:        []string{"job"},
			QPS:                lim.QPS,
			Burst:              lim.Burst,
			ConcurrentJobSyncs: lim.Workers,
			LogPath:            filepath.Join(dir, "kube-controller-manager.log"),
			Kubeconfig:         controllerKubeconfig,
		}, logf)
		if err != nil {
			return nil, err
		}
		ctlProcs = map[string]func() int{"kube-controller-manager": m.Pid}
		scrape = m.Scrape
		histogramName = "job_controller_job_sync_duration_seconds"
		stopController = func() { m.Stop(15 * time.Second) }
	case controller == "shim":
		d, err := harness.StartDecider(dir)
		if err != nil {
			return nil, err
		}
		decider = d
		shim, err := harness.NewShim(harness.ShimOptions{
			Kubeconfig:     controllerKubeconfig,
			DeciderAddr:    d.Addr,
			ControllerName: managedBy,
			LogPath:        filepath.Join(dir, "shim.log"),
			Args: []string{
				"--kube-api-qps=" + strconv.FormatFloat(lim.QPS, 'f', -1, 64),
				"--kube-api-burst=" + strconv.Itoa(lim.Burst),
				"--workers=" + strconv.Itoa(lim.Workers),
				// kube-controller-manager runs without leader election too.
				"--leader-elect=false",
			},
		})
		if err != nil {
			d.Stop(5 * time.Second)
			return nil, err
		}
		sctx, cancel := context.WithTimeout(ctx, time.Minute)
		err = shim.Start(sctx)
		cancel()
		if err != nil {
			d.Stop(5 * time.Second)
			return nil, fmt.Errorf("starting the shim: %v\n%s", err, shim.Process().Tail(20))
		}
		// The service's pid is read at the end: an outage may restart it.
		ctlProcs = map[string]func() int{"shim": shim.Process().Pid, "service": d.Pid}
		scrape = func(ctx context.Context) (string, error) {
			return httpGet(ctx, "http://"+shim.HTTPAddr+"/metrics")
		}
		histogramName = "job_decider_shim_sync_duration_seconds"
		stopController = func() { shim.Stop(); d.Stop(10 * time.Second) }
	default:
		return nil, fmt.Errorf("unknown controller %q", controller)
	}
	controllerStopped := false
	defer func() {
		if !controllerStopped {
			stopController()
		}
	}()

	// Finished Jobs, seen through an informer (the runner's watch).
	var finished atomic.Int64
	seen := sync.Map{}
	done := make(chan struct{})
	var doneOnce sync.Once
	var lastFinish atomic.Int64
	onJob := func(obj any) {
		j, ok := obj.(*batchv1.Job)
		if !ok || !jobFinished(j) {
			return
		}
		if _, loaded := seen.LoadOrStore(j.Name, true); loaded {
			return
		}
		lastFinish.Store(time.Now().UnixNano())
		if finished.Add(1) == int64(w.Jobs) {
			doneOnce.Do(func() { close(done) })
		}
	}
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(w.scope()))
	inf := factory.Batch().V1().Jobs().Informer()
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    onJob,
		UpdateFunc: func(_, n any) { onJob(n) },
	}); err != nil {
		return nil, err
	}
	var pods *podTracker
	if opts.faults != nil || opts.track {
		pods = trackPods(factory)
	}
	if shards != nil && shards.o.kill >= 0 {
		// The writes in the victim's shard after the kill: pods created
		// and Jobs updated (only the controller does either).
		_, _ = factory.Core().V1().Pods().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc: func(obj any) {
				if p, ok := obj.(*corev1.Pod); ok {
					shards.saw(p.Namespace, true)
				}
			},
		})
		_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			UpdateFunc: func(_, n any) {
				if j, ok := n.(*batchv1.Job); ok {
					shards.saw(j.Namespace, false)
				}
			},
		})
	}
	ictx, icancel := context.WithCancel(ctx)
	defer icancel()
	factory.Start(ictx.Done())
	factory.WaitForCacheSync(ictx.Done())

	mb := ""
	if controller == "shim" {
		mb = managedBy
	}
	apiserverPid, etcdPid := c.Pids()
	profiled := map[string]func() int{
		"kube-apiserver": func() int { return apiserverPid },
		"etcd":           func() int { return etcdPid },
		"kwok":           kwok.Pid,
		"runner":         os.Getpid,
	}
	for name, pid := range ctlProcs {
		profiled[name] = pid
	}
	loadBefore := loadAverage()
	logf("%s/%s/%s: creating %d Jobs", w.Name, tag, lim.Name, w.Jobs)
	var callsBefore float64
	if shards != nil {
		if callsBefore, err = shards.decideCalls(ctx); err != nil {
			return nil, fmt.Errorf("reading the service's metrics: %v", err)
		}
	}
	busyBefore, ticksBefore := machineTicks()
	cpuBefore := cpuOf(profiled)
	start := time.Now()
	if err := createJobs(ctx, client, w, specs, mb); err != nil {
		return nil, err
	}
	var perfDone <-chan error
	if opts.perf > 0 {
		perfDone = perfSample(ictx, filepath.Join(dir, "perf.data"), 5*time.Second, opts.perf)
	}
	if shards != nil && shards.o.kill >= 0 {
		finishedJob := func(name string) bool { _, ok := seen.Load(name); return ok }
		go shards.kill(ictx, start, finishedJob, logf)
	}
	outageDone := make(chan string, 1)
	if opts.outage != "" {
		if decider == nil {
			return nil, fmt.Errorf("a service outage needs the shim")
		}
		go func() { outageDone <- serviceOutage(ictx, decider, opts.outage, opts.faults, logf) }()
	}
	timeout := time.Duration(w.TimeoutSeconds) * time.Second
	select {
	case <-done:
	case <-time.After(timeout):
		return nil, fmt.Errorf("%s/%s/%s: %d of %d Jobs finished after %s", w.Name, controller, lim.Name, finished.Load(), w.Jobs, timeout)
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	r := &Result{Workload: w.Name, Controller: controller, Limits: lim, Jobs: w.Jobs,
		Started: start.UTC(), Commit: commit(), LoadBefore: loadBefore, LoadAfter: loadAverage(), WorkloadSum: w.sum()}
	r.Profile = cpuSince(cpuBefore, cpuOf(profiled))
	if busyAfter, ticksAfter := machineTicks(); ticksAfter > ticksBefore {
		r.MachineBusy = (busyAfter - busyBefore) / (ticksAfter - ticksBefore)
	}
	victim := ""
	if shards != nil && shards.isKilled(shards.o.kill) {
		// Gone from /proc: its CPU as read just before the kill.
		victim = identity(shards.o.kill)
		r.Profile[victim] = shards.killedCPU - cpuBefore[victim]
	}
	r.Wall = time.Unix(0, lastFinish.Load()).Sub(start)
	logf("%s/%s/%s: every Job finished in %s", w.Name, tag, lim.Name, r.Wall.Round(time.Millisecond))
	if perfDone != nil {
		comm := "job-decider-shi"
		if controller == "kcm" {
			comm = "kube-controller"
		}
		if err := <-perfDone; err != nil {
			logf("no profile: %v", err)
		} else if r.Perf, err = perfTop(filepath.Join(dir, "perf.data"), comm, opts.perf); err != nil {
			logf("no profile: %v", err)
		}
	}
	// Let the last syncs (finalizer removal after the Job finished) land
	// before reading costs.
	time.Sleep(3 * time.Second)
	if opts.faults != nil || opts.track {
		r.Fault = &faultResult{Scenario: tag}
		if opts.outage != "" {
			r.Fault.Outage = <-outageDone
		}
		// Under faults the last finalizer removals may take retries.
		if r.Fault.FinalizersLeft, err = waitFinalizersGone(ctx, client, w.scope(), 2*time.Minute); err != nil {
			return nil, err
		}
		if proxy != nil {
			r.Fault.Proxy = proxy.Stats()
		}
	}

	text, err := scrape(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the controller's metrics: %v", err)
	}
	h, err := parseHistogram(text, histogramName)
	if err != nil {
		return nil, err
	}
	r.SyncP50, r.SyncP99, r.Syncs = h.quantile(0.5), h.quantile(0.99), h.count()
	for name, pid := range ctlProcs {
		if name == victim {
			r.CPU += shards.killedCPU
			continue
		}
		u, err := readProc(pid())
		if err != nil {
			return nil, err
		}
		r.CPU += u.CPUSeconds
		r.PeakRSS += u.PeakRSS
	}
	if r.End, err = endState(ctx, client, w.scope()); err != nil {
		return nil, err
	}
	if r.Fault != nil {
		r.Fault.check(w, specs, r.End, pods)
	}
	if shards != nil {
		if r.Shard, err = shards.result(ctx, client, specs, pods, callsBefore, start); err != nil {
			return nil, err
		}
	}
	icancel()
	stopController()
	controllerStopped = true
	kwok.Stop(10 * time.Second)
	stopCluster()
	counts, refused, err := countRequests(auditLog)
	if err != nil {
		return nil, err
	}
	r.Requests = counts[controller]
	if shards != nil {
		r.Controller = tag
	}
	r.Refused = refused[controller]
	r.PodsCreated = r.Requests["create pods"]
	if r.Fault != nil {
		for _, sp := range specs {
			r.Fault.PodsPlanned += sp.attempts
		}
	}
	if os.Getenv("BENCH_KEEP") == "" {
		_ = os.RemoveAll(dir)
	}
	return r, nil
}

func jobFinished(j *batchv1.Job) bool {
	for _, c := range j.Status.Conditions {
		if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

func waitNodesReady(ctx context.Context, client kubernetes.Interface, n int) error {
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err == nil {
			ready := 0
			for _, node := range nodes.Items {
				for _, c := range node.Status.Conditions {
					if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
						ready++
					}
				}
			}
			if ready == n {
				return nil
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	return fmt.Errorf("kwok did not make %d nodes Ready within a minute", n)
}

// createJobs creates every Job from a few goroutines (the runner's client
// is not the bottleneck: 1,000 QPS).
func createJobs(ctx context.Context, client kubernetes.Interface, w *Workload, specs []jobSpec, mb string) error {
	next := atomic.Int64{}
	errs := make(chan error, 16)
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= len(specs) {
					return
				}
				if _, err := client.BatchV1().Jobs(specs[i].ns).Create(ctx, w.job(specs[i].ns, specs[i], mb), metav1.CreateOptions{}); err != nil {
					errs <- fmt.Errorf("creating Job %s: %v", specs[i].name, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	return <-errs
}

func endState(ctx context.Context, client kubernetes.Interface, scope string) (map[string]jobEnd, error) {
	out := map[string]jobEnd{}
	cont := ""
	for {
		list, err := client.BatchV1().Jobs(scope).List(ctx, metav1.ListOptions{Limit: 500, Continue: cont})
		if err != nil {
			return nil, err
		}
		for _, j := range list.Items {
			var conds []string
			for _, c := range j.Status.Conditions {
				conds = append(conds, fmt.Sprintf("%s=%s/%s", c.Type, c.Status, c.Reason))
			}
			sort.Strings(conds)
			e := jobEnd{Succeeded: j.Status.Succeeded, Failed: j.Status.Failed, Conditions: strings.Join(conds, ",")}
			e.CompletedIndexes = j.Status.CompletedIndexes
			if j.Status.FailedIndexes != nil {
				e.FailedIndexes = *j.Status.FailedIndexes
			}
			out[j.Name] = e
		}
		if cont = list.Continue; cont == "" {
			return out, nil
		}
	}
}

// diffEnds lists the Jobs whose end states differ, at most limit of them.
func diffEnds(a, b map[string]jobEnd, limit int) []string {
	var names []string
	for n := range a {
		names = append(names, n)
	}
	for n := range b {
		if _, ok := a[n]; !ok {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	var out []string
	for _, n := range names {
		ea, oka := a[n]
		eb, okb := b[n]
		if oka && okb && ea == eb {
			continue
		}
		out = append(out, fmt.Sprintf("%s: upstream %+v, shim %+v", n, ea, eb))
		if len(out) == limit {
			break
		}
	}
	return out
}
