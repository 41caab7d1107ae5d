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
	ctls := splitList(*controllers)
	for _, c := range ctls {
		if c != "kcm" && c != "shim" {
			fmt.Fprintf(stderr, "bench: flag -controllers: unknown controller %q (kcm, shim)\n", c)
			return 2
		}
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

	var pairs []pair
	failed := false
	for _, w := range ws {
		specs := w.plan()
		for _, l := range ls {
			p := pair{w: w, limits: l}
			for _, ctl := range ctls {
				r, err := runOne(ctx, w, specs, ctl, l, *workdir, logf)
				if err != nil {
					logf("%s/%s/%s failed: %v", w.Name, ctl, l.Name, err)
					failed = true
					if errors.Is(err, context.Canceled) {
						return 1
					}
					continue
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
		md := header() + table
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
