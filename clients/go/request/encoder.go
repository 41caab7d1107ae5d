package request

import (
	"fmt"
	"slices"

	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/timestamppb"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	pb "job-decider.dev/clients/go/jobdecider/v1"
)

// Reads is what decisions read of a pod's open-ended fields, from its Job:
// the label keys its selector names (adoption and release match on no
// others) and the condition types whose status a rule reads (Ready, and those
// its pod failure policy names). The server keeps no others, so a pod
// trimmed to them decides as the whole pod does.
type Reads struct {
	// LabelKeys are the selector's keys, sorted; none for a Job without a selector.
	LabelKeys []string
	// ConditionTypes are Ready and the policy's condition types, sorted.
	ConditionTypes []string
	// Details: the Job has an extended failure policy document (its
	// job-decider.dev/failure-policy annotation, or the request's failurePolicy).
	// Every condition is then kept, with the fields only that policy reads
	// (reasons, messages, the node, its two pod annotations).
	Details bool
}

// ReadsOf is what decisions read of job's pods.
func ReadsOf(job *batchv1.Job) *Reads {
	_, details := job.Annotations[failurePolicyAnnotation]
	r := &Reads{ConditionTypes: []string{string(corev1.PodReady)}, Details: details}
	if s := job.Spec.Selector; s != nil {
		for k := range s.MatchLabels {
			r.LabelKeys = append(r.LabelKeys, k)
		}
		for _, e := range s.MatchExpressions {
			r.LabelKeys = append(r.LabelKeys, e.Key)
		}
	}
	if p := job.Spec.PodFailurePolicy; p != nil {
		for _, rule := range p.Rules {
			for _, c := range rule.OnPodConditions {
				r.ConditionTypes = append(r.ConditionTypes, string(c.Type))
			}
		}
	}
	return r.normalize()
}

// hasDocument says whether the contract Job carries a failure policy document.
func hasDocument(job *pb.Job) bool {
	_, ok := job.GetMetadata().GetAnnotations()[failurePolicyAnnotation]
	return ok
}

// ReadsOfProto is what decisions read of the pods of a contract Job.
func ReadsOfProto(job *pb.Job) *Reads {
	r := &Reads{ConditionTypes: []string{string(corev1.PodReady)}, Details: hasDocument(job)}
	s := job.GetSpec().GetSelector()
	for k := range s.GetMatchLabels() {
		r.LabelKeys = append(r.LabelKeys, k)
	}
	for _, e := range s.GetMatchExpressions() {
		r.LabelKeys = append(r.LabelKeys, e.GetKey())
	}
	for _, rule := range job.GetSpec().GetPodFailurePolicy().GetRules() {
		for _, c := range rule.GetOnPodConditions() {
			r.ConditionTypes = append(r.ConditionTypes, c.GetType())
		}
	}
	return r.normalize()
}

func (r *Reads) normalize() *Reads {
	slices.Sort(r.LabelKeys)
	r.LabelKeys = slices.Compact(r.LabelKeys)
	slices.Sort(r.ConditionTypes)
	r.ConditionTypes = slices.Compact(r.ConditionTypes)
	return r
}

// Trim is l with only the labels and conditions r names; l is unchanged
// (the result shares its other fields). A nil r keeps everything.
func (r *Reads) Trim(l *pb.LeanPod) *pb.LeanPod {
	if r == nil {
		return l
	}
	out := &pb.LeanPod{}
	dst := out.ProtoReflect()
	l.ProtoReflect().Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		dst.Set(fd, v)
		return true
	})
	out.Labels = nil
	for _, k := range r.LabelKeys {
		if v, ok := l.GetLabels()[k]; ok {
			if out.Labels == nil {
				out.Labels = map[string]string{}
			}
			out.Labels[k] = v
		}
	}
	out.Conditions = nil
	for _, c := range l.GetConditions() {
		if r.readsCondition(c.GetType()) {
			out.Conditions = append(out.Conditions, c)
		}
	}
	return out
}

