package compare

// The comparison of job-decider's answers (internal/decider) with upstream's.

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"

	jobutil "k8s.io/kubernetes/pkg/controller/job/util"

	pb "job-decider.dev/clients/go/jobdecider/v1"
	"job-decider.dev/conformance/internal/canon"
	"job-decider.dev/conformance/internal/decider"
	"job-decider.dev/conformance/internal/upstream"
	"job-decider.dev/testkit/knowndiff"
	"job-decider.dev/testkit/vectors"
)

// Outcome of comparing one scenario.
type Outcome struct {
	name     string
	skipped  string // why the scenario was not compared (upstream could not run it)
	diffs    []canon.FieldDiff
	excused  bool
	upstream *pb.DecideJobResponse
	decided  *pb.DecideJobResponse
	request  *pb.DecideJobRequest // what job-decider was sent
	upTime   time.Duration
	jdTime   time.Duration
	// encDiffs are where the lean encoding's answer differs from the full
	// one's: never excused. notLean is why the request went full only.
	encDiffs []canon.FieldDiff
	notLean  string
}

// mismatch: a difference from upstream no known difference covers, or any
// difference between the two encodings.
func (o *Outcome) Mismatch() bool { return (len(o.diffs) > 0 && !o.excused) || len(o.encDiffs) > 0 }

// class is the mismatch's shape: the encodings' difference first, as no
// known difference can cover it.
func (o *Outcome) class() string {
	if len(o.encDiffs) > 0 {
		return mismatchClass(o.encDiffs)
	}
	return mismatchClass(o.diffs)
}

// differs: any difference at all, excused or not.
func (o *Outcome) Differs() bool { return len(o.diffs) > 0 || len(o.encDiffs) > 0 }

// compare runs both sides on one request. A generated request goes to
// upstream whole (upstream.Whole) and to job-decider as the contract has a
// caller send it (contractRequest); a vector goes to both as it is.
func Compare(d *decider.Conn, known *knowndiff.List, name string, req *pb.DecideJobRequest, generated bool, opts upstream.Opts) *Outcome {
	o := &Outcome{name: name, request: req}
	if generated {
		opts = upstream.Whole
		o.request = contractRequest(req)
	}
	up, run, err := upstream.CanonicalWith(req, opts)
	if err != nil {
		o.skipped = "upstream cannot run this upstream.Snapshot: " + err.Error()
		return o
	}
	o.upstream, o.upTime = up, run.Elapsed
	if run.SyncErr != nil {
		o.skipped = "upstream's syncJob returned an error: " + run.SyncErr.Error()
		return o
	}
	resp, took, err := d.Decide(o.request)
	o.jdTime = took
	if err != nil {
		o.diffs = []canon.FieldDiff{{Path: "(rpc)", Left: "a plan", Right: "error: " + err.Error()}}
	} else {
		o.decided = canon.Canonicalize(resp, req.GetJob())
		o.diffs = canon.DiffResponses(up, o.decided)
	}
	if len(o.diffs) > 0 {
		o.excused = excuses(known, name, o.diffs, shapes(req)...)
	}
	o.encDiffs, o.notLean = d.CheckLean(o.request, resp, err)
	return o
}

// report prints a mismatch and saves its snapshot as a vector file.
func (o *Outcome) Report(w io.Writer, req *pb.DecideJobRequest, saveDir, origin string) {
	if len(o.diffs) > 0 {
		label := "MISMATCH"
		if o.excused {
			label = "known difference"
		}
		fmt.Fprintf(w, "%s %s: %d field(s) differ\n%s", label, o.name, len(o.diffs), canon.FormatDiff(o.diffs, "upstream", "job-decider"))
	}
	if len(o.encDiffs) > 0 {
		fmt.Fprintf(w, "MISMATCH %s: the lean encoding's answer differs from the full one's in %d field(s)\n%s",
			o.name, len(o.encDiffs), canon.FormatDiff(o.encDiffs, "full", "lean"))
	}
	if !o.Mismatch() || saveDir == "" {
		return
	}
	if err := os.MkdirAll(saveDir, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return
	}
	diffs := slices.Concat(o.diffs, o.encDiffs)
	var paths []string
	for i, f := range diffs {
		if i == 5 {
			paths = append(paths, "...")
			break
		}
		paths = append(paths, f.Path)
	}
	sweepNote, scope := "", ""
	if origin != "check" {
		sweepNote = " (syncJob, and for a finished Job the orphan-pod worker's sweep of its pods, as `random` and `lifecycle` run it)"
		scope = "controller"
	}
	desc := fmt.Sprintf("Regression case saved by `conformance %s`: job-decider differed from upstream at %s. "+
		"expected is upstream's response%s.", origin, strings.Join(paths, ", "), sweepNote)
	path := filepath.Join(saveDir, safeFileName(o.name)+".yaml")
	v, err := vectors.NewJob(path, o.name, desc, scope, req, o.upstream)
	if err == nil {
		err = v.Save()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "saving", path, ":", err)
		return
	}
	fmt.Fprintf(w, "  saved %s\n", path)
}

// contractRequest is a generated request as a caller sends it by contract:
// the Job's own pods and orphans only. Pods controlled by another owner
// cannot change upstream's sync (its pod listing skips them), and
// job-decider refuses them (known-differences.md, adopt-only-matching).
func contractRequest(req *pb.DecideJobRequest) *pb.DecideJobRequest {
	uid := req.GetJob().GetMetadata().GetUid()
	foreign := func(p *pb.Pod) bool {
		for _, r := range p.GetMetadata().GetOwnerReferences() {
			if r.GetController() && r.GetUid() != uid {
				return true
			}
		}
		return false
	}
	if !slices.ContainsFunc(req.GetPods(), foreign) {
		return req
	}
	out := proto.Clone(req).(*pb.DecideJobRequest)
	out.Pods = slices.DeleteFunc(out.Pods, foreign)
	return out
}

// shapes names the kinds of snapshot a request is, for known-differences.md
// entries that cover every generated scenario of one kind.
func shapes(req *pb.DecideJobRequest) []string {
	s, err := upstream.SnapshotFromRequest(req)
	if err != nil {
		return nil
	}
	var out []string
	if !s.Ours && jobutil.IsJobFinished(s.Job) {
		out = append(out, "shape:finished-managed-elsewhere")
	}
	return out
}

var unsafeChars = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

func safeFileName(s string) string { return unsafeChars.ReplaceAllString(s, "_") }

// Skipped says why the scenario was not compared; empty when it was.
func (o *Outcome) Skipped() string { return o.skipped }

// NotLean says why the request went with full pods only; empty when it went both ways.
func (o *Outcome) NotLean() string { return o.notLean }
