package controller

import (
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	jobdeciderv1 "job-decider.dev/clients/go/jobdecider/v1"
	"job-decider.dev/clients/go/request"
)

// snapshot is what one DecideJob call is made of.
type snapshot struct {
	Job        *batchv1.Job
	Pods       []*corev1.Pod
	Now        time.Time
	State      *jobdeciderv1.ControllerState
	Controller string
	// PodChangesPending and FinalizerRemovalsPending are the expectations.
	PodChangesPending        bool
	FinalizerRemovalsPending []string
	// Nodes reads the node cache for the nodes of terminating pods; nil sends none.
	Nodes request.NodeLookup
}

// request builds the DecideJobRequest for a snapshot, its pods in the lean
// encoding. A pod with no lean form (a phase or condition status the API
// does not define) sends every pod Kubernetes-shaped instead, and notLean
// says why; the server then decides or rejects it as it would any client's.
func (s *snapshot) request() (req *jobdeciderv1.DecideJobRequest, notLean error) {
	req, err := request.Build(s.Job, s.Pods)
	if err != nil {
		notLean = err
		req = request.BuildFull(s.Job, s.Pods)
	}
	req.Now = timestamppb.New(s.Now)
	req.State = s.State
	req.ControllerName = s.Controller
	req.Expectations = &jobdeciderv1.Expectations{
		PodChangesPending:        s.PodChangesPending,
		FinalizerRemovalsPending: s.FinalizerRemovalsPending,
	}
	request.Nodes(req, s.Pods, s.Nodes)
	return req, notLean
}
