package main

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"job-decider.dev/e2e/harness"
)

// The labels and annotations that name a pod's Job and attempt (the API
// server's and both controllers').
const (
	labelJobName       = "batch.kubernetes.io/job-name"
	annoIndex          = "batch.kubernetes.io/job-completion-index"
	annoFailureCount   = "batch.kubernetes.io/job-index-failure-count"
	annoIgnoredCount   = "batch.kubernetes.io/job-index-ignored-failure-count"
	trackingFinalizer  = "batch.kubernetes.io/job-tracking"
	outageStopped      = "stopped"
	outageHung         = "hung"
	scenarioKCM        = "kcm"
	scenarioShim       = "shim"
	scenarioShimStop   = "shim-service-stopped"
	scenarioShimHung   = "shim-service-hung"
	defaultFaultScenes = scenarioKCM + "," + scenarioShim + "," + scenarioShimStop + "," + scenarioShimHung
)

// faultConfig is what the fault proxy does to the controller's requests,
// and when a service outage starts and how long it lasts.
type faultConfig struct {
	seed        uint64
	writeRate   float64
	delayMax    time.Duration
	dropEvery   time.Duration
	outageAfter time.Duration
	outageFor   time.Duration
}

func (f *faultConfig) apply(p *harness.FaultProxy) {
	// Pod and Job writes only: Events are best effort for both
	// controllers, and the runs have no leader election.
	p.SetWriteFaults(f.writeRate, "pods", "jobs")
	p.SetWatchDelay(0, f.delayMax)
	p.DropWatchesEvery(f.dropEvery)
}

func (f *faultConfig) String() string {
	return fmt.Sprintf("%.0f%% of pod and Job writes answered 409/429/500 without reaching the API server; every watch event held 0–%s (in order); every watch dropped every %s",
		f.writeRate*100, f.delayMax, f.dropEvery)
}

// runOpts turn a benchmark run into a fault run.
type runOpts struct {
	// faults, when set, puts the fault proxy between the controller and
	// the API server.
	faults *faultConfig
	// outage is "", "stopped" or "hung": what happens to the service
	// (shim runs only).
	outage string
	// shards, when set, runs the shim as that many sharded replicas.
	shards *shardOpts
	// apiserverArgs are added to kube-apiserver's (a feature gate).
	apiserverArgs []string
	// perf, when above 0, records a system-wide profile for this long,
	// from 5 s after the Jobs were created.
	perf time.Duration
	// track watches every pod: duplicates and end states against the
	// schedule are checked as in the fault run.
	track bool
}

// faultResult is what a fault run found beside the benchmark's figures.
type faultResult struct {
	Scenario string
	// Outage says what was done to the service, when.
	Outage string
	// PodsPlanned is the pods the schedule needs: one per attempt.
	PodsPlanned int
	// PodsSeen is every pod the runner's watch saw.
	PodsSeen int
	// Duplicates counts pods beyond the first for one attempt (Job,
	// index, failure count, ignored-failure count).
	Duplicates int
	// ExactJobs are Jobs whose counts, indexes and terminal condition are
	// the schedule's; LostCounts adds |want − got| of succeeded and failed.
	ExactJobs, LostCounts int
	Mismatches            []string
	// FinalizersLeft is pods still carrying the tracking finalizer two
	// minutes after the last Job finished.
	FinalizersLeft int
	Proxy          harness.FaultStats
}

// podTracker remembers every pod the runner's watch saw, by attempt.
type podTracker struct {
	mu       sync.Mutex
	attempts map[string]map[types.UID]bool
	perJob   map[string]map[types.UID]bool
}

func trackPods(factory informers.SharedInformerFactory) *podTracker {
	t := &podTracker{attempts: map[string]map[types.UID]bool{}, perJob: map[string]map[types.UID]bool{}}
	add := func(obj any) {
		p, ok := obj.(*corev1.Pod)
		if !ok {
			return
		}
		job := p.Labels[labelJobName]
		if job == "" {
			return
		}
		t.mu.Lock()
		defer t.mu.Unlock()
		if t.perJob[job] == nil {
			t.perJob[job] = map[types.UID]bool{}
		}
		t.perJob[job][p.UID] = true
		idx, ok := p.Annotations[annoIndex]
		if !ok {
			return
		}
		key := strings.Join([]string{job, idx, p.Annotations[annoFailureCount], p.Annotations[annoIgnoredCount]}, "/")
		if t.attempts[key] == nil {
			t.attempts[key] = map[types.UID]bool{}
		}
		t.attempts[key][p.UID] = true
	}
	// Handlers on a pod informer: adds are enough (a pod's Job, index and
	// attempt annotations are set at creation).
	_, _ = factory.Core().V1().Pods().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: add})
	return t
}

