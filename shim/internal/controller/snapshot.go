package controller

import (
	"encoding/json"
	"fmt"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	jobdeciderv1 "job-decider.dev/clients/go/jobdecider/v1"
)

// The contract names every field as the Kubernetes API does, so objects cross
// the boundary through their JSON forms, with no field mapped by hand: fields
// the contract leaves out are dropped on the way in.
var (
	fromKube = protojson.UnmarshalOptions{DiscardUnknown: true}
	toKube   = protojson.MarshalOptions{}
)

// kubeToProto converts a Kubernetes object (or part of one) to its contract message.
func kubeToProto(obj any, msg proto.Message) error {
	data, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	return fromKube.Unmarshal(data, msg)
}

// protoToKube converts a contract message to the Kubernetes type it mirrors.
func protoToKube(msg proto.Message, obj any) error {
	data, err := toKube.Marshal(msg)
	if err != nil {
		return err
	}
	return json.Unmarshal(data, obj)
}

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
}

// request builds the DecideJobRequest for a snapshot.
func (s *snapshot) request() (*jobdeciderv1.DecideJobRequest, error) {
	req := &jobdeciderv1.DecideJobRequest{
		Job:            &jobdeciderv1.Job{},
		Pods:           make([]*jobdeciderv1.Pod, len(s.Pods)),
		Now:            timestamppb.New(s.Now),
		State:          s.State,
		ControllerName: s.Controller,
		Expectations: &jobdeciderv1.Expectations{
			PodChangesPending:        s.PodChangesPending,
			FinalizerRemovalsPending: s.FinalizerRemovalsPending,
		},
	}
	if err := kubeToProto(s.Job, req.Job); err != nil {
		return nil, fmt.Errorf("job %s/%s: %w", s.Job.Namespace, s.Job.Name, err)
	}
	for i, pod := range s.Pods {
		req.Pods[i] = &jobdeciderv1.Pod{}
		if err := kubeToProto(pod, req.Pods[i]); err != nil {
			return nil, fmt.Errorf("pod %s/%s: %w", pod.Namespace, pod.Name, err)
		}
	}
	return req, nil
}
