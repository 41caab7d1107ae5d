package controller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	jobdeciderv1 "job-decider.dev/clients/go/jobdecider/v1"
	"job-decider.dev/clients/go/kubejson"
)

// Event reasons the shim records for its own pod writes, as upstream's pod control does.
const (
	reasonSuccessfulCreate = "SuccessfulCreate"
	reasonFailedCreate     = "FailedCreate"
	reasonSuccessfulDelete = "SuccessfulDelete"
	reasonFailedDelete     = "FailedDelete"
	// reasonUnsupportedPlan: a plan refused whole before its first write.
	reasonUnsupportedPlan = "UnsupportedPlan"
)

// planRun applies one plan to one Job.
type planRun struct {
	c   *Controller
	key string
	// job is the Job the plan was decided on; after a status write it is
	// the object the API server returned, so a second write in the same
	// plan carries the current resourceVersion.
	job *batchv1.Job
	// statusWritten is set once an UpdateStatus has succeeded.
	statusWritten bool
}

// errUnknownAction marks an action of a kind this shim does not know.
var errUnknownAction = errors.New("unknown action")

// apply runs the actions in order and stops at the first that fails. The
// plan is checked whole first: a plan refused part-way would leave its
// prefix written, and each retry would write that prefix again.
func (r *planRun) apply(ctx context.Context, actions []*jobdeciderv1.Action) error {
	if err := r.validate(actions); err != nil {
		reason := "invalid_action"
		if errors.Is(err, errUnknownAction) {
			reason = "unknown_action"
			r.c.metrics.applyError("unknown")
		}
		r.c.metrics.planRefused(reason)
		r.c.recorder.Eventf(r.job, corev1.EventTypeWarning, reasonUnsupportedPlan, "Plan refused, nothing applied: %v", err)
		return err
	}
	for i, action := range actions {
		if i > 0 && r.c.cfg.BeforeStep != nil {
			r.c.cfg.BeforeStep(r.key)
		}
		name, err := r.applyOne(ctx, action)
		if err != nil {
			r.c.metrics.applyError(name)
			return fmt.Errorf("action %d of %d (%s): %w", i+1, len(actions), name, err)
		}
	}
	return nil
}

func (r *planRun) applyOne(ctx context.Context, action *jobdeciderv1.Action) (string, error) {
	switch kind := action.GetKind().(type) {
	case *jobdeciderv1.Action_CreatePods:
		return "create_pods", r.createPods(ctx, kind.CreatePods.GetPods())
	case *jobdeciderv1.Action_DeletePods:
		return "delete_pods", r.deletePods(ctx, kind.DeletePods.GetPods())
	case *jobdeciderv1.Action_RemoveFinalizers:
		return "remove_finalizers", r.removeFinalizers(ctx, kind.RemoveFinalizers.GetPods())
	case *jobdeciderv1.Action_UpdateStatus:
		return "update_status", r.updateStatus(ctx, kind.UpdateStatus.GetStatus())
	case *jobdeciderv1.Action_RecordEvent:
		e := kind.RecordEvent
		r.c.recorder.Event(r.job, e.GetType(), e.GetReason(), e.GetMessage())
		return "record_event", nil
	case *jobdeciderv1.Action_AdoptPods:
		return "adopt_pods", r.adoptPods(ctx, kind.AdoptPods.GetPods())
	case *jobdeciderv1.Action_ReleasePods:
		return "release_pods", r.releasePods(ctx, kind.ReleasePods.GetPods())
	case *jobdeciderv1.Action_FailPods:
		return "fail_pods", r.failPods(ctx, kind.FailPods.GetPods())
	default:
		// validate refuses such a plan before its first write.
		return "unknown", fmt.Errorf("%w %T", errUnknownAction, kind)
	}
}

// validate checks, without writing, that every action of the plan is one this
// shim knows and can apply: pod creations build from the template, the status
// converts, each pod failure names its condition.
func (r *planRun) validate(actions []*jobdeciderv1.Action) error {
	for i, action := range actions {
		if err := r.validateOne(action); err != nil {
			return fmt.Errorf("action %d of %d: %w", i+1, len(actions), err)
		}
	}
	return nil
}

