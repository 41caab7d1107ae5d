package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"job-decider.dev/clients/go/apply"
)

// Event handlers map informer events to work: a Job key to decide again, or
// an orphan pod whose tracking finalizer may have to go. They also record
// what the cache now shows against the expectations.

func (c *Controller) addJob(obj any) {
	job, ok := obj.(*batchv1.Job)
	if !ok || !c.ours(job) {
		return
	}
	c.enqueueJob(job, 0)
}

func (c *Controller) deleteJob(obj any) {
	job, ok := obj.(*batchv1.Job)
	if !ok {
		tomb, isTomb := obj.(cache.DeletedFinalStateUnknown)
		if !isTomb {
			return
		}
		if job, ok = tomb.Obj.(*batchv1.Job); !ok {
			return
		}
	}
	if !c.ours(job) {
		return
	}
	c.enqueueJob(job, 0)
	// Its pods that still carry the finalizer are orphans now, and so are
	// those its selector matches that the garbage collector already
	// released (orphan propagation): nothing else would look at them again.
	owned, err := c.podIndexer.ByIndex(podControllerUIDIndex, string(job.UID))
	if err != nil {
		return
	}
	for _, obj := range owned {
		if pod, ok := obj.(*corev1.Pod); ok && hasTrackingFinalizer(pod) {
			c.enqueueOrphan(pod)
		}
	}
	selector, err := jobSelector(job)
	if err != nil || selector.Empty() {
		return
	}
	orphans, err := c.podIndexer.ByIndex(podControllerUIDIndex, orphanIndexKey(job.Namespace))
	if err != nil {
		return
	}
	for _, obj := range orphans {
		if pod, ok := obj.(*corev1.Pod); ok && hasTrackingFinalizer(pod) && selector.Matches(labels.Set(pod.Labels)) {
			c.enqueueOrphan(pod)
		}
	}
}

func (c *Controller) addPod(obj any) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	if pod.DeletionTimestamp != nil {
		// Seen for the first time while already being deleted (a
		// restart or a relist): that is a deletion to observe.
		c.podGone(pod, false)
		return
	}
	if ref := controllerOf(pod); ref != nil {
		job := c.resolveControllerRef(pod.Namespace, ref)
		if job == nil {
			if hasTrackingFinalizer(pod) {
				c.enqueueOrphan(pod)
			}
			return
		}
		if !c.ours(job) {
			return
		}
		key := jobKey(job)
		c.exp.CreationObserved(key)
		c.enqueueJob(job, c.cfg.PodEventBatchPeriod)
		return
	}
	c.orphanChanged(pod)
}

func (c *Controller) updatePod(old, cur any) {
	oldPod, ok1 := old.(*corev1.Pod)
	curPod, ok2 := cur.(*corev1.Pod)
	if !ok1 || !ok2 || oldPod.ResourceVersion == curPod.ResourceVersion {
		return
	}
	if !hasTrackingFinalizer(curPod) {
		// The finalizer is gone: whoever removed it, a removal this
		// shim expected is done (also when ownership moved meanwhile).
		for _, ref := range []*metav1.OwnerReference{controllerOf(oldPod), controllerOf(curPod)} {
			if ref == nil {
				continue
			}
			if job := c.resolveControllerRef(curPod.Namespace, ref); job != nil && c.ours(job) {
				c.exp.FinalizerRemovalObserved(jobKey(job), string(curPod.UID))
			}
		}
	}
	if curPod.DeletionTimestamp != nil {
		// A pod being deleted no longer counts as active: decide again
		// now rather than when it finally disappears.
		c.podGone(curPod, false)
		return
	}

	oldRef, curRef := controllerOf(oldPod), controllerOf(curPod)
	if oldRef != nil && (curRef == nil || oldRef.UID != curRef.UID) {
		// Released or moved: the former owner decides again.
		if job := c.resolveControllerRef(oldPod.Namespace, oldRef); job != nil && c.ours(job) {
			c.enqueueJob(job, c.cfg.PodEventBatchPeriod)
		}
	}
	if curRef != nil {
		job := c.resolveControllerRef(curPod.Namespace, curRef)
		if job == nil {
			if hasTrackingFinalizer(curPod) {
				c.enqueueOrphan(curPod)
			}
			return
		}
		if c.ours(job) {
			c.enqueueJob(job, c.cfg.PodEventBatchPeriod)
		}
		return
	}
	c.orphanChanged(curPod)
}

func (c *Controller) deletePod(obj any) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		tomb, isTomb := obj.(cache.DeletedFinalStateUnknown)
		if !isTomb {
			return
		}
		if pod, ok = tomb.Obj.(*corev1.Pod); !ok {
			return
		}
	}
	c.podGone(pod, true)
}

// podGone observes a pod that is being deleted (final: that is gone).
func (c *Controller) podGone(pod *corev1.Pod, final bool) {
	ref := controllerOf(pod)
	if ref == nil {
		if !final {
			c.orphanChanged(pod)
		}
		return
	}
	job := c.resolveControllerRef(pod.Namespace, ref)
	if job == nil {
		if !final && hasTrackingFinalizer(pod) {
			c.enqueueOrphan(pod)
		}
		return
	}
	if !c.ours(job) {
		return
	}
	key := jobKey(job)
	c.exp.DeletionObserved(key, string(pod.UID))
	if final {
		c.exp.FinalizerRemovalObserved(key, string(pod.UID))
	}
	c.enqueueJob(job, c.cfg.PodEventBatchPeriod)
}

