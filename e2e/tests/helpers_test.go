package tests

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"

	"job-decider.dev/e2e/harness"
)

const trackingFinalizer = "batch.kubernetes.io/job-tracking"

// jt drives one Job in one test.
type jt struct {
	t      *testing.T
	ctx    context.Context
	client kubernetes.Interface
	job    *batchv1.Job
}

// start creates the Job; every wait in the test shares the deadline.
func start(t *testing.T, job *batchv1.Job, timeout time.Duration) *jt {
	t.Helper()
	return startOn(t, e.client, job, timeout)
}

// startOn is start on the cluster of client (a test's own cluster).
func startOn(t *testing.T, client kubernetes.Interface, job *batchv1.Job, timeout time.Duration) *jt {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	t.Cleanup(cancel)
	created, err := client.BatchV1().Jobs(job.Namespace).Create(ctx, job, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating job %s: %v", job.Name, err)
	}
	return &jt{t: t, ctx: ctx, client: client, job: created}
}

func (j *jt) get() *batchv1.Job {
	j.t.Helper()
	job, err := j.client.BatchV1().Jobs(j.job.Namespace).Get(j.ctx, j.job.Name, metav1.GetOptions{})
	if err != nil {
		j.t.Fatalf("getting job: %v", err)
	}
	j.job = job
	return job
}

func (j *jt) pods() []corev1.Pod {
	j.t.Helper()
	pods, err := harness.JobPods(j.ctx, j.client, j.job)
	if err != nil {
		j.t.Fatalf("listing pods: %v", err)
	}
	sort.Slice(pods, func(a, b int) bool { return pods[a].Name < pods[b].Name })
	return pods
}

// waitActive waits until exactly n pods are active (and stay so for a moment)
// and returns them.
func (j *jt) waitActive(n int) []corev1.Pod {
	j.t.Helper()
	var active []corev1.Pod
	stable := 0
	err := harness.Poll(j.ctx, 50*time.Millisecond, time.Until(deadline(j.ctx)), func(context.Context) (bool, error) {
		active = harness.ActivePods(j.pods())
		if len(active) == n {
			stable++
		} else {
			stable = 0
		}
		return stable >= 3, nil
	})
	if err != nil {
		j.fatalf("waiting for %d active pods (have %d): %v", n, len(active), err)
	}
	return active
}

// finish writes an outcome to each pod.
func (j *jt) finish(pods []corev1.Pod, o harness.PodOutcome) {
	j.t.Helper()
	for _, p := range pods {
		if err := harness.SetPodStatus(j.ctx, j.client, p.Namespace, p.Name, o); err != nil {
			j.t.Fatalf("setting pod %s to %s: %v", p.Name, o.Phase, err)
		}
	}
}

// waitCondition waits for a true condition of the given type.
func (j *jt) waitCondition(ct batchv1.JobConditionType) *batchv1.Job {
	j.t.Helper()
	err := harness.Poll(j.ctx, 50*time.Millisecond, time.Until(deadline(j.ctx)), func(context.Context) (bool, error) {
		return hasCondition(j.get(), ct), nil
	})
	if err != nil {
		j.fatalf("waiting for condition %s: %v", ct, err)
	}
	return j.job
}

// waitStatus waits until the status satisfies ok.
func (j *jt) waitStatus(what string, ok func(*batchv1.JobStatus) bool) *batchv1.Job {
	j.t.Helper()
	err := harness.Poll(j.ctx, 50*time.Millisecond, time.Until(deadline(j.ctx)), func(context.Context) (bool, error) {
		return ok(&j.get().Status), nil
	})
	if err != nil {
		j.fatalf("waiting for %s: %v", what, err)
	}
	return j.job
}

// waitFinalizersGone waits until no pod of the Job carries the tracking finalizer.
func (j *jt) waitFinalizersGone() {
	j.t.Helper()
	var left []string
	err := harness.Poll(j.ctx, 50*time.Millisecond, time.Until(deadline(j.ctx)), func(context.Context) (bool, error) {
		left = left[:0]
		for _, p := range j.pods() {
			if slices.Contains(p.Finalizers, trackingFinalizer) {
				left = append(left, p.Name)
			}
		}
		return len(left) == 0, nil
	})
	if err != nil {
		j.fatalf("pods still carrying the finalizer %v: %v", left, err)
	}
}