func (r *planRun) validateOne(action *jobdeciderv1.Action) error {
	switch kind := action.GetKind().(type) {
	case *jobdeciderv1.Action_CreatePods:
		for _, pc := range kind.CreatePods.GetPods() {
			if _, err := podFromTemplate(r.job, pc); err != nil {
				return fmt.Errorf("create_pods: %w", err)
			}
		}
	case *jobdeciderv1.Action_UpdateStatus:
		var status batchv1.JobStatus
		if err := kubejson.ToKube(kind.UpdateStatus.GetStatus(), &status); err != nil {
			return fmt.Errorf("update_status: converting the status: %w", err)
		}
	case *jobdeciderv1.Action_FailPods:
		for _, p := range kind.FailPods.GetPods() {
			if _, err := failurePatch(p, metav1.Time{}); err != nil {
				return err
			}
		}
	case *jobdeciderv1.Action_DeletePods, *jobdeciderv1.Action_RemoveFinalizers, *jobdeciderv1.Action_RecordEvent,
		*jobdeciderv1.Action_AdoptPods, *jobdeciderv1.Action_ReleasePods:
	default:
		// A newer decider's kind arrives here with no kind set.
		return fmt.Errorf("%w %T: this shim is older than the decider", errUnknownAction, kind)
	}
	return nil
}

// createPods creates the pods in slow-start batches of 1, 2, 4, ...,
// stopping after a batch in which a creation failed.
func (r *planRun) createPods(ctx context.Context, creations []*jobdeciderv1.PodCreation) error {
	pods := make([]*corev1.Pod, len(creations))
	for i, pc := range creations {
		pod, err := podFromTemplate(r.job, pc)
		if err != nil {
			return err
		}
		pods[i] = pod
	}
	r.c.exp.expectCreations(r.key, len(pods))
	created := 0
	for batch := 1; created < len(pods); batch *= 2 {
		if created > 0 && r.c.cfg.BeforeStep != nil {
			r.c.cfg.BeforeStep(r.key)
		}
		n := min(batch, len(pods)-created)
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i, pod := range pods[created : created+n] {
			wg.Go(func() {
				got, err := r.c.kube.CoreV1().Pods(r.job.Namespace).Create(ctx, pod, metav1.CreateOptions{})
				if err != nil {
					// The informer will not see this pod.
					r.c.exp.creationObserved(r.key)
					r.c.recorder.Eventf(r.job, corev1.EventTypeWarning, reasonFailedCreate, "Error creating: %v", err)
					errs[i] = err
					return
				}
				r.wrotePod(got)
				r.c.recorder.Eventf(r.job, corev1.EventTypeNormal, reasonSuccessfulCreate, "Created pod: %v", got.Name)
			})
		}
		wg.Wait()
		created += n
		if err := errors.Join(errs...); err != nil {
			// Nor will it see the pods never attempted.
			for range len(pods) - created {
				r.c.exp.creationObserved(r.key)
			}
			return err
		}
	}
	return nil
}

