package tests

import (
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/utils/ptr"

	"job-decider.dev/e2e/harness"
)

// A NonIndexed Job runs to completion with exact counts.
func TestNonIndexedJobCompletes(t *testing.T) {
	ns := newNamespace(t)
	j := start(t, newJob(ns, "simple", func(job *batchv1.Job) {
		job.Spec.Parallelism = ptr.To[int32](2)
		job.Spec.Completions = ptr.To[int32](3)
	}), time.Minute)
	pods := j.waitActive(2)
	j.finish(pods, harness.Succeeded())
	pods = j.waitActive(1)
	j.finish(pods, harness.Succeeded())
	j.waitCondition(batchv1.JobComplete)
	j.expectCounts(0, 3, 0)
	j.waitFinalizersGone()
}
