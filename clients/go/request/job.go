package request

import (
	"maps"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	pb "job-decider.dev/clients/go/jobdecider/v1"
)

// Job is job as the contract's Job, every field decisions read copied across.
func Job(job *batchv1.Job) *pb.Job {
	if job == nil {
		return nil
	}
	return &pb.Job{
		ApiVersion: job.APIVersion,
		Kind:       job.Kind,
		Metadata:   objectMeta(&job.ObjectMeta, true),
		Spec:       jobSpec(&job.Spec),
		Status:     jobStatus(&job.Status),
	}
}

// objectMeta converts metadata; copyMaps is false only where the caller has
// said the message may share the object's maps (a pod's labels).
func objectMeta(m *metav1.ObjectMeta, copyMaps bool) *pb.ObjectMeta {
	labels, annotations := m.Labels, m.Annotations
	if copyMaps {
		labels, annotations = maps.Clone(labels), maps.Clone(annotations)
	}
	return &pb.ObjectMeta{
		Name:                       m.Name,
		GenerateName:               m.GenerateName,
		Namespace:                  m.Namespace,
		Uid:                        string(m.UID),
		ResourceVersion:            m.ResourceVersion,
		Generation:                 m.Generation,
		CreationTimestamp:          timestamp(m.CreationTimestamp),
		DeletionTimestamp:          timestampPtr(m.DeletionTimestamp),
		DeletionGracePeriodSeconds: copyPtr(m.DeletionGracePeriodSeconds),
		Labels:                     labels,
		Annotations:                annotations,
		OwnerReferences:            ownerReferences(m.OwnerReferences, -1),
		Finalizers:                 cloneOrNil(m.Finalizers),
	}
}

// ownerReferences converts refs, leaving out the one at index skip (-1: none).
func ownerReferences(refs []metav1.OwnerReference, skip int) []*pb.OwnerReference {
	n := len(refs)
	if skip >= 0 {
		n--
	}
	if n <= 0 {
		return nil
	}
	out := make([]*pb.OwnerReference, 0, n)
	for i := range refs {
		if i == skip {
			continue
		}
		r := &refs[i]
		out = append(out, &pb.OwnerReference{
			ApiVersion:         r.APIVersion,
			Kind:               r.Kind,
			Name:               r.Name,
			Uid:                string(r.UID),
			Controller:         copyPtr(r.Controller),
			BlockOwnerDeletion: copyPtr(r.BlockOwnerDeletion),
		})
	}
	return out
}

func jobSpec(s *batchv1.JobSpec) *pb.JobSpec {
	out := &pb.JobSpec{
		Parallelism:             copyPtr(s.Parallelism),
		Completions:             copyPtr(s.Completions),
		ActiveDeadlineSeconds:   copyPtr(s.ActiveDeadlineSeconds),
		BackoffLimit:            copyPtr(s.BackoffLimit),
		BackoffLimitPerIndex:    copyPtr(s.BackoffLimitPerIndex),
		MaxFailedIndexes:        copyPtr(s.MaxFailedIndexes),
		Selector:                labelSelector(s.Selector),
		ManualSelector:          copyPtr(s.ManualSelector),
		Template:                podTemplate(&s.Template),
		TtlSecondsAfterFinished: copyPtr(s.TTLSecondsAfterFinished),
		CompletionMode:          stringPtr(s.CompletionMode),
		Suspend:                 copyPtr(s.Suspend),
		PodReplacementPolicy:    stringPtr(s.PodReplacementPolicy),
		ManagedBy:               copyPtr(s.ManagedBy),
	}
	if p := s.PodFailurePolicy; p != nil {
		out.PodFailurePolicy = &pb.PodFailurePolicy{Rules: make([]*pb.PodFailurePolicyRule, len(p.Rules))}
		for i := range p.Rules {
			out.PodFailurePolicy.Rules[i] = podFailurePolicyRule(&p.Rules[i])
		}
	}
	if p := s.SuccessPolicy; p != nil {
		out.SuccessPolicy = &pb.SuccessPolicy{Rules: make([]*pb.SuccessPolicyRule, len(p.Rules))}
		for i, r := range p.Rules {
			out.SuccessPolicy.Rules[i] = &pb.SuccessPolicyRule{
				SucceededIndexes: copyPtr(r.SucceededIndexes),
				SucceededCount:   copyPtr(r.SucceededCount),
			}
		}
	}
	return out
}

