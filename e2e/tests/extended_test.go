package tests

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"job-decider.dev/e2e/harness"
)

// The extended failure policy (the job-decider.dev/failure-policy
// annotation) through the shim, against the real API server.

const (
	failurePolicyAnnotation  = "job-decider.dev/failure-policy"
	failedNodesAnnotation    = "job-decider.dev/failed-nodes"
	pendingTimeoutCondition  = corev1.PodConditionType("job-decider.dev/PendingTimeout")
	readyTimeoutCondition    = corev1.PodConditionType("job-decider.dev/ReadyTimeout")
	attemptDeadlineCondition = corev1.PodConditionType("job-decider.dev/AttemptDeadlineExceeded")
)

// withPolicy gives the Job an extended failure policy document; doc is the
// part after apiVersion and kind.
func withPolicy(doc string) func(*batchv1.Job) {
	return func(job *batchv1.Job) {
		if job.Annotations == nil {
			job.Annotations = map[string]string{}
		}
		job.Annotations[failurePolicyAnnotation] = "apiVersion: job-decider.dev/v1alpha1\nkind: FailurePolicy\n" + strings.TrimLeft(doc, "\n")
	}
}

// podHistory records every version of every pod of a namespace the watch
// shows, so that a state a pod passes through quickly (Failed and being
// deleted, before its finalizer goes) can be checked afterwards.
type podHistory struct {
	mu       sync.Mutex
	versions map[string][]corev1.Pod
}

func recordPods(t *testing.T, ctx context.Context, ns string) *podHistory {
	t.Helper()
	w, err := e.client.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("watching pods: %v", err)
	}
	h := &podHistory{versions: map[string][]corev1.Pod{}}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			if pod, ok := ev.Object.(*corev1.Pod); ok {
				h.mu.Lock()
				h.versions[pod.Name] = append(h.versions[pod.Name], *pod.DeepCopy())
				h.mu.Unlock()
			}
		}
	}()
	t.Cleanup(func() {
		w.Stop()
		<-done
	})
	return h
}

// find is the first recorded version of the pod that satisfies ok.
func (h *podHistory) find(name string, ok func(*corev1.Pod) bool) *corev1.Pod {
	h.mu.Lock()
	defer h.mu.Unlock()
	for i := range h.versions[name] {
		if ok(&h.versions[name][i]) {
			p := h.versions[name][i]
			return &p
		}
	}
	return nil
}

func podCondition(pod *corev1.Pod, ct corev1.PodConditionType) *corev1.PodCondition {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == ct {
			return &pod.Status.Conditions[i]
		}
	}
	return nil
}

// waitGone waits until the pod no longer exists.
func (j *jt) waitGone(name string) {
	j.t.Helper()
	err := harness.Poll(j.ctx, 50*time.Millisecond, time.Until(deadline(j.ctx)), func(ctx context.Context) (bool, error) {
		_, err := j.client.CoreV1().Pods(j.job.Namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return true, nil
		}
		return false, nil
	})
	if err != nil {
		j.fatalf("pod %s still exists: %v", name, err)
	}
}

