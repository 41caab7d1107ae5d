package request_test

import (
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	pb "job-decider.dev/clients/go/jobdecider/v1"
	"job-decider.dev/clients/go/request"
)

// Issue 26, defect 4: a controller's sync sends back the state, its name,
// explain and now; BuildWith takes them all.
func TestBuildWithCarriesTheControllerLoopsFields(t *testing.T) {
	job := &batchv1.Job{}
	job.Name, job.UID = "pi", "job-uid"
	pod := &corev1.Pod{}
	pod.Name, pod.UID, pod.Status.Phase = "pi-abc", "pod-uid", corev1.PodFailed
	state := &pb.ControllerState{Backoff: &pb.BackoffRecord{}}
	expect := &pb.Expectations{}
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)

	req := request.BuildWith(job, []*corev1.Pod{pod}, request.Options{
		Now: now, State: state, ControllerName: "example.com/my-controller", Explain: true,
		Expectations: expect, FailurePolicy: "rules: []",
	})
	if !req.GetNow().AsTime().Equal(now) {
		t.Errorf("now = %v, want %v", req.GetNow().AsTime(), now)
	}
	if !proto.Equal(req.GetState(), state) || req.GetControllerName() != "example.com/my-controller" ||
		!req.GetExplain() || !proto.Equal(req.GetExpectations(), expect) || req.GetFailurePolicy() != "rules: []" {
		t.Errorf("the sync's fields did not all go in: %v", req)
	}
	if len(req.GetLeanPods()) != 1 || len(req.GetPods()) != 0 {
		t.Errorf("%d lean and %d full pods, want the one pod lean", len(req.GetLeanPods()), len(req.GetPods()))
	}
	if req.GetJob().GetMetadata().GetUid() != "job-uid" {
		t.Errorf("job uid %q", req.GetJob().GetMetadata().GetUid())
	}

	full := request.BuildWith(job, []*corev1.Pod{pod}, request.Options{Full: true})
	if len(full.GetPods()) != 1 || len(full.GetLeanPods()) != 0 {
		t.Errorf("Full: %d full and %d lean pods, want the one pod full", len(full.GetPods()), len(full.GetLeanPods()))
	}
	if d := time.Since(full.GetNow().AsTime()); d < 0 || d > time.Minute {
		t.Errorf("a zero Now sent %v, want the current time", full.GetNow().AsTime())
	}

	pod.Status.Phase = "Exploded" // no lean form: the full encoding carries it
	odd := request.BuildWith(job, []*corev1.Pod{pod}, request.Options{Now: now})
	if len(odd.GetPods()) != 1 || odd.GetPods()[0].GetStatus().GetPhase() != "Exploded" {
		t.Errorf("a pod without a lean form: %v, want it sent Kubernetes-shaped", odd)
	}
}
