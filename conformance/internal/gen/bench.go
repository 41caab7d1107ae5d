package gen

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"
	pb "job-decider.dev/clients/go/jobdecider/v1"
)

// BenchRequest is a running NonIndexed or Indexed Job with n pods: most
// running, some succeeded and failed and still carrying the finalizer, so a
// sync has counting and finalizer removal to do as well as pod creation.
func BenchRequest(n int, indexed bool) *pb.DecideJobRequest {
	g := &gen{r: rand.New(rand.NewPCG(uint64(n), 1)), now: BaseNow}
	j := g.job()
	s := j.Spec
	s.PodFailurePolicy, s.SuccessPolicy, s.BackoffLimitPerIndex, s.MaxFailedIndexes = nil, nil, nil, nil
	s.ActiveDeadlineSeconds, s.Suspend, s.PodReplacementPolicy = nil, nil, nil
	s.Template.Spec.RestartPolicy = "Never"
	s.Parallelism = proto.Int32(int32(n))
	s.Completions = proto.Int32(int32(4 * n))
	s.BackoffLimit = proto.Int32(int32(n))
	s.CompletionMode = proto.String("NonIndexed")
	if indexed {
		s.CompletionMode = proto.String("Indexed")
	}
	j.Status = &pb.JobStatus{StartTime: timestamppb.New(g.now.Add(-time.Hour)), Active: int32(n),
		Ready: proto.Int32(0), Terminating: proto.Int32(0), UncountedTerminatedPods: &pb.UncountedTerminatedPods{}}
	req := &pb.DecideJobRequest{Job: j, Now: timestamppb.New(g.now)}
	owner := &pb.OwnerReference{ApiVersion: "batch/v1", Kind: "Job", Name: j.Metadata.Name, Uid: j.Metadata.Uid,
		Controller: proto.Bool(true), BlockOwnerDeletion: proto.Bool(true)}
	for i := 0; i < n; i++ {
		p := &pb.Pod{
			Metadata: &pb.ObjectMeta{Name: fmt.Sprintf("%s-%06d", j.Metadata.Name, i), Namespace: j.Metadata.Namespace,
				Uid: fmt.Sprintf("pod-uid-%06d", i), CreationTimestamp: timestamppb.New(g.now.Add(-time.Duration(3600-i%3000) * time.Second)),
				Labels: CopyMap(s.Template.Metadata.Labels), OwnerReferences: []*pb.OwnerReference{owner}, Finalizers: []string{Finalizer}},
			Spec:   &pb.PodSpecSummary{NodeName: "node-a"},
			Status: &pb.PodStatus{Phase: "Running"},
		}
		if indexed {
			p.Metadata.Annotations = map[string]string{IndexKey: strconv.Itoa(i)}
			p.Metadata.Labels[IndexKey] = strconv.Itoa(i)
		}
		switch i % 10 {
		case 0:
			p.Status.Phase = "Succeeded"
		case 1:
			if i%20 == 1 {
				p.Status.Phase = "Failed"
			}
		}
		p.Status.ContainerStatuses = []*pb.ContainerStatus{{Name: "main", State: &pb.ContainerState{
			Terminated: &pb.ContainerStateTerminated{ExitCode: map[bool]int32{true: 0, false: 1}[p.Status.Phase == "Succeeded"],
				FinishedAt: timestamppb.New(g.now.Add(-time.Duration(600+i%500) * time.Second))}}}}
		if p.Status.Phase == "Running" {
			p.Status.ContainerStatuses[0].State = &pb.ContainerState{Running: &pb.ContainerStateRunning{StartedAt: p.Metadata.CreationTimestamp}}
		}
		req.Pods = append(req.Pods, p)
	}
	return req
}
