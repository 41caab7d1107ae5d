package tests

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"job-decider.dev/e2e/harness"
)

const indexLabel = "batch.kubernetes.io/job-completion-index"

// withKubelet runs the terminating-pod half of a kubelet for the namespace.
func withKubelet(t *testing.T, ns string) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		harness.Kubelet(ctx, e.client, ns)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
}

func byIndex(pods []corev1.Pod) map[int]corev1.Pod {
	out := map[int]corev1.Pod{}
	for _, p := range pods {
		if i, err := strconv.Atoi(p.Labels[indexLabel]); err == nil {
			out[i] = p
		}
	}
	return out
}

func onExitCodes(action batchv1.PodFailurePolicyAction, codes ...int32) batchv1.PodFailurePolicyRule {
	return batchv1.PodFailurePolicyRule{
		Action:      action,
		OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{ContainerName: ptr.To("main"), Operator: batchv1.PodFailurePolicyOnExitCodesOpIn, Values: codes},
	}
}

func onDisruption(action batchv1.PodFailurePolicyAction) batchv1.PodFailurePolicyRule {
	return batchv1.PodFailurePolicyRule{
		Action:          action,
		OnPodConditions: []batchv1.PodFailurePolicyOnPodConditionsPattern{{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue}},
	}
}

// KEP-3329 story 1: an exit code that means a bug fails the Job at once,
// without retries; its other pods are terminated.
func TestPodFailurePolicyFailJob(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	withKubelet(t, ns)
	j := start(t, newJob(ns, "failjob", func(job *batchv1.Job) {
		job.Spec.Parallelism = ptr.To[int32](2)
		job.Spec.Completions = ptr.To[int32](2)
		job.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{
			onExitCodes(batchv1.PodFailurePolicyActionFailJob, 42),
		}}
	}), 2*time.Minute)
	pods := j.waitActive(2)
	j.finish(pods[:1], harness.Failed(42))
	job := j.waitCondition(batchv1.JobFailed)
	if got := conditionReason(job, batchv1.JobFailed); got != batchv1.JobReasonPodFailurePolicy {
		j.fatalf("Failed reason %q, want %q", got, batchv1.JobReasonPodFailurePolicy)
	}
	if !hasCondition(job, batchv1.JobFailureTarget) {
		j.fatalf("no FailureTarget condition before Failed")
	}
	// The failing pod and the terminated one both count.
	j.expectCounts(0, 0, 2)
	j.waitFinalizersGone()
}

// KEP-3329 story 2: failures caused by disruptions are ignored: they do not
// count against backoffLimit, and the pod is replaced.
func TestPodFailurePolicyIgnoreDisruption(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	j := start(t, newJob(ns, "ignore", func(job *batchv1.Job) {
		job.Spec.Parallelism = ptr.To[int32](1)
		job.Spec.Completions = ptr.To[int32](1)
		job.Spec.BackoffLimit = ptr.To[int32](0)
		job.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{
			onDisruption(batchv1.PodFailurePolicyActionIgnore),
		}}
	}), 2*time.Minute)
	pods := j.waitActive(1)
	j.finish(pods, harness.Disrupted())
	replacement := j.waitActive(1)
	if replacement[0].Name == pods[0].Name {
		j.fatalf("the disrupted pod was not replaced")
	}
	j.expectCounts(1, 0, 0)
	j.finish(replacement, harness.Succeeded())
	j.waitCondition(batchv1.JobComplete)
	j.expectCounts(0, 1, 0)
	j.waitFinalizersGone()
}

// KEP-3850: with backoffLimitPerIndex, one index exhausting its retries does
// not stop the others; the Job fails at the end with that index in failedIndexes.
func TestBackoffLimitPerIndexRunsAllIndexes(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	j := start(t, newJob(ns, "per-index", func(job *batchv1.Job) {
		job.Spec.CompletionMode = ptr.To(batchv1.IndexedCompletion)
		job.Spec.Parallelism = ptr.To[int32](3)
		job.Spec.Completions = ptr.To[int32](3)
		job.Spec.BackoffLimitPerIndex = ptr.To[int32](1)
	}), 2*time.Minute)
	pods := byIndex(j.waitActive(3))
	j.finish([]corev1.Pod{pods[1]}, harness.Failed(1))
	// Index 1 gets its one retry (after the pod failure backoff).
	retry := byIndex(j.waitActive(3))[1]
	if retry.Name == pods[1].Name {
		j.fatalf("index 1 was not retried")
	}
	j.finish([]corev1.Pod{retry}, harness.Failed(1))
	j.waitStatus("failedIndexes=1", func(s *batchv1.JobStatus) bool { return ptr.Deref(s.FailedIndexes, "") == "1" })
	// The other indexes still run and succeed.
	rest := byIndex(j.waitActive(2))
	j.finish([]corev1.Pod{rest[0], rest[2]}, harness.Succeeded())
	job := j.waitCondition(batchv1.JobFailed)
	if got := conditionReason(job, batchv1.JobFailed); got != batchv1.JobReasonFailedIndexes {
		j.fatalf("Failed reason %q, want %q", got, batchv1.JobReasonFailedIndexes)
	}
	if job.Status.CompletedIndexes != "0,2" {
		j.fatalf("completedIndexes %q, want 0,2", job.Status.CompletedIndexes)
	}
	j.expectCounts(0, 2, 2)
	j.waitFinalizersGone()
}

