package controller

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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

// A stuck pod is failed as the pod garbage collector fails one: its status
// first (phase Failed, the plan's condition), guarded by its UID, then a
// delete guarded by its UID; the plan goes on after.
func TestFailPodsPatchesTheStatusThenDeletes(t *testing.T) {
	f := newFixture(t, testJob(), pendingPod("pi-a"))
	f.decider.plans = []*jobdeciderv1.DecideJobResponse{failPodsPlan("pi-a")}
	if _, err := f.ctrl.syncJob(context.Background(), "ns/pi"); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(f.podWrites(), ","); got != "patch/status,delete" {
		t.Fatalf("pod writes %s, want patch/status then delete", got)
	}
	patch := f.actions("patch", "pods")[0].(clienttesting.PatchAction)
	var body struct {
		Metadata struct{ UID string }
		Status   corev1.PodStatus
	}
	if err := json.Unmarshal(patch.GetPatch(), &body); err != nil {
		t.Fatal(err)
	}
	if body.Metadata.UID != "uid-pi-a" {
		t.Errorf("patch without the uid guard: %s", patch.GetPatch())
	}
	if body.Status.Phase != corev1.PodFailed || len(body.Status.Conditions) != 1 {
		t.Fatalf("patched status %+v", body.Status)
	}
	c := body.Status.Conditions[0]
	if c.Type != pendingTimeoutCondition || c.Status != corev1.ConditionTrue || c.Reason != "ImagePullBackOff" ||
		!strings.Contains(c.Message, "300s") || c.LastTransitionTime.IsZero() {
		t.Errorf("condition %+v", c)
	}
	del := f.actions("delete", "pods")[0].(clienttesting.DeleteAction)
	if uid := del.GetDeleteOptions().Preconditions; uid == nil || uid.UID == nil || *uid.UID != "uid-pi-a" {
		t.Errorf("delete without the uid precondition")
	}
	evs := []string{<-f.events.Events, <-f.events.Events}
	if !strings.Contains(evs[0], "SuccessfulDelete") || !strings.Contains(evs[0], "pi-a") || !strings.Contains(evs[1], "After") {
		t.Errorf("events %q", evs)
	}
}

// The patch merges conditions by type: the pod's own conditions stay.
func TestFailPodsKeepsThePodsOtherConditions(t *testing.T) {
	pod := pendingPod("pi-a")
	pod.Finalizers = nil // so that the fake's delete removes it only when asked
	f := newFixture(t, testJob(), pod)
	f.decider.plans = []*jobdeciderv1.DecideJobResponse{failPodsPlan("pi-a")}
	// Keep the pod, to read what the status patch made of it.
	f.kube.PrependReactor("delete", "pods", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, nil
	})
	if _, err := f.ctrl.syncJob(context.Background(), "ns/pi"); err != nil {
		t.Fatal(err)
	}
	got, err := f.kube.CoreV1().Pods("ns").Get(context.Background(), "pi-a", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, c := range got.Status.Conditions {
		types = append(types, string(c.Type))
	}
	slices.Sort(types)
	if got.Status.Phase != corev1.PodFailed || strings.Join(types, ",") != "PodScheduled,"+pendingTimeoutCondition {
		t.Errorf("phase %s, conditions %v", got.Status.Phase, types)
	}
	if len(got.Status.ContainerStatuses) != 1 {
		t.Errorf("container statuses %v", got.Status.ContainerStatuses)
	}
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
	if f.ctrl.exp.podChangesPending("ns/pi") {
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
	if f.ctrl.exp.podChangesPending("ns/pi") {
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
	if !f.ctrl.exp.podChangesPending("ns/pi") {
		t.Error("the deletion is not expected")
	}
}

func TestFailPodsWithoutAConditionTypeIsAnError(t *testing.T) {
	f := newFixture(t, testJob(), pendingPod("pi-a"))
	plan := failPodsPlan("pi-a")
	plan.Actions[0].GetFailPods().Pods[0].ConditionType = ""
	f.decider.plans = []*jobdeciderv1.DecideJobResponse{plan}
	if _, err := f.ctrl.syncJob(context.Background(), "ns/pi"); err == nil || !strings.Contains(err.Error(), "condition type") {
		t.Fatalf("err = %v", err)
	}
	if len(f.podWrites()) != 0 {
		t.Errorf("pod writes %v", f.podWrites())
	}
}

func avoidTerm(nodes ...string) []corev1.NodeSelectorRequirement {
	var out []corev1.NodeSelectorRequirement
	for _, n := range nodes {
		out = append(out, corev1.NodeSelectorRequirement{Key: "metadata.name", Operator: corev1.NodeSelectorOpNotIn, Values: []string{n}})
	}
	return out
}

func requirementsString(rs []corev1.NodeSelectorRequirement) string {
	var parts []string
	for _, r := range rs {
		parts = append(parts, r.Key+" "+string(r.Operator)+" "+strings.Join(r.Values, "|"))
	}
	return strings.Join(parts, "; ")
}

// Required: node selector terms are ORed, so every one of them gets the
// exclusion; one requirement per node, as the API allows one value per
// field requirement.
func TestAvoidNodesRequiredAddsToEveryTerm(t *testing.T) {
	job := testJob()
	job.Spec.Template.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{
			{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"a"}}}},
			{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"b"}}}},
		}},
	}}
	pod, err := podFromTemplate(job, &jobdeciderv1.PodCreation{AvoidNodes: &jobdeciderv1.AvoidNodes{Nodes: []string{"n1", "n2"}, Mode: "Required"}})
	if err != nil {
		t.Fatal(err)
	}
	terms := pod.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	if len(terms) != 2 {
		t.Fatalf("terms %v", terms)
	}
	want := requirementsString(avoidTerm("n1", "n2"))
	for i, term := range terms {
		if got := requirementsString(term.MatchFields); got != want {
			t.Errorf("term %d matchFields %q, want %q", i, got, want)
		}
		if len(term.MatchExpressions) != 1 {
			t.Errorf("term %d lost its expressions: %v", i, term.MatchExpressions)
		}
	}
	// The terms do not share a values slice, nor the template's.
	terms[0].MatchFields[0].Values[0] = "changed"
	if terms[1].MatchFields[0].Values[0] != "n1" {
		t.Error("the terms share their values")
	}
	if tmpl := job.Spec.Template.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms; len(tmpl[0].MatchFields) != 0 {
		t.Error("the Job's template was modified")
	}
	if pod.Spec.Affinity.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution != nil {
		t.Error("Required added a preference")
	}
}

