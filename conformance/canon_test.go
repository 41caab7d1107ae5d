package main

import (
	"testing"

	"google.golang.org/protobuf/proto"

	pb "job-decider.dev/clients/go/jobdecider/v1"
)

func TestPairFinalizerPatches(t *testing.T) {
	// deleteJobPods runs patch-then-delete per pod in parallel goroutines;
	// a later finalizer removal of the same pod stays a removal.
	ops := []op{
		{kind: opRemoveFinalizer, pod: "a"},
		{kind: opRemoveFinalizer, pod: "b"},
		{kind: opDelete, pod: "b"},
		{kind: opDelete, pod: "c"},
		{kind: opDelete, pod: "a"},
		{kind: opRemoveFinalizer, pod: "a"},
		{kind: opUpdateStatus},
		{kind: opRemoveFinalizer, pod: "d"},
		{kind: opUpdateStatus},
		{kind: opDelete, pod: "d"},
	}
	got := pairFinalizerPatches(ops)
	wantPaired := []bool{true, true, false, false, false, false, false, false, false, false}
	wantFirst := map[int]bool{2: true, 4: true}
	for i, o := range got {
		if o.paired != wantPaired[i] {
			t.Errorf("op %d paired = %v", i, o.paired)
		}
		if o.kind == opDelete && o.removeFinalizerFirst != wantFirst[i] {
			t.Errorf("op %d removeFinalizerFirst = %v", i, o.removeFinalizerFirst)
		}
	}
}

func refs(names ...string) []*pb.PodReference {
	var out []*pb.PodReference
	for _, n := range names {
		out = append(out, &pb.PodReference{Name: n, Uid: n + "-uid"})
	}
	return out
}

func TestCanonicalize(t *testing.T) {
	in := &pb.DecideJobResponse{Actions: []*pb.Action{
		{Kind: &pb.Action_ReleasePods{ReleasePods: &pb.ReleasePods{Pods: refs("z")}}},
		{Kind: &pb.Action_AdoptPods{AdoptPods: &pb.AdoptPods{Pods: refs("b")}}},
		{Kind: &pb.Action_AdoptPods{AdoptPods: &pb.AdoptPods{Pods: refs("a")}}},
		{Kind: &pb.Action_CreatePods{CreatePods: &pb.CreatePods{Pods: []*pb.PodCreation{{CompletionIndex: proto.Int32(3)}}}}},
		{Kind: &pb.Action_CreatePods{CreatePods: &pb.CreatePods{Pods: []*pb.PodCreation{{CompletionIndex: proto.Int32(1)}}}}},
		{Kind: &pb.Action_UpdateStatus{UpdateStatus: &pb.UpdateStatus{Status: &pb.JobStatus{
			UncountedTerminatedPods: &pb.UncountedTerminatedPods{Failed: []string{"y", "x"}}}}}},
		{Kind: &pb.Action_UpdateStatus{UpdateStatus: &pb.UpdateStatus{Status: &pb.JobStatus{Active: 1}}}},
		{Kind: &pb.Action_RemoveFinalizers{RemoveFinalizers: &pb.RemoveFinalizers{Pods: refs("q", "p")}}},
	}, State: &pb.ControllerState{Backoff: &pb.BackoffRecord{}}}
	want := &pb.DecideJobResponse{Actions: []*pb.Action{
		{Kind: &pb.Action_AdoptPods{AdoptPods: &pb.AdoptPods{Pods: refs("a", "b")}}},
		{Kind: &pb.Action_ReleasePods{ReleasePods: &pb.ReleasePods{Pods: refs("z")}}},
		{Kind: &pb.Action_CreatePods{CreatePods: &pb.CreatePods{Pods: []*pb.PodCreation{
			{GenerateName: "job-", CompletionIndex: proto.Int32(1)},
			{GenerateName: "job-", CompletionIndex: proto.Int32(3)}}}}},
		{Kind: &pb.Action_UpdateStatus{UpdateStatus: &pb.UpdateStatus{Status: &pb.JobStatus{
			UncountedTerminatedPods: &pb.UncountedTerminatedPods{Failed: []string{"x", "y"}}}}}},
		{Kind: &pb.Action_UpdateStatus{UpdateStatus: &pb.UpdateStatus{Status: &pb.JobStatus{Active: 1}}}},
		{Kind: &pb.Action_RemoveFinalizers{RemoveFinalizers: &pb.RemoveFinalizers{Pods: refs("p", "q")}}},
	}}
	got := canonicalize(in, &pb.Job{Metadata: &pb.ObjectMeta{Name: "job"}})
	if d := diffResponses(want, got); len(d) > 0 {
		t.Fatalf("canonical form differs:\n%s", formatDiff(d, "want", "got"))
	}
}

// TestRandomScenariosRun checks the generator makes valid snapshots that
// upstream runs without error and whose created pods the contract can express.
func TestRandomScenariosRun(t *testing.T) {
	for i := 0; i < 300; i++ {
		req, err := genRequest(12345, i, -1)
		if err != nil {
			t.Fatal(err)
		}
		_, run, err := upstreamCanonical(req)
		if err != nil {
			t.Fatalf("%s: %v", scenarioName(12345, i), err)
		}
		if run.syncErr != nil {
			t.Fatalf("%s: syncJob: %v", scenarioName(12345, i), run.syncErr)
		}
	}
}