func podFailurePolicyRule(r *batchv1.PodFailurePolicyRule) *pb.PodFailurePolicyRule {
	out := &pb.PodFailurePolicyRule{Action: string(r.Action)}
	if e := r.OnExitCodes; e != nil {
		out.OnExitCodes = &pb.PodFailurePolicyOnExitCodesRequirement{
			ContainerName: copyPtr(e.ContainerName),
			Operator:      string(e.Operator),
			Values:        cloneOrNil(e.Values),
		}
	}
	if len(r.OnPodConditions) > 0 {
		out.OnPodConditions = make([]*pb.PodFailurePolicyOnPodConditionsPattern, len(r.OnPodConditions))
		for i, c := range r.OnPodConditions {
			out.OnPodConditions[i] = &pb.PodFailurePolicyOnPodConditionsPattern{
				Type:   string(c.Type),
				Status: string(c.Status),
			}
		}
	}
	return out
}

func labelSelector(s *metav1.LabelSelector) *pb.LabelSelector {
	if s == nil {
		return nil
	}
	out := &pb.LabelSelector{MatchLabels: maps.Clone(s.MatchLabels)}
	if len(s.MatchExpressions) > 0 {
		out.MatchExpressions = make([]*pb.LabelSelectorRequirement, len(s.MatchExpressions))
		for i, e := range s.MatchExpressions {
			out.MatchExpressions[i] = &pb.LabelSelectorRequirement{
				Key:      e.Key,
				Operator: string(e.Operator),
				Values:   cloneOrNil(e.Values),
			}
		}
	}
	return out
}

func podTemplate(t *corev1.PodTemplateSpec) *pb.PodTemplateSpec {
	return &pb.PodTemplateSpec{
		Metadata: objectMeta(&t.ObjectMeta, true),
		Spec: &pb.PodSpec{
			RestartPolicy:  string(t.Spec.RestartPolicy),
			Containers:     containers(t.Spec.Containers),
			InitContainers: containers(t.Spec.InitContainers),
		},
	}
}

func containers(cs []corev1.Container) []*pb.Container {
	if len(cs) == 0 {
		return nil
	}
	out := make([]*pb.Container, len(cs))
	for i := range cs {
		c := &cs[i]
		pc := &pb.Container{Name: c.Name}
		if len(c.Env) > 0 {
			pc.Env = make([]*pb.EnvVar, len(c.Env))
			for j := range c.Env {
				pc.Env[j] = envVar(&c.Env[j])
			}
		}
		out[i] = pc
	}
	return out
}

// envVar keeps valueFrom present whatever its source: the JSON route gives an
// empty EnvVarSource for a source the contract does not declare.
func envVar(e *corev1.EnvVar) *pb.EnvVar {
	out := &pb.EnvVar{Name: e.Name, Value: e.Value}
	if e.ValueFrom != nil {
		out.ValueFrom = &pb.EnvVarSource{}
		if f := e.ValueFrom.FieldRef; f != nil {
			out.ValueFrom.FieldRef = &pb.ObjectFieldSelector{ApiVersion: f.APIVersion, FieldPath: f.FieldPath}
		}
	}
	return out
}

func jobStatus(s *batchv1.JobStatus) *pb.JobStatus {
	out := &pb.JobStatus{
		StartTime:        timestampPtr(s.StartTime),
		CompletionTime:   timestampPtr(s.CompletionTime),
		Active:           s.Active,
		Succeeded:        s.Succeeded,
		Failed:           s.Failed,
		Terminating:      copyPtr(s.Terminating),
		CompletedIndexes: s.CompletedIndexes,
		FailedIndexes:    copyPtr(s.FailedIndexes),
		Ready:            copyPtr(s.Ready),
	}
	if len(s.Conditions) > 0 {
		out.Conditions = make([]*pb.JobCondition, len(s.Conditions))
		for i := range s.Conditions {
			c := &s.Conditions[i]
			out.Conditions[i] = &pb.JobCondition{
				Type:               string(c.Type),
				Status:             string(c.Status),
				LastProbeTime:      timestamp(c.LastProbeTime),
				LastTransitionTime: timestamp(c.LastTransitionTime),
				Reason:             c.Reason,
				Message:            c.Message,
			}
		}
	}
	if u := s.UncountedTerminatedPods; u != nil {
		out.UncountedTerminatedPods = &pb.UncountedTerminatedPods{
			Succeeded: uids(u.Succeeded),
			Failed:    uids(u.Failed),
		}
	}
	return out
}

func uids(us []types.UID) []string {
	if len(us) == 0 {
		return nil
	}
	out := make([]string, len(us))
	for i, u := range us {
		out[i] = string(u)
	}
	return out
}

// stringPtr is an optional string-typed enum as an optional string.
func stringPtr[T ~string](p *T) *string {
	if p == nil {
		return nil
	}
	s := string(*p)
	return &s
}

// cloneOrNil copies a slice, nil when empty (as an absent JSON list reads).
func cloneOrNil[T any](xs []T) []T {
	if len(xs) == 0 {
		return nil
	}
	return append([]T(nil), xs...)
}

// copyPtr copies an optional value, so that the message shares no pointer
// into the object.
func copyPtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}
