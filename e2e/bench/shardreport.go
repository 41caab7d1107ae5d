package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"time"
)

// shardNotesMarker starts the shard report's notes, written by hand and kept
// when the benchmark rewrites the report.
const shardNotesMarker = "<!-- notes: written by hand, kept by bench -shards -->"

// maxResume is issue 27's bound on a killed shard's Jobs resuming elsewhere.
const maxResume = 30 * time.Second

// shardBench is `bench -shards`: kube-controller-manager, then the shim at
// each shard count, then a failover run, all on the same workload, limits
// and gate.
type shardBench struct {
	w         *Workload
	lim       Limits
	counts    []int
	failover  int
	killAfter time.Duration
	kcm       bool
	perf      time.Duration
	budget    float64
	results   string
	resume    bool
}

// shardRuns are the shard benchmark's results.
type shardRuns struct {
	kcm      *Result
	shards   []*Result
	failover *Result
}

// shim is every shim run: the shard counts', then the failover's when there is one.
func (rs shardRuns) shim() []*Result {
	out := append([]*Result{}, rs.shards...)
	if rs.failover != nil {
		out = append(out, rs.failover)
	}
	return out
}

func (sb *shardBench) run(ctx context.Context, workdir, out string, stdout, stderr io.Writer, logf func(string, ...any)) int {
	specs := sb.w.plan()
	hdr := shardHeader(sb)
	failed := false
	canceled := false
	one := func(ctl string, so *shardOpts) *Result {
		if canceled {
			return nil
		}
		tag := ctl
		if so != nil {
			tag = so.tag()
		}
		if sb.resume {
			saved, err := loadRun(sb.results, sb.w, tag, sb.lim)
			if err != nil {
				logf("%v", err)
				failed = true
				return nil
			}
			if saved != nil {
				logf("%s/%s/%s: reusing the run saved at %s (commit %s)", sb.w.Name, tag, sb.lim.Name, saved.Started.Format(time.RFC3339), saved.Commit)
				return saved
			}
		}
		opts := runOpts{apiserverArgs: []string{shardGate}, track: true, shards: so}
		if so == nil || so.kill < 0 {
			opts.perf = sb.perf
		}
		r, err := runOne(ctx, sb.w, specs, ctl, sb.lim, workdir, opts, logf)
		if err != nil {
			logf("%s/%s/%s failed: %v", sb.w.Name, tag, sb.lim.Name, err)
			failed = true
			canceled = errors.Is(err, context.Canceled)
			return nil
		}
		if sb.results != "" {
			if err := saveRun(sb.results, sb.w, r); err != nil {
				logf("%v", err)
				failed = true
			}
		}
		return r
	}
	var runs shardRuns
	if sb.kcm {
		runs.kcm = one("kcm", nil)
	}
	for _, n := range sb.counts {
		if r := one("shim", &shardOpts{count: n, kill: -1}); r != nil {
			runs.shards = append(runs.shards, r)
		}
	}
	if sb.failover > 0 {
		runs.failover = one("shim", &shardOpts{count: sb.failover, kill: sb.failover - 1, killAfter: sb.killAfter})
	}
	if canceled {
		return 1
	}
	for _, problem := range runs.problems() {
		logf("%s", problem)
		failed = true
	}
	text := hdr + shardReport(sb, runs)
	fmt.Fprint(stdout, text)
	if out != "" {
		if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
			fmt.Fprintln(stderr, "bench:", err)
			return 1
		}
		// The notes written by hand below the marker are kept.
		md := text
		if prev, err := os.ReadFile(out + ".md"); err == nil {
			if i := strings.Index(string(prev), shardNotesMarker); i >= 0 {
				md += "\n" + string(prev[i:])
			}
		}
		if err := os.WriteFile(out+".md", []byte(md), 0o644); err != nil {
			fmt.Fprintln(stderr, "bench:", err)
			return 1
		}
		logf("wrote %s.md", out)
	}
	if failed {
		return 1
	}
	return 0
}

