// Command bench runs the cluster benchmark (`make bench-cluster`): each
// workload (workloads/*.yaml) on a fresh kube-apiserver + etcd with KWOK's
// fake nodes, once with kube-controller-manager's Job controller (a) and
// once with the shim and the job-decider service (b), at equal and at raised
// client limits; it prints a markdown table, writes it and an SVG chart, and
// fails when any Job's end state differs between (a) and (b).
//
// Exit codes: 0 ok, 1 a run failed or end states differ, 2 bad input.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

var limitSets = map[string]Limits{
	// The shim's defaults (5 workers, 50 QPS, burst 100), given to both.
	"equal": {Name: "equal", QPS: 50, Burst: 100, Workers: 5},
	// Raised: ten times the rate and four times the workers.
	"raised": {Name: "raised", QPS: 500, Burst: 1000, Workers: 20},
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	workloads := fs.String("workloads", "workloads/w1.yaml,workloads/w2.yaml,workloads/w3.yaml,workloads/w4.yaml", "Comma-separated workload files.")
	limits := fs.String("limits", "equal,raised", "Comma-separated limit sets: equal, raised.")
	smoke := fs.Bool("smoke", false, "Shrink every workload (at most 20 Jobs of at most 10 pods) for a quick end-state check.")
	out := fs.String("out", "", "Write <out>.md and <out>.svg (the table and chart); nothing written when empty.")
	controllers := fs.String("controllers", "kcm,shim", "Comma-separated controllers to run: kcm (a), shim (b); end states are compared only with both.")
	workdir := fs.String("workdir", "", "Where the clusters' files go; a temporary directory when empty (BENCH_KEEP=1 keeps them).")
	faults := fs.Bool("faults", false, "The fault run: each -fault-scenarios entry on the first workload and limit set, the controller behind the fault proxy; a table of what was lost or duplicated. Fails when the shim's runs lose anything.")
	scenarios := fs.String("fault-scenarios", defaultFaultScenes, "Comma-separated fault-run scenarios: kcm, shim, shim-service-stopped, shim-service-hung.")
	results := fs.String("results", "", "Save each run as <dir>/<workload>-<controller>-<limits>.json as soon as it finishes.")
	resume := fs.Bool("resume", false, "Reuse the runs saved in -results for the same workload and limits and run only the others: a full benchmark over several sittings.")
	shrink := fs.String("shrink", "", "JOBSxPODS: at most JOBS Jobs of at most PODS pods each (after -smoke).")
	shardList := fs.String("shards", "", "The shard benchmark: comma-separated shard counts (e.g. 1,2,3); kube-controller-manager (with kcm in -controllers) then the shim at each count, one replica process per shard with leader election on, on the first workload and limit set, the API server with ShardedListAndWatch on; a table per shard and the service's CPU per call.")
	failoverShards := fs.Int("shard-failover", 0, "With -shards: a failover run at this many shards (0: none), the last shard's replica SIGKILLed -shard-kill-after after the Jobs were created.")
	killAfter := fs.Duration("shard-kill-after", 20*time.Second, "When the failover run kills a replica, from the first Job created.")
	perfFor := fs.Duration("perf", 0, "With -shards: record every CPU with perf for this long during each run but the failover (from 5 s after the Jobs were created) and report each process's share and the controller's hottest functions; 0: none.")
	serviceBudget := fs.Float64("service-cpu-budget", 0.175, "Cores one service replica may use (the HPA's target: 70% of a 250m request), for the replicas the shard table implies.")
	fc := &faultConfig{}
	fs.Uint64Var(&fc.seed, "fault-seed", 23, "Seed of the fault proxy's choices.")
	fs.Float64Var(&fc.writeRate, "fault-write-rate", 0.05, "Share of pod and Job writes the proxy answers 409/429/500.")
	fs.DurationVar(&fc.delayMax, "fault-delay-max", 5*time.Second, "Each watch event is held a random 0..this.")
	fs.DurationVar(&fc.dropEvery, "fault-drop-every", 10*time.Second, "Every open watch is dropped this often.")
	fs.DurationVar(&fc.outageAfter, "outage-after", 5*time.Second, "A service outage starts this long after the Jobs are created.")
	fs.DurationVar(&fc.outageFor, "outage-for", 20*time.Second, "How long a service outage lasts.")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	var ws []*Workload
	for _, p := range splitList(*workloads) {
		w, err := LoadWorkload(p)
		if err != nil {
			fmt.Fprintln(stderr, "bench:", err)
			return 2
		}
		if *smoke {
			w = w.smaller(20, 10)
			w.Name += "-smoke"
		}
		if *shrink != "" {
			var jobs, pods int
			if _, err := fmt.Sscanf(*shrink, "%dx%d", &jobs, &pods); err != nil || jobs < 1 || pods < 1 {
				fmt.Fprintf(stderr, "bench: flag -shrink: want JOBSxPODS (e.g. 50x20), got %q\n", *shrink)
				return 2
			}
			w = w.smaller(jobs, pods)
			w.Name += "-" + *shrink
		}
		ws = append(ws, w)
	}
	var ls []Limits
	for _, n := range splitList(*limits) {
		l, ok := limitSets[n]
		if !ok {
			fmt.Fprintf(stderr, "bench: flag -limits: unknown limit set %q (equal, raised)\n", n)
			return 2
		}
		ls = append(ls, l)
	}
	if *faults {
		if fc.writeRate < 0 || fc.writeRate > 1 {
			fmt.Fprintf(stderr, "bench: flag -fault-write-rate: must be between 0 and 1, got %g\n", fc.writeRate)
			return 2
		}
		for _, sc := range splitList(*scenarios) {
			if _, _, ok := scenarioOf(sc); !ok {
				fmt.Fprintf(stderr, "bench: flag -fault-scenarios: unknown scenario %q (%s)\n", sc, defaultFaultScenes)
				return 2
			}
		}
	}
	ctls := splitList(*controllers)
	for _, c := range ctls {
		if c != "kcm" && c != "shim" {
			fmt.Fprintf(stderr, "bench: flag -controllers: unknown controller %q (kcm, shim)\n", c)
			return 2
		}
	}
	if *resume && *results == "" {
		fmt.Fprintln(stderr, "bench: flag -resume: needs -results (where the runs were saved)")
		return 2
	}
	if len(ws) == 0 || len(ls) == 0 || len(ctls) == 0 {
		fmt.Fprintln(stderr, "bench: no workloads or no limits")
		return 2
	}
	if *workdir == "" {
		d, err := os.MkdirTemp("", "job-decider-bench-")
		if err != nil {
			fmt.Fprintln(stderr, "bench:", err)
			return 1
		}
		*workdir = d
		if os.Getenv("BENCH_KEEP") == "" {
			defer os.RemoveAll(d)
		}
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	logf := func(f string, a ...any) { fmt.Fprintf(stderr, time.Now().Format("15:04:05 ")+f+"\n", a...) }
	if *shardList != "" {
		var counts []int
		for _, c := range splitList(*shardList) {
			n, err := strconv.Atoi(c)
			if err != nil || n < 1 || n > 16 {
				fmt.Fprintf(stderr, "bench: flag -shards: want shard counts from 1 to 16, got %q\n", c)
				return 2
			}
			counts = append(counts, n)
		}
		if *failoverShards == 1 || *failoverShards < 0 || *failoverShards > 16 {
			fmt.Fprintf(stderr, "bench: flag -shard-failover: want 0 (none) or 2 to 16 shards, got %d\n", *failoverShards)
			return 2
		}
		sb := &shardBench{w: ws[0], lim: ls[0], counts: counts, failover: *failoverShards, killAfter: *killAfter,
			kcm: slices.Contains(ctls, "kcm"), perf: *perfFor, budget: *serviceBudget, results: *results, resume: *resume}
		return sb.run(ctx, *workdir, *out, stdout, stderr, logf)
	}
	if *faults {
		return runFaults(ctx, ws[0], ls[0], fc, splitList(*scenarios), *workdir, *out, stdout, stderr, logf)
	}

	var pairs []pair
	failed := false
	for _, w := range ws {
		specs := w.plan()
		for _, l := range ls {
			p := pair{w: w, limits: l}
			for _, ctl := range ctls {
				var r *Result
				if *resume {
					saved, err := loadRun(*results, w, ctl, l)
					if err != nil {
						fmt.Fprintln(stderr, "bench:", err)
						return 1
					}
					if saved != nil {
						logf("%s/%s/%s: reusing the run saved at %s (commit %s)", w.Name, ctl, l.Name, saved.Started.Format(time.RFC3339), saved.Commit)
						r = saved
					}
				}
				if r == nil {
					var err error
					r, err = runOne(ctx, w, specs, ctl, l, *workdir, runOpts{}, logf)
					if err != nil {
						logf("%s/%s/%s failed: %v", w.Name, ctl, l.Name, err)
						failed = true
						if errors.Is(err, context.Canceled) {
							return 1
						}
						continue
					}
					if *results != "" {
						if err := saveRun(*results, w, r); err != nil {
							fmt.Fprintln(stderr, "bench:", err)
							return 1
						}
					}
				}
				if ctl == "kcm" {
					p.a = r
				} else {
					p.b = r
				}
			}
			if p.a != nil && p.b != nil {
				p.diffs = diffEnds(p.a.End, p.b.End, 10)
				if len(p.diffs) > 0 {
					failed = true
					logf("%s/%s: end states differ:\n  %s", w.Name, l.Name, strings.Join(p.diffs, "\n  "))
				}
			}
			pairs = append(pairs, p)
		}
	}
	table := report(pairs)
	fmt.Fprint(stdout, table)
	if *out != "" {
		if err := os.MkdirAll(filepath.Dir(*out), 0o755); err != nil {
			fmt.Fprintln(stderr, "bench:", err)
			return 1
		}
		// The fault run's section, written by -faults, is kept.
		md := header() + table + keptFaultSection(*out+".md")
		if err := os.WriteFile(*out+".md", []byte(md), 0o644); err != nil {
			fmt.Fprintln(stderr, "bench:", err)
			return 1
		}
		if err := os.WriteFile(*out+".svg", []byte(chart(pairs)), 0o644); err != nil {
			fmt.Fprintln(stderr, "bench:", err)
			return 1
		}
		logf("wrote %s.md and %s.svg", *out, *out)
	}
	if failed {
		return 1
	}
	return 0
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func httpGet(ctx context.Context, url string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("%s: %s", url, resp.Status)
	}
	return string(b), nil
}

// faultMarker starts the fault run's section of the report file.
const faultMarker = "<!-- fault run: written by bench -faults; kept by the full run -->"

// keptFaultSection is the fault run's section of an existing report, or "".
func keptFaultSection(path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	if i := strings.Index(string(data), faultMarker); i >= 0 {
		return "\n" + string(data[i:])
	}
	return ""
}

// runFaults is the fault run: each scenario on a fresh control plane, the
// controller behind the fault proxy; a table; exit 1 when a shim scenario
// lost, duplicated or left anything (upstream's figures are reported, not
// judged).
func runFaults(ctx context.Context, w *Workload, lim Limits, fc *faultConfig, scenarios []string, workdir, out string, stdout, stderr io.Writer, logf func(string, ...any)) int {
	specs := w.plan()
	// The commit is named as it was when the runs started.
	hdr := faultHeader()
	var results []*Result
	failed := false
	for _, sc := range scenarios {
		ctl, outage, _ := scenarioOf(sc)
		r, err := runOne(ctx, w, specs, ctl, lim, workdir, runOpts{faults: fc, outage: outage}, logf)
		if err != nil {
			logf("%s: %v", sc, err)
			failed = true
			if errors.Is(err, context.Canceled) {
				return 1
			}
			continue
		}
		if ctl == "shim" && !faultsLoseNothing(r) {
			logf("%s lost, duplicated or left something: %+v", sc, *r.Fault)
			failed = true
		}
		results = append(results, r)
	}
	section := faultReport(w, fc, lim, results)
	fmt.Fprint(stdout, section)
	if out != "" {
		path := out + ".md"
		prev, err := os.ReadFile(path)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			fmt.Fprintln(stderr, "bench:", err)
			return 1
		}
		head := string(prev)
		if i := strings.Index(head, faultMarker); i >= 0 {
			head = head[:i]
		}
		head = strings.TrimRight(head, "\n") + "\n\n"
		md := head + faultMarker + "\n" + hdr + section
		if err := os.WriteFile(path, []byte(md), 0o644); err != nil {
			fmt.Fprintln(stderr, "bench:", err)
			return 1
		}
		logf("wrote the fault run's section of %s", path)
	}
	if failed {
		return 1
	}
	return 0
}
