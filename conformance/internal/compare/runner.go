package compare

// The `random` and `lifecycle` commands: seeded single-sync scenarios
// (random.go) and multi-sync lifecycles (lifecycle.go), run on a few
// workers, reported in scenario order, bounded in count and in time.

import (
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	pb "job-decider.dev/clients/go/jobdecider/v1"
	"job-decider.dev/conformance/internal/canon"
	"job-decider.dev/conformance/internal/decider"
	"job-decider.dev/conformance/internal/gen"
	"job-decider.dev/conformance/internal/upstream"
	"job-decider.dev/testkit/knowndiff"
)

type RandomOpts struct {
	Seed         uint64
	N            int // single-sync scenarios
	Lifecycles   int
	Only         int // replay single scenario (random) or lifecycle (lifecycle); -1: all
	Pods         int
	UpstreamOnly bool
	SaveDir      string
	MaxReports   int
	Workers      int
	MaxTime      time.Duration
	Verbose      bool
	LifecycleCmd bool
}

// tally counts what a run found.
type tally struct {
	scenarios, syncs, mismatches, excused, failed, reported, finished int
	upTime, jdTime                                                    time.Duration
	actions                                                           map[string]int
	lcCounts                                                          map[string]int
	classes                                                           classTally
	enc                                                               decider.EncodingTally
}

