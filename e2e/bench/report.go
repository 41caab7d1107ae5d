package main

import (
	"fmt"
	"maps"
	"math"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"time"
)

// pair is one workload at one set of limits: (a) upstream, (b) shim + service.
type pair struct {
	w      *Workload
	limits Limits
	a, b   *Result
	diffs  []string
}

func perJob(n int, jobs int) float64 { return float64(n) / float64(jobs) }

func writes(r *Result) int {
	n := 0
	for k, v := range r.Requests {
		if isWrite(k) {
			n += v
		}
	}
	return n
}

func total(r *Result) int {
	n := 0
	for _, v := range r.Requests {
		n += v
	}
	return n
}

func cpuPerPod(r *Result) float64 {
	if r.PodsCreated == 0 {
		return math.NaN()
	}
	return r.CPU / float64(r.PodsCreated) * 1000
}

// report is the markdown: the figures, the goals, the requests by verb.
func report(pairs []pair) string {
	var b strings.Builder
	b.WriteString("| Workload | Limits (QPS/burst/workers) | Controller | Jobs | Pods created | Wall s | Jobs/s | Pods/s | Sync p50 ms | Sync p99 ms | API requests/Job | API writes/Job | CPU s | CPU ms/pod | Peak RSS MiB |\n")
	b.WriteString("|---|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n")
	for _, p := range pairs {
		for _, r := range []*Result{p.a, p.b} {
			if r == nil {
				continue
			}
			name := "(a) kube-controller-manager"
			if r.Controller == "shim" {
				name = "(b) shim + service"
			}
			wall := r.Wall.Seconds()
			fmt.Fprintf(&b, "| %s | %s %g/%d/%d | %s | %d | %d | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %.2f | %.2f | %.2f | %.0f |\n",
				p.w.Name, p.limits.Name, p.limits.QPS, p.limits.Burst, p.limits.Workers, name, r.Jobs, r.PodsCreated, wall,
				float64(r.Jobs)/wall, float64(r.PodsCreated)/wall, r.SyncP50*1000, r.SyncP99*1000,
				perJob(total(r), r.Jobs), perJob(writes(r), r.Jobs), r.CPU, cpuPerPod(r), float64(r.PeakRSS)/(1<<20))
		}
	}
	b.WriteString("\n**Goals** ((b) against (a), one run each, same machine): wall time ratio ≤ 1.0; API writes per Job ≤ upstream's; controller CPU per pod ≤ upstream's; every Job's end state equal.\n\n")
	b.WriteString("| Workload | Limits | Wall (b)/(a) | Writes/Job (b) vs (a) | CPU/pod (b)/(a) | End states |\n|---|---|--:|--:|--:|---|\n")
	for _, p := range pairs {
		if p.a == nil || p.b == nil {
			fmt.Fprintf(&b, "| %s | %s | run failed | | | not compared |\n", p.w.Name, p.limits.Name)
			continue
		}
		ratio := p.b.Wall.Seconds() / p.a.Wall.Seconds()
		wa, wb := perJob(writes(p.a), p.a.Jobs), perJob(writes(p.b), p.b.Jobs)
		cr := cpuPerPod(p.b) / cpuPerPod(p.a)
		ends := fmt.Sprintf("equal (%d Jobs)", len(p.a.End))
		if len(p.diffs) > 0 {
			ends = fmt.Sprintf("**%d+ differ**", len(p.diffs))
		}
		fmt.Fprintf(&b, "| %s | %s | %.2f %s | %.2f vs %.2f %s | %.2f %s | %s |\n", p.w.Name, p.limits.Name,
			ratio, mark(ratio <= 1.0), wb, wa, mark(wb <= wa), cr, mark(cr <= 1.0), ends)
	}
	b.WriteString(profileReport(pairs))
	b.WriteString("\n**API requests per Job by verb and resource** (from the API server's audit log, by user agent; (a) / (b)):\n\n")
	for _, p := range pairs {
		if p.a == nil || p.b == nil {
			continue
		}
		var parts []string
		for _, k := range sortedKeys(p.a.Requests, p.b.Requests) {
			parts = append(parts, fmt.Sprintf("%s %.2f / %.2f", k, perJob(p.a.Requests[k], p.a.Jobs), perJob(p.b.Requests[k], p.b.Jobs)))
		}
		fmt.Fprintf(&b, "- %s %s: %s\n", p.w.Name, p.limits.Name, strings.Join(parts, "; "))
		if len(p.a.Refused)+len(p.b.Refused) > 0 {
			fmt.Fprintf(&b, "  - answered 300 or above (a) / (b): %s / %s\n", refusedList(p.a), refusedList(p.b))
		}
	}
	return b.String()
}

func mark(ok bool) string {
	if ok {
		return "✓"
	}
	return "✗ (missed)"
}