func (r *Reads) readsCondition(t string) bool {
	if r.Details {
		return true
	}
	_, ok := slices.BinarySearch(r.ConditionTypes, t)
	return ok
}

// details: whether the fields only the extended failure policy reads are sent.
func (e *encoder) details() bool {
	return e.reads == nil || e.reads.Details
}

// encoder converts the pods of one request. It carves its messages out of
// chunks rather than allocating each (a 100,000-pod request would otherwise
// be over a million small objects for the collector to trace), and reuses
// one trimmed label map for every pod whose selector labels are the same.
type encoder struct {
	job   JobRef
	reads *Reads // nil: keep every label and condition
	chunk int    // messages per chunk

	pods       []pb.LeanPod
	timestamps []timestamppb.Timestamp
	conditions []pb.LeanPodCondition
	condPtrs   []*pb.LeanPodCondition
	statuses   []pb.LeanContainerStatus
	statusPtrs []*pb.LeanContainerStatus
	terminated []pb.LeanTerminated
	strs       []string

	lastLabels map[string]string // the previous pod's trimmed labels
}

// take carves n elements from *buf, a new chunk when it runs short; the
// result's capacity is n, so appending to it cannot reach a neighbour.
func take[T any](buf *[]T, n, chunk int) []T {
	if len(*buf) < n {
		*buf = make([]T, max(n, chunk))
	}
	s := (*buf)[:n:n]
	*buf = (*buf)[n:]
	return s
}

func (e *encoder) timestamp(t metav1.Time) *timestamppb.Timestamp {
	if t.IsZero() {
		return nil
	}
	ts := &take(&e.timestamps, 1, e.chunk)[0]
	ts.Seconds = t.Unix()
	return ts
}

func (e *encoder) annotation(annotations map[string]string, key string) *string {
	v, ok := annotations[key]
	if !ok {
		return nil
	}
	s := &take(&e.strs, 1, e.chunk)[0]
	*s = v
	return s
}

// labels are the pod's labels, trimmed to the selector's keys when reads are
// set; an equal trimmed set is the previous pod's map again.
func (e *encoder) labels(all map[string]string) map[string]string {
	if e.reads == nil {
		return all
	}
	same := e.lastLabels != nil
	n := 0
	for _, k := range e.reads.LabelKeys {
		v, ok := all[k]
		if !ok {
			continue
		}
		n++
		if last, had := e.lastLabels[k]; !had || last != v {
			same = false
		}
	}
	if n == 0 {
		return nil
	}
	if same && n == len(e.lastLabels) {
		return e.lastLabels
	}
	m := make(map[string]string, n)
	for _, k := range e.reads.LabelKeys {
		if v, ok := all[k]; ok {
			m[k] = v
		}
	}
	e.lastLabels = m
	return m
}

