package main

// The `random` and `lifecycle` commands: seeded single-sync scenarios
// (random.go) and multi-sync lifecycles (lifecycle.go), run on a few
// workers, reported in scenario order, bounded in count and in time.

import (
	"flag"
	"runtime"
	"time"

	"job-decider.dev/conformance/internal/compare"
	"job-decider.dev/conformance/internal/decider"
)

func cmdRandom(args []string) error    { return randomCommand("random", args) }
func cmdLifecycle(args []string) error { return randomCommand("lifecycle", args) }

func randomCommand(name string, args []string) error {
	fs := flag.NewFlagSet(name, flag.ExitOnError)
	var tf decider.Flags
	tf.Register(fs)
	var o compare.RandomOpts
	o.LifecycleCmd = name == "lifecycle"
	fs.Uint64Var(&o.Seed, "seed", 0, "seed (0: pick one from the clock; it is printed)")
	if o.LifecycleCmd {
		fs.IntVar(&o.Lifecycles, "n", 200, "number of lifecycles")
		fs.IntVar(&o.Only, "only", -1, "replay only lifecycle i of the seed, with a trace of every sync")
	} else {
		fs.IntVar(&o.N, "n", 1000, "number of single-sync scenarios")
		fs.IntVar(&o.Lifecycles, "lifecycles", 0, "number of multi-sync lifecycles run after them")
		fs.IntVar(&o.Only, "only", -1, "replay only single scenario i of the seed")
		fs.IntVar(&o.Pods, "pods", -1, "pods per single scenario (-1: 0..12 at random)")
	}
	fs.BoolVar(&o.UpstreamOnly, "upstream-only", false, "run only upstream (tests the generator, the simulator and the runner)")
	fs.StringVar(&o.SaveDir, "save-dir", "mismatches", "where to save mismatching snapshots (empty: don't)")
	knownFile := fs.String("known", compare.DefaultKnownFile(), "known differences file")
	fs.IntVar(&o.MaxReports, "max-reports", 20, "print at most this many mismatches in full")
	fs.IntVar(&o.Workers, "workers", min(2, runtime.GOMAXPROCS(0)), "scenarios run at once")
	fs.DurationVar(&o.MaxTime, "max-time", time.Hour, "stop (and fail) when the run takes longer than this")
	fs.BoolVar(&o.Verbose, "v", false, "with --only: print every request and response in full")
	fs.Parse(args)
	if fs.NArg() > 0 {
		usage()
	}
	if o.Seed == 0 {
		o.Seed = uint64(time.Now().UnixNano())
	}
	known, err := compare.LoadKnown(*knownFile)
	if err != nil {
		return err
	}
	var d *decider.Conn
	if !o.UpstreamOnly {
		if d, err = tf.Connect(); err != nil {
			return err
		}
		defer d.Close()
	}
	return compare.RunRandom(d, known, o)
}
