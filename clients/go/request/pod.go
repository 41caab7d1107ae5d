package request

import (
	"fmt"
	"slices"
	"unicode/utf8"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	pb "job-decider.dev/clients/go/jobdecider/v1"
)

// Annotation keys and names a lean pod reads; the values batch/v1 defines.
const (
	completionIndexKey          = batchv1.JobCompletionIndexAnnotation
	indexFailureCountKey        = batchv1.JobIndexFailureCountAnnotation
	indexIgnoredFailureCountKey = batchv1.JobIndexIgnoredFailureCountAnnotation
	trackingFinalizer           = batchv1.JobTrackingFinalizer
	// The extended failure policy's annotations (docs/failure-policy.md): the
	// document on a Job, and what the controller writes on the pods it creates.
	failurePolicyAnnotation = "job-decider.dev/failure-policy"
	ruleMatchCountsKey      = "job-decider.dev/rule-match-counts"
	failedNodesKey          = "job-decider.dev/failed-nodes"
	jobAPIVersion           = "batch/v1"
	jobKind                 = "Job"
)

// MaxMessageBytes is the most of a pod's or a container's termination
// message the server keeps for the extended failure policy (its
// MAX_MESSAGE_BYTES). A longer message is sent cut exactly as the server
// cuts it (boundedMessage), so that both encodings decide alike and a
// request does not carry kilobytes the server drops.
const MaxMessageBytes = 4096

// boundedMessage is s as the server keeps it: unchanged when it fits, else
// cut on a UTF-8 boundary and ended by the server's mark saying how long it
// was, MaxMessageBytes in all. The server leaves a text that fits alone, so
// the result reads there as s itself would.
func boundedMessage(s string) string {
	if len(s) <= MaxMessageBytes {
		return s
	}
	mark := fmt.Sprintf("…[truncated from %d bytes]", len(s))
	keep := MaxMessageBytes - len(mark)
	for keep > 0 && !utf8.RuneStart(s[keep]) {
		keep--
	}
	return s[:keep] + mark
}

// JobRef names the Job a lean pod is encoded for: a pod's controller
// reference to this Job is elided (LeanPod.controlled_by_job).
type JobRef struct {
	// Name is the Job's name.
	Name string
	// UID is the Job's uid; empty, no reference is elided.
	UID string
}

// JobRefOf is the reference of a client-go Job.
func JobRefOf(job *batchv1.Job) JobRef {
	if job == nil {
		return JobRef{}
	}
	return JobRef{Name: job.Name, UID: string(job.UID)}
}

// JobRefOfProto is the reference of a contract Job (empty where it lacks them).
func JobRefOfProto(job *pb.Job) JobRef {
	m := job.GetMetadata()
	return JobRef{Name: m.GetName(), UID: m.GetUid()}
}

// owns reports whether an owner reference is this Job's controller reference.
func (j JobRef) owns(apiVersion, kind, name, uid string, controller *bool) bool {
	return controller != nil && *controller && j.UID != "" &&
		apiVersion == jobAPIVersion && kind == jobKind && name == j.Name && uid == j.UID
}

// NotLeanError is a pod the lean encoding cannot carry: its enumerations hold
// only the values the Kubernetes API defines, so such a pod goes as a Pod.
type NotLeanError struct {
	// Pod is the pod's position in the request, or -1 for a lone pod.
	Pod int
	// Field is the path of the value within the pod, e.g. "status.phase".
	Field string
	// Value is the value as the pod has it.
	Value string
}

// Error names the field and value, and the pod when it is one of a list.
func (e *NotLeanError) Error() string {
	where := ""
	if e.Pod >= 0 {
		where = fmt.Sprintf("pods[%d].", e.Pod)
	}
	return fmt.Sprintf("%s%s %q has no lean form (not a value the Kubernetes API defines)", where, e.Field, e.Value)
}

// leanPhase maps status.phase; false when the API defines no such phase.
func leanPhase(phase string) (pb.LeanPodPhase, bool) {
	switch phase {
	case "":
		return pb.LeanPodPhase_LEAN_POD_PHASE_UNSPECIFIED, true
	case string(corev1.PodPending):
		return pb.LeanPodPhase_LEAN_POD_PHASE_PENDING, true
	case string(corev1.PodRunning):
		return pb.LeanPodPhase_LEAN_POD_PHASE_RUNNING, true
	case string(corev1.PodSucceeded):
		return pb.LeanPodPhase_LEAN_POD_PHASE_SUCCEEDED, true
	case string(corev1.PodFailed):
		return pb.LeanPodPhase_LEAN_POD_PHASE_FAILED, true
	case string(corev1.PodUnknown):
		return pb.LeanPodPhase_LEAN_POD_PHASE_UNKNOWN, true
	}
	return 0, false
}

