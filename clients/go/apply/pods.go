package apply

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

// createPods creates the pods in slow-start batches of 1, 2, 4, ...,
// stopping after a batch in which a creation failed.
func (r *run) createPods(ctx context.Context, creations []*jobdeciderv1.PodCreation) error {
	pods := make([]*corev1.Pod, len(creations))
	for i, pc := range creations {
		pod, err := PodFromTemplate(r.job, pc)
		if err != nil {
			return err
		}
		pods[i] = pod
	}
	if h := r.a.hooks.ExpectCreations; h != nil {
		h(r.decided, len(pods))
	}
	created := 0
	for batch := 1; created < len(pods); batch *= 2 {
		if created > 0 {
			r.beforeStep()
		}
		n := min(batch, len(pods)-created)
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i, pod := range pods[created : created+n] {
			wg.Go(func() {
				got, err := r.a.kube.CoreV1().Pods(r.job.Namespace).Create(ctx, pod, metav1.CreateOptions{})
				if err != nil {
					// No watch will show this pod.
					r.creationsNotMade(1)
					r.eventf(corev1.EventTypeWarning, ReasonFailedCreate, "Error creating: %v", err)
					errs[i] = err
					return
				}
				r.wrotePod(got)
				r.eventf(corev1.EventTypeNormal, ReasonSuccessfulCreate, "Created pod: %v", got.Name)
			})
		}
		wg.Wait()
		created += n
		if err := errors.Join(errs...); err != nil {
			// Nor will it show the pods never attempted.
			r.creationsNotMade(len(pods) - created)
			return err
		}
	}
	return nil
}

func (r *run) creationsNotMade(n int) {
	if h := r.a.hooks.CreationsNotMade; h != nil && n > 0 {
		h(r.decided, n)
	}
}

// PodFromTemplate builds the pod one PodCreation asks for: the Job's pod
// template (labels, annotations, finalizers and spec), overlaid with the
// entry's name or generateName (else "<job>-"), labels, annotations,
// finalizers, hostname, environment (added to each container that lacks a
// variable of that name), node avoidance and owner reference. The Job is not
// modified. Apply builds its pods with it; it is exported for dry runs.
func PodFromTemplate(job *batchv1.Job, pc *jobdeciderv1.PodCreation) (*corev1.Pod, error) {
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

// deletePods deletes pods, each guarded by its UID, removing the tracking
// finalizer first when the plan says so.
func (r *run) deletePods(ctx context.Context, pods []*jobdeciderv1.PodDeletion) error {
	uids := make([]string, len(pods))
	for i, p := range pods {
		uids[i] = p.GetUid()
	}
	if h := r.a.hooks.ExpectDeletions; h != nil {
		h(r.decided, uids)
	}
	return forEachPod(pods, func(p *jobdeciderv1.PodDeletion) error {
		err := r.deletePod(ctx, p)
		if err != nil {
			// No watch will show this deletion.
			r.deletionNotMade(p.GetUid())
			if apierrors.IsNotFound(err) {
				return nil
			}
			r.eventf(corev1.EventTypeWarning, ReasonFailedDelete, "Error deleting: %v", err)
			return err
		}
		r.eventf(corev1.EventTypeNormal, ReasonSuccessfulDelete, "Deleted pod: %v", p.GetName())
		return nil
	})
}

func (r *run) deletionNotMade(uid string) {
	if h := r.a.hooks.DeletionNotMade; h != nil {
		h(r.decided, uid)
	}
}

func (r *run) deletePod(ctx context.Context, p *jobdeciderv1.PodDeletion) error {
	if p.GetRemoveFinalizerFirst() {
		if err := r.removeFinalizer(ctx, p.GetName(), p.GetUid()); err != nil {
			return err
		}
	}
	return r.deleteGuarded(ctx, p.GetName(), p.GetUid())
}

// deleteGuarded deletes one pod with its UID as a precondition, so a pod
// re-created under the same name is never deleted in its place.
func (r *run) deleteGuarded(ctx context.Context, name, uid string) error {
	u := types.UID(uid)
	return r.a.kube.CoreV1().Pods(r.job.Namespace).Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &u}})
}