// waitReplacement waits for one active pod other than those named and returns it.
func (j *jt) waitReplacement(old ...string) corev1.Pod {
	j.t.Helper()
	var got corev1.Pod
	err := harness.Poll(j.ctx, 50*time.Millisecond, time.Until(deadline(j.ctx)), func(context.Context) (bool, error) {
		for _, p := range harness.ActivePods(j.pods()) {
			if !slices.Contains(old, p.Name) {
				got = p
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		j.fatalf("no replacement for %v: %v", old, err)
	}
	return got
}

// finishedAt is when the pod's first container terminated, as written.
func (j *jt) finishedAt(name string) time.Time {
	j.t.Helper()
	pod, err := j.client.CoreV1().Pods(j.job.Namespace).Get(j.ctx, name, metav1.GetOptions{})
	if err != nil {
		j.fatalf("getting pod %s: %v", name, err)
	}
	for _, s := range pod.Status.ContainerStatuses {
		if s.State.Terminated != nil {
			return s.State.Terminated.FinishedAt.Time
		}
	}
	j.fatalf("pod %s has no terminated container", name)
	return time.Time{}
}

// notBefore fails unless the pod was created at least d after t0 (whole
// seconds both: the API keeps times at second precision).
func notBefore(t *testing.T, what string, pod corev1.Pod, t0 time.Time, d time.Duration) {
	t.Helper()
	if created := pod.CreationTimestamp.Time; created.Before(t0.Add(d)) {
		t.Errorf("%s %s created at %s, %s after %s; want at least %s", what, pod.Name, created.Format(time.TimeOnly),
			created.Sub(t0), t0.Format(time.TimeOnly), d)
	}
}

// Feature 1: a pod stuck Pending (ImagePullBackOff) past pendingTimeout is
// failed by the shim as the pod GC fails pods: status Failed with the
// job-decider.dev/PendingTimeout condition, then deleted; the Job counts it
// as the action says. The shim runs with nothing but the RBAC of deploy/,
// so pods/status patch must be in it.
func TestExtendedPendingTimeout(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const name = "job-decider.dev/extended-rbac"
	shim := startShimWithDeployRBAC(t, ctx, name, "extended")

	t.Run("Count", func(t *testing.T) {
		ns := newNamespace(t)
		withKubelet(t, ns)
		history := recordPods(t, ctx, ns)
		j := start(t, newJob(ns, "stuck", func(job *batchv1.Job) {
			job.Spec.ManagedBy = ptr.To(name)
			job.Spec.BackoffLimit = ptr.To[int32](1)
		}, withPolicy(`
pendingTimeout:
  seconds: 2
  action: Count
backoff:
  baseSeconds: 1
`)), 2*time.Minute)
		first := j.waitActive(1)[0]
		j.finish([]corev1.Pod{first}, harness.Waiting("ImagePullBackOff"))
		j.waitStatus("the stuck pod counted as failed", func(s *batchv1.JobStatus) bool { return s.Failed == 1 })
		failed := history.find(first.Name, func(p *corev1.Pod) bool {
			c := podCondition(p, pendingTimeoutCondition)
			return p.Status.Phase == corev1.PodFailed && p.DeletionTimestamp != nil && c != nil && c.Status == corev1.ConditionTrue
		})
		if failed == nil {
			j.fatalf("pod %s was never seen Failed with %s and being deleted", first.Name, pendingTimeoutCondition)
		}
		c := podCondition(failed, pendingTimeoutCondition)
		if c.Reason != "ImagePullBackOff" || c.Message == "" {
			t.Errorf("condition %+v, want reason ImagePullBackOff and a message", c)
		}
		// Timed from the pod's creation (it was never scheduled): not before the timeout.
		if limit := first.CreationTimestamp.Add(2 * time.Second); c.LastTransitionTime.Time.Before(limit) {
			t.Errorf("failed at %s, before creation + 2s (%s)", c.LastTransitionTime.Format(time.TimeOnly), limit.Format(time.TimeOnly))
		}
		// Its container statuses are the kubelet's still.
		if len(failed.Status.ContainerStatuses) != 1 || failed.Status.ContainerStatuses[0].State.Waiting == nil {
			t.Errorf("container statuses %+v", failed.Status.ContainerStatuses)
		}
		j.waitGone(first.Name)
		second := j.waitReplacement(first.Name)
		j.finish([]corev1.Pod{second}, harness.Succeeded())
		j.waitCondition(batchv1.JobComplete)
		j.expectCounts(0, 1, 1)
		j.waitFinalizersGone()
	})

	t.Run("FailJob", func(t *testing.T) {
		ns := newNamespace(t)
		withKubelet(t, ns)
		j := start(t, newJob(ns, "stuck", func(job *batchv1.Job) {
			job.Spec.ManagedBy = ptr.To(name)
		}, withPolicy(`
pendingTimeout:
  seconds: 1
  reasons: [ErrImagePull]
  action: FailJob
`)), 2*time.Minute)
		first := j.waitActive(1)[0]
		j.finish([]corev1.Pod{first}, harness.Waiting("ErrImagePull"))
		job := j.waitCondition(batchv1.JobFailed)
		if got, want := conditionReason(job, batchv1.JobFailed), "PodFailurePolicy_PendingTimeout"; got != want {
			j.fatalf("Failed reason %q, want %q", got, want)
		}
		if got := conditionReason(job, batchv1.JobFailureTarget); got != "PodFailurePolicy_PendingTimeout" {
			j.fatalf("FailureTarget reason %q", got)
		}
		j.waitStatus("the stuck pod counted", func(s *batchv1.JobStatus) bool { return s.Failed == 1 && s.Active == 0 })
		j.waitFinalizersGone()
	})

	if log := shim.Process().Tail(400); strings.Contains(log, "forbidden") {
		t.Errorf("the shim was refused something:\n%s", log)
	}
}

// timedOutBy waits until the pod was seen Failed, being deleted, with the
// condition ct True, and returns that version.
func timedOutBy(j *jt, history *podHistory, name string, ct corev1.PodConditionType) *corev1.Pod {
	j.t.Helper()
	var failed *corev1.Pod
	err := harness.Poll(j.ctx, 50*time.Millisecond, time.Until(deadline(j.ctx)), func(context.Context) (bool, error) {
		failed = history.find(name, func(p *corev1.Pod) bool {
			c := podCondition(p, ct)
			return p.Status.Phase == corev1.PodFailed && p.DeletionTimestamp != nil && c != nil && c.Status == corev1.ConditionTrue
		})
		return failed != nil, nil
	})
	if err != nil {
		j.fatalf("pod %s was never seen Failed with %s and being deleted: %v", name, ct, err)
	}
	return failed
}

// Features 9 and 10: a running pod past attemptDeadline, and a running pod
// not Ready within readyTimeout of its start, are failed by the shim as the
// pending timeout fails pods (status Failed with the feature's condition,
// then deleted); the Job counts each by the document's action, and the
// replacement completes it (Count) or the Job fails with the implicit rule's
// reason (FailJob).
func TestExtendedAttemptDeadline(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const name = "job-decider.dev/extended-attempt"
	shim := startShimWithDeployRBAC(t, ctx, name, "extended-attempt")

	t.Run("Count", func(t *testing.T) {
		ns := newNamespace(t)
		withKubelet(t, ns)
		history := recordPods(t, ctx, ns)
		j := start(t, newJob(ns, "hung", func(job *batchv1.Job) {
			job.Spec.ManagedBy = ptr.To(name)
			job.Spec.BackoffLimit = ptr.To[int32](1)
		}, withPolicy(`
attemptDeadline:
  seconds: 2
  action: Count
backoff:
  baseSeconds: 1
`)), 2*time.Minute)
		first := j.waitActive(1)[0]
		j.finish([]corev1.Pod{first}, harness.Running(true))
		failed := timedOutBy(j, history, first.Name, attemptDeadlineCondition)
		c := podCondition(failed, attemptDeadlineCondition)
		if c.Reason != "DeadlineExceeded" || !strings.Contains(c.Message, "attemptDeadline") {
			t.Errorf("condition %+v, want reason DeadlineExceeded and a message naming attemptDeadline", c)
		}
		// Timed from the pod's start: not before the deadline.
		if failed.Status.StartTime == nil {
			j.fatalf("pod %s has no start time", first.Name)
		}
		if limit := failed.Status.StartTime.Add(2 * time.Second); c.LastTransitionTime.Time.Before(limit) {
			t.Errorf("failed at %s, before start + 2s (%s)", c.LastTransitionTime.Format(time.TimeOnly), limit.Format(time.TimeOnly))
		}
		j.waitStatus("the hung pod counted as failed", func(s *batchv1.JobStatus) bool { return s.Failed == 1 })
		j.waitGone(first.Name)
		second := j.waitReplacement(first.Name)
		j.finish([]corev1.Pod{second}, harness.Succeeded())
		j.waitCondition(batchv1.JobComplete)
		j.expectCounts(0, 1, 1)
		j.waitFinalizersGone()
	})

	t.Run("FailJob", func(t *testing.T) {
		ns := newNamespace(t)
		withKubelet(t, ns)
		j := start(t, newJob(ns, "hung", func(job *batchv1.Job) {
			job.Spec.ManagedBy = ptr.To(name)
		}, withPolicy(`
attemptDeadline:
  seconds: 1
  action: FailJob
`)), 2*time.Minute)
		first := j.waitActive(1)[0]
		j.finish([]corev1.Pod{first}, harness.Running(true))
		job := j.waitCondition(batchv1.JobFailed)
		if got, want := conditionReason(job, batchv1.JobFailed), "PodFailurePolicy_AttemptDeadline"; got != want {
			j.fatalf("Failed reason %q, want %q", got, want)
		}
		j.waitStatus("the hung pod counted", func(s *batchv1.JobStatus) bool { return s.Failed == 1 && s.Active == 0 })
		j.waitFinalizersGone()
	})

	if log := shim.Process().Tail(400); strings.Contains(log, "forbidden") {
		t.Errorf("the shim was refused something:\n%s", log)
	}
}

func TestExtendedReadyTimeout(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const name = "job-decider.dev/extended-ready"
	shim := startShimWithDeployRBAC(t, ctx, name, "extended-ready")

	ns := newNamespace(t)
	withKubelet(t, ns)
	history := recordPods(t, ctx, ns)
	j := start(t, newJob(ns, "unready", func(job *batchv1.Job) {
		job.Spec.ManagedBy = ptr.To(name)
		job.Spec.BackoffLimit = ptr.To[int32](1)
	}, withPolicy(`
readyTimeout:
  seconds: 2
  action: Count
backoff:
  baseSeconds: 1
`)), 2*time.Minute)
	first := j.waitActive(1)[0]
	j.finish([]corev1.Pod{first}, harness.Running(false))
	failed := timedOutBy(j, history, first.Name, readyTimeoutCondition)
	c := podCondition(failed, readyTimeoutCondition)
	// The harness's Ready condition has no reason: the condition says NotReady.
	if c.Reason != "NotReady" || !strings.Contains(c.Message, "readyTimeout") {
		t.Errorf("condition %+v, want reason NotReady and a message naming readyTimeout", c)
	}
	if failed.Status.StartTime == nil {
		j.fatalf("pod %s has no start time", first.Name)
	}
	if limit := failed.Status.StartTime.Add(2 * time.Second); c.LastTransitionTime.Time.Before(limit) {
		t.Errorf("failed at %s, before start + 2s (%s)", c.LastTransitionTime.Format(time.TimeOnly), limit.Format(time.TimeOnly))
	}
	j.waitStatus("the unready pod counted as failed", func(s *batchv1.JobStatus) bool { return s.Failed == 1 })
	j.waitGone(first.Name)
	// The replacement becomes Ready at once: it is never failed, and completes the Job.
	second := j.waitReplacement(first.Name)
	j.finish([]corev1.Pod{second}, harness.Running(true))
	time.Sleep(3 * time.Second)
	if p := history.find(second.Name, func(p *corev1.Pod) bool { return podCondition(p, readyTimeoutCondition) != nil }); p != nil {
		t.Errorf("the Ready replacement %s was failed for its ready timeout", second.Name)
	}
	j.finish([]corev1.Pod{second}, harness.Succeeded())
	j.waitCondition(batchv1.JobComplete)
	j.expectCounts(0, 1, 1)
	j.waitFinalizersGone()

	if log := shim.Process().Tail(400); strings.Contains(log, "forbidden") {
		t.Errorf("the shim was refused something:\n%s", log)
	}
}

// Features 3, 5 and 6: a named FailJob rule matching a signal and a
// termination reason (both must hold) fails the Job with the reason
// PodFailurePolicy_<name> (KEP-4443); the same exit code with another
// reason does not match and is counted.
func TestExtendedNamedRuleFailJob(t *testing.T) {
	t.Parallel()
	const doc = `
rules:
- name: oom
  action: FailJob
  onExitCodes:
    containerName: main
    operator: In
    signals: [SIGKILL]
  onContainerReasons:
    values: [OOMKilled]
`
	ns := newNamespace(t)
	withKubelet(t, ns)
	oom := start(t, newJob(ns, "oom", func(job *batchv1.Job) { job.Spec.BackoffLimit = ptr.To[int32](6) }, withPolicy(doc)), 2*time.Minute)
	killed := start(t, newJob(ns, "killed", func(job *batchv1.Job) { job.Spec.BackoffLimit = ptr.To[int32](0) }, withPolicy(doc)), 2*time.Minute)

	oom.finish(oom.waitActive(1), harness.PodOutcome{Phase: corev1.PodFailed, ExitCode: 137, TerminationReason: "OOMKilled"})
	killed.finish(killed.waitActive(1), harness.Failed(137)) // reason Error

	job := oom.waitCondition(batchv1.JobFailed)
	if got := conditionReason(job, batchv1.JobFailed); got != "PodFailurePolicy_oom" {
		oom.fatalf("Failed reason %q, want PodFailurePolicy_oom", got)
	}
	for _, c := range job.Status.Conditions {
		if c.Type == batchv1.JobFailureTarget && (c.Reason != "PodFailurePolicy_oom" || !strings.Contains(c.Message, "oom")) {
			t.Errorf("FailureTarget %s: %s, want the reason and the rule's name in the message", c.Reason, c.Message)
		}
	}
	if !hasCondition(job, batchv1.JobFailureTarget) {
		oom.fatalf("no FailureTarget before Failed")
	}
	oom.waitStatus("the pod counted", func(s *batchv1.JobStatus) bool { return s.Failed == 1 })

	job = killed.waitCondition(batchv1.JobFailed)
	if got := conditionReason(job, batchv1.JobFailed); got != batchv1.JobReasonBackoffLimitExceeded {
		killed.fatalf("Failed reason %q, want %q (137 with reason Error matches no rule)", got, batchv1.JobReasonBackoffLimitExceeded)
	}
}

// Feature 9: failureMessage Detailed. Two Jobs with the same rule (OOMKilled
// counted, backoffLimit 0) lose their pod to an OOM kill: both fail with
// upstream's reason, BackoffLimitExceeded; the one whose document says
// Detailed has a FailureTarget and a Failed message naming the pod, the
// container, the exit code and reason, the rule and the limit, after
// upstream's words; the other has upstream's message alone.
func TestExtendedFailureMessageDetailed(t *testing.T) {
	t.Parallel()
	const rules = `
rules:
- name: oom
  action: Count
  onContainerReasons:
    values: [OOMKilled]
`
	ns := newNamespace(t)
	withKubelet(t, ns)
	limit := func(job *batchv1.Job) { job.Spec.BackoffLimit = ptr.To[int32](0) }
	detailed := start(t, newJob(ns, "detailed", limit, withPolicy("failureMessage: Detailed\n"+strings.TrimLeft(rules, "\n"))), 2*time.Minute)
	upstream := start(t, newJob(ns, "upstream", limit, withPolicy(rules)), 2*time.Minute)
	oom := harness.PodOutcome{Phase: corev1.PodFailed, ExitCode: 137, TerminationReason: "OOMKilled"}
	pods := detailed.waitActive(1)
	detailed.finish(pods, oom)
	upstream.finish(upstream.waitActive(1), oom)

	const backoff = "Job has reached the specified backoff limit"
	want := fmt.Sprintf("%s (pod %s: container main exit code 137 reason OOMKilled; rule rules[0] \"oom\" action Count; limit backoffLimit=0)", backoff, pods[0].Name)
	job := detailed.waitCondition(batchv1.JobFailed)
	for _, ct := range []batchv1.JobConditionType{batchv1.JobFailureTarget, batchv1.JobFailed} {
		c := condition(job, ct)
		if c == nil || c.Reason != batchv1.JobReasonBackoffLimitExceeded || c.Message != want {
			detailed.fatalf("%s: %+v\nwant reason %s, message %q", ct, c, batchv1.JobReasonBackoffLimitExceeded, want)
		}
	}
	job = upstream.waitCondition(batchv1.JobFailed)
	if c := condition(job, batchv1.JobFailed); c == nil || c.Reason != batchv1.JobReasonBackoffLimitExceeded || c.Message != backoff {
		upstream.fatalf("Failed: %+v, want upstream's message %q", c, backoff)
	}
}

// condition is the Job's True condition of this type, or nil.
func condition(job *batchv1.Job, ct batchv1.JobConditionType) *batchv1.JobCondition {
	for i := range job.Status.Conditions {
		if c := &job.Status.Conditions[i]; c.Type == ct && c.Status == corev1.ConditionTrue {
			return c
		}
	}
	return nil
}

// Feature 2: backoff settings. Two Jobs fail their first pod at the same
// moment: the one with baseSeconds 1 gets its replacement after 1 s (plus
// jitter) and before the upstream Job, whose replacement waits upstream's
// 10 s; the tuned Job's second failure waits base·factor = 4 s (upstream's
// factor would give 2). Only lower bounds and the order of creation
// timestamps are asserted.
func TestExtendedBackoffSettings(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	withKubelet(t, ns)
	tuned := start(t, newJob(ns, "tuned", func(job *batchv1.Job) { job.Spec.BackoffLimit = ptr.To[int32](3) }, withPolicy(`
backoff:
  baseSeconds: 1
  factor: 4
  maxSeconds: 60
  jitterPercent: 50
`)), 3*time.Minute)
	upstream := start(t, newJob(ns, "upstream", func(job *batchv1.Job) { job.Spec.BackoffLimit = ptr.To[int32](3) }), 3*time.Minute)

	t1, u1 := tuned.waitActive(1)[0], upstream.waitActive(1)[0]
	tuned.finish([]corev1.Pod{t1}, harness.Failed(1))
	upstream.finish([]corev1.Pod{u1}, harness.Failed(1))
	tunedFail1, upstreamFail1 := tuned.finishedAt(t1.Name), upstream.finishedAt(u1.Name)

	t2 := tuned.waitReplacement(t1.Name)
	notBefore(t, "tuned replacement", t2, tunedFail1, time.Second)
	u2 := upstream.waitReplacement(u1.Name)
	notBefore(t, "upstream replacement", u2, upstreamFail1, 10*time.Second)
	if !t2.CreationTimestamp.Before(&u2.CreationTimestamp) {
		t.Errorf("tuned replacement created at %s, not before the upstream one (%s)", t2.CreationTimestamp.Format(time.TimeOnly), u2.CreationTimestamp.Format(time.TimeOnly))
	}

	tuned.finish([]corev1.Pod{t2}, harness.Failed(1))
	tunedFail2 := tuned.finishedAt(t2.Name)
	t3 := tuned.waitReplacement(t1.Name, t2.Name)
	notBefore(t, "tuned second replacement", t3, tunedFail2, 4*time.Second)

	tuned.finish([]corev1.Pod{t3}, harness.Succeeded())
	upstream.finish([]corev1.Pod{u2}, harness.Succeeded())
	tuned.waitCondition(batchv1.JobComplete)
	tuned.expectCounts(0, 1, 2)
	upstream.waitCondition(batchv1.JobComplete)
	upstream.expectCounts(0, 1, 1)
}

// Feature 8: node avoidance. A replacement pod carries the nodes where its
// Job's pods failed, in the failed-nodes annotation and as a matchFields
// requirement per node in every required node selector term; the API
// server accepts the pod (one value per field requirement).
func TestExtendedNodeAvoidance(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	withKubelet(t, ns)
	zone := func(z string) corev1.NodeSelectorTerm {
		return corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{z}}}}
	}
	j := start(t, newJob(ns, "avoid", func(job *batchv1.Job) {
		job.Spec.BackoffLimit = ptr.To[int32](3)
		job.Spec.Template.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{zone("a"), zone("b")}},
		}}
	}, withPolicy(`
backoff:
  baseSeconds: 1
nodeAvoidance:
  mode: Required
`)), 2*time.Minute)

	var old []string
	for round, nodes := range [][]string{{"node-a"}, {"node-a", "node-b"}} {
		pod := j.waitActive(1)[0]
		old = append(old, pod.Name)
		// The scheduler's part: bind the pod to the next node.
		node := nodes[len(nodes)-1]
		if err := j.client.CoreV1().Pods(ns).Bind(j.ctx, &corev1.Binding{
			ObjectMeta: metav1.ObjectMeta{Name: pod.Name},
			Target:     corev1.ObjectReference{Kind: "Node", Name: node},
		}, metav1.CreateOptions{}); err != nil {
			j.fatalf("binding %s to %s: %v", pod.Name, node, err)
		}
		j.finish([]corev1.Pod{pod}, harness.Failed(1))
		next := j.waitReplacement(old...)
		if got, want := next.Annotations[failedNodesAnnotation], strings.Join(nodes, ","); got != want {
			t.Errorf("round %d: %s = %q, want %q", round, failedNodesAnnotation, got, want)
		}
		terms := next.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
		if len(terms) != 2 {
			j.fatalf("round %d: terms %+v", round, terms)
		}
		for i, term := range terms {
			var got []string
			for _, r := range term.MatchFields {
				got = append(got, fmt.Sprintf("%s %s %v", r.Key, r.Operator, r.Values))
			}
			var want []string
			for _, n := range nodes {
				want = append(want, fmt.Sprintf("metadata.name NotIn [%s]", n))
			}
			if !slices.Equal(got, want) || len(term.MatchExpressions) != 1 {
				t.Errorf("round %d term %d: matchFields %v, want %v (and its zone expression)", round, i, got, want)
			}
		}
	}
	j.finish(j.waitActive(1), harness.Succeeded())
	j.waitCondition(batchv1.JobComplete)
	j.expectCounts(0, 1, 2)
}

