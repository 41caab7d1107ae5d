package request

import (
	"errors"

	"google.golang.org/protobuf/reflect/protoreflect"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	pb "job-decider.dev/clients/go/jobdecider/v1"
)

// Build is the request for job and its pods, the pods in the lean encoding
// trimmed to what decisions read (ReadsOf); the caller adds now, state,
// controller name and expectations. Pods with equal selector labels share one
// label map. A pod with no lean form is a *NotLeanError naming its position:
// BuildFull then builds the request every pod fits (the contract takes one
// encoding per request).
func Build(job *batchv1.Job, pods []*corev1.Pod) (*pb.DecideJobRequest, error) {
	return build(job, pods, "")
}

// BuildWithPolicy is Build for a caller that keeps the extended failure
// policy document off the Job: the document goes in the request's
// failure_policy, and the pods carry what it reads, as with the annotation.
func BuildWithPolicy(job *batchv1.Job, pods []*corev1.Pod, policy string) (*pb.DecideJobRequest, error) {
	return build(job, pods, policy)
}

func build(job *batchv1.Job, pods []*corev1.Pod, policy string) (*pb.DecideJobRequest, error) {
	reads := ReadsOf(job)
	reads.Details = reads.Details || policy != ""
	// Chunks of up to 1,024 messages; a small Job's no bigger than it needs.
	e := encoder{job: JobRefOf(job), reads: reads, chunk: min(max(len(pods), 1), 1024)}
	lean := make([]*pb.LeanPod, len(pods))
	for i, p := range pods {
		l, err := e.leanPod(p)
		if err != nil {
			return nil, atPod(err, i)
		}
		lean[i] = l
	}
	return &pb.DecideJobRequest{Job: Job(job), LeanPods: lean, FailurePolicy: policy}, nil
}

// BuildFull is the request for job and its pods, the pods Kubernetes-shaped.
func BuildFull(job *batchv1.Job, pods []*corev1.Pod) *pb.DecideJobRequest {
	full := make([]*pb.Pod, len(pods))
	for i, p := range pods {
		full[i] = Pod(p)
	}
	return &pb.DecideJobRequest{Job: Job(job), Pods: full}
}

// BuildFullWithPolicy is BuildFull with the document in the request's
// failure_policy (see BuildWithPolicy).
func BuildFullWithPolicy(job *batchv1.Job, pods []*corev1.Pod, policy string) *pb.DecideJobRequest {
	req := BuildFull(job, pods)
	req.FailurePolicy = policy
	return req
}

// Lean is req with its pods moved to the lean encoding and trimmed to what
// decisions read (ReadsOfProto), as Build sends them; req itself is unchanged
// (the result shares its messages). A pod with no lean form is a
// *NotLeanError naming its position.
func Lean(req *pb.DecideJobRequest) (*pb.DecideJobRequest, error) {
	ref, reads := JobRefOfProto(req.GetJob()), ReadsOfProto(req.GetJob())
	// A document in the request's field needs the pods' details as the annotation does.
	reads.Details = reads.Details || req.GetFailurePolicy() != ""
	lean := make([]*pb.LeanPod, len(req.GetPods()))
	for i, p := range req.GetPods() {
		l, err := leanPodFromProto(p, ref, reads.Details)
		if err != nil {
			return nil, atPod(err, i)
		}
		lean[i] = reads.Trim(l)
	}
	// Every field but pods, by reflection, so that a field added to the
	// contract later is carried too.
	out := &pb.DecideJobRequest{}
	dst := out.ProtoReflect()
	req.ProtoReflect().Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		if fd.Name() != "pods" {
			dst.Set(fd, v)
		}
		return true
	})
	out.LeanPods = append(lean, req.GetLeanPods()...)
	return out, nil
}

// atPod sets the position of a pod's NotLeanError.
func atPod(err error, i int) error {
	var nl *NotLeanError
	if errors.As(err, &nl) {
		e := *nl
		e.Pod = i
		return &e
	}
	return err
}