// podFromTemplate builds one pod: the Job's template, overlaid with the plan's entry.
func podFromTemplate(job *batchv1.Job, pc *jobdeciderv1.PodCreation) (*corev1.Pod, error) {
	tmpl := job.Spec.Template.DeepCopy()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:    job.Namespace,
			Name:         pc.GetName(),
			GenerateName: pc.GetGenerateName(),
			Labels:       tmpl.Labels,
			Annotations:  tmpl.Annotations,
			Finalizers:   tmpl.Finalizers,
		},
		Spec: tmpl.Spec,
	}
	if pod.Name == "" && pod.GenerateName == "" {
		pod.GenerateName = job.Name + "-"
	}
	if pod.Name != "" {
		pod.GenerateName = ""
	}
	if len(pc.GetLabels()) > 0 && pod.Labels == nil {
		pod.Labels = map[string]string{}
	}
	for k, v := range pc.GetLabels() {
		pod.Labels[k] = v
	}
	if len(pc.GetAnnotations()) > 0 && pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	for k, v := range pc.GetAnnotations() {
		pod.Annotations[k] = v
	}
	for _, f := range pc.GetFinalizers() {
		if !slices.Contains(pod.Finalizers, f) {
			pod.Finalizers = append(pod.Finalizers, f)
		}
	}
	if h := pc.GetHostname(); h != "" {
		pod.Spec.Hostname = h
	}
	if len(pc.GetEnv()) > 0 {
		env := make([]corev1.EnvVar, len(pc.GetEnv()))
		for i, e := range pc.GetEnv() {
			if err := kubejson.ToKube(e, &env[i]); err != nil {
				return nil, fmt.Errorf("env %q: %w", e.GetName(), err)
			}
		}
		appendMissingEnv(pod.Spec.InitContainers, env)
		appendMissingEnv(pod.Spec.Containers, env)
	}
	if err := avoidNodes(&pod.Spec, pc.GetAvoidNodes()); err != nil {
		return nil, err
	}
	if ref := pc.GetOwnerReference(); ref != nil {
		var owner metav1.OwnerReference
		if err := kubejson.ToKube(ref, &owner); err != nil {
			return nil, fmt.Errorf("owner reference: %w", err)
		}
		pod.OwnerReferences = append(pod.OwnerReferences, owner)
	}
	return pod, nil
}

// appendMissingEnv adds each variable to every container that lacks one of its name.
func appendMissingEnv(containers []corev1.Container, env []corev1.EnvVar) {
	for i := range containers {
		for _, e := range env {
			if !slices.ContainsFunc(containers[i].Env, func(have corev1.EnvVar) bool { return have.Name == e.Name }) {
				containers[i].Env = append(containers[i].Env, e)
			}
		}
	}
}