// Feature 7: a per-rule retry limit. The first OOM is counted and the
// replacement carries the rule's count; the second uses up maxRetries 1 and
// fails the Job under the rule's name.
func TestExtendedRetryLimit(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	withKubelet(t, ns)
	j := start(t, newJob(ns, "limited", func(job *batchv1.Job) { job.Spec.BackoffLimit = ptr.To[int32](6) }, withPolicy(`
rules:
- name: oom
  action: Count
  onContainerReasons:
    values: [OOMKilled]
  maxRetries: 1
  whenRetriesExhausted: FailJob
backoff:
  baseSeconds: 1
`)), 2*time.Minute)
	oom := harness.PodOutcome{Phase: corev1.PodFailed, ExitCode: 137, TerminationReason: "OOMKilled"}
	first := j.waitActive(1)[0]
	j.finish([]corev1.Pod{first}, oom)
	second := j.waitReplacement(first.Name)
	if got := second.Annotations["job-decider.dev/rule-match-counts"]; got != "oom=1" {
		t.Errorf("replacement's rule-match-counts %q, want oom=1", got)
	}
	if hasCondition(j.get(), batchv1.JobFailed) {
		j.fatalf("the first match failed the Job")
	}
	j.finish([]corev1.Pod{second}, oom)
	job := j.waitCondition(batchv1.JobFailed)
	if got := conditionReason(job, batchv1.JobFailed); got != "PodFailurePolicy_oom" {
		j.fatalf("Failed reason %q, want PodFailurePolicy_oom", got)
	}
	for _, c := range job.Status.Conditions {
		if c.Type == batchv1.JobFailureTarget && !strings.Contains(c.Message, "used up") {
			t.Errorf("FailureTarget message %q does not say the retries are used up", c.Message)
		}
	}
	j.waitStatus("both pods counted", func(s *batchv1.JobStatus) bool { return s.Failed == 2 && s.Active == 0 })
}