func RunRandom(d *decider.Conn, known *knowndiff.List, o RandomOpts) error {
	if o.Workers < 1 {
		o.Workers = 1
	}
	replay := "random"
	if o.LifecycleCmd {
		replay = "lifecycle"
	}
	fmt.Printf("%s: seed %d, %d single-sync scenarios, %d lifecycles (replay one: conformance %s --seed %d --only I ...)\n",
		replay, o.Seed, o.N, o.Lifecycles, replay, o.Seed)
	start := time.Now()
	var stopped atomic.Bool
	timeUp := func() bool {
		if time.Since(start) > o.MaxTime {
			stopped.Store(true)
		}
		return stopped.Load()
	}
	t := &tally{actions: map[string]int{}, lcCounts: map[string]int{}}

	// Single-sync scenarios.
	first, last := 0, o.N
	if !o.LifecycleCmd && o.Only >= 0 {
		first, last = o.Only, o.Only+1
	}
	if o.LifecycleCmd {
		first, last = 0, 0
	}
	singleStart := time.Now()
	runOrdered(last-first, o.Workers, timeUp, func(k int) *singleResult {
		return runSingle(d, known, o, first+k)
	}, func(k int, r *singleResult) {
		t.scenarios++
		t.syncs++
		t.upTime += r.upTime
		t.jdTime += r.jdTime
		if r.out != nil {
			t.enc.Add(r.name, r.out.notLean)
		}
		for _, a := range r.actions {
			t.actions[a]++
		}
		switch {
		case r.failed != "":
			t.failed++
			fmt.Printf("FAILED %s: %s\n", r.name, r.failed)
		case r.out != nil && r.out.Differs():
			if r.out.Mismatch() {
				t.mismatches++
			} else {
				t.excused++
			}
			origin := fmt.Sprintf("random --seed %d --only %d", o.Seed, first+k)
			if r.out.Mismatch() {
				t.classes.add(r.out.class(), fmt.Sprintf("%s (conformance %s)", r.name, origin))
			}
			if t.reported < o.MaxReports || o.Only >= 0 {
				t.reported++
				r.out.Report(os.Stdout, r.req, o.SaveDir, origin)
			} else if r.out.Mismatch() {
				r.out.Report(io.Discard, r.req, o.SaveDir, origin) // still saved
			}
		}
		if r.detail != "" {
			fmt.Print(r.detail)
		}
		if (k+1)%2000 == 0 {
			fmt.Fprintf(os.Stderr, "  %d scenarios, %d mismatches, %v\n", k+1, t.mismatches, time.Since(start).Round(time.Millisecond))
		}
	})
	if last > first {
		fmt.Printf("  %d single-sync scenarios in %v\n", last-first, time.Since(singleStart).Round(time.Millisecond))
	}

	// Lifecycles.
	lfirst, llast := 0, o.Lifecycles
	if o.LifecycleCmd && o.Only >= 0 {
		lfirst, llast = o.Only, o.Only+1
	}
	if !o.LifecycleCmd && o.Only >= 0 {
		lfirst, llast = 0, 0
	}
	lcStart := time.Now()
	lcSyncs := 0
	runOrdered(llast-lfirst, o.Workers, timeUp, func(k int) *lifecycleResult {
		if o.Only < 0 {
			return runLifecycle(d, known, o.Seed, lfirst+k, o.SaveDir, nil, false)
		}
		var trace strings.Builder
		r := runLifecycle(d, known, o.Seed, lfirst+k, o.SaveDir, &trace, o.Verbose)
		r.trace = trace.String()
		return r
	}, func(k int, r *lifecycleResult) {
		t.scenarios++
		t.syncs += r.syncs
		lcSyncs += r.syncs
		t.upTime += r.upTime
		t.jdTime += r.jdTime
		t.enc.Merge(&r.enc)
		if r.finished {
			t.finished++
		}
		for k, v := range r.counts {
			t.lcCounts[k] += v
		}
		switch {
		case r.failed != "":
			t.failed++
			fmt.Printf("FAILED %s: %s\n", r.name, r.failed)
		case r.mismatch:
			t.mismatches++
			t.classes.add(r.class, fmt.Sprintf("%s (conformance lifecycle --seed %d --only %d -v)", r.where, o.Seed, lfirst+k))
		case r.excused:
			t.excused++
		}
		fmt.Print(r.trace)
		if r.text.Len() > 0 && (t.reported < o.MaxReports || o.Only >= 0 || !r.mismatch) {
			if r.mismatch {
				t.reported++
			}
			fmt.Print(r.text.String())
		}
		if (k+1)%500 == 0 {
			fmt.Fprintf(os.Stderr, "  %d lifecycles, %d mismatches, %v\n", k+1, t.mismatches, time.Since(start).Round(time.Millisecond))
		}
	})
	if llast > lfirst {
		fmt.Printf("  %d lifecycles (%d syncs, %d reached Complete or Failed) in %v\n",
			llast-lfirst, lcSyncs, t.finished, time.Since(lcStart).Round(time.Millisecond))
	}

	fmt.Printf("%s: seed %d: %d scenarios (%d syncs) in %v: %d mismatch, %d known differences, %d failed to run\n",
		replay, o.Seed, t.scenarios, t.syncs, time.Since(start).Round(time.Millisecond), t.mismatches, t.excused, t.failed)
	fmt.Printf("  time in upstream's syncJob %v", t.upTime.Round(time.Millisecond))
	if d != nil {
		fmt.Printf(", in job-decider round trips %v", t.jdTime.Round(time.Millisecond))
	}
	fmt.Println()
	if d != nil {
		fmt.Printf("  %s\n", t.enc.String())
	}
	if len(t.actions) > 0 {
		var keys []string
		for k := range t.actions {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var parts []string
		for _, k := range keys {
			parts = append(parts, fmt.Sprintf("%s %d", k, t.actions[k]))
		}
		fmt.Printf("  upstream's single-sync plans contained: %s\n", strings.Join(parts, ", "))
	}
	if len(t.lcCounts) > 0 && o.Only < 0 {
		var keys []string
		for k := range t.lcCounts {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		fmt.Printf("  in the lifecycles:")
		for i, k := range keys {
			if i%4 == 0 {
				fmt.Printf("\n   ")
			}
			fmt.Printf(" %s %d;", k, t.lcCounts[k])
		}
		fmt.Println()
	}
	t.classes.print()
	if stopped.Load() {
		return fmt.Errorf("seed %d: stopped by --max-time %v after %d scenarios", o.Seed, o.MaxTime, t.scenarios)
	}
	if t.mismatches > 0 || t.failed > 0 {
		return fmt.Errorf("seed %d: %d unlisted mismatches, %d scenarios failed to run", o.Seed, t.mismatches, t.failed)
	}
	return nil
}

// singleResult is what one single-sync scenario found.
type singleResult struct {
	name           string
	req            *pb.DecideJobRequest
	out            *Outcome
	failed         string
	detail         string
	actions        []string
	upTime, jdTime time.Duration
}

func runSingle(d *decider.Conn, known *knowndiff.List, o RandomOpts, i int) *singleResult {
	r := &singleResult{name: gen.ScenarioName(o.Seed, i)}
	req, err := gen.Request(o.Seed, i, o.Pods)
	if err != nil {
		r.failed = err.Error()
		return r
	}
	r.req = req
	if d == nil {
		resp, run, err := upstream.CanonicalWith(req, upstream.Whole)
		if err == nil && run.SyncErr != nil {
			err = fmt.Errorf("syncJob returned an error: %w", run.SyncErr)
		}
		if err != nil {
			r.failed = "upstream: " + err.Error()
			return r
		}
		r.upTime = run.Elapsed
		for _, w := range strings.Split(canon.Summary(resp), ", ") {
			r.actions = append(r.actions, strings.Fields(w)[0])
		}
		if o.Only >= 0 {
			r.detail = canon.PrettyProto(req) + "\n" + canon.PrettyProto(resp) + "\n"
		}
		return r
	}
	out := Compare(d, known, r.name, req, true, upstream.Whole)
	r.req = out.request
	r.upTime, r.jdTime = out.upTime, out.jdTime
	if out.skipped != "" {
		r.failed = out.skipped
		return r
	}
	r.out = out
	return r
}

// runOrdered runs work(0..n-1) on `workers` goroutines and calls emit with
// each result in index order, on the calling goroutine. It starts no new
// work once stop returns true.
func runOrdered[T any](n, workers int, stop func() bool, work func(int) T, emit func(int, T)) {
	if n <= 0 {
		return
	}
	type item struct {
		k int
		r T
	}
	jobs := make(chan int)
	results := make(chan item, 4*workers)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range jobs {
				results <- item{k, work(k)}
			}
		}()
	}
	go func() {
		for k := 0; k < n && !stop(); k++ {
			jobs <- k
		}
		close(jobs)
		wg.Wait()
		close(results)
	}()
	pending := map[int]T{}
	next := 0
	for it := range results {
		pending[it.k] = it.r
		for {
			r, ok := pending[next]
			if !ok {
				break
			}
			delete(pending, next)
			emit(next, r)
			next++
		}
	}
}
