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
	h := c.exp.Hooks()
	h.BeforeStep = func(job *batchv1.Job) {
		if c.cfg.BeforeStep != nil {
			c.cfg.BeforeStep(jobKey(job))
		}
	}
	// The next sync waits until the caches show these writes.
	h.PodWritten = func(job *batchv1.Job, pod *corev1.Pod) { c.writes.PodWritten(job, pod) }
	h.StatusWritten = func(job, written *batchv1.Job) { c.writes.StatusWritten(job, written) }
	h.ActionFailed = func(_ *batchv1.Job, action string, _ error) { c.metrics.applyError(action) }
	h.PlanRefused = func(_ *batchv1.Job, reason string, _ error) { c.metrics.planRefused(reason) }
	return h
}