// KEP-3850: a FailIndex rule fails an index at once, without its retries.
func TestPodFailurePolicyFailIndex(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	j := start(t, newJob(ns, "failindex", func(job *batchv1.Job) {
		job.Spec.CompletionMode = ptr.To(batchv1.IndexedCompletion)
		job.Spec.Parallelism = ptr.To[int32](2)
		job.Spec.Completions = ptr.To[int32](2)
		job.Spec.BackoffLimitPerIndex = ptr.To[int32](3)
		job.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{
			onExitCodes(batchv1.PodFailurePolicyActionFailIndex, 3),
		}}
	}), 2*time.Minute)
	pods := byIndex(j.waitActive(2))
	j.finish([]corev1.Pod{pods[0]}, harness.Failed(3))
	j.waitStatus("failedIndexes=0", func(s *batchv1.JobStatus) bool { return ptr.Deref(s.FailedIndexes, "") == "0" })
	j.waitActive(1)
	j.finish([]corev1.Pod{pods[1]}, harness.Succeeded())
	job := j.waitCondition(batchv1.JobFailed)
	if job.Status.CompletedIndexes != "1" {
		j.fatalf("completedIndexes %q, want 1", job.Status.CompletedIndexes)
	}
	j.expectCounts(0, 1, 1)
	j.waitFinalizersGone()
}

// KEP-3850: maxFailedIndexes stops the whole Job once exceeded, terminating
// the pods of the other indexes.
func TestMaxFailedIndexesFailsJob(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	withKubelet(t, ns)
	j := start(t, newJob(ns, "maxfailed", func(job *batchv1.Job) {
		job.Spec.CompletionMode = ptr.To(batchv1.IndexedCompletion)
		job.Spec.Parallelism = ptr.To[int32](4)
		job.Spec.Completions = ptr.To[int32](4)
		job.Spec.BackoffLimitPerIndex = ptr.To[int32](0)
		job.Spec.MaxFailedIndexes = ptr.To[int32](1)
	}), 2*time.Minute)
	pods := byIndex(j.waitActive(4))
	j.finish([]corev1.Pod{pods[0], pods[1]}, harness.Failed(1))
	job := j.waitCondition(batchv1.JobFailed)
	if got := conditionReason(job, batchv1.JobFailed); got != batchv1.JobReasonMaxFailedIndexesExceeded {
		j.fatalf("Failed reason %q, want %q", got, batchv1.JobReasonMaxFailedIndexesExceeded)
	}
	if got := ptr.Deref(job.Status.FailedIndexes, ""); got != "0,1" {
		j.fatalf("failedIndexes %q, want 0,1", got)
	}
	if len(harness.ActivePods(j.pods())) != 0 {
		j.fatalf("pods still active after the Job failed")
	}
	j.waitFinalizersGone()
}

// KEP-2307: a pod deleted by a user before it finished is counted as failed
// and replaced; its finalizer does not outlive the count.
func TestDeletedPodIsCounted(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	j := start(t, newJob(ns, "deleted", func(job *batchv1.Job) {
		job.Spec.Parallelism = ptr.To[int32](1)
		job.Spec.Completions = ptr.To[int32](1)
	}), 2*time.Minute)
	pods := j.waitActive(1)
	if err := e.client.CoreV1().Pods(ns).Delete(j.ctx, pods[0].Name, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("deleting pod: %v", err)
	}
	j.waitStatus("failed=1", func(s *batchv1.JobStatus) bool { return s.Failed == 1 })
	// The deleted pod disappears once its finalizer is removed.
	err := harness.Poll(j.ctx, 50*time.Millisecond, time.Minute, func(ctx context.Context) (bool, error) {
		_, err := e.client.CoreV1().Pods(ns).Get(ctx, pods[0].Name, metav1.GetOptions{})
		return err != nil, nil
	})
	if err != nil {
		j.fatalf("the deleted pod is still there: %v", err)
	}
	replacement := j.waitActive(1)
	j.finish(replacement, harness.Succeeded())
	j.waitCondition(batchv1.JobComplete)
	j.expectCounts(0, 1, 1)
	j.waitFinalizersGone()
}