// machine names the run's date, machine, commit and service binary.
func machine() string {
	cpu := "unknown CPU"
	if data, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(data), "\n") {
			if v, ok := strings.CutPrefix(line, "model name"); ok {
				cpu = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(v), ":"))
				break
			}
		}
	}
	server := os.Getenv("JOB_DECIDER_BIN")
	if server == "" {
		server = "target/{release,debug}/job-decider"
	}
	return fmt.Sprintf("%s: %s, %d cores, %s; commit %s; job-decider binary %s",
		time.Now().UTC().Format("2006-01-02 15:04 UTC"), cpu, runtime.NumCPU(), runtime.GOOS+"/"+runtime.GOARCH, commit(), server)
}

// commit is the checkout's short commit, marked when it has changes.
func commit() string {
	out, err := exec.Command("git", "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		return "unknown"
	}
	c := strings.TrimSpace(string(out))
	if st, err := exec.Command("git", "status", "--porcelain", "--untracked-files=no").Output(); err == nil && len(st) > 0 {
		c += " (with uncommitted changes)"
	}
	return c
}

// header names the machine and the commit.
func header() string {
	return fmt.Sprintf("# Cluster benchmark: shim + service against kube-controller-manager\n\n"+
		"Written by `make bench-cluster` (e2e/bench) on %s.\n"+
		"Each row is one run on a fresh kube-apiserver + etcd (v1.37.2) with KWOK v0.8.0 playing the nodes; "+
		"(a) runs kube-controller-manager v1.37.2 with only the Job controller, (b) the shim and the job-decider service; "+
		"both without leader election, at the same client QPS/burst and worker count. "+
		"Wall time runs from the first Job created to the last one finished; sync latency is each controller's own histogram "+
		"(job_controller_job_sync_duration_seconds, job_decider_shim_sync_duration_seconds); CPU and peak RSS are read from /proc "+
		"(for (b) the shim and the service added up).\n"+
		"The sharded shim (issue 27: 1, 2 and 3 shards beside kube-controller-manager, a replica killed mid-run, the service's CPU per call): "+
		"[docs/bench-cluster-shards.md](bench-cluster-shards.md), written by `make bench-cluster-shards`.\n\n", machine())
}

// faultHeader introduces the fault run's section.
func faultHeader() string {
	return fmt.Sprintf("## Fault run: both controllers through the same fault proxy\n\n"+
		"Written by `bench -faults` (e2e/bench) on %s; command: `%s`.\n"+
		"Each row is one run on a fresh kube-apiserver + etcd with KWOK, the same seeded workload (the same pods fail the same way), "+
		"the controller reaching the API server only through e2e/harness's fault proxy (KWOK and the runner go direct); "+
		"(a) kube-controller-manager v1.37.2 with only the Job controller (Jobs without managedBy), (b) the shim and the service "+
		"(Jobs with managedBy), then (b) again with the service stopped and with it hung mid-run. "+
		"*End state = schedule*: succeeded and failed counts, completed and failed indexes and the terminal condition (Complete, or Failed "+
		"with reason FailedIndexes) equal to what the seeded schedule implies. *Lost counts*: Σ|want − got| of succeeded and failed. "+
		"*Pods*: every pod the runner's watch saw, against one per planned attempt. *Duplicate pods*: pods beyond the first for one attempt "+
		"(Job, completion index, failure count, ignored-failure count). *Finalizers left*: pods still carrying the tracking finalizer "+
		"up to two minutes after the last Job finished.\n\n", machine(), "go run . "+strings.Join(os.Args[1:], " "))
}

// chart is an SVG bar chart: wall time per workload and limits, (a) beside (b).
func chart(pairs []pair) string {
	const barW, gap, height, top, left = 28, 30, 260, 30, 60
	maxWall := 0.0
	for _, p := range pairs {
		for _, r := range []*Result{p.a, p.b} {
			if r != nil {
				maxWall = math.Max(maxWall, r.Wall.Seconds())
			}
		}
	}
	if maxWall == 0 {
		maxWall = 1
	}
	width := left + len(pairs)*(2*barW+gap) + gap + 200
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="11">`+"\n", width, height+top+60)
	fmt.Fprintf(&b, `<text x="%d" y="18" font-size="13">Wall time until every Job finished (s): (a) kube-controller-manager, (b) shim + service</text>`+"\n", left)
	fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>`+"\n", left, top+height, width-200, top+height)
	for i := 0; i <= 4; i++ {
		v := maxWall * float64(i) / 4
		y := float64(top+height) - float64(height)*float64(i)/4
		fmt.Fprintf(&b, `<text x="%d" y="%.0f" text-anchor="end">%.0f</text><line x1="%d" y1="%.0f" x2="%d" y2="%.0f" stroke="#ddd"/>`+"\n", left-4, y+4, v, left, y, width-200, y)
	}
	for i, p := range pairs {
		x := left + gap + i*(2*barW+gap)
		for k, r := range []*Result{p.a, p.b} {
			if r == nil {
				continue
			}
			h := float64(height) * r.Wall.Seconds() / maxWall
			color := "#888"
			if k == 1 {
				color = "#2a7ab0"
			}
			fmt.Fprintf(&b, `<rect x="%d" y="%.1f" width="%d" height="%.1f" fill="%s"><title>%s %s %s: %.1f s</title></rect>`+"\n",
				x+k*barW, float64(top+height)-h, barW-2, h, color, p.w.Name, p.limits.Name, r.Controller, r.Wall.Seconds())
			fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="middle" font-size="9">%.0f</text>`+"\n", x+k*barW+barW/2, float64(top+height)-h-3, r.Wall.Seconds())
		}
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle">%s</text><text x="%d" y="%d" text-anchor="middle">%s</text>`+"\n",
			x+barW, top+height+15, p.w.Name, x+barW, top+height+28, p.limits.Name)
	}
	lx := width - 180
	fmt.Fprintf(&b, `<rect x="%d" y="%d" width="12" height="12" fill="#888"/><text x="%d" y="%d">(a) kube-controller-manager</text>`+"\n", lx, top+10, lx+16, top+20)
	fmt.Fprintf(&b, `<rect x="%d" y="%d" width="12" height="12" fill="#2a7ab0"/><text x="%d" y="%d">(b) shim + service</text>`+"\n", lx, top+30, lx+16, top+40)
	b.WriteString("</svg>\n")
	return b.String()
}

