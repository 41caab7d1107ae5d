package apply

import (
	"context"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	jobdeciderv1 "job-decider.dev/clients/go/jobdecider/v1"
)

// The actions and pod fields only a Job with an extended failure policy
// (the job-decider.dev/failure-policy annotation) gets in its plans.

// Node avoidance modes, as AvoidNodes.mode spells them.
const (
	avoidRequired  = "Required"
	avoidPreferred = "Preferred"
)

// preferredAvoidWeight is the weight of the preferred term: the most a
// preference can weigh, so it outranks the template's own preferences.
const preferredAvoidWeight = 100

// avoidNodes adds the plan's node exclusion to a pod spec built from the
// template (the spec is the pod's own copy). A field requirement with In or
// NotIn takes exactly one value, so each node is a requirement of its own;
// the requirements of a term are ANDed, which is what "none of these" needs.
func avoidNodes(spec *corev1.PodSpec, an *jobdeciderv1.AvoidNodes) error {
	if len(an.GetNodes()) == 0 {
		return nil
	}
	mode := an.GetMode()
	if mode != avoidRequired && mode != avoidPreferred {
		return fmt.Errorf("avoid_nodes: unknown mode %q (want %q or %q)", mode, avoidRequired, avoidPreferred)
	}
	if spec.Affinity == nil {
		spec.Affinity = &corev1.Affinity{}
	}
	if spec.Affinity.NodeAffinity == nil {
		spec.Affinity.NodeAffinity = &corev1.NodeAffinity{}
	}
	na := spec.Affinity.NodeAffinity
	if mode == avoidPreferred {
		na.PreferredDuringSchedulingIgnoredDuringExecution = append(na.PreferredDuringSchedulingIgnoredDuringExecution,
			corev1.PreferredSchedulingTerm{Weight: preferredAvoidWeight, Preference: corev1.NodeSelectorTerm{MatchFields: notOnNodes(an.GetNodes())}})
		return nil
	}
	if na.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		na.RequiredDuringSchedulingIgnoredDuringExecution = &corev1.NodeSelector{}
	}
	req := na.RequiredDuringSchedulingIgnoredDuringExecution
	if len(req.NodeSelectorTerms) == 0 {
		req.NodeSelectorTerms = []corev1.NodeSelectorTerm{{}}
	}
	// Terms are ORed: a term without the exclusion would let the pod onto
	// an excluded node, so every term gets it.
	for i := range req.NodeSelectorTerms {
		req.NodeSelectorTerms[i].MatchFields = append(req.NodeSelectorTerms[i].MatchFields, notOnNodes(an.GetNodes())...)
	}
	return nil
}

// notOnNodes is one "metadata.name NotIn [node]" requirement per node, each
// with its own values slice.
func notOnNodes(nodes []string) []corev1.NodeSelectorRequirement {
	out := make([]corev1.NodeSelectorRequirement, len(nodes))
	for i, n := range nodes {
		out[i] = corev1.NodeSelectorRequirement{Key: metav1.ObjectNameField, Operator: corev1.NodeSelectorOpNotIn, Values: []string{n}}
	}
	return out
}

// failPods fails pods as upstream's pod garbage collector does: a status
// patch to phase Failed with the plan's condition, then a delete, both
// guarded by the pod's UID. The pods keep the tracking finalizer, so the next
// decision sees them Failed and counts them; until a watch shows the
// deletions, they are expected as the plan's other deletions are.
func (r *run) failPods(ctx context.Context, pods []*jobdeciderv1.PodFailure) error {
	uids := make([]string, len(pods))
	for i, p := range pods {
		uids[i] = p.GetPod().GetUid()
	}
	if h := r.a.hooks.ExpectDeletions; h != nil {
		h(r.decided, uids)
	}
	return forEachPod(pods, func(p *jobdeciderv1.PodFailure) error {
		ref := p.GetPod()
		err := r.failPod(ctx, p)
		if err != nil {
			// No watch will show this deletion.
			r.deletionNotMade(ref.GetUid())
			if apierrors.IsNotFound(err) {
				return nil
			}
			r.eventf(corev1.EventTypeWarning, ReasonFailedDelete, "Error failing pod %v: %v", ref.GetName(), err)
			return err
		}
		r.eventf(corev1.EventTypeNormal, ReasonSuccessfulDelete, "Failed and deleted pod: %v (%v)", ref.GetName(), p.GetReason())
		return nil
	})
}

// failPod writes the failure to one pod's status, then deletes the pod
// (with a grace period of 0 when the failure says force_delete).
func (r *run) failPod(ctx context.Context, p *jobdeciderv1.PodFailure) error {
	ref := p.GetPod()
	patch, err := PodFailurePatch(p, metav1.Now())
	if err != nil {
		return err
	}
	if err := r.patchPod(ctx, ref.GetName(), patch, "status"); err != nil {
		return err
	}
	if p.GetForceDelete() {
		// terminatingTimeout's forceDelete: no kubelet will finish this pod.
		return r.deleteGuardedNow(ctx, ref.GetName(), ref.GetUid())
	}
	return r.deleteGuarded(ctx, ref.GetName(), ref.GetUid())
}

// PodFailurePatch is the strategic merge patch of a pod's status subresource
// that fail_pods sends for one failure: phase Failed and the plan's condition,
// True, transitioned at now. Conditions merge by type, so the pod's other
// conditions stay; the uid makes the API server refuse the patch for another
// pod of the same name. A failure without a condition type is an error.
func PodFailurePatch(p *jobdeciderv1.PodFailure, now metav1.Time) ([]byte, error) {
	if p.GetConditionType() == "" {
		return nil, fmt.Errorf("%s: pod %s has no condition type", ActionFailPods, p.GetPod().GetName())
	}
	cond := corev1.PodCondition{
		Type:               corev1.PodConditionType(p.GetConditionType()),
		Status:             corev1.ConditionTrue,
		Reason:             p.GetReason(),
		Message:            p.GetMessage(),
		LastTransitionTime: now,
	}
	return json.Marshal(map[string]any{
		"metadata": map[string]any{"uid": p.GetPod().GetUid()},
		"status": map[string]any{
			"phase":      corev1.PodFailed,
			"conditions": []corev1.PodCondition{cond},
		},
	})
}