// deleteGuardedNow is deleteGuarded with a grace period of 0, as a force
// delete (kubectl delete --force --grace-period=0) asks.
func (r *run) deleteGuardedNow(ctx context.Context, name, uid string) error {
	u := types.UID(uid)
	zero := int64(0)
	return r.a.kube.CoreV1().Pods(r.job.Namespace).Delete(ctx, name, metav1.DeleteOptions{
		Preconditions: &metav1.Preconditions{UID: &u}, GracePeriodSeconds: &zero,
	})
}

// removeFinalizers takes the tracking finalizer off pods the status already counts.
func (r *run) removeFinalizers(ctx context.Context, pods []*jobdeciderv1.PodReference) error {
	uids := make([]string, len(pods))
	for i, p := range pods {
		uids[i] = p.GetUid()
	}
	if h := r.a.hooks.ExpectFinalizerRemovals; h != nil {
		h(r.decided, uids)
	}
	return forEachPod(pods, func(p *jobdeciderv1.PodReference) error {
		err := r.removeFinalizer(ctx, p.GetName(), p.GetUid())
		if err != nil {
			// No update will show the removal.
			if h := r.a.hooks.FinalizerRemovalNotMade; h != nil {
				h(r.decided, p.GetUid())
			}
			if apierrors.IsNotFound(err) {
				return nil
			}
		}
		return err
	})
}

// removeFinalizer patches one pod; the uid in the patch makes the API server
// refuse it for another pod of the same name.
func (r *run) removeFinalizer(ctx context.Context, name, uid string) error {
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

// patchPod applies a strategic merge patch to one pod and reports the write.
func (r *run) patchPod(ctx context.Context, name string, patch []byte, subresources ...string) error {
	got, err := r.a.kube.CoreV1().Pods(r.job.Namespace).Patch(ctx, name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, subresources...)
	if err == nil {
		r.wrotePod(got)
	}
	return err
}

func (r *run) wrotePod(pod *corev1.Pod) {
	if h := r.a.hooks.PodWritten; h != nil {
		h(r.decided, pod)
	}
}

// updateStatus replaces the Job's status, guarded by its resourceVersion.
func (r *run) updateStatus(ctx context.Context, status *jobdeciderv1.JobStatus) error {
	job := r.job.DeepCopy()
	job.Status = batchv1.JobStatus{}
	if err := kubejson.ToKube(status, &job.Status); err != nil {
		return fmt.Errorf("converting the status: %w", err)
	}
	updated, err := r.a.kube.BatchV1().Jobs(job.Namespace).UpdateStatus(ctx, job, metav1.UpdateOptions{})
	if err != nil {
		return err
	}
	r.job = updated
	r.statusWritten = true
	if h := r.a.hooks.StatusWritten; h != nil {
		h(r.decided, updated)
	}
	return nil
}

// adoptPods makes the Job the controller of orphan pods, after a fresh read
// confirms that the Job still exists and is not being deleted.
func (r *run) adoptPods(ctx context.Context, pods []*jobdeciderv1.PodReference) error {
	fresh, err := r.a.kube.BatchV1().Jobs(r.job.Namespace).Get(ctx, r.job.Name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	if fresh.UID != r.job.UID {
		return fmt.Errorf("job %s/%s was recreated (uid %s, had %s); not adopting", r.job.Namespace, r.job.Name, fresh.UID, r.job.UID)
	}
	if fresh.DeletionTimestamp != nil {
		return fmt.Errorf("job %s/%s is being deleted; not adopting", r.job.Namespace, r.job.Name)
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
func (r *run) releasePods(ctx context.Context, pods []*jobdeciderv1.PodReference) error {
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