// Feature 4: afterIgnoredFailure Immediate. Two Jobs ignore disruptions, one
// by its document with Immediate, one by spec.podFailurePolicy (upstream's
// way, whose ignored failures still grow the backoff: kubernetes#130881).
// Disrupted at the same moment, the first is replaced before the second,
// whose replacement waits upstream's 10 s.
func TestExtendedIgnoreWithoutBackoff(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	withKubelet(t, ns)
	immediate := start(t, newJob(ns, "immediate", func(job *batchv1.Job) { job.Spec.BackoffLimit = ptr.To[int32](0) }, withPolicy(`
rules:
- action: Ignore
  onPodConditions:
  - type: DisruptionTarget
backoff:
  afterIgnoredFailure: Immediate
`)), 2*time.Minute)
	upstream := start(t, newJob(ns, "upstream", func(job *batchv1.Job) {
		job.Spec.BackoffLimit = ptr.To[int32](0)
		job.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{onDisruption(batchv1.PodFailurePolicyActionIgnore)}}
	}), 2*time.Minute)
	i1, u1 := immediate.waitActive(1)[0], upstream.waitActive(1)[0]
	immediate.finish([]corev1.Pod{i1}, harness.Disrupted())
	upstream.finish([]corev1.Pod{u1}, harness.Disrupted())
	upstreamFail := upstream.finishedAt(u1.Name)
	i2 := immediate.waitReplacement(i1.Name)
	u2 := upstream.waitReplacement(u1.Name)
	notBefore(t, "upstream replacement", u2, upstreamFail, 10*time.Second)
	if !i2.CreationTimestamp.Before(&u2.CreationTimestamp) {
		t.Errorf("replacement after Immediate created at %s, not before the upstream one (%s)", i2.CreationTimestamp.Format(time.TimeOnly), u2.CreationTimestamp.Format(time.TimeOnly))
	}
	for _, j := range []*jt{immediate, upstream} {
		j.finish(harness.ActivePods(j.pods()), harness.Succeeded())
		j.waitCondition(batchv1.JobComplete)
		j.expectCounts(0, 1, 0)
	}
}
