package harness

import (
	"context"
	"fmt"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
)

// There is no kubelet: these helpers move pods through their lifecycle by
// writing pod status, as upstream's Job integration tests do.

// PodOutcome is what the "kubelet" reports for a pod.
type PodOutcome struct {
	Phase corev1.PodPhase
	// ExitCode of the first container, for terminated pods.
	ExitCode int32
	// Conditions are added to the pod's conditions (e.g. DisruptionTarget).
	Conditions []corev1.PodCondition
	// Ready sets the Ready condition of a running pod.
	Ready bool
	// WaitingReason is the containers' waiting reason in a pending pod
	// (default ContainerCreating), e.g. ImagePullBackOff.
	WaitingReason string
	// TerminationReason is the first container's termination reason in a
	// failed pod (default Error), e.g. OOMKilled.
	TerminationReason string
}

// Running, Succeeded and Failed are the common outcomes.
func Running(ready bool) PodOutcome { return PodOutcome{Phase: corev1.PodRunning, Ready: ready} }

// Succeeded is a pod whose containers exited with 0.
func Succeeded() PodOutcome { return PodOutcome{Phase: corev1.PodSucceeded} }

// Failed is a pod whose first container exited with code.
func Failed(code int32) PodOutcome { return PodOutcome{Phase: corev1.PodFailed, ExitCode: code} }

// Waiting is a pending pod whose containers wait for reason (e.g. ImagePullBackOff).
func Waiting(reason string) PodOutcome {
	return PodOutcome{Phase: corev1.PodPending, WaitingReason: reason}
}

// Disrupted is a failed pod with the DisruptionTarget condition (as after a preemption or eviction).
func Disrupted() PodOutcome {
	return PodOutcome{Phase: corev1.PodFailed, ExitCode: 137, Conditions: []corev1.PodCondition{{
		Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: "PreemptionByScheduler",
	}}}
}

// SetPodStatus writes the outcome to a pod's status, retrying on conflicts.
func SetPodStatus(ctx context.Context, client kubernetes.Interface, namespace, name string, o PodOutcome) error {
	return retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		pod, err := client.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		applyOutcome(pod, o)
		_, err = client.CoreV1().Pods(namespace).UpdateStatus(ctx, pod, metav1.UpdateOptions{})
		return err
	})
}

func applyOutcome(pod *corev1.Pod, o PodOutcome) {
	now := metav1.Now()
	pod.Status.Phase = o.Phase
	if pod.Status.StartTime == nil {
		pod.Status.StartTime = &now
	}
	var statuses []corev1.ContainerStatus
	for i, c := range pod.Spec.Containers {
		cs := corev1.ContainerStatus{Name: c.Name, Image: c.Image, ImageID: "docker.io/library/" + c.Image}
		switch o.Phase {
		case corev1.PodRunning:
			cs.Ready = o.Ready
			cs.Started = &o.Ready
			cs.State.Running = &corev1.ContainerStateRunning{StartedAt: now}
		case corev1.PodSucceeded, corev1.PodFailed:
			code := int32(0)
			reason := "Completed"
			if o.Phase == corev1.PodFailed && i == 0 {
				code, reason = o.ExitCode, "Error"
				if o.TerminationReason != "" {
					reason = o.TerminationReason
				}
			}
			cs.State.Terminated = &corev1.ContainerStateTerminated{ExitCode: code, Reason: reason, StartedAt: now, FinishedAt: now}
		default:
			reason := "ContainerCreating"
			if o.WaitingReason != "" {
				reason = o.WaitingReason
			}
			cs.State.Waiting = &corev1.ContainerStateWaiting{Reason: reason}
		}
		statuses = append(statuses, cs)
	}
	pod.Status.ContainerStatuses = statuses
	ready := corev1.ConditionFalse
	if o.Phase == corev1.PodRunning && o.Ready {
		ready = corev1.ConditionTrue
	}
	setCondition(pod, corev1.PodCondition{Type: corev1.PodReady, Status: ready, LastTransitionTime: now})
	for _, c := range o.Conditions {
		c.LastTransitionTime = now
		setCondition(pod, c)
	}
}

func setCondition(pod *corev1.Pod, c corev1.PodCondition) {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == c.Type {
			pod.Status.Conditions[i] = c
			return
		}
	}
	pod.Status.Conditions = append(pod.Status.Conditions, c)
}

// JobPods lists the pods the Job's selector matches.
func JobPods(ctx context.Context, client kubernetes.Interface, job *batchv1.Job) ([]corev1.Pod, error) {
	sel, err := metav1.LabelSelectorAsSelector(job.Spec.Selector)
	if err != nil {
		return nil, err
	}
	list, err := client.CoreV1().Pods(job.Namespace).List(ctx, metav1.ListOptions{LabelSelector: sel.String()})
	if err != nil {
		return nil, err
	}
	return list.Items, nil
}

// ActivePods are the pods neither terminal nor being deleted.
func ActivePods(pods []corev1.Pod) []corev1.Pod {
	var out []corev1.Pod
	for _, p := range pods {
		if p.DeletionTimestamp == nil && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
			out = append(out, p)
		}
	}
	return out
}

// Poll calls cond every interval until it returns true, an error, or timeout.
func Poll(ctx context.Context, interval, timeout time.Duration, cond func(context.Context) (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var lastErr error
	for {
		ok, err := cond(ctx)
		if err != nil && !apierrors.IsNotFound(err) && ctx.Err() == nil {
			return err
		}
		if ok {
			return nil
		}
		lastErr = err
		select {
		case <-ctx.Done():
			if lastErr != nil {
				return fmt.Errorf("timed out after %s: %w", timeout, lastErr)
			}
			return fmt.Errorf("timed out after %s", timeout)
		case <-time.After(interval):
		}
	}
}

// Selector returns a Job's selector as a labels.Selector.
func Selector(job *batchv1.Job) labels.Selector {
	sel, err := metav1.LabelSelectorAsSelector(job.Spec.Selector)
	if err != nil {
		return labels.Nothing()
	}
	return sel
}

// Kubelet plays the one part of a kubelet (and pod GC) the tests need in the
// background: a pod that is being deleted and has not finished is moved to
// Failed with exit code 137, as a killed container reports. It runs until
// ctx is done, polling the namespace.
func Kubelet(ctx context.Context, client kubernetes.Interface, namespace string) {
	for ctx.Err() == nil {
		pods, err := client.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{})
		if err == nil {
			for _, p := range pods.Items {
				if p.DeletionTimestamp != nil && p.Status.Phase != corev1.PodFailed && p.Status.Phase != corev1.PodSucceeded {
					_ = SetPodStatus(ctx, client, namespace, p.Name, Failed(137))
				}
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
}
