// Package refserver is a DecideJob server whose answers are upstream's own
// (internal/upstream). It exists to test the harness end to end and as a
// reference for client tests.
package refserver

import (
	"context"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	pb "job-decider.dev/clients/go/jobdecider/v1"
	"job-decider.dev/conformance/internal/upstream"
)

// Server answers DecideJob with upstream's plan.
type Server struct {
	pb.UnimplementedJobDeciderServer
	// Tamper makes the answers wrong on purpose (ready+1 in every status
	// write), to see the harness report and save mismatches.
	Tamper bool
}

// DecideJob runs upstream on the request (its lean pods made full first).
func (s Server) DecideJob(_ context.Context, req *pb.DecideJobRequest) (*pb.DecideJobResponse, error) {
	if len(req.GetLeanPods()) > 0 {
		req = FullFromLean(req)
	}
	run, err := upstream.Run(req, upstream.Whole)
	if err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	if s.Tamper {
		for _, a := range run.Resp.GetActions() {
			if st := a.GetUpdateStatus().GetStatus(); st != nil {
				st.Ready = proto.Int32(st.GetReady() + 1)
			}
		}
	}
	return run.Resp, nil
}

// FullFromLean is a lean request with its pods Kubernetes-shaped again, as
// much of each as the lean encoding keeps: all upstream's sync reads of a
// pod (a node name stands in for "scheduled", the Job's controller
// reference comes back first). The harness sends each request both ways,
// so upstream answering both alike is the reference for the two encodings.
func FullFromLean(req *pb.DecideJobRequest) *pb.DecideJobRequest {
	out := proto.Clone(req).(*pb.DecideJobRequest)
	job := out.GetJob().GetMetadata()
	for _, l := range out.LeanPods {
		meta := &pb.ObjectMeta{
			Name: l.GetName(), Namespace: job.GetNamespace(), Uid: l.GetUid(), Labels: l.GetLabels(),
			CreationTimestamp: l.GetCreationTimestamp(), DeletionTimestamp: l.GetDeletionTimestamp(),
			DeletionGracePeriodSeconds: l.DeletionGracePeriodSeconds,
		}
		for key, v := range map[string]*string{
			"batch.kubernetes.io/job-completion-index":            l.CompletionIndex,
			"batch.kubernetes.io/job-index-failure-count":         l.IndexFailureCount,
			"batch.kubernetes.io/job-index-ignored-failure-count": l.IndexIgnoredFailureCount,
		} {
			if v != nil {
				if meta.Annotations == nil {
					meta.Annotations = map[string]string{}
				}
				meta.Annotations[key] = *v
			}
		}
		if l.GetControlledByJob() {
			meta.OwnerReferences = append(meta.OwnerReferences, &pb.OwnerReference{ApiVersion: "batch/v1", Kind: "Job",
				Name: job.GetName(), Uid: job.GetUid(), Controller: proto.Bool(true), BlockOwnerDeletion: proto.Bool(true)})
		}
		meta.OwnerReferences = append(meta.OwnerReferences, l.GetOwnerReferences()...)
		if l.GetTrackingFinalizer() {
			meta.Finalizers = []string{"batch.kubernetes.io/job-tracking"}
		}
		spec := &pb.PodSpecSummary{}
		if l.GetScheduled() {
			spec.NodeName = "node"
		}
		for _, name := range l.GetSidecarInitContainers() {
			spec.InitContainers = append(spec.InitContainers, &pb.InitContainerSummary{Name: name, RestartPolicy: "Always"})
		}
		st := &pb.PodStatus{Phase: leanPhaseNames[l.GetPhase()]}
		for _, c := range l.GetConditions() {
			st.Conditions = append(st.Conditions, &pb.PodCondition{Type: c.GetType(),
				Status: leanStatusNames[c.GetStatus()], LastTransitionTime: c.GetLastTransitionTime()})
		}
		st.ContainerStatuses = fullContainerStatuses(l.GetContainerStatuses())
		st.InitContainerStatuses = fullContainerStatuses(l.GetInitContainerStatuses())
		out.Pods = append(out.Pods, &pb.Pod{Metadata: meta, Spec: spec, Status: st})
	}
	out.LeanPods = nil
	return out
}

var (
	leanPhaseNames = map[pb.LeanPodPhase]string{
		pb.LeanPodPhase_LEAN_POD_PHASE_PENDING: "Pending", pb.LeanPodPhase_LEAN_POD_PHASE_RUNNING: "Running",
		pb.LeanPodPhase_LEAN_POD_PHASE_SUCCEEDED: "Succeeded", pb.LeanPodPhase_LEAN_POD_PHASE_FAILED: "Failed",
		pb.LeanPodPhase_LEAN_POD_PHASE_UNKNOWN: "Unknown",
	}
	leanStatusNames = map[pb.LeanConditionStatus]string{
		pb.LeanConditionStatus_LEAN_CONDITION_STATUS_TRUE: "True", pb.LeanConditionStatus_LEAN_CONDITION_STATUS_FALSE: "False",
		pb.LeanConditionStatus_LEAN_CONDITION_STATUS_UNKNOWN: "Unknown",
	}
)

func fullContainerStatuses(ls []*pb.LeanContainerStatus) []*pb.ContainerStatus {
	var out []*pb.ContainerStatus
	for _, l := range ls {
		s := &pb.ContainerStatus{Name: l.GetName(), RestartCount: l.GetRestartCount(), State: &pb.ContainerState{}}
		if t := l.GetTerminated(); t != nil {
			s.State.Terminated = &pb.ContainerStateTerminated{ExitCode: t.GetExitCode(), FinishedAt: t.GetFinishedAt()}
		}
		out = append(out, s)
	}
	return out
}
