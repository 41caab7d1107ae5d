package main

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"time"
)

// perfResult is a system-wide `perf record` taken during a run: each
// process's share of the samples (idle is "swapper") and the controller's
// hottest functions, flat, as `go tool pprof -top` lists them.
type perfResult struct {
	Seconds    float64
	Comms      []string
	Controller []string
}

// perfSample records every CPU for d, starting after the given delay, into
// path; the channel says how it ended. Without perf it ends at once with an
// error (the run goes on without a profile).
func perfSample(ctx context.Context, path string, after, d time.Duration) <-chan error {
	done := make(chan error, 1)
	bin, err := exec.LookPath("perf")
	if err != nil {
		done <- fmt.Errorf("no perf on PATH: %v", err)
		return done
	}
	go func() {
		select {
		case <-time.After(after):
		case <-ctx.Done():
			done <- ctx.Err()
			return
		}
		secs := fmt.Sprintf("%.0f", d.Seconds())
		out, err := exec.CommandContext(ctx, bin, "record", "-a", "-F", "99", "-o", path, "--", "sleep", secs).CombinedOutput()
		if err != nil {
			err = fmt.Errorf("perf record: %v: %s", err, strings.TrimSpace(string(out)))
		}
		done <- err
	}()
	return done
}

// perfTop reads a recording: the processes by share of samples, and the
// functions of the controller's processes (comm, as the kernel cuts it to
// 15 bytes) by share of its samples.
func perfTop(path, comm string, d time.Duration) (*perfResult, error) {
	report := func(args ...string) ([]string, error) {
		out, err := exec.Command("perf", append([]string{"report", "-i", path, "--stdio", "--no-children"}, args...)...).Output()
		if err != nil {
			return nil, fmt.Errorf("perf report: %v", err)
		}
		var lines []string
		for _, l := range strings.Split(string(out), "\n") {
			if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
				l = strings.TrimSuffix(strings.Join(strings.Fields(l), " "), " - -")
				if len(l) > 140 {
					l = l[:140] + "…"
				}
				lines = append(lines, l)
			}
		}
		return lines, nil
	}
	comms, err := report("--sort", "comm")
	if err != nil {
		return nil, err
	}
	syms, err := report("--comms", comm, "--sort", "symbol", "--percentage", "relative")
	if err != nil {
		return nil, err
	}
	return &perfResult{Seconds: d.Seconds(), Comms: first(comms, 10), Controller: first(syms, 15)}, nil
}