// leanConditionStatus maps a condition's status; empty is unspecified in both forms.
func leanConditionStatus(status string) (pb.LeanConditionStatus, bool) {
	switch status {
	case "":
		return pb.LeanConditionStatus_LEAN_CONDITION_STATUS_UNSPECIFIED, true
	case string(corev1.ConditionTrue):
		return pb.LeanConditionStatus_LEAN_CONDITION_STATUS_TRUE, true
	case string(corev1.ConditionFalse):
		return pb.LeanConditionStatus_LEAN_CONDITION_STATUS_FALSE, true
	case string(corev1.ConditionUnknown):
		return pb.LeanConditionStatus_LEAN_CONDITION_STATUS_UNKNOWN, true
	}
	return 0, false
}

// LeanPod is pod in the lean encoding for job. All labels and conditions are
// kept; the message shares the pod's label map. A phase or condition status
// the API does not define is a *NotLeanError (Pod -1): send such a pod as a Pod.
func LeanPod(pod *corev1.Pod, job JobRef) (*pb.LeanPod, error) {
	e := encoder{job: job, chunk: 1}
	return e.leanPod(pod)
}

// annotation is an annotation's value when present (present and empty is kept).
func annotation(annotations map[string]string, key string) *string {
	v, ok := annotations[key]
	if !ok {
		return nil
	}
	return &v
}

// isSidecar: an init container with restartPolicy Always runs beside the others.
func isSidecar(c *corev1.Container) bool {
	return c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
}

// Pod is pod as the contract's Kubernetes-shaped Pod, for a pod with no lean
// form or a caller that sends full pods. It copies the pod's maps.
func Pod(pod *corev1.Pod) *pb.Pod {
	if pod == nil {
		return nil
	}
	out := &pb.Pod{
		ApiVersion: pod.APIVersion,
		Kind:       pod.Kind,
		Metadata:   objectMeta(&pod.ObjectMeta, true),
		Spec:       &pb.PodSpecSummary{NodeName: pod.Spec.NodeName},
		Status: &pb.PodStatus{
			Phase:     string(pod.Status.Phase),
			Reason:    pod.Status.Reason,
			Message:   pod.Status.Message,
			StartTime: timestampPtr(pod.Status.StartTime),
		},
	}
	if n := len(pod.Spec.InitContainers); n > 0 {
		out.Spec.InitContainers = make([]*pb.InitContainerSummary, n)
		for i := range pod.Spec.InitContainers {
			c := &pod.Spec.InitContainers[i]
			out.Spec.InitContainers[i] = &pb.InitContainerSummary{Name: c.Name, RestartPolicy: string(ptrValue(c.RestartPolicy))}
		}
	}
	if n := len(pod.Status.Conditions); n > 0 {
		out.Status.Conditions = make([]*pb.PodCondition, n)
		for i := range pod.Status.Conditions {
			c := &pod.Status.Conditions[i]
			out.Status.Conditions[i] = &pb.PodCondition{
				Type:               string(c.Type),
				Status:             string(c.Status),
				LastProbeTime:      timestamp(c.LastProbeTime),
				LastTransitionTime: timestamp(c.LastTransitionTime),
				Reason:             c.Reason,
				Message:            c.Message,
			}
		}
	}
	out.Status.ContainerStatuses = containerStatuses(pod.Status.ContainerStatuses)
	out.Status.InitContainerStatuses = containerStatuses(pod.Status.InitContainerStatuses)
	return out
}

