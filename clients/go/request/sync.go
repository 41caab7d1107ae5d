package request

import (
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	pb "job-decider.dev/clients/go/jobdecider/v1"
)

// Options are the fields of a request a controller's sync sets besides the
// Job and its pods.
type Options struct {
	// Now is the decision's time; decisions never read a clock. The zero
	// time is the current one.
	Now time.Time
	// State is the previous response's State for this Job, sent back
	// unchanged: without it the pod-failure backoff starts over at every
	// sync. Nil for a Job's first sync.
	State *pb.ControllerState
	// ControllerName is the Job's spec.managedBy value this controller
	// serves, e.g. "kubernetes.io/job-controller"; empty for the default.
	ControllerName string
	// Explain asks for the response's Explanation: which rule matched which
	// pod, the backoff, what the plan is waiting for.
	Explain bool
	// Expectations are the creations and deletions this controller issued
	// and has not yet seen in its informer.
	Expectations *pb.Expectations
	// FailurePolicy is the extended failure policy document, for a caller
	// that keeps it off the Job (see BuildWithPolicy).
	FailurePolicy string
	// Full sends the pods Kubernetes-shaped (BuildFull) even when they all
	// have a lean form.
	Full bool
}

// BuildWith is the request of one controller sync: the pods in the lean
// encoding (Build), or Kubernetes-shaped when one has no lean form or
// opts.Full is set, and every field of opts. The response's State goes in
// the next sync's opts.State, and its RequeueAfter says when to sync again
// if nothing changes before.
func BuildWith(job *batchv1.Job, pods []*corev1.Pod, opts Options) *pb.DecideJobRequest {
	var req *pb.DecideJobRequest
	if !opts.Full {
		// build fails only on a pod without a lean form (a *NotLeanError):
		// the full encoding carries it, for the server to judge.
		req, _ = build(job, pods, opts.FailurePolicy)
	}
	if req == nil {
		req = BuildFullWithPolicy(job, pods, opts.FailurePolicy)
	}
	now := opts.Now
	if now.IsZero() {
		now = time.Now()
	}
	req.Now = timestamppb.New(now)
	req.State = opts.State
	req.ControllerName = opts.ControllerName
	req.Explain = opts.Explain
	req.Expectations = opts.Expectations
	return req
}
