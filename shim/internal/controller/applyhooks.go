package controller

import (
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	"job-decider.dev/clients/go/apply"
)

// applyHooks connects the plan applier (job-decider.dev/clients/go/apply) to
// what only the shim keeps: the expectations sent with every decision, the
// own-writes guard, the metrics and the crash-between-steps test hook.
func (c *Controller) applyHooks() apply.Hooks {
	return apply.Hooks{
		BeforeStep: func(job *batchv1.Job) {
			if c.cfg.BeforeStep != nil {
				c.cfg.BeforeStep(jobKey(job))
			}
		},
		ExpectCreations: func(job *batchv1.Job, n int) { c.exp.expectCreations(jobKey(job), n) },
		CreationsNotMade: func(job *batchv1.Job, n int) {
			for range n {
				c.exp.creationObserved(jobKey(job))
			}
		},
		ExpectDeletions: func(job *batchv1.Job, uids []string) { c.exp.expectDeletions(jobKey(job), uids) },
		DeletionNotMade: func(job *batchv1.Job, uid string) { c.exp.deletionObserved(jobKey(job), uid) },
		ExpectFinalizerRemovals: func(job *batchv1.Job, uids []string) {
			c.exp.expectFinalizerRemovals(jobKey(job), uids)
		},
		FinalizerRemovalNotMade: func(job *batchv1.Job, uid string) {
			c.exp.finalizerRemovalObserved(jobKey(job), uid)
		},
		// The next sync waits until the caches show these writes.
		PodWritten: func(job *batchv1.Job, pod *corev1.Pod) {
			c.writes.wrote(jobKey(job), job.UID, podsCache, pod.ResourceVersion)
		},
		StatusWritten: func(job, written *batchv1.Job) {
			c.writes.wrote(jobKey(job), written.UID, jobsCache, written.ResourceVersion)
		},
		ActionFailed: func(_ *batchv1.Job, action string, _ error) { c.metrics.applyError(action) },
		PlanRefused:  func(_ *batchv1.Job, reason string, _ error) { c.metrics.planRefused(reason) },
	}
}
