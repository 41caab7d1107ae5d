package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	pb "job-decider.dev/clients/go/jobdecider/v1"
	"job-decider.dev/testkit/knowndiff"
	"job-decider.dev/testkit/vectors"
)

// TestVectorsAgreeWithUpstream is the harness itself: every JobSet vector's
// expected plan must be what upstream's reconciler does, but for the fields
// known-differences.md lists, and every listed field must still differ.
func TestVectorsAgreeWithUpstream(t *testing.T) {
	files, err := vectors.FilesFlat([]string{defaultVectorDir()})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 30 {
		t.Fatalf("found %d JobSet vectors in %s, expected the whole set", len(files), defaultVectorDir())
	}
	known, err := loadKnown(defaultKnownFile())
	if err != nil {
		t.Fatal(err)
	}
	s := checkFiles(files, known)
	var report bytes.Buffer
	s.report(&report, false)
	// Printed, not logged, so that `go test` shows the result line on success too.
	fmt.Println(s.resultLine())
	if s.failed() {
		t.Errorf("upstream disagrees with the vectors:\n%s", report.String())
	}
}

// tamper loads a vector, changes its expected plan and checks it; the
// harness must report a mismatch at the changed field.
func tamper(t *testing.T, file string, change func(*pb.DecideJobSetResponse)) *outcome {
	t.Helper()
	v, err := vectors.LoadJobSet(filepath.Join(defaultVectorDir(), file))
	if err != nil {
		t.Fatal(err)
	}
	clean := checkVector(v, &knowndiff.List{})
	if clean.verdict != verdictMatch {
		t.Fatalf("%s must match upstream before tampering: %s", file, formatDiffs(clean.unexcused, ""))
	}
	v.Expected = proto.Clone(v.Expected).(*pb.DecideJobSetResponse)
	change(v.Expected)
	return checkVector(v, &knowndiff.List{})
}

func hasPath(ds []fieldDiff, path string) bool {
	for _, d := range ds {
		if d.Path == path {
			return true
		}
	}
	return false
}

func TestTamperedExpectationsAreCaught(t *testing.T) {
	cases := []struct {
		name, file, path string
		change           func(*pb.DecideJobSetResponse)
	}{
		{
			"restart counter", "restartjobset-below-max-names-the-rule.yaml", "actions[0].updateStatus.status.restarts",
			func(r *pb.DecideJobSetResponse) { r.Actions[0].GetUpdateStatus().Status.Restarts++ },
		},
		{
			"event message", "restartjobset-below-max-names-the-rule.yaml", "actions[2].recordEvent.message",
			func(r *pb.DecideJobSetResponse) { r.Actions[2].GetRecordEvent().Message += "!" },
		},
		{
			"event order", "suspended-jobset-sets-suspended-then-restarting-false.yaml", "actions[1].recordEvent.reason",
			func(r *pb.DecideJobSetResponse) { r.Actions[1], r.Actions[2] = r.Actions[2], r.Actions[1] },
		},
		{
			"a stamped condition time", "suspended-jobset-sets-suspended-then-restarting-false.yaml", "actions[0].updateStatus.status.conditions[1].lastTransitionTime",
			func(r *pb.DecideJobSetResponse) {
				r.Actions[0].GetUpdateStatus().Status.Conditions[1].LastTransitionTime.Seconds--
			},
		},
		{
			"a deleted Job left out", "previous-attempt-jobs-are-deleted-in-foreground.yaml", "actions[0].deleteJobs.jobs[1]",
			func(r *pb.DecideJobSetResponse) { d := r.Actions[0].GetDeleteJobs(); d.Jobs = d.Jobs[:1] },
		},
		{
			"a created Job's label", "global-restart-keeps-per-job-restart-attempts.yaml", "jobsToCreate[1].labels.jobset.sigs.k8s.io/job-restart-attempt",
			func(r *pb.DecideJobSetResponse) {
				r.JobsToCreate[1].Labels["jobset.sigs.k8s.io/job-restart-attempt"] = "1"
			},
		},
		{
			"a Job that upstream does not create", "global-restart-keeps-per-job-restart-attempts.yaml", "jobsToCreate[3]",
			func(r *pb.DecideJobSetResponse) {
				extra := proto.Clone(r.JobsToCreate[2]).(*pb.JobCreation)
				extra.Name = "js-rj-3"
				r.JobsToCreate = append(r.JobsToCreate, extra)
			},
		},
		{
			"no status write where upstream writes one", "restartjob-draws-on-the-shared-budget.yaml", "actions[0].updateStatus",
			func(r *pb.DecideJobSetResponse) { r.Actions = r.Actions[1:] },
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := tamper(t, c.file, c.change)
			if o.verdict != verdictMismatch || !o.failed() {
				t.Fatalf("tampered %s: verdict %q, want a mismatch", c.file, o.verdict)
			}
			if !hasPath(o.unexcused, c.path) {
				t.Errorf("tampered %s: no difference reported at %s; got:\n%s", c.file, c.path, formatDiffs(o.unexcused, "  "))
			}
		})
	}
}