func (e *encoder) leanPod(pod *corev1.Pod) (*pb.LeanPod, error) {
	phase, ok := leanPhase(string(pod.Status.Phase))
	if !ok {
		return nil, &NotLeanError{Pod: -1, Field: "status.phase", Value: string(pod.Status.Phase)}
	}
	kept := 0
	for i := range pod.Status.Conditions {
		c := &pod.Status.Conditions[i]
		if _, ok := leanConditionStatus(string(c.Status)); !ok {
			return nil, &NotLeanError{Pod: -1, Field: fmt.Sprintf("status.conditions[%d].status", i), Value: string(c.Status)}
		}
		if e.reads == nil || e.reads.readsCondition(string(c.Type)) {
			kept++
		}
	}
	l := &take(&e.pods, 1, e.chunk)[0]
	if kept > 0 {
		backing := take(&e.conditions, kept, e.chunk)
		l.Conditions = take(&e.condPtrs, kept, e.chunk)
		j := 0
		for i := range pod.Status.Conditions {
			c := &pod.Status.Conditions[i]
			if e.reads != nil && !e.reads.readsCondition(string(c.Type)) {
				continue
			}
			status, _ := leanConditionStatus(string(c.Status))
			backing[j].Type = string(c.Type)
			backing[j].Status = status
			backing[j].LastTransitionTime = e.timestamp(c.LastTransitionTime)
			if e.details() {
				backing[j].Reason = c.Reason
			}
			l.Conditions[j] = &backing[j]
			j++
		}
	}
	m := &pod.ObjectMeta
	controller := slices.IndexFunc(m.OwnerReferences, func(r metav1.OwnerReference) bool {
		return r.Controller != nil && *r.Controller
	})
	elided := -1
	if controller >= 0 {
		r := &m.OwnerReferences[controller]
		if e.job.owns(r.APIVersion, r.Kind, r.Name, string(r.UID), r.Controller) {
			elided = controller
		}
	}
	l.Name = m.Name
	l.Uid = string(m.UID)
	l.Labels = e.labels(m.Labels)
	l.CompletionIndex = e.annotation(m.Annotations, completionIndexKey)
	l.IndexFailureCount = e.annotation(m.Annotations, indexFailureCountKey)
	l.IndexIgnoredFailureCount = e.annotation(m.Annotations, indexIgnoredFailureCountKey)
	l.ControlledByJob = elided >= 0
	l.OwnerReferences = ownerReferences(m.OwnerReferences, elided)
	l.TrackingFinalizer = slices.Contains(m.Finalizers, trackingFinalizer)
	l.CreationTimestamp = e.timestamp(m.CreationTimestamp)
	if m.DeletionTimestamp != nil {
		l.DeletionTimestamp = e.timestamp(*m.DeletionTimestamp)
	}
	l.DeletionGracePeriodSeconds = copyPtr(m.DeletionGracePeriodSeconds)
	l.Scheduled = pod.Spec.NodeName != ""
	l.SidecarInitContainers = e.sidecars(pod.Spec.InitContainers)
	l.Phase = phase
	l.ContainerStatuses = e.containerStatuses(pod.Status.ContainerStatuses)
	l.InitContainerStatuses = e.containerStatuses(pod.Status.InitContainerStatuses)
	if e.details() {
		l.Reason = pod.Status.Reason
		l.Message = boundedMessage(pod.Status.Message)
		l.NodeName = pod.Spec.NodeName
		l.RuleMatchCounts = e.annotation(m.Annotations, ruleMatchCountsKey)
		l.FailedNodes = e.annotation(m.Annotations, failedNodesKey)
		if st := pod.Status.StartTime; st != nil {
			l.StartTime = e.timestamp(*st)
		}
	}
	return l, nil
}

// sidecars are the names of the init containers with restartPolicy Always.
func (e *encoder) sidecars(cs []corev1.Container) []string {
	n := 0
	for i := range cs {
		if isSidecar(&cs[i]) {
			n++
		}
	}
	if n == 0 {
		return nil
	}
	out := take(&e.strs, n, e.chunk)[:0]
	for i := range cs {
		if isSidecar(&cs[i]) {
			out = append(out, cs[i].Name)
		}
	}
	return out
}

func (e *encoder) containerStatuses(ss []corev1.ContainerStatus) []*pb.LeanContainerStatus {
	if len(ss) == 0 {
		return nil
	}
	backing := take(&e.statuses, len(ss), e.chunk)
	out := take(&e.statusPtrs, len(ss), e.chunk)
	for i := range ss {
		s := &ss[i]
		backing[i].Name = s.Name
		backing[i].RestartCount = s.RestartCount
		if t := s.State.Terminated; t != nil {
			term := &take(&e.terminated, 1, e.chunk)[0]
			term.ExitCode = t.ExitCode
			term.FinishedAt = e.timestamp(t.FinishedAt)
			if e.details() {
				term.Reason = t.Reason
				term.Message = boundedMessage(t.Message)
			}
			backing[i].Terminated = term
		}
		if w := s.State.Waiting; w != nil && e.details() {
			backing[i].WaitingReason = w.Reason
		}
		out[i] = &backing[i]
	}
	return out
}
