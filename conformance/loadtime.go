package main

// loadtime: upstream's in-process syncJob timed on one request file of the
// load suite (load/: a binary DecideJobRequest, the bytes ghz sends), so that
// `make load` sets job-decider's figures beside upstream's on the very same
// snapshot. Prints one JSON line on stdout for the runner to read.

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"runtime"
	"syscall"
	"time"

	"google.golang.org/protobuf/proto"

	pb "job-decider.dev/clients/go/jobdecider/v1"
	"job-decider.dev/conformance/internal/refserver"
	"job-decider.dev/conformance/internal/upstream"
)

// loadTiming is what loadtime prints: wall times of syncJob alone, and the
// process's CPU per run, which also covers building the controller and
// loading the snapshot into its informers (the harness's cost, not the sync's).
type loadTiming struct {
	File      string `json:"file"`
	Pods      int    `json:"pods"`
	Reps      int    `json:"reps"`
	MedianNs  int64  `json:"median_ns"`
	MinNs     int64  `json:"min_ns"`
	MaxNs     int64  `json:"max_ns"`
	RunCPUNs  int64  `json:"run_cpu_ns"`
	Actions   int    `json:"actions"`
	SyncError string `json:"sync_error,omitempty"`
}

// processCPU is the CPU time this process has used so far, user and system.
func processCPU() (time.Duration, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, err
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), nil
}

// cmdLoadTime is `conformance loadtime [--reps N] [--max-time D] FILE.bin`.
func cmdLoadTime(args []string) error {
	fs := flag.NewFlagSet("loadtime", flag.ExitOnError)
	reps := fs.Int("reps", 5, "syncs to time (at least one is always run)")
	maxTime := fs.Duration("max-time", time.Minute, "start no further sync after this long")
	fs.Parse(args)
	if fs.NArg() != 1 || *reps < 1 {
		return errors.New("usage: conformance loadtime [--reps N] [--max-time D] FILE.bin (a load-suite request, pods or lean_pods)")
	}
	file := fs.Arg(0)
	b, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	req := &pb.DecideJobRequest{}
	if err := proto.Unmarshal(b, req); err != nil {
		return fmt.Errorf("%s: not a DecideJobRequest: %w", file, err)
	}
	if len(req.GetLeanPods()) > 0 {
		// Upstream reads Kubernetes pods: the lean ones are made so again, with
		// what the lean encoding keeps (the pods file of the same snapshot has more).
		req = refserver.FullFromLean(req)
	}
	if req.GetJob() == nil {
		return errors.New(file + ": request has no job")
	}

	var syncs []time.Duration
	var cpu time.Duration
	var last *upstream.Result
	start := time.Now()
	for len(syncs) < *reps && (len(syncs) == 0 || time.Since(start) < *maxTime) {
		// The previous run's garbage is the harness's; keep its collection out of this sync.
		runtime.GC()
		before, err := processCPU()
		if err != nil {
			return err
		}
		run, err := upstream.Run(req, upstream.Opts{})
		if err != nil {
			return fmt.Errorf("%s: %w", file, err)
		}
		after, err := processCPU()
		if err != nil {
			return err
		}
		cpu += after - before
		syncs = append(syncs, run.Elapsed)
		last = run
	}
	out := loadTiming{
		File:     file,
		Pods:     len(req.GetPods()),
		Reps:     len(syncs),
		MedianNs: int64(median(syncs)),
		MinNs:    int64(slicesMin(syncs)),
		MaxNs:    int64(slicesMax(syncs)),
		RunCPUNs: int64(cpu) / int64(len(syncs)),
		Actions:  len(last.Resp.GetActions()),
	}
	if last.SyncErr != nil {
		out.SyncError = last.SyncErr.Error()
	}
	line, err := json.Marshal(out)
	if err != nil {
		return err
	}
	fmt.Println(string(line))
	fmt.Fprintf(os.Stderr, "upstream syncJob on %s (%d pods): median %v over %d syncs, CPU %v a run with setup\n",
		file, out.Pods, median(syncs).Round(time.Microsecond), len(syncs), time.Duration(out.RunCPUNs).Round(time.Microsecond))
	return nil
}

func slicesMin(ds []time.Duration) time.Duration {
	m := ds[0]
	for _, d := range ds[1:] {
		m = min(m, d)
	}
	return m
}

func slicesMax(ds []time.Duration) time.Duration {
	m := ds[0]
	for _, d := range ds[1:] {
		m = max(m, d)
	}
	return m
}
