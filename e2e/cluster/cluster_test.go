package cluster

import (
	"context"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

const shimName = "job-decider.dev/shim"

func testJob(name string) *batchv1.Job {
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: batchv1.JobSpec{
			ManagedBy:   ptr.To(shimName),
			Parallelism: ptr.To[int32](2),
			Completions: ptr.To[int32](2),
			Template: corev1.PodTemplateSpec{
				Spec: corev1.PodSpec{
					RestartPolicy: corev1.RestartPolicyNever,
					Containers:    []corev1.Container{{Name: "main", Image: "busybox"}},
				},
			},
		},
	}
}

// TestClusterServesJobsAndPods checks what the end-to-end tests rely on: the
// API answers, a Job managed by the shim is stored untouched, and Job status
// writes are validated the way the API server validates them for Jobs with
// an external manager.
func TestClusterServesJobsAndPods(t *testing.T) {
	start := time.Now()
	cfg, _ := StartCluster(t)
	t.Logf("cluster started in %s", time.Since(start).Round(time.Millisecond))
	client := kubernetes.NewForConfigOrDie(cfg)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	if _, err := client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{}); err != nil {
		t.Fatalf("listing pods: %v", err)
	}
	job, err := client.BatchV1().Jobs("default").Create(ctx, testJob("managed"), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating a Job managed by the shim: %v", err)
	}
	if got := ptr.Deref(job.Spec.ManagedBy, ""); got != shimName {
		t.Fatalf("spec.managedBy = %q, want %q", got, shimName)
	}
	if job.Spec.Selector == nil || job.Spec.Template.Labels["batch.kubernetes.io/controller-uid"] != string(job.UID) {
		t.Fatalf("the API server did not generate the selector: %+v", job.Spec.Selector)
	}

	// managedBy is immutable.
	changed := job.DeepCopy()
	changed.Spec.ManagedBy = ptr.To("example.com/other")
	if _, err := client.BatchV1().Jobs("default").Update(ctx, changed, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) {
		t.Fatalf("changing managedBy: got %v, want Invalid", err)
	}

	// A pod can be created (no ServiceAccount admission) and driven by
	// status writes alone.
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName: "managed-",
			Namespace:    "default",
			Labels:       job.Spec.Template.Labels,
			Finalizers:   []string{"batch.kubernetes.io/job-tracking"},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "batch/v1", Kind: "Job", Name: job.Name, UID: job.UID,
				Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
			}},
		},
		Spec: job.Spec.Template.Spec,
	}
	pod, err = client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating a pod: %v", err)
	}
	pod.Status = corev1.PodStatus{
		Phase: corev1.PodFailed,
		ContainerStatuses: []corev1.ContainerStatus{{
			Name:  "main",
			Image: "busybox",
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 42, Reason: "Error"}},
		}},
	}
	pod, err = client.CoreV1().Pods("default").UpdateStatus(ctx, pod, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("writing pod status: %v", err)
	}
	if got := pod.Status.ContainerStatuses[0].State.Terminated.ExitCode; got != 42 {
		t.Fatalf("exit code = %d, want 42", got)
	}

	now := metav1.Now()
	write := func(mutate func(*batchv1.JobStatus)) error {
		cur, err := client.BatchV1().Jobs("default").Get(ctx, job.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("reading the Job: %v", err)
		}
		mutate(&cur.Status)
		_, err = client.BatchV1().Jobs("default").UpdateStatus(ctx, cur, metav1.UpdateOptions{})
		return err
	}
	// A running status is accepted.
	if err := write(func(s *batchv1.JobStatus) {
		s.StartTime = &now
		s.Active = 1
		s.Ready = ptr.To[int32](0)
		s.Terminating = ptr.To[int32](0)
		s.UncountedTerminatedPods = &batchv1.UncountedTerminatedPods{Failed: []types.UID{pod.UID}}
	}); err != nil {
		t.Fatalf("writing a running status: %v", err)
	}
	// completionTime without the Complete condition is rejected.
	if err := write(func(s *batchv1.JobStatus) { s.CompletionTime = &now }); !apierrors.IsInvalid(err) {
		t.Fatalf("completionTime without Complete: got %v, want Invalid", err)
	}
	// Failed without FailureTarget first is rejected for an externally managed Job.
	err = write(func(s *batchv1.JobStatus) {
		s.Active = 0
		s.Conditions = append(s.Conditions, batchv1.JobCondition{
			Type: batchv1.JobFailed, Status: corev1.ConditionTrue, Reason: "BackoffLimitExceeded",
			LastProbeTime: now, LastTransitionTime: now,
		})
	})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "FailureTarget") {
		t.Fatalf("Failed without FailureTarget: got %v, want Invalid mentioning FailureTarget", err)
	}
	// The two-step failure the service plans is accepted.
	if err := write(func(s *batchv1.JobStatus) {
		s.Conditions = append(s.Conditions, batchv1.JobCondition{
			Type: batchv1.JobFailureTarget, Status: corev1.ConditionTrue, Reason: "BackoffLimitExceeded",
			LastProbeTime: now, LastTransitionTime: now,
		})
	}); err != nil {
		t.Fatalf("adding FailureTarget: %v", err)
	}
	if err := write(func(s *batchv1.JobStatus) {
		s.Active = 0
		s.Failed = 1
		s.UncountedTerminatedPods = &batchv1.UncountedTerminatedPods{}
		s.Conditions = append(s.Conditions, batchv1.JobCondition{
			Type: batchv1.JobFailed, Status: corev1.ConditionTrue, Reason: "BackoffLimitExceeded",
			LastProbeTime: now, LastTransitionTime: now,
		})
	}); err != nil {
		t.Fatalf("adding Failed after FailureTarget: %v", err)
	}
	// A finished Job's status cannot go back.
	if err := write(func(s *batchv1.JobStatus) { s.Failed = 0 }); !apierrors.IsInvalid(err) {
		t.Fatalf("decreasing failed on a finished Job: got %v, want Invalid", err)
	}
}
