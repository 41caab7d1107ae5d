package main

// Checking vectors: run upstream on each request, put its effects in the
// canonical form and diff them with the vector's expected plan.

import (
	"fmt"
	"io"
	"strings"

	"google.golang.org/protobuf/proto"

	pb "job-decider.dev/clients/go/jobdecider/v1"
	"job-decider.dev/testkit/knowndiff"
	"job-decider.dev/testkit/vectors"
)

type verdict string

const (
	verdictMatch    verdict = "match"
	verdictKnown    verdict = "known difference"
	verdictMismatch verdict = "MISMATCH"
)

type outcome struct {
	name      string
	verdict   verdict
	diffs     []fieldDiff
	excused   []knowndiff.Entry
	unexcused []fieldDiff
	notes     []string
	// asRestartJob is the re-run of a vector using the KEP's RecreateJob with
	// the action renamed RestartJob; it must match with no excuses.
	asRestartJob *outcome
}

func (o *outcome) failed() bool {
	return o.verdict == verdictMismatch || (o.asRestartJob != nil && o.asRestartJob.verdict != verdictMatch)
}

// compare runs upstream on the vector and diffs the result with its expected plan.
func compare(v *vectors.JobSet) ([]fieldDiff, []string, error) {
	up, err := runUpstream(v)
	if err != nil {
		return nil, nil, err
	}
	var diffs []fieldDiff
	if up.err != nil {
		diffs = append(diffs, fieldDiff{Path: "(reconcile error)", Left: up.err.Error(), Right: nil})
	}
	rest, err := diffResponses(up.resp, canonicalCopy(v.Expected))
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", v.Name, err)
	}
	diffs = append(diffs, rest...)
	diffs = append(diffs, up.diff...)
	notes := append([]string(nil), up.notes...)
	if extra := undecidedLabels(up.created); len(extra) > 0 {
		notes = append(notes, "created Jobs also carry labels not decided by DecideJobSet: "+strings.Join(extra, ", "))
	}
	return diffs, notes, nil
}

func checkVector(v *vectors.JobSet, known *knowndiff.List) *outcome {
	o := &outcome{name: v.Name}
	diffs, notes, err := compare(v)
	if err != nil {
		o.verdict = verdictMismatch
		o.unexcused = []fieldDiff{{Path: "(harness error)", Left: err.Error()}}
		o.diffs = o.unexcused
		return o
	}
	o.diffs, o.notes = diffs, notes
	o.excused, o.unexcused = known.Split([]string{v.Name}, diffs)
	switch {
	case len(diffs) == 0:
		o.verdict = verdictMatch
	case len(o.unexcused) == 0:
		o.verdict = verdictKnown
	default:
		o.verdict = verdictMismatch
	}
	if alias := recreateAsRestart(v); alias != nil {
		a := &outcome{name: v.Name + " (RecreateJob run as RestartJob)"}
		d, n, err := compare(alias)
		switch {
		case err != nil:
			a.verdict, a.unexcused = verdictMismatch, []fieldDiff{{Path: "(harness error)", Left: err.Error()}}
		case len(d) == 0:
			a.verdict = verdictMatch
		default:
			a.verdict, a.unexcused = verdictMismatch, d
		}
		a.diffs, a.notes = a.unexcused, n
		o.asRestartJob = a
	}
	return o
}

// recreateAsRestart returns a copy of the vector with every rule action
// RecreateJob (the KEP's name, never released) renamed RestartJob, which is
// how job-decider reads it; nil when the vector has none.
func recreateAsRestart(v *vectors.JobSet) *vectors.JobSet {
	found := false
	for _, r := range v.Request.GetJobSet().GetSpec().GetFailurePolicy().GetRules() {
		if r.GetAction() == "RecreateJob" {
			found = true
		}
	}
	if !found {
		return nil
	}
	c := *v
	c.Request = proto.Clone(v.Request).(*pb.DecideJobSetRequest)
	for _, r := range c.Request.GetJobSet().GetSpec().GetFailurePolicy().GetRules() {
		if r.GetAction() == "RecreateJob" {
			r.Action = "RestartJob"
		}
	}
	return &c
}

// summary is the outcome of a run over many vectors.
type summary struct {
	outcomes []*outcome
	stale    []knowndiff.Entry
	match    int
	mismatch int
	known    int
}

func (s *summary) failed() bool {
	if len(s.stale) > 0 {
		return true
	}
	for _, o := range s.outcomes {
		if o.failed() {
			return true
		}
	}
	return false
}

func (s *summary) resultLine() string {
	return fmt.Sprintf("%d vectors: %d match, %d mismatch, %d known differences", len(s.outcomes), s.match, s.mismatch, s.known)
}

// checkFiles checks every file; a file that cannot be loaded is a mismatch.
func checkFiles(files []string, known *knowndiff.List) *summary {
	s := &summary{}
	var ran []string
	for _, f := range files {
		var o *outcome
		v, err := vectors.LoadJobSet(f)
		if err != nil {
			o = &outcome{name: f, verdict: verdictMismatch, unexcused: []fieldDiff{{Path: "(harness error)", Left: err.Error()}}}
			o.diffs = o.unexcused
		} else {
			ran = append(ran, v.Name)
			o = checkVector(v, known)
		}
		s.outcomes = append(s.outcomes, o)
		switch {
		case o.failed():
			s.mismatch++
		case o.verdict == verdictKnown:
			s.known++
		default:
			s.match++
		}
	}
	s.stale = known.Stale(ran)
	return s
}

// report prints one line per vector (details for differences, notes with verbose) and the result line.
func (s *summary) report(w io.Writer, verbose bool) {
	for _, o := range s.outcomes {
		fmt.Fprintf(w, "%-18s %s\n", o.verdict, o.name)
		if len(o.unexcused) > 0 {
			fmt.Fprint(w, formatDiffs(o.unexcused, "    "))
		}
		if verbose || o.verdict == verdictMismatch {
			for _, e := range o.excused {
				fmt.Fprintf(w, "    %s: known (known-differences.md:%d)\n", e.Path, e.Line)
			}
		}
		if verbose {
			for _, n := range o.notes {
				fmt.Fprintf(w, "    note: %s\n", n)
			}
		}
		if a := o.asRestartJob; a != nil {
			fmt.Fprintf(w, "%-18s %s\n", a.verdict, a.name)
			if len(a.unexcused) > 0 {
				fmt.Fprint(w, formatDiffs(a.unexcused, "    "))
			}
		}
	}
	for _, e := range s.stale {
		fmt.Fprintf(w, "STALE known difference (known-differences.md:%d): %s %s excuses nothing\n", e.Line, e.Name, e.Path)
	}
	fmt.Fprintln(w, s.resultLine())
}