// Required with no affinity in the template: one term holding the exclusion.
func TestAvoidNodesRequiredWithoutTermsMakesOne(t *testing.T) {
	pod, err := podFromTemplate(testJob(), &jobdeciderv1.PodCreation{AvoidNodes: &jobdeciderv1.AvoidNodes{Nodes: []string{"n1"}, Mode: "Required"}})
	if err != nil {
		t.Fatal(err)
	}
	terms := pod.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	if len(terms) != 1 || requirementsString(terms[0].MatchFields) != requirementsString(avoidTerm("n1")) || len(terms[0].MatchExpressions) != 0 {
		t.Errorf("terms %+v", terms)
	}
}

// Preferred: the template's preferences stay, one of weight 100 is added,
// and the required terms are left alone.
func TestAvoidNodesPreferredAddsATermOfWeight100(t *testing.T) {
	job := testJob()
	job.Spec.Template.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
		PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{{Weight: 5, Preference: corev1.NodeSelectorTerm{
			MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "disk", Operator: corev1.NodeSelectorOpExists}},
		}}},
	}}
	pod, err := podFromTemplate(job, &jobdeciderv1.PodCreation{AvoidNodes: &jobdeciderv1.AvoidNodes{Nodes: []string{"n1", "n2"}, Mode: "Preferred"}})
	if err != nil {
		t.Fatal(err)
	}
	na := pod.Spec.Affinity.NodeAffinity
	if na.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		t.Error("Preferred added a requirement")
	}
	prefs := na.PreferredDuringSchedulingIgnoredDuringExecution
	if len(prefs) != 2 || prefs[0].Weight != 5 || prefs[1].Weight != 100 ||
		requirementsString(prefs[1].Preference.MatchFields) != requirementsString(avoidTerm("n1", "n2")) {
		t.Errorf("preferences %+v", prefs)
	}
}

// No nodes: the template's affinity as it is (nil stays nil).
func TestAvoidNodesWithoutNodesLeavesTheSpec(t *testing.T) {
	for _, an := range []*jobdeciderv1.AvoidNodes{nil, {Mode: "Required"}} {
		pod, err := podFromTemplate(testJob(), &jobdeciderv1.PodCreation{AvoidNodes: an})
		if err != nil {
			t.Fatal(err)
		}
		if pod.Spec.Affinity != nil {
			t.Errorf("%v: affinity %+v", an, pod.Spec.Affinity)
		}
	}
}

// A mode this shim does not know is an error, not a guess.
func TestAvoidNodesUnknownModeIsAnError(t *testing.T) {
	for _, mode := range []string{"", "required", "Sometimes"} {
		_, err := podFromTemplate(testJob(), &jobdeciderv1.PodCreation{AvoidNodes: &jobdeciderv1.AvoidNodes{Nodes: []string{"n1"}, Mode: mode}})
		if err == nil || !strings.Contains(err.Error(), "avoid_nodes") {
			t.Errorf("mode %q: err = %v", mode, err)
		}
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
