package main

// The comparison of job-decider's answers (internal/decider) with upstream's.

import (
	"flag"
	"fmt"
	"os"

	"job-decider.dev/conformance/internal/compare"
	"job-decider.dev/conformance/internal/decider"
	"job-decider.dev/conformance/internal/upstream"
	"job-decider.dev/testkit/vectors"
)

func cmdCheck(args []string) error {
	fs := flag.NewFlagSet("check", flag.ExitOnError)
	var tf decider.Flags
	tf.Register(fs)
	saveDir := fs.String("save-dir", "mismatches", "where to save mismatching snapshots (empty: don't)")
	knownFile := fs.String("known", compare.DefaultKnownFile(), "known differences file")
	fs.Parse(args)
	files, err := vectors.Files(fs.Args())
	if err != nil {
		return err
	}
	if len(files) == 0 {
		usage()
	}
	known, err := compare.LoadKnown(*knownFile)
	if err != nil {
		return err
	}
	d, err := tf.Connect()
	if err != nil {
		return err
	}
	defer d.Close()
	var mismatches, excused, skipped int
	var enc decider.EncodingTally
	for _, f := range files {
		v, err := vectors.LoadJob(f)
		if err != nil {
			return err
		}
		o := compare.Compare(d, known, v.Name, v.Request, false, upstream.OptsFor(v.Scope))
		if o.Skipped() == "" {
			enc.Add(v.Name, o.NotLean())
		}
		switch {
		case o.Skipped() != "":
			skipped++
			fmt.Printf("skipped %s: %s\n", v.Name, o.Skipped())
		case !o.Differs():
			fmt.Printf("ok %s\n", v.Name)
		default:
			if !o.Mismatch() {
				excused++
			} else {
				mismatches++
			}
			o.Report(os.Stdout, v.Request, *saveDir, "check")
		}
	}
	fmt.Printf("%d vectors: %d match, %d mismatch, %d known differences, %d skipped\n",
		len(files), len(files)-mismatches-excused-skipped, mismatches, excused, skipped)
	fmt.Println(enc.String())
	if mismatches > 0 || skipped > 0 {
		return fmt.Errorf("%d unlisted mismatches, %d vectors upstream could not run", mismatches, skipped)
	}
	return nil
}