// check compares every Job's end state with its schedule and counts the
// pods the watch saw.
func (f *faultResult) check(w *Workload, specs []jobSpec, end map[string]jobEnd, pods *podTracker) {
	for _, sp := range specs {
		got, ok := end[sp.name]
		want := sp.want
		if !ok {
			f.Mismatches = append(f.Mismatches, sp.name+": gone")
			continue
		}
		lost := abs(int(got.Succeeded-want.succeeded)) + abs(int(got.Failed-want.failed))
		f.LostCounts += lost
		terminal := "Complete=True/"
		if want.failedJob {
			terminal = "Failed=True/FailedIndexes"
		}
		if lost == 0 && strings.Contains(got.Conditions, terminal) &&
			got.CompletedIndexes == want.completedIdx && got.FailedIndexes == want.failedIdx {
			f.ExactJobs++
			continue
		}
		f.Mismatches = append(f.Mismatches, fmt.Sprintf("%s: got succeeded=%d failed=%d completed=%q failedIndexes=%q %s; want %d/%d %q %q %s",
			sp.name, got.Succeeded, got.Failed, got.CompletedIndexes, got.FailedIndexes, got.Conditions,
			want.succeeded, want.failed, want.completedIdx, want.failedIdx, terminal))
	}
	pods.mu.Lock()
	defer pods.mu.Unlock()
	for _, uids := range pods.perJob {
		f.PodsSeen += len(uids)
	}
	if w.Indexed {
		for _, uids := range pods.attempts {
			f.Duplicates += len(uids) - 1
		}
		return
	}
	for _, sp := range specs {
		f.Duplicates += max(0, len(pods.perJob[sp.name])-sp.attempts)
	}
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

// serviceOutage stops ("stopped": SIGKILL, then a restart on the same
// address) or freezes ("hung": SIGSTOP, then SIGCONT; the kernel still
// accepts connections, nothing answers) the service cfg.outageAfter after
// the Jobs were created, for cfg.outageFor, and says what it did.
func serviceOutage(ctx context.Context, d *harness.Decider, kind string, cfg *faultConfig, logf func(string, ...any)) string {
	select {
	case <-time.After(cfg.outageAfter):
	case <-ctx.Done():
		return "not started (run ended)"
	}
	wait := func() {
		select {
		case <-time.After(cfg.outageFor):
		case <-ctx.Done():
		}
	}
	switch kind {
	case outageStopped:
		logf("service outage: killing the service for %s", cfg.outageFor)
		d.Kill()
		wait()
		if err := d.Restart(); err != nil {
			logf("service outage: restart failed: %v", err)
			return "killed; restart failed: " + err.Error()
		}
		return fmt.Sprintf("service killed (SIGKILL) %s after the Jobs were created, restarted %s later", cfg.outageAfter, cfg.outageFor)
	case outageHung:
		logf("service outage: freezing the service for %s", cfg.outageFor)
		if err := d.Signal(syscall.SIGSTOP); err != nil {
			return "SIGSTOP failed: " + err.Error()
		}
		wait()
		if err := d.Signal(syscall.SIGCONT); err != nil {
			return "SIGCONT failed: " + err.Error()
		}
		return fmt.Sprintf("service frozen (SIGSTOP: connections accepted, nothing answered) %s after the Jobs were created, for %s", cfg.outageAfter, cfg.outageFor)
	}
	return "unknown outage " + kind
}

// waitFinalizersGone waits until no pod in the namespace carries the
// tracking finalizer, up to timeout, and returns how many still do.
func waitFinalizersGone(ctx context.Context, client kubernetes.Interface, scope string, timeout time.Duration) (int, error) {
	deadline := time.Now().Add(timeout)
	for {
		pods, err := client.CoreV1().Pods(scope).List(ctx, metav1.ListOptions{})
		if err != nil {
			return 0, err
		}
		left := 0
		for _, p := range pods.Items {
			if slices.Contains(p.Finalizers, trackingFinalizer) {
				left++
			}
		}
		if left == 0 || time.Now().After(deadline) {
			return left, nil
		}
		select {
		case <-time.After(time.Second):
		case <-ctx.Done():
			return left, ctx.Err()
		}
	}
}

// scenarioOf maps a fault-run scenario name to its controller and outage.
func scenarioOf(name string) (controller, outage string, ok bool) {
	switch name {
	case scenarioKCM:
		return "kcm", "", true
	case scenarioShim:
		return "shim", "", true
	case scenarioShimStop:
		return "shim", outageStopped, true
	case scenarioShimHung:
		return "shim", outageHung, true
	}
	return "", "", false
}

// faultReport is the fault run's markdown: one row per scenario, then what
// was injected and any Job that ended otherwise than its schedule says.
func faultReport(w *Workload, cfg *faultConfig, lim Limits, results []*Result) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Workload %s: %d Jobs × %d pods (%s); limits %s %g/%d/%d. Faults on the controller's connection: %s.\n\n",
		w.Name, w.Jobs, w.Completions, w.Description, lim.Name, lim.QPS, lim.Burst, lim.Workers, cfg)
	b.WriteString("| Scenario | Controller | Jobs finished | Jobs with end state = schedule | Lost counts | Pods (planned) | Duplicate pods | Finalizers left | API requests/Job | API writes/Job | Wall s | Faults injected: writes 409/429/500; watches dropped of opened (unsplittable); watch events delayed of passed |\n")
	b.WriteString("|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|---|\n")
	var a, shim *Result
	for _, r := range results {
		f := r.Fault
		name := "(a) kube-controller-manager"
		if r.Controller == "shim" {
			name = "(b) shim + service"
			if shim == nil && f.Outage == "" {
				shim = r
			}
		} else if a == nil {
			a = r
		}
		s := f.Proxy
		fmt.Fprintf(&b, "| %s | %s | %d/%d | %d/%d | %d | %d (%d) | %d | %d | %.1f | %.1f | %.1f | %d/%d/%d; %d of %d (%d); %d of %d |\n",
			f.Scenario, name, len(r.End), r.Jobs, f.ExactJobs, r.Jobs, f.LostCounts, f.PodsSeen, f.PodsPlanned,
			f.Duplicates, f.FinalizersLeft, perJob(total(r), r.Jobs), perJob(writes(r), r.Jobs), r.Wall.Seconds(),
			s.Conflicts, s.TooManyRequests, s.InternalErrors, s.DroppedWatches, s.Watches, s.UnframedWatches, s.DelayedEvents, s.WatchEvents)
	}
	b.WriteString("\n")
	for _, r := range results {
		if r.Fault.Outage != "" {
			fmt.Fprintf(&b, "- %s: %s.\n", r.Fault.Scenario, r.Fault.Outage)
		}
	}
	if a != nil && shim != nil {
		if d := diffEnds(a.End, shim.End, 10); len(d) > 0 {
			fmt.Fprintf(&b, "- (a) and (b) end states differ: %s\n", strings.Join(d, "; "))
		} else {
			fmt.Fprintf(&b, "- (a) and (b) end states are equal Job for Job (%d Jobs: counts, conditions and reasons, indexes).\n", len(a.End))
		}
	}
	for _, r := range results {
		for i, m := range r.Fault.Mismatches {
			if i == 5 {
				fmt.Fprintf(&b, "- %s: … %d more\n", r.Fault.Scenario, len(r.Fault.Mismatches)-5)
				break
			}
			fmt.Fprintf(&b, "- %s: %s\n", r.Fault.Scenario, m)
		}
	}
	b.WriteString("\nAPI requests per Job by verb and resource (the API server's audit log, by user agent; requests the proxy answered itself never reached it):\n\n")
	for _, r := range results {
		var parts []string
		for _, k := range sortedKeys(r.Requests) {
			parts = append(parts, k+" "+strconv.FormatFloat(perJob(r.Requests[k], r.Jobs), 'f', 2, 64))
		}
		fmt.Fprintf(&b, "- %s: %s\n", r.Fault.Scenario, strings.Join(parts, "; "))
	}
	return b.String()
}

// faultsLoseNothing reports whether a run lost, duplicated or left nothing.
func faultsLoseNothing(r *Result) bool {
	f := r.Fault
	return f.ExactJobs == r.Jobs && f.LostCounts == 0 && f.Duplicates == 0 && f.FinalizersLeft == 0 && f.PodsSeen == f.PodsPlanned
}