func ptrValue[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

// containerStatuses keeps state present even when empty: the JSON route
// always writes it (ContainerState is not a pointer).
func containerStatuses(ss []corev1.ContainerStatus) []*pb.ContainerStatus {
	if len(ss) == 0 {
		return nil
	}
	out := make([]*pb.ContainerStatus, len(ss))
	for i := range ss {
		s := &ss[i]
		state := &pb.ContainerState{}
		if w := s.State.Waiting; w != nil {
			state.Waiting = &pb.ContainerStateWaiting{Reason: w.Reason, Message: w.Message}
		}
		if r := s.State.Running; r != nil {
			state.Running = &pb.ContainerStateRunning{StartedAt: timestamp(r.StartedAt)}
		}
		if t := s.State.Terminated; t != nil {
			state.Terminated = &pb.ContainerStateTerminated{
				ExitCode:   t.ExitCode,
				Signal:     t.Signal,
				Reason:     t.Reason,
				Message:    t.Message,
				StartedAt:  timestamp(t.StartedAt),
				FinishedAt: timestamp(t.FinishedAt),
			}
		}
		out[i] = &pb.ContainerStatus{Name: s.Name, State: state, RestartCount: s.RestartCount, Ready: s.Ready}
	}
	return out
}

// LeanPodFromProto is a contract Pod in the lean encoding for job, as the
// server's reference conversion makes it: all labels (shared, not copied),
// conditions and the fields only the extended failure policy reads kept. A
// phase or condition status the API does not define is a *NotLeanError (Pod -1).
func LeanPodFromProto(pod *pb.Pod, job JobRef) (*pb.LeanPod, error) {
	return leanPodFromProto(pod, job, true)
}

// leanPodFromProto is LeanPodFromProto, with the extended failure policy's
// fields only when details is set (the Job has a document).
func leanPodFromProto(pod *pb.Pod, job JobRef, details bool) (*pb.LeanPod, error) {
	m, spec, status := pod.GetMetadata(), pod.GetSpec(), pod.GetStatus()
	phase, ok := leanPhase(status.GetPhase())
	if !ok {
		return nil, &NotLeanError{Pod: -1, Field: "status.phase", Value: status.GetPhase()}
	}
	out := &pb.LeanPod{
		Name:                       m.GetName(),
		Uid:                        m.GetUid(),
		Labels:                     m.GetLabels(),
		TrackingFinalizer:          slices.Contains(m.GetFinalizers(), trackingFinalizer),
		CreationTimestamp:          m.GetCreationTimestamp(),
		DeletionTimestamp:          m.GetDeletionTimestamp(),
		DeletionGracePeriodSeconds: copyPtr(m.DeletionGracePeriodSeconds),
		Scheduled:                  spec.GetNodeName() != "",
		Phase:                      phase,
	}
	out.CompletionIndex = annotation(m.GetAnnotations(), completionIndexKey)
	out.IndexFailureCount = annotation(m.GetAnnotations(), indexFailureCountKey)
	out.IndexIgnoredFailureCount = annotation(m.GetAnnotations(), indexIgnoredFailureCountKey)
	refs := m.GetOwnerReferences()
	controller := slices.IndexFunc(refs, func(r *pb.OwnerReference) bool { return r.GetController() })
	if controller >= 0 {
		r := refs[controller]
		out.ControlledByJob = job.owns(r.GetApiVersion(), r.GetKind(), r.GetName(), r.GetUid(), r.Controller)
	}
	for i, r := range refs {
		if out.ControlledByJob && i == controller {
			continue
		}
		out.OwnerReferences = append(out.OwnerReferences, r)
	}
	for _, c := range spec.GetInitContainers() {
		if c.GetRestartPolicy() == string(corev1.ContainerRestartPolicyAlways) {
			out.SidecarInitContainers = append(out.SidecarInitContainers, c.GetName())
		}
	}
	for i, c := range status.GetConditions() {
		s, ok := leanConditionStatus(c.GetStatus())
		if !ok {
			return nil, &NotLeanError{Pod: -1, Field: fmt.Sprintf("status.conditions[%d].status", i), Value: c.GetStatus()}
		}
		lc := &pb.LeanPodCondition{Type: c.GetType(), Status: s, LastTransitionTime: c.GetLastTransitionTime()}
		if details {
			lc.Reason = c.GetReason()
		}
		out.Conditions = append(out.Conditions, lc)
	}
	out.ContainerStatuses = leanContainerStatusesFromProto(status.GetContainerStatuses(), details)
	out.InitContainerStatuses = leanContainerStatusesFromProto(status.GetInitContainerStatuses(), details)
	if details {
		out.Reason = status.GetReason()
		out.Message = boundedMessage(status.GetMessage())
		out.NodeName = spec.GetNodeName()
		out.RuleMatchCounts = annotation(m.GetAnnotations(), ruleMatchCountsKey)
		out.FailedNodes = annotation(m.GetAnnotations(), failedNodesKey)
		out.StartTime = status.GetStartTime()
	}
	return out, nil
}

func leanContainerStatusesFromProto(ss []*pb.ContainerStatus, details bool) []*pb.LeanContainerStatus {
	var out []*pb.LeanContainerStatus
	for _, s := range ss {
		l := &pb.LeanContainerStatus{Name: s.GetName(), RestartCount: s.GetRestartCount()}
		if t := s.GetState().GetTerminated(); t != nil {
			l.Terminated = &pb.LeanTerminated{ExitCode: t.GetExitCode(), FinishedAt: t.GetFinishedAt()}
			if details {
				l.Terminated.Reason = t.GetReason()
				l.Terminated.Message = boundedMessage(t.GetMessage())
			}
		}
		if details {
			l.WaitingReason = s.GetState().GetWaiting().GetReason()
		}
		out = append(out, l)
	}
	return out
}
