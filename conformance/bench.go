package main

// bench: both sides timed on the same snapshots by job size. Informational:
// upstream's time is its in-process syncJob (without building the fake
// cluster around it); job-decider's is the gRPC round trip.

import (
	"flag"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	pb "job-decider.dev/clients/go/jobdecider/v1"
	"job-decider.dev/conformance/internal/canon"
	"job-decider.dev/conformance/internal/decider"
	"job-decider.dev/conformance/internal/gen"
	"job-decider.dev/conformance/internal/upstream"
)

func median(ds []time.Duration) time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(a, b int) bool { return s[a] < s[b] })
	return s[len(s)/2]
}

func cmdBench(args []string) error {
	fs := flag.NewFlagSet("bench", flag.ExitOnError)
	var tf decider.Flags
	tf.Register(fs)
	sizesFlag := fs.String("sizes", "10,100,1000,10000", "job sizes (pods)")
	upstreamOnly := fs.Bool("upstream-only", false, "time upstream only")
	fs.Parse(args)
	var d *decider.Conn
	var err error
	if !*upstreamOnly {
		if d, err = tf.Connect(); err != nil {
			return err
		}
		defer d.Close()
	}
	fmt.Printf("%-8s %-10s %14s %14s %14s %8s  %s\n", "pods", "mode", "upstream sync", "upstream+setup", "job-decider", "ratio", "same plan")
	for _, f := range strings.Split(*sizesFlag, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			return err
		}
		reps := max(3, min(20, 20000/max(n, 1)))
		for _, indexed := range []bool{false, true} {
			req := gen.BenchRequest(n, indexed)
			var up, upTotal, jd []time.Duration
			var upResp *pb.DecideJobResponse
			for r := 0; r < reps; r++ {
				start := time.Now()
				resp, run, err := upstream.Canonical(req)
				if err != nil {
					return err
				}
				upTotal = append(upTotal, time.Since(start))
				up = append(up, run.Elapsed)
				upResp = resp
			}
			mode := map[bool]string{true: "Indexed", false: "NonIndexed"}[indexed]
			if d == nil {
				fmt.Printf("%-8d %-10s %14v %14v %14s %8s  %s\n", n, mode, median(up).Round(time.Microsecond), median(upTotal).Round(time.Microsecond), "-", "-", "-")
				continue
			}
			same := "yes"
			for r := 0; r < reps; r++ {
				resp, took, err := d.Decide(req)
				if err != nil {
					same = "error: " + err.Error()
					break
				}
				jd = append(jd, took)
				if r == 0 {
					if diffs := canon.DiffResponses(upResp, canon.Canonicalize(resp, req.Job)); len(diffs) > 0 {
						same = fmt.Sprintf("no (%d fields)", len(diffs))
					}
				}
			}
			if len(jd) == 0 {
				fmt.Printf("%-8d %-10s %14v %14v %14s %8s  %s\n", n, mode, median(up).Round(time.Microsecond), median(upTotal).Round(time.Microsecond), "-", "-", same)
				continue
			}
			ratio := float64(median(jd)) / float64(median(up))
			fmt.Printf("%-8d %-10s %14v %14v %14v %7.2fx  %s\n", n, mode, median(up).Round(time.Microsecond),
				median(upTotal).Round(time.Microsecond), median(jd).Round(time.Microsecond), ratio, same)
		}
	}
	fmt.Println("ratio = job-decider round trip / upstream's in-process syncJob (informational, not pass/fail)")
	return nil
}