// problems are what fails the shard benchmark: a shim run that lost,
// duplicated or left anything, an end state other than kube-controller-
// manager's, a failover whose shard was not taken over.
func (rs shardRuns) problems() []string {
	var out []string
	for _, r := range rs.shim() {
		if r.Fault != nil && !faultsLoseNothing(r) {
			out = append(out, fmt.Sprintf("%s: lost, duplicated or left something: exact %d/%d, lost counts %d, duplicates %d, finalizers left %d, pods %d of %d planned; %s",
				r.Controller, r.Fault.ExactJobs, r.Jobs, r.Fault.LostCounts, r.Fault.Duplicates, r.Fault.FinalizersLeft, r.Fault.PodsSeen, r.Fault.PodsPlanned, strings.Join(first(r.Fault.Mismatches, 3), "; ")))
		}
		if rs.kcm != nil {
			if d := diffEnds(rs.kcm.End, r.End, 5); len(d) > 0 {
				out = append(out, fmt.Sprintf("%s: end states differ from kube-controller-manager's: %s", r.Controller, strings.Join(d, "; ")))
			}
		}
	}
	if f := rs.failover; f != nil && f.Shard != nil && f.Shard.Failover != nil {
		fo := f.Shard.Failover
		if fo.NewHolder == "" || fo.NewHolder == fo.Victim || fo.LeaseTaken <= 0 {
			out = append(out, fmt.Sprintf("%s: shard %d's Lease not taken over (holder %q)", f.Controller, fo.Shard, fo.NewHolder))
		}
	}
	return out
}

func first(s []string, n int) []string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// shardHeader names the machine, the commit and the command.
func shardHeader(sb *shardBench) string {
	return fmt.Sprintf("# Cluster benchmark, sharded: the shim at %s shards beside kube-controller-manager\n\n"+
		"Written by `bench -shards` (e2e/bench) on %s; command: `go run . %s`.\n\n"+
		"Each row is one run on a fresh kube-apiserver + etcd (v1.37.2) started with `%s`, KWOK v0.8.0 playing the nodes and running the pods. "+
		"kube-controller-manager v1.37.2 runs only its Job controller, without leader election (as in docs/bench-cluster.md); "+
		"the shim runs as N processes for N shards (`--shards=N --home-shard=i`, leader election on at the shim's default timings, "+
		"an identity each), all calling one job-decider service process. Every controller process is held to the same limits: "+
		"%s (client QPS/burst/workers), so N shards have N times one process's client budget. "+
		"Wall time runs from the first Job created to the last one finished; CPU is read from /proc over the same span.\n\n",
		joinInts(sb.counts), machine(), strings.Join(os.Args[1:], " "), shardGate, limitsName(sb.lim))
}

func limitsName(l Limits) string {
	return fmt.Sprintf("%s %g/%d/%d", l.Name, l.QPS, l.Burst, l.Workers)
}

func joinInts(ns []int) string {
	var s []string
	for _, n := range ns {
		s = append(s, fmt.Sprint(n))
	}
	return strings.Join(s, ", ")
}

