package main

import (
	"errors"
	"flag"
	"fmt"
	"os"

	"google.golang.org/protobuf/proto"
	utilfeature "k8s.io/apiserver/pkg/util/feature"

	"job-decider.dev/conformance/internal/canon"
	"job-decider.dev/conformance/internal/upstream"
	"job-decider.dev/testkit/vectors"
)

func cmdUpstream(args []string) error {
	fs := flag.NewFlagSet("upstream", flag.ExitOnError)
	gates := fs.String("feature-gates", "", "upstream feature gates to set first, e.g. MutableSchedulingDirectivesForSuspendedJobs=false (only to see a gate's effect: vectors are recorded with the defaults)")
	fs.Parse(args)
	if *gates != "" {
		if err := utilfeature.DefaultMutableFeatureGate.Set(*gates); err != nil {
			return fmt.Errorf("--feature-gates: %w", err)
		}
	}
	if fs.NArg() != 1 {
		usage()
	}
	v, err := vectors.LoadJob(fs.Arg(0))
	if err != nil {
		return err
	}
	resp, run, err := upstream.CanonicalWith(v.Request, upstream.OptsFor(v.Scope))
	if err != nil {
		return fmt.Errorf("%s: %w", v.Name, err)
	}
	if run.SyncErr != nil {
		fmt.Fprintf(os.Stderr, "note: upstream's syncJob returned an error: %v\n", run.SyncErr)
	}
	fmt.Println(canon.PrettyProto(resp))
	return nil
}

func cmdRecord(args []string) error {
	fs := flag.NewFlagSet("record", flag.ExitOnError)
	fs.Parse(args)
	files, err := vectors.Files(fs.Args())
	if err != nil {
		return err
	}
	if len(files) == 0 {
		usage()
	}
	var failed int
	for _, f := range files {
		v, err := vectors.LoadJob(f)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			failed++
			continue
		}
		resp, run, err := upstream.CanonicalWith(v.Request, upstream.OptsFor(v.Scope))
		if err == nil && run.SyncErr != nil {
			err = fmt.Errorf("upstream's syncJob returned an error (not recorded): %w", run.SyncErr)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", f, err)
			failed++
			continue
		}
		changed := v.Expected == nil || !proto.Equal(v.Expected, resp)
		if err := v.SetExpected(resp); err != nil {
			return err
		}
		if err := v.Save(); err != nil {
			return err
		}
		state := "unchanged"
		if changed {
			state = "updated"
		}
		fmt.Printf("%-9s %s (%s): %s\n", state, f, v.Name, canon.Summary(resp))
	}
	if failed > 0 {
		return fmt.Errorf("%d of %d vectors failed", failed, len(files))
	}
	return nil
}

// cmdVerify checks that each vector's expected is what upstream does now.
func cmdVerify(args []string) error {
	fs := flag.NewFlagSet("verify", flag.ExitOnError)
	fs.Parse(args)
	files, err := vectors.Files(fs.Args())
	if err != nil {
		return err
	}
	var bad int
	for _, f := range files {
		if err := verifyVector(f); err != nil {
			fmt.Fprintln(os.Stderr, err)
			bad++
		}
	}
	if bad > 0 {
		return fmt.Errorf("%d of %d vectors differ from upstream", bad, len(files))
	}
	fmt.Printf("%d vectors match upstream\n", len(files))
	return nil
}

func verifyVector(f string) error {
	v, err := vectors.LoadJob(f)
	if err != nil {
		return err
	}
	if v.Expected == nil {
		return fmt.Errorf("%s: no expected (run `conformance record`)", f)
	}
	resp, _, err := upstream.CanonicalWith(v.Request, upstream.OptsFor(v.Scope))
	if err != nil {
		return fmt.Errorf("%s: %w", f, err)
	}
	want := canon.Canonicalize(v.Expected, v.Request.GetJob())
	if d := canon.DiffResponses(resp, want); len(d) > 0 {
		return fmt.Errorf("%s (%s): expected differs from upstream \n%s", f, v.Name, canon.FormatDiff(d, "upstream", "file"))
	}
	return nil
}

var errMismatch = errors.New("mismatch")