// forEachPod runs fn on every pod at once and joins the errors.
func forEachPod[T any](pods []T, fn func(T) error) error {
	errs := make([]error, len(pods))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 50)
	for i, p := range pods {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			errs[i] = fn(p)
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// deletePods deletes pods, each guarded by its UID, removing the tracking
// finalizer first when the plan says so.
func (r *planRun) deletePods(ctx context.Context, pods []*jobdeciderv1.PodDeletion) error {
	uids := make([]string, len(pods))
	for i, p := range pods {
		uids[i] = p.GetUid()
	}
	r.c.exp.expectDeletions(r.key, uids)
	return forEachPod(pods, func(p *jobdeciderv1.PodDeletion) error {
		err := r.deletePod(ctx, p)
		if err != nil {
			// The informer will not see this deletion.
			r.c.exp.deletionObserved(r.key, p.GetUid())
			if apierrors.IsNotFound(err) {
				return nil
			}
			r.c.recorder.Eventf(r.job, corev1.EventTypeWarning, reasonFailedDelete, "Error deleting: %v", err)
			return err
		}
		r.c.recorder.Eventf(r.job, corev1.EventTypeNormal, reasonSuccessfulDelete, "Deleted pod: %v", p.GetName())
		return nil
	})
}

func (r *planRun) deletePod(ctx context.Context, p *jobdeciderv1.PodDeletion) error {
	pods := r.c.kube.CoreV1().Pods(r.job.Namespace)
	if p.GetRemoveFinalizerFirst() {
		if err := r.removeFinalizer(ctx, p.GetName(), p.GetUid()); err != nil {
			return err
		}
	}
	uid := types.UID(p.GetUid())
	return pods.Delete(ctx, p.GetName(), metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
}

// removeFinalizers takes the tracking finalizer off pods the status already counts.
func (r *planRun) removeFinalizers(ctx context.Context, pods []*jobdeciderv1.PodReference) error {
	uids := make([]string, len(pods))
	for i, p := range pods {
		uids[i] = p.GetUid()
	}
	r.c.exp.expectFinalizerRemovals(r.key, uids)
	return forEachPod(pods, func(p *jobdeciderv1.PodReference) error {
		err := r.removeFinalizer(ctx, p.GetName(), p.GetUid())
		if err != nil {
			// No update will show the removal.
			r.c.exp.finalizerRemovalObserved(r.key, p.GetUid())
			if apierrors.IsNotFound(err) {
				return nil
			}
		}
		return err
	})
}

// removeFinalizer patches one pod; the uid in the patch makes the API server
// refuse it for another pod of the same name.
func (r *planRun) removeFinalizer(ctx context.Context, name, uid string) error {
	patch, err := json.Marshal(map[string]any{
		"metadata": map[string]any{
			"$deleteFromPrimitiveList/finalizers": []string{JobTrackingFinalizer},
			"uid":                                 uid,
		},
	})
	if err != nil {
		return err
	}
	return r.patchPod(ctx, name, patch)
}

// patchPod applies a strategic merge patch to one pod and records the write.
func (r *planRun) patchPod(ctx context.Context, name string, patch []byte) error {
	got, err := r.c.kube.CoreV1().Pods(r.job.Namespace).Patch(ctx, name, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
	if err == nil {
		r.wrotePod(got)
	}
	return err
}

// wrotePod records a pod write, so that the next sync waits for the pod cache to show it.
func (r *planRun) wrotePod(pod *corev1.Pod) {
	r.c.writes.wrote(r.key, r.job.UID, podsCache, pod.ResourceVersion)
}

// updateStatus replaces the Job's status, guarded by its resourceVersion.
func (r *planRun) updateStatus(ctx context.Context, status *jobdeciderv1.JobStatus) error {
	job := r.job.DeepCopy()
	job.Status = batchv1.JobStatus{}
	if err := kubejson.ToKube(status, &job.Status); err != nil {
		return fmt.Errorf("converting the status: %w", err)
	}
	updated, err := r.c.kube.BatchV1().Jobs(job.Namespace).UpdateStatus(ctx, job, metav1.UpdateOptions{})
	if err != nil {
		return err
	}
	r.job = updated
	r.statusWritten = true
	r.c.writes.wrote(r.key, updated.UID, jobsCache, updated.ResourceVersion)
	return nil
}

// adoptPods makes the Job the controller of orphan pods, after a fresh read
// confirms that the Job still exists and is not being deleted.
func (r *planRun) adoptPods(ctx context.Context, pods []*jobdeciderv1.PodReference) error {
	fresh, err := r.c.kube.BatchV1().Jobs(r.job.Namespace).Get(ctx, r.job.Name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	if fresh.UID != r.job.UID {
		return fmt.Errorf("job %s was recreated (uid %s, had %s); not adopting", r.key, fresh.UID, r.job.UID)
	}
	if fresh.DeletionTimestamp != nil {
		return fmt.Errorf("job %s is being deleted; not adopting", r.key)
	}
	owner := metav1.NewControllerRef(r.job, batchv1.SchemeGroupVersion.WithKind("Job"))
	return forEachPod(pods, func(p *jobdeciderv1.PodReference) error {
		patch, err := json.Marshal(map[string]any{
			"metadata": map[string]any{
				"ownerReferences": []metav1.OwnerReference{*owner},
				"finalizers":      []string{JobTrackingFinalizer},
				"uid":             p.GetUid(),
			},
		})
		if err != nil {
			return err
		}
		return r.patchPod(ctx, p.GetName(), patch)
	})
}

// releasePods removes the Job's owner reference and the tracking finalizer,
// in one patch, from pods it no longer selects: a released pod kept with the
// finalizer would wait on an orphan cleanup that a Job being deleted, or
// another controller's stale cache, can defer or race (upstream's release
// removes both at once too).
func (r *planRun) releasePods(ctx context.Context, pods []*jobdeciderv1.PodReference) error {
	return forEachPod(pods, func(p *jobdeciderv1.PodReference) error {
		patch, err := json.Marshal(map[string]any{
			"metadata": map[string]any{
				"ownerReferences":                     []map[string]any{{"$patch": "delete", "uid": string(r.job.UID)}},
				"$deleteFromPrimitiveList/finalizers": []string{JobTrackingFinalizer},
				"uid":                                 p.GetUid(),
			},
		})
		if err != nil {
			return err
		}
		err = r.patchPod(ctx, p.GetName(), patch)
		if apierrors.IsNotFound(err) || apierrors.IsInvalid(err) {
			// Gone, or no longer ours to release.
			return nil
		}
		return err
	})
}
