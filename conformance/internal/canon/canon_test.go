package canon

import (
	"testing"

	"google.golang.org/protobuf/proto"

	pb "job-decider.dev/clients/go/jobdecider/v1"
)

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
	got := Canonicalize(in, &pb.Job{Metadata: &pb.ObjectMeta{Name: "job"}})
	if d := DiffResponses(want, got); len(d) > 0 {
		t.Fatalf("canonical form differs:\n%s", FormatDiff(d, "want", "got"))
	}
}