// profiled are the processes whose CPU a run reads, in the report's order.
var profiled = []string{"kube-apiserver", "etcd", "kwok", "runner", "kube-controller-manager", "shim", "service"}

// profileReport is where each run's CPU went between the first Job created
// and the last one finished, and the bottleneck that follows from it.
func profileReport(pairs []pair) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\n**Where the time went** (CPU seconds per process from the first Job created to the last one finished, read from /proc; "+
		"*cores* is CPU seconds ÷ wall seconds; this machine has %d). The bottleneck is the client rate limit when the controller's requests "+
		"reached 80%% of its QPS, else the machine's CPU when all processes together kept ≥ 85%% of its cores busy, else waiting (pod run times, retry backoff).\n\n", runtime.NumCPU())
	b.WriteString("| Workload | Limits | Controller |")
	for _, n := range profiled {
		b.WriteString(" " + n + " |")
	}
	b.WriteString(" Cores busy | Requests/s (QPS) | Bottleneck |\n|---|---|---|")
	for range profiled {
		b.WriteString("--:|")
	}
	b.WriteString("--:|--:|---|\n")
	for _, p := range pairs {
		for _, r := range []*Result{p.a, p.b} {
			if r == nil || r.Profile == nil {
				continue
			}
			fmt.Fprintf(&b, "| %s | %s | %s |", p.w.Name, p.limits.Name, r.Controller)
			for _, n := range profiled {
				if v, ok := r.Profile[n]; ok {
					fmt.Fprintf(&b, " %.1f |", v)
				} else {
					b.WriteString(" |")
				}
			}
			wall := r.Wall.Seconds()
			fmt.Fprintf(&b, " %.2f | %.0f (%g) | %s |\n", busyCores(r), float64(total(r))/wall, r.Limits.QPS, bottleneck(r, runtime.NumCPU()))
		}
	}
	b.WriteString("\nRuns (each on a fresh control plane; load average before → after):\n\n")
	for _, p := range pairs {
		for _, r := range []*Result{p.a, p.b} {
			if r == nil || r.Started.IsZero() {
				continue
			}
			fmt.Fprintf(&b, "- %s %s %s: started %s, commit %s, load %s → %s\n", p.w.Name, p.limits.Name, r.Controller,
				r.Started.Format("2006-01-02 15:04 UTC"), r.Commit, r.LoadBefore, r.LoadAfter)
		}
	}
	return b.String()
}

// busyCores is every profiled process's CPU seconds over the run's wall time.
func busyCores(r *Result) float64 {
	sum := 0.0
	for _, v := range r.Profile {
		sum += v
	}
	return sum / r.Wall.Seconds()
}

// bottleneck names what bounded a run, by the rule profileReport states.
func bottleneck(r *Result, cores int) string {
	wall := r.Wall.Seconds()
	if rate := float64(total(r)) / wall; rate >= 0.8*r.Limits.QPS {
		return fmt.Sprintf("client rate limit (%.0f of %g requests/s)", rate, r.Limits.QPS)
	}
	top, topCPU := "", -1.0
	for _, n := range profiled {
		if v, ok := r.Profile[n]; ok && v > topCPU {
			top, topCPU = n, v
		}
	}
	if busy := busyCores(r); busy >= 0.85*float64(cores) {
		return fmt.Sprintf("the machine's CPU (%.2f of %d cores; most: %s, %.2f)", busy, cores, top, topCPU/wall)
	}
	return fmt.Sprintf("waiting (no process above %.2f cores; most: %s)", topCPU/wall, top)
}

// refusedList is a run's refused requests, "verb resource code ×n", or "none".
func refusedList(r *Result) string {
	if len(r.Refused) == 0 {
		return "none"
	}
	var parts []string
	for _, k := range sortedKeys(r.Refused) {
		parts = append(parts, fmt.Sprintf("%s ×%d", k, r.Refused[k]))
	}
	return strings.Join(parts, ", ")
}

// sortedKeys is every key of the maps, once each, in order.
func sortedKeys(ms ...map[string]int) []string {
	seen := map[string]bool{}
	for _, m := range ms {
		for k := range m {
			seen[k] = true
		}
	}
	return slices.Sorted(maps.Keys(seen))
}