// expectCounts checks the counters of the status.
func (j *jt) expectCounts(active, succeeded, failed int32) {
	j.t.Helper()
	s := j.get().Status
	if s.Active != active || s.Succeeded != succeeded || s.Failed != failed {
		j.fatalf("status counts active=%d succeeded=%d failed=%d, want %d/%d/%d", s.Active, s.Succeeded, s.Failed, active, succeeded, failed)
	}
}

func (j *jt) update(mutate func(*batchv1.Job)) {
	j.t.Helper()
	for range 10 {
		job := j.get()
		mutate(job)
		_, err := j.client.BatchV1().Jobs(job.Namespace).Update(j.ctx, job, metav1.UpdateOptions{})
		if err == nil {
			return
		}
		j.t.Logf("updating job: %v", err)
		time.Sleep(100 * time.Millisecond)
	}
	j.fatalf("could not update the job")
}

func (j *jt) fatalf(format string, args ...any) {
	j.t.Helper()
	job, _ := j.client.BatchV1().Jobs(j.job.Namespace).Get(context.Background(), j.job.Name, metav1.GetOptions{})
	var b strings.Builder
	if job != nil {
		fmt.Fprintf(&b, "job status: %s\n", describeStatus(&job.Status))
	}
	pods, _ := harness.JobPods(context.Background(), j.client, j.job)
	for _, p := range pods {
		fmt.Fprintf(&b, "  pod %s phase=%s deleting=%v finalizers=%v\n", p.Name, p.Status.Phase, p.DeletionTimestamp != nil, p.Finalizers)
	}
	j.t.Fatalf(format+"\n%s", append(args, b.String())...)
}

func describeStatus(s *batchv1.JobStatus) string {
	var conds []string
	for _, c := range s.Conditions {
		conds = append(conds, fmt.Sprintf("%s=%s(%s)", c.Type, c.Status, c.Reason))
	}
	u := ""
	if s.UncountedTerminatedPods != nil {
		u = fmt.Sprintf(" uncounted=%d/%d", len(s.UncountedTerminatedPods.Succeeded), len(s.UncountedTerminatedPods.Failed))
	}
	return fmt.Sprintf("active=%d succeeded=%d failed=%d ready=%v terminating=%v completed=%q failedIndexes=%v%s conditions=%v",
		s.Active, s.Succeeded, s.Failed, deref(s.Ready), deref(s.Terminating), s.CompletedIndexes, derefStr(s.FailedIndexes), u, conds)
}

func deref(p *int32) any {
	if p == nil {
		return nil
	}
	return *p
}

func derefStr(p *string) any {
	if p == nil {
		return nil
	}
	return *p
}

func hasCondition(job *batchv1.Job, ct batchv1.JobConditionType) bool {
	for _, c := range job.Status.Conditions {
		if c.Type == ct && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

func conditionReason(job *batchv1.Job, ct batchv1.JobConditionType) string {
	for _, c := range job.Status.Conditions {
		if c.Type == ct && c.Status == corev1.ConditionTrue {
			return c.Reason
		}
	}
	return ""
}

func deadline(ctx context.Context) time.Time {
	d, ok := ctx.Deadline()
	if !ok {
		return time.Now().Add(time.Minute)
	}
	return d
}

// leaseHolder is who holds the Lease `name` in the default namespace ("" when
// nobody does or it cannot be read).
func leaseHolder(ctx context.Context, name string) string {
	return harness.LeaseHolder(ctx, e.client, "default", name)
}

// renderedObject renders the kustomization deploy/<dir...> and decodes its
// object of kind and name into out; false when it has none.
func renderedObject(t *testing.T, kind, name string, out any, dir ...string) bool {
	t.Helper()
	objs, err := harness.RenderKustomize(harness.DeployDir(dir...))
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if o.GetKind() == kind && o.GetName() == name {
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, out); err != nil {
				t.Fatal(err)
			}
			return true
		}
	}
	return false
}

// startShimReplica starts one shim with these options, fails the test if it
// does not start, and kills it when the test ends.
func startShimReplica(t *testing.T, opts harness.ShimOptions) *harness.Shim {
	t.Helper()
	s, err := harness.NewShim(opts)
	if err != nil {
		t.Fatal(err)
	}
	s.RequireStarted(t)
	t.Cleanup(s.Kill)
	return s
}
