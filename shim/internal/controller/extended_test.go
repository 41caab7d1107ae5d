package controller

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clienttesting "k8s.io/client-go/testing"

	jobdeciderv1 "job-decider.dev/clients/go/jobdecider/v1"
)

const pendingTimeoutCondition = "job-decider.dev/PendingTimeout"

// pendingPod is a pod stuck pulling its image.
func pendingPod(name string) *corev1.Pod {
	pod := testPod(name, corev1.PodPending)
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{{
		Name: "main", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff"}},
	}}
	pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}}
	return pod
}

func failPodsPlan(pods ...string) *jobdeciderv1.DecideJobResponse {
	var failures []*jobdeciderv1.PodFailure
	for _, name := range pods {
		failures = append(failures, &jobdeciderv1.PodFailure{
			Pod:           &jobdeciderv1.PodReference{Name: name, Uid: "uid-" + name},
			ConditionType: pendingTimeoutCondition,
			Reason:        "ImagePullBackOff",
			Message:       "Pod was Pending with ImagePullBackOff for 300s (limit 300s)",
		})
	}
	return &jobdeciderv1.DecideJobResponse{Actions: []*jobdeciderv1.Action{
		{Kind: &jobdeciderv1.Action_FailPods{FailPods: &jobdeciderv1.FailPods{Pods: failures}}},
		{Kind: &jobdeciderv1.Action_RecordEvent{RecordEvent: &jobdeciderv1.RecordEvent{Type: "Normal", Reason: "After", Message: "next step"}}},
	}}
}

// podWrites lists the shim's patches and deletes of pods, in order, as
// "verb" or "verb/subresource".
func (f *fixture) podWrites() []string {
	var out []string
	for _, a := range f.kube.Actions() {
		if a.GetResource().Resource != "pods" || (a.GetVerb() != "patch" && a.GetVerb() != "delete") {
			continue
		}
		w := a.GetVerb()
		if s := a.GetSubresource(); s != "" {
			w += "/" + s
		}
		out = append(out, w)
	}
	return out
}

// A pod already gone is not an error (as for deletions): the plan goes on,
// nothing is left expected, and nothing is deleted.
func TestFailPodsOfAGonePodIsNotAnError(t *testing.T) {
	f := newFixture(t, testJob())
	f.decider.plans = []*jobdeciderv1.DecideJobResponse{failPodsPlan("pi-a")}
	if _, err := f.ctrl.syncJob(context.Background(), "ns/pi"); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(f.podWrites(), ","); got != "patch/status" {
		t.Errorf("pod writes %s, want the one refused patch", got)
	}
	if f.ctrl.exp.PodChangesPending("ns/pi") {
		t.Error("a deletion of a gone pod is still expected")
	}
	if ev := <-f.events.Events; !strings.Contains(ev, "After") {
		t.Errorf("event %q, want the plan's next step", ev)
	}
}

// A refused status patch (another pod of the same name: the UID guard)
// stops the plan before the delete, and the deletion is not left expected.
func TestFailPodsConflictStopsThePlan(t *testing.T) {
	f := newFixture(t, testJob(), pendingPod("pi-a"))
	f.decider.plans = []*jobdeciderv1.DecideJobResponse{failPodsPlan("pi-a")}
	f.kube.PrependReactor("patch", "pods", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewConflict(schema.GroupResource{Resource: "pods"}, "pi-a", errors.New("uid mismatch"))
	})
	_, err := f.ctrl.syncJob(context.Background(), "ns/pi")
	if err == nil || !strings.Contains(err.Error(), "action 1 of 2 (fail_pods)") {
		t.Fatalf("err = %v", err)
	}
	if len(f.actions("delete", "pods")) != 0 {
		t.Error("deleted a pod whose failure was not written")
	}
	if f.ctrl.exp.PodChangesPending("ns/pi") {
		t.Error("a deletion that was never issued is still expected")
	}
	if ev := <-f.events.Events; !strings.Contains(ev, "Warning") || !strings.Contains(ev, "pi-a") {
		t.Errorf("event %q", ev)
	}
}

// Until the informer shows the deletion, the Job waits for it, as for the
// plan's other deletions.
func TestFailPodsExpectsTheDeletion(t *testing.T) {
	f := newFixture(t, testJob(), pendingPod("pi-a"))
	f.decider.plans = []*jobdeciderv1.DecideJobResponse{failPodsPlan("pi-a")}
	f.kube.PrependReactor("delete", "pods", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, nil // accepted; the informer never shows it
	})
	if _, err := f.ctrl.syncJob(context.Background(), "ns/pi"); err != nil {
		t.Fatal(err)
	}
	if !f.ctrl.exp.PodChangesPending("ns/pi") {
		t.Error("the deletion is not expected")
	}
}

// With the failure-policy annotation the shim's request carries what the
// document reads of each pod (here the stuck pod's waiting reason, the
// PodScheduled condition and its node); without it, none of that is sent.
func TestSnapshotCarriesPodDetailsOnlyWithAPolicy(t *testing.T) {
	pod := pendingPod("pi-a")
	plain := snapshot{Job: testJob(), Pods: []*corev1.Pod{pod}, Now: time.Unix(100, 0)}
	job := testJob()
	job.Annotations = map[string]string{"job-decider.dev/failure-policy": "apiVersion: job-decider.dev/v1alpha1\nkind: FailurePolicy\n"}
	extended := snapshot{Job: job, Pods: []*corev1.Pod{pod}, Now: time.Unix(100, 0)}
	for name, c := range map[string]struct {
		s    snapshot
		want bool
	}{"with": {extended, true}, "without": {plain, false}} {
		req, notLean := c.s.request()
		if notLean != nil {
			t.Fatal(notLean)
		}
		l := req.GetLeanPods()[0]
		var types []string
		for _, cond := range l.GetConditions() {
			types = append(types, cond.GetType())
		}
		got := l.GetContainerStatuses()[0].GetWaitingReason() == "ImagePullBackOff" && l.GetNodeName() == "node-1" && slices.Contains(types, "PodScheduled")
		none := l.GetContainerStatuses()[0].GetWaitingReason() == "" && l.GetNodeName() == "" && !slices.Contains(types, "PodScheduled")
		if (c.want && !got) || (!c.want && !none) {
			t.Errorf("%s a policy: lean pod %v", name, l)
		}
	}
}