// orphanChanged handles a pod without a controller: the Jobs of ours whose
// selector matches it decide again (they may adopt it); if none does and it
// carries the finalizer, the finalizer goes.
func (c *Controller) orphanChanged(pod *corev1.Pod) {
	jobs := c.jobsSelecting(pod)
	for _, job := range jobs {
		c.enqueueJob(job, c.cfg.PodEventBatchPeriod)
	}
	if !slices.ContainsFunc(jobs, canAdopt) && hasTrackingFinalizer(pod) {
		c.enqueueOrphan(pod)
	}
}

// canAdopt reports whether a Job may still adopt pods: one being deleted
// never will, so it must not keep an orphan's finalizer on.
func canAdopt(job *batchv1.Job) bool {
	return job.DeletionTimestamp == nil
}

// jobsSelecting lists the Jobs of ours in the pod's namespace whose selector matches it.
func (c *Controller) jobsSelecting(pod *corev1.Pod) []*batchv1.Job {
	if len(pod.Labels) == 0 {
		return nil
	}
	jobs, err := c.jobLister.Jobs(pod.Namespace).List(labels.Everything())
	if err != nil {
		return nil
	}
	var out []*batchv1.Job
	for _, job := range jobs {
		if !c.ours(job) {
			continue
		}
		sel, err := jobSelector(job)
		if err != nil || sel.Empty() {
			continue
		}
		if sel.Matches(labels.Set(pod.Labels)) {
			out = append(out, job)
		}
	}
	return out
}

func (c *Controller) enqueueJob(job *batchv1.Job, after time.Duration) {
	key := jobKey(job)
	if after > 0 {
		c.queue.AddAfter(key, after)
		return
	}
	c.queue.Add(key)
}

func (c *Controller) enqueueOrphan(pod *corev1.Pod) {
	c.orphanQueue.Add(pod.Namespace + "/" + pod.Name)
}

// resolveControllerRef returns the cached Job a controller reference names,
// or nil when it is not a Job or not the same Job (by UID).
func (c *Controller) resolveControllerRef(namespace string, ref *metav1.OwnerReference) *batchv1.Job {
	if ref.Kind != "Job" || ref.APIVersion != batchv1.SchemeGroupVersion.String() {
		return nil
	}
	job, err := c.jobLister.Jobs(namespace).Get(ref.Name)
	if err != nil || job.UID != ref.UID {
		return nil
	}
	return job
}

// syncOrphanPod removes the tracking finalizer from a pod whose Job is gone,
// or that no Job of ours that may still adopt it selects. A pod of a Job that still exists is left to
// that Job's controller (for a finished Job of ours, the decider plans it).
func (c *Controller) syncOrphanPod(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	pod, err := c.podLister.Pods(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if !hasTrackingFinalizer(pod) {
		return nil
	}
	if ref := controllerOf(pod); ref != nil {
		if ref.Kind != "Job" || ref.APIVersion != batchv1.SchemeGroupVersion.String() {
			return nil
		}
		if c.resolveControllerRef(ns, ref) != nil {
			return nil
		}
		// The cache may lag behind a Job created a moment ago: ask.
		job, err := c.kube.BatchV1().Jobs(ns).Get(ctx, ref.Name, metav1.GetOptions{})
		switch {
		case err == nil && job.UID == ref.UID:
			return nil
		case err != nil && !apierrors.IsNotFound(err):
			return err
		}
	} else if slices.ContainsFunc(c.jobsSelecting(pod), canAdopt) {
		return nil
	}
	// Guarded by the resourceVersion the decision was made on: an adoption
	// in between makes the patch fail, and the pod is looked at again.
	i := slices.Index(pod.Finalizers, JobTrackingFinalizer)
	patch, err := json.Marshal([]map[string]any{
		{"op": "test", "path": "/metadata/resourceVersion", "value": pod.ResourceVersion},
		{"op": "test", "path": fmt.Sprintf("/metadata/finalizers/%d", i), "value": JobTrackingFinalizer},
		{"op": "remove", "path": fmt.Sprintf("/metadata/finalizers/%d", i)},
	})
	if err != nil {
		return err
	}
	_, err = c.kube.CoreV1().Pods(ns).Patch(ctx, name, types.JSONPatchType, patch, metav1.PatchOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		c.metrics.applyError("orphan_remove_finalizer")
		return err
	}
	klog.FromContext(ctx).V(2).Info("Removed the tracking finalizer of an orphan pod", "pod", klog.KObj(pod))
	return nil
}

func jobKey(job *batchv1.Job) string {
	return apply.JobKey(job)
}

func controllerOf(pod *corev1.Pod) *metav1.OwnerReference {
	return metav1.GetControllerOfNoCopy(pod)
}

func hasTrackingFinalizer(pod *corev1.Pod) bool {
	return slices.Contains(pod.Finalizers, JobTrackingFinalizer)
}

// jobSelector parses a Job's selector; a Job without one selects nothing.
func jobSelector(job *batchv1.Job) (labels.Selector, error) {
	if job.Spec.Selector == nil {
		return labels.Nothing(), nil
	}
	return metav1.LabelSelectorAsSelector(job.Spec.Selector)
}