// KEP-2307 at scale: 500 pods at once, every one counted exactly once.
func TestFiveHundredPods(t *testing.T) {
	t.Parallel()
	const n = 500
	ns := newNamespace(t)
	j := start(t, newJob(ns, "large", func(job *batchv1.Job) {
		job.Spec.Parallelism = ptr.To[int32](n)
		job.Spec.Completions = ptr.To[int32](n)
	}), 5*time.Minute)
	pods := j.waitActive(n)
	j.waitStatus(fmt.Sprintf("active=%d", n), func(s *batchv1.JobStatus) bool { return s.Active == n })
	start := time.Now()
	finishParallel(t, j, pods, harness.Succeeded())
	t.Logf("%d pods succeeded in %s", n, time.Since(start).Round(time.Millisecond))
	j.waitCondition(batchv1.JobComplete)
	j.expectCounts(0, n, 0)
	if got := len(j.pods()); got != n {
		j.fatalf("%d pods, want %d (none created twice)", got, n)
	}
	j.waitFinalizersGone()
	t.Logf("job finished %s after the first success", time.Since(start).Round(time.Millisecond))
}

// finishParallel writes outcomes with a few writers at once.
func finishParallel(t *testing.T, j *jt, pods []corev1.Pod, o harness.PodOutcome) {
	t.Helper()
	work := make(chan corev1.Pod)
	errs := make(chan error, len(pods))
	for range 8 {
		go func() {
			for p := range work {
				errs <- harness.SetPodStatus(j.ctx, e.client, p.Namespace, p.Name, o)
			}
		}()
	}
	for _, p := range pods {
		work <- p
	}
	close(work)
	for range pods {
		if err := <-errs; err != nil {
			t.Fatalf("setting pod status: %v", err)
		}
	}
}

// A suspended Job creates no pods; resuming starts them; suspending again
// deletes the active pods without counting them as failed.
func TestSuspendAndResume(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	withKubelet(t, ns)
	j := start(t, newJob(ns, "suspend", func(job *batchv1.Job) {
		job.Spec.Parallelism = ptr.To[int32](2)
		job.Spec.Completions = ptr.To[int32](2)
		job.Spec.Suspend = ptr.To(true)
	}), 2*time.Minute)
	j.waitCondition(batchv1.JobSuspended)
	if n := len(j.pods()); n != 0 {
		j.fatalf("a suspended job has %d pods", n)
	}
	j.update(func(job *batchv1.Job) { job.Spec.Suspend = ptr.To(false) })
	j.waitActive(2)
	j.waitStatus("resumed", func(s *batchv1.JobStatus) bool { return s.StartTime != nil && s.Active == 2 })
	j.update(func(job *batchv1.Job) { job.Spec.Suspend = ptr.To(true) })
	j.waitCondition(batchv1.JobSuspended)
	j.waitActive(0)
	j.waitStatus("active=0", func(s *batchv1.JobStatus) bool { return s.Active == 0 })
	j.waitFinalizersGone()
	j.update(func(job *batchv1.Job) { job.Spec.Suspend = ptr.To(false) })
	pods := j.waitActive(2)
	j.finish(pods, harness.Succeeded())
	j.waitCondition(batchv1.JobComplete)
	j.expectCounts(0, 2, 0)
	j.waitFinalizersGone()
}

// activeDeadlineSeconds fails a Job that runs too long and terminates its pods.
func TestActiveDeadlineSeconds(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	withKubelet(t, ns)
	j := start(t, newJob(ns, "deadline", func(job *batchv1.Job) {
		job.Spec.Parallelism = ptr.To[int32](2)
		job.Spec.Completions = ptr.To[int32](2)
		job.Spec.ActiveDeadlineSeconds = ptr.To[int64](3)
	}), 2*time.Minute)
	j.waitActive(2)
	job := j.waitCondition(batchv1.JobFailed)
	if got := conditionReason(job, batchv1.JobFailed); got != batchv1.JobReasonDeadlineExceeded {
		j.fatalf("Failed reason %q, want %q", got, batchv1.JobReasonDeadlineExceeded)
	}
	j.expectCounts(0, 0, 2)
	j.waitFinalizersGone()
}

// Scaling parallelism up creates pods; scaling down deletes the extra ones
// without counting them as failed.
func TestParallelismUpAndDown(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	withKubelet(t, ns)
	j := start(t, newJob(ns, "scale", func(job *batchv1.Job) {
		job.Spec.Parallelism = ptr.To[int32](2)
		job.Spec.Completions = ptr.To[int32](6)
	}), 2*time.Minute)
	j.waitActive(2)
	j.update(func(job *batchv1.Job) { job.Spec.Parallelism = ptr.To[int32](5) })
	j.waitActive(5)
	j.update(func(job *batchv1.Job) { job.Spec.Parallelism = ptr.To[int32](1) })
	pods := j.waitActive(1)
	j.waitStatus("active=1", func(s *batchv1.JobStatus) bool { return s.Active == 1 })
	j.expectCounts(1, 0, 0)
	j.update(func(job *batchv1.Job) { job.Spec.Parallelism = ptr.To[int32](6) })
	j.finish(pods, harness.Succeeded())
	pods = j.waitActive(5)
	j.finish(pods, harness.Succeeded())
	j.waitCondition(batchv1.JobComplete)
	j.expectCounts(0, 6, 0)
	j.waitFinalizersGone()
}