// A known difference excuses its one field of its one vector, nothing else.
func TestKnownDifferencesArePrecise(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "known.md")
	write := func(s string) {
		if err := os.WriteFile(file, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("- `restartjobset-below-max-names-the-rule` `actions[0].updateStatus.status.restarts`: test\n")
	known, err := loadKnown(file)
	if err != nil {
		t.Fatal(err)
	}
	o := tamper(t, "restartjobset-below-max-names-the-rule.yaml", func(r *pb.DecideJobSetResponse) {
		r.Actions[0].GetUpdateStatus().Status.Restarts++
		r.Actions[0].GetUpdateStatus().Status.RestartsCountTowardsMax++
	})
	excused, unexcused := known.Split([]string{o.name}, o.diffs)
	if len(excused) != 1 || len(unexcused) != 1 || unexcused[0].Path != "actions[0].updateStatus.status.restartsCountTowardsMax" {
		t.Errorf("excused %v, unexcused %v: want only restarts excused", excused, unexcused)
	}
	if other, _ := known.Split([]string{"another-vector"}, o.diffs); len(other) != 0 {
		t.Errorf("an entry excused a field of another vector: %v", other)
	}
	if stale := known.Stale([]string{"restartjobset-below-max-names-the-rule"}); len(stale) != 0 {
		t.Errorf("a used entry reported stale: %v", stale)
	}
	fresh, err := loadKnown(file)
	if err != nil {
		t.Fatal(err)
	}
	if stale := fresh.Stale([]string{"restartjobset-below-max-names-the-rule"}); len(stale) != 1 {
		t.Errorf("an entry that excused nothing is not reported stale")
	}
	for _, bad := range []string{
		"- `restartjobset-*` `actions[0].updateStatus.status.restarts`: wildcard name\n",
		"- `restartjobset-below-max-names-the-rule` `actions[*].updateStatus`: wildcard path\n",
		"- `restartjobset-below-max-names-the-rule` `actions`:\n",
	} {
		write(bad)
		if _, err := loadKnown(file); err == nil {
			t.Errorf("accepted %q", strings.TrimSpace(bad))
		}
	}
}

// Bad input is an error naming the vector and the field, never a panic.
func TestBadRequestsNameTheVectorAndField(t *testing.T) {
	v, err := vectors.LoadJobSet(filepath.Join(defaultVectorDir(), "restartjobset-below-max-names-the-rule.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, want string
		change     func(*pb.DecideJobSetRequest)
	}{
		{"no uid", "request.jobSet.metadata", func(r *pb.DecideJobSetRequest) { r.JobSet.Metadata.Uid = "" }},
		{"foreign controller", "request.jobs[0].metadata.ownerReferences", func(r *pb.DecideJobSetRequest) {
			r.Jobs[0].Metadata.OwnerReferences = []*pb.OwnerReference{{ApiVersion: "v1", Kind: "Other", Name: "x", Uid: "other", Controller: proto.Bool(true)}}
		}},
		{"duplicate job", "request.jobs[1].metadata.name", func(r *pb.DecideJobSetRequest) {
			r.Jobs = append(r.Jobs, proto.Clone(r.Jobs[0]).(*pb.Job))
		}},
		{"other namespace", "request.jobs[0].metadata.namespace", func(r *pb.DecideJobSetRequest) { r.Jobs[0].Metadata.Namespace = "elsewhere" }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			bad := *v
			bad.Request = proto.Clone(v.Request).(*pb.DecideJobSetRequest)
			c.change(bad.Request)
			o := checkVector(&bad, &knowndiff.List{})
			if o.verdict != verdictMismatch || len(o.unexcused) != 1 || o.unexcused[0].Path != "(harness error)" {
				t.Fatalf("want a harness error, got %q %v", o.verdict, o.unexcused)
			}
			msg := fmt.Sprint(o.unexcused[0].Left)
			if !strings.Contains(msg, v.Name) || !strings.Contains(msg, c.want) {
				t.Errorf("error %q does not name the vector and %s", msg, c.want)
			}
		})
	}
}