// controllerCPU lists a run's controller processes' CPU seconds.
func controllerCPU(r *Result) string {
	var names []string
	for n := range r.Profile {
		if n == "kube-controller-manager" || strings.HasPrefix(n, "shim") {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	var parts []string
	for _, n := range names {
		parts = append(parts, fmt.Sprintf("%s %.1f", n, r.Profile[n]))
	}
	return strings.Join(parts, ", ")
}

func jobsPerSec(r *Result) float64 { return float64(r.Jobs) / r.Wall.Seconds() }
func podsPerSec(r *Result) float64 { return float64(r.PodsCreated) / r.Wall.Seconds() }

// runLabel names a run in the tables.
func runLabel(r *Result) string {
	if r.Shard == nil {
		return "kube-controller-manager"
	}
	l := fmt.Sprintf("shim, %d shard", r.Shard.Shards)
	if r.Shard.Shards > 1 {
		l += "s"
	}
	if r.Shard.Failover != nil {
		l += ", one replica killed"
	}
	return l
}

// endVs says whether a run's end states equal kube-controller-manager's.
func endVs(kcm, r *Result) string {
	if kcm == nil || r == kcm {
		return "—"
	}
	if d := diffEnds(kcm.End, r.End, 3); len(d) > 0 {
		return fmt.Sprintf("**differ**: %s", strings.Join(d, "; "))
	}
	return fmt.Sprintf("equal (%d Jobs)", len(r.End))
}

// scheduleCheck is a tracked run's duplicates and exact Jobs.
func scheduleCheck(r *Result) (dups, exact string) {
	if r.Fault == nil {
		return "", ""
	}
	return fmt.Sprint(r.Fault.Duplicates), fmt.Sprintf("%d/%d", r.Fault.ExactJobs, r.Jobs)
}

func ratio(a, b float64) string {
	if b == 0 || math.IsNaN(a/b) {
		return ""
	}
	return fmt.Sprintf("%.2f×", a/b)
}

// shardReport is the markdown: capacity, per shard, where the time went, the
// service, the failover.
func shardReport(sb *shardBench, rs shardRuns) string {
	var b strings.Builder
	w := sb.w
	fmt.Fprintf(&b, "Workload %s: %s; here %d Jobs × %d pods over %d namespaces (seeded names with random hex suffixes).\n\n",
		w.Name, w.Description, w.Jobs, w.Completions, min(w.Jobs, max(1, w.Namespaces)))
	var one *Result
	for _, r := range rs.shards {
		if r.Shard.Shards == 1 {
			one = r
		}
	}
	rows := append([]*Result{rs.kcm}, rs.shim()...)

	b.WriteString("## Capacity\n\n")
	b.WriteString("| Run | Jobs | Pods created | Wall s | Jobs/s | Pods/s | Jobs/s ÷ 1 shard | Jobs/s ÷ kcm | Controller CPU s (per process) | Service CPU s | Sync p50 / p99 ms | API writes/Job | Duplicate pods | Jobs with end state = schedule | End state vs kcm |\n")
	b.WriteString("|---|--:|--:|--:|--:|--:|--:|--:|---|--:|--:|--:|--:|--:|---|\n")
	for _, r := range rows {
		if r == nil {
			continue
		}
		rOne, rKCM := "", ""
		if one != nil {
			rOne = ratio(jobsPerSec(r), jobsPerSec(one))
		}
		if rs.kcm != nil {
			rKCM = ratio(jobsPerSec(r), jobsPerSec(rs.kcm))
		}
		svc := ""
		if v, ok := r.Profile["service"]; ok {
			svc = fmt.Sprintf("%.1f", v)
		}
		dups, exact := scheduleCheck(r)
		fmt.Fprintf(&b, "| %s | %d | %d | %.1f | %.2f | %.1f | %s | %s | %s | %s | %.0f / %.0f | %.2f | %s | %s | %s |\n",
			runLabel(r), r.Jobs, r.PodsCreated, r.Wall.Seconds(), jobsPerSec(r), podsPerSec(r), rOne, rKCM,
			controllerCPU(r), svc, r.SyncP50*1000, r.SyncP99*1000, perJob(writes(r), r.Jobs), dups, exact, endVs(rs.kcm, r))
	}
	fmt.Fprintf(&b, "\nIssue 27's targets: 3 shards ≥ 2.5× one shard and ≥ 2.5× kube-controller-manager (Jobs/s, same per-process limits); every Job's end state equal to kube-controller-manager's; 0 duplicate pods.")
	for _, r := range rs.shards {
		if r.Shard.Shards != 3 {
			continue
		}
		if one != nil {
			x := jobsPerSec(r) / jobsPerSec(one)
			fmt.Fprintf(&b, " Measured: 3 shards %.2f× one shard %s", x, mark(x >= 2.5))
		}
		if rs.kcm != nil {
			x := jobsPerSec(r) / jobsPerSec(rs.kcm)
			fmt.Fprintf(&b, "; %.2f× kube-controller-manager %s", x, mark(x >= 2.5))
		}
		b.WriteString(".")
	}
	b.WriteString("\n")

	b.WriteString("\n## Per shard\n\n")
	b.WriteString("Jobs and namespaces fall to a shard by the FNV-1a hash of the namespace (KEP-5866's `shardRange(object.metadata.namespace, …)`), " +
		"so the split is as even as the namespaces' hashes are. *Jobs per replica CPU-second* is the shard's Jobs over its replica's CPU seconds: " +
		"what one shard replica does with one core, which holds on a machine with a core per replica.\n\n")
	b.WriteString("| Run | Shard | Namespaces | Jobs | Pods seen | Replica | Replica CPU s | Replica cores | Syncs | Jobs/s in the shard | Jobs per replica CPU-second |\n")
	b.WriteString("|---|--:|--:|--:|--:|---|--:|--:|--:|--:|--:|\n")
	for _, r := range rs.shim() {
		if r.Shard == nil {
			continue
		}
		wall := r.Wall.Seconds()
		for i := range r.Shard.Shards {
			cpu := r.Profile[identity(i)]
			note := identity(i)
			if fo := r.Shard.Failover; fo != nil && fo.Shard == i {
				note += fmt.Sprintf(" (killed at %.0f s; then %s)", fo.KilledAfter.Seconds(), fo.NewHolder)
			}
			fmt.Fprintf(&b, "| %s | %d | %d | %d | %d | %s | %.1f | %.2f | %.0f | %.2f | %.1f |\n",
				runLabel(r), i, r.Shard.Namespaces[i], r.Shard.Jobs[i], r.Shard.Pods[i], note, cpu, cpu/wall,
				r.Shard.ReplicaSyncs[i], float64(r.Shard.Jobs[i])/wall, float64(r.Shard.Jobs[i])/cpu)
		}
	}

	b.WriteString("\n## Where the time went\n\n")
	fmt.Fprintf(&b, "CPU seconds per process over the run (/proc). *Machine busy* is the whole machine's non-idle share of its %d cores over the run "+
		"(/proc/stat: every process, this benchmark's and anyone else's on the machine); *others* is what the machine spent outside the processes listed. "+
		"The bottleneck rule is docs/bench-cluster.md's, with the client budget of all controller processes together: the client rate limit when the controller's "+
		"requests reached 80%% of it, else the machine's CPU when the machine was ≥ 85%% busy, else waiting.\n\n", runtime.NumCPU())
	b.WriteString("| Run | kube-apiserver | etcd | kwok | runner | controller | service | Bench cores | Machine busy | Others (cores) | Controller requests/s (budget) | Bottleneck |\n")
	b.WriteString("|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|---|\n")
	for _, r := range rows {
		if r == nil {
			continue
		}
		wall := r.Wall.Seconds()
		ctl := 0.0
		for n, v := range r.Profile {
			if n == "kube-controller-manager" || strings.HasPrefix(n, "shim") {
				ctl += v
			}
		}
		procs := 1
		busy := r.MachineBusy
		if r.Shard != nil {
			procs = r.Shard.Shards
		}
		budget := float64(procs) * r.Limits.QPS
		bench := busyCores(r)
		rate := float64(total(r)) / wall
		busyCell, others := "", ""
		if busy > 0 {
			busyCell = fmt.Sprintf("%.0f%% (%.2f cores)", busy*100, busy*float64(runtime.NumCPU()))
			others = fmt.Sprintf("%.2f", busy*float64(runtime.NumCPU())-bench)
		}
		var neck string
		switch {
		case rate >= 0.8*budget:
			neck = fmt.Sprintf("client rate limit (%.0f of %g requests/s)", rate, budget)
		case busy >= 0.85:
			neck = fmt.Sprintf("the machine's CPU (%.0f%% busy; most: %s)", busy*100, topProcess(r))
		default:
			neck = fmt.Sprintf("waiting (machine %s busy; most: %s)", pct(busy), topProcess(r))
		}
		fmt.Fprintf(&b, "| %s | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %.2f | %s | %s | %.0f (%g) | %s |\n",
			runLabel(r), r.Profile["kube-apiserver"], r.Profile["etcd"], r.Profile["kwok"], r.Profile["runner"], ctl, r.Profile["service"],
			bench, busyCell, others, rate, budget, neck)
	}

	b.WriteString("\n## The service under the shards\n\n")
	fmt.Fprintf(&b, "One job-decider process serves every shard. *CPU per call* is its CPU seconds over the DecideJob calls it answered during the run "+
		"(its own job_decider_grpc_requests_total); *replicas* is its cores over a budget of %.3f cores per replica, rounded up "+
		"(the budget an HPA target of %.0f%% of a 250m request gives).\n\n", sb.budget, sb.budget/0.25*100)
	b.WriteString("| Run | DecideJob calls | Calls/s | Calls per Job | Service CPU s | CPU ms per call | Service cores | Replicas at the budget |\n")
	b.WriteString("|---|--:|--:|--:|--:|--:|--:|--:|\n")
	for _, r := range rs.shim() {
		if r.Shard == nil {
			continue
		}
		wall := r.Wall.Seconds()
		svc := r.Profile["service"]
		calls := r.Shard.DecideCalls
		cores := svc / wall
		fmt.Fprintf(&b, "| %s | %.0f | %.1f | %.1f | %.1f | %.3f | %.3f | %.0f |\n",
			runLabel(r), calls, calls/wall, calls/float64(r.Jobs), svc, 1000*svc/calls, cores, math.Max(1, math.Ceil(cores/sb.budget)))
	}

	if f := rs.failover; f != nil && f.Shard != nil && f.Shard.Failover != nil {
		fo := f.Shard.Failover
		b.WriteString("\n## Failover: one shard replica killed mid-run\n\n")
		fmt.Fprintf(&b, "The shim at %d shards; replica %s (home of shard %d) SIGKILLed %.1f s after the first Job was created. "+
			"*Lease taken* is the shard's Lease acquireTime (written by its new holder) after the kill; *first pod* and *first Job write* "+
			"are the first pod created and the first Job status update in that shard's namespaces the runner's watch saw after the Lease was taken, "+
			"counted from the kill. A replica contends for a shard other than its home only one lease duration after it started, and client-go takes "+
			"a Lease once it has seen it unrenewed for a lease duration (15 s, the shim's default): the takeover is bound by the lease duration.\n\n",
			f.Shard.Shards, fo.Victim, fo.Shard, fo.KilledAfter.Seconds())
		b.WriteString("| Shards | Killed | Shard's Jobs unfinished at the kill | New holder | Lease taken after s | First pod after s | First Job write after s | Resumed within 30 s | Duplicate pods | Lost counts | Jobs with end state = schedule | End state vs kcm | Wall s |\n")
		b.WriteString("|--:|---|--:|---|--:|--:|--:|---|--:|--:|--:|---|--:|\n")
		resume := fo.FirstWrite
		if fo.FirstPod > 0 && (resume == 0 || fo.FirstPod < resume) {
			resume = fo.FirstPod
		}
		ok := "—"
		if resume > 0 {
			ok = mark(resume <= maxResume)
		}
		dups, exact := scheduleCheck(f)
		lost := ""
		if f.Fault != nil {
			lost = fmt.Sprint(f.Fault.LostCounts)
		}
		fmt.Fprintf(&b, "| %d | %s (shard %d) | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %.1f |\n",
			f.Shard.Shards, fo.Victim, fo.Shard, fo.JobsLeft, fo.NewHolder, secs(fo.LeaseTaken), secs(fo.FirstPod), secs(fo.FirstWrite),
			ok, dups, lost, exact, endVs(rs.kcm, f), f.Wall.Seconds())
	}

	var profiled []*Result
	for _, r := range rows {
		if r != nil && r.Perf != nil {
			profiled = append(profiled, r)
		}
	}
	if len(profiled) > 0 {
		b.WriteString("\n## Profiles\n\n")
		b.WriteString("`perf record -a -F 99` over every CPU, from 5 s after the Jobs were created; `perf report --sort comm` (each process's share " +
			"of all samples; *swapper* is idle, names cut to 15 bytes by the kernel), then the controller's processes' functions by share of their own samples " +
			"(`--comms <controller> --sort symbol`: flat, as `go tool pprof -top` lists them).\n")
		for _, r := range profiled {
			fmt.Fprintf(&b, "\n%s (%.0f s):\n\n```\n%s\n\n%s\n```\n", runLabel(r), r.Perf.Seconds, strings.Join(r.Perf.Comms, "\n"), strings.Join(r.Perf.Controller, "\n"))
		}
	}

	b.WriteString("\n## Runs\n\n")
	for _, r := range rows {
		if r == nil {
			continue
		}
		mode := ""
		if r.Shard != nil {
			mode = fmt.Sprintf("; shard ranges applied: %s; sharded watches open at the end (apiserver_watch_shards_total): Jobs %.0f, pods %.0f",
				r.Shard.SelectorMode, r.Shard.ShardedWatches["jobs"], r.Shard.ShardedWatches["pods"])
		}
		fmt.Fprintf(&b, "- %s: started %s, commit %s, load %s → %s%s\n", runLabel(r), r.Started.Format("2006-01-02 15:04:05 UTC"), r.Commit, r.LoadBefore, r.LoadAfter, mode)
	}
	return b.String()
}

func secs(d time.Duration) string {
	if d <= 0 {
		return "—"
	}
	return fmt.Sprintf("%.1f", d.Seconds())
}

func pct(f float64) string {
	if f <= 0 {
		return "?"
	}
	return fmt.Sprintf("%.0f%%", f*100)
}

// topProcess is the process that spent the most CPU in a run, with its cores.
func topProcess(r *Result) string {
	top, v := "", -1.0
	for n, c := range r.Profile {
		if c > v || (c == v && n < top) {
			top, v = n, c
		}
	}
	return fmt.Sprintf("%s, %.2f cores", top, v/r.Wall.Seconds())
}
