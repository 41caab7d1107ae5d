package main

import (
	"path/filepath"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	featuregatetesting "k8s.io/component-base/featuregate/testing"
	"k8s.io/kubernetes/pkg/features"

	pb "job-decider.dev/clients/go/jobdecider/v1"
	"job-decider.dev/conformance/internal/canon"
	"job-decider.dev/conformance/internal/upstream"
	"job-decider.dev/testkit/vectors"
)

// vectorsDir holds the language-neutral vectors, relative to this module.
const vectorsDir = "../tests/vectors"

// TestVectorsMatchUpstream runs upstream on every vector's request and checks
// the result is the vector's expected, so vectors and upstream cannot drift.
func TestVectorsMatchUpstream(t *testing.T) {
	files, err := vectors.Files([]string{vectorsDir})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatalf("no vectors under %s", vectorsDir)
	}
	names := map[string]string{}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			v, err := vectors.LoadJob(f)
			if err != nil {
				t.Fatal(err)
			}
			if prev, dup := names[v.Name]; dup {
				t.Errorf("vector name %q is used by %s and %s", v.Name, prev, f)
			}
			names[v.Name] = f
			if err := verifyVector(f); err != nil {
				t.Error(err)
			}
		})
	}
}

// TestRunIsDeterministic runs each vector several times: upstream's parallel
// goroutines must not leak into the canonical form.
func TestRunIsDeterministic(t *testing.T) {
	files, err := vectors.Files([]string{vectorsDir})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		v, err := vectors.LoadJob(f)
		if err != nil {
			t.Fatal(err)
		}
		first, _, err := upstream.CanonicalWith(v.Request, upstream.OptsFor(v.Scope))
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 5; i++ {
			again, _, err := upstream.CanonicalWith(v.Request, upstream.OptsFor(v.Scope))
			if err != nil {
				t.Fatal(err)
			}
			if d := canon.DiffResponses(first, again); len(d) > 0 {
				t.Fatalf("%s: run %d differs:\n%s", v.Name, i, canon.FormatDiff(d, "first", "again"))
			}
		}
	}
}

// TestSuspendClearsStartTimeOnlyWithTheGate pins down where the KEP-5440 startTime
// rule comes from: the vectors record upstream with MutableSchedulingDirectivesForSuspendedJobs
// at its v1.37.2 default (on), which clears startTime when Suspended flips to True;
// with the gate off, upstream keeps the startTime the request carried. Should the gate's
// default or behaviour change upstream, this names the vectors to re-record.
func TestSuspendClearsStartTimeOnlyWithTheGate(t *testing.T) {
	for _, name := range []string{"kep5440-suspend-resize-resume-sync1", "suspend-again-after-resume-clears-start-time"} {
		v, err := vectors.LoadJob(filepath.Join(vectorsDir, name+".yaml"))
		if err != nil {
			t.Fatal(err)
		}
		want := v.Request.GetJob().GetStatus().GetStartTime()
		if want == nil {
			t.Fatalf("%s: the request has no startTime to keep", name)
		}
		written := func(resp *pb.DecideJobResponse) []*timestamppb.Timestamp {
			var got []*timestamppb.Timestamp
			for _, a := range resp.GetActions() {
				if u := a.GetUpdateStatus(); u != nil {
					got = append(got, u.GetStatus().GetStartTime())
				}
			}
			return got
		}
		check := func(gate bool, wantKept bool) {
			featuregatetesting.SetFeatureGateDuringTest(t, utilfeature.DefaultFeatureGate, features.MutableSchedulingDirectivesForSuspendedJobs, gate)
			resp, _, err := upstream.Canonical(v.Request)
			if err != nil {
				t.Fatal(err)
			}
			got := written(resp)
			if len(got) != 1 {
				t.Fatalf("%s (gate %v): %d status writes, want 1", name, gate, len(got))
			}
			if kept := proto.Equal(got[0], want); kept != wantKept || (!kept && got[0] != nil) {
				t.Errorf("%s (gate %v): startTime written %v, request had %v; want kept=%v", name, gate, got[0], want, wantKept)
			}
		}
		check(true, false)
		check(false, true)
	}
}
