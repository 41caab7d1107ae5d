package apply

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	jobdeciderv1 "job-decider.dev/clients/go/jobdecider/v1"
)

func TestPodFromTemplateOverlaysThePlan(t *testing.T) {
	job := testJob()
	pc := &jobdeciderv1.PodCreation{
		GenerateName: "pi-3-",
		Labels:       map[string]string{"batch.kubernetes.io/job-completion-index": "3", "app": "override"},
		Annotations:  map[string]string{"batch.kubernetes.io/job-completion-index": "3"},
		Finalizers:   []string{JobTrackingFinalizer},
		Hostname:     "pi-3",
		Env: []*jobdeciderv1.EnvVar{{Name: "JOB_COMPLETION_INDEX", ValueFrom: &jobdeciderv1.EnvVarSource{
			FieldRef: &jobdeciderv1.ObjectFieldSelector{FieldPath: "metadata.labels['batch.kubernetes.io/job-completion-index']"},
		}}},
		OwnerReference: &jobdeciderv1.OwnerReference{ApiVersion: "batch/v1", Kind: "Job", Name: "pi", Uid: "job-uid", Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)},
	}
	pod, err := PodFromTemplate(job, pc)
	if err != nil {
		t.Fatal(err)
	}
	if pod.GenerateName != "pi-3-" || pod.Name != "" || pod.Namespace != "ns" || pod.Spec.Hostname != "pi-3" {
		t.Errorf("names: %q %q %q %q", pod.GenerateName, pod.Name, pod.Namespace, pod.Spec.Hostname)
	}
	if pod.Labels["app"] != "override" || pod.Labels["batch.kubernetes.io/controller-uid"] != "job-uid" || pod.Labels["batch.kubernetes.io/job-completion-index"] != "3" {
		t.Errorf("labels %v", pod.Labels)
	}
	if pod.Annotations["note"] != "template" || pod.Annotations["batch.kubernetes.io/job-completion-index"] != "3" {
		t.Errorf("annotations %v", pod.Annotations)
	}
	if len(pod.Finalizers) != 1 || pod.Finalizers[0] != JobTrackingFinalizer {
		t.Errorf("finalizers %v", pod.Finalizers)
	}
	// The container that defines the variable keeps its own.
	if env := pod.Spec.Containers[0].Env; len(env) != 1 || env[0].Value != "mine" {
		t.Errorf("main env %v", env)
	}
	for _, c := range []corev1.Container{pod.Spec.Containers[1], pod.Spec.InitContainers[0]} {
		if len(c.Env) != 1 || c.Env[0].ValueFrom == nil || c.Env[0].ValueFrom.FieldRef.FieldPath != "metadata.labels['batch.kubernetes.io/job-completion-index']" {
			t.Errorf("%s env %v", c.Name, c.Env)
		}
	}
	if len(pod.OwnerReferences) != 1 || pod.OwnerReferences[0].UID != "job-uid" || !*pod.OwnerReferences[0].Controller {
		t.Errorf("owner %v", pod.OwnerReferences)
	}
	// The template is not modified.
	if len(job.Spec.Template.Spec.Containers[1].Env) != 0 || job.Spec.Template.Labels["app"] != "pi" {
		t.Error("the Job's template was modified")
	}
	// Without a name, "<job>-".
	pod, _ = PodFromTemplate(job, &jobdeciderv1.PodCreation{})
	if pod.GenerateName != "pi-" {
		t.Errorf("default generateName %q", pod.GenerateName)
	}
}

// Releasing a pod hands it back as an orphan: as upstream's release, the
// same patch that drops the owner reference takes the tracking finalizer off,
// so the pod is never left without a controller yet still held by one.
func TestRegressionReleasedPodLosesItsTrackingFinalizer(t *testing.T) {
	pod := testPod("pi-a", corev1.PodSucceeded)
	f := newFixture(t, testJob(), pod)
	f.plans = []*jobdeciderv1.DecideJobResponse{{Actions: []*jobdeciderv1.Action{
		{Kind: &jobdeciderv1.Action_ReleasePods{ReleasePods: &jobdeciderv1.ReleasePods{Pods: []*jobdeciderv1.PodReference{{Name: "pi-a", Uid: "uid-pi-a"}}}}},
	}}}
	if _, err := f.apply(); err != nil {
		t.Fatal(err)
	}
	if n := len(f.actions("patch", "pods")); n != 1 {
		t.Fatalf("%d pod patches, want the release alone", n)
	}
	got, err := f.kube.CoreV1().Pods("ns").Get(context.Background(), "pi-a", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.OwnerReferences) != 0 {
		t.Errorf("owner references %v after the release", got.OwnerReferences)
	}
	if len(got.Finalizers) != 0 {
		t.Errorf("finalizers %v after the release, want the tracking finalizer gone", got.Finalizers)
	}
}

func TestDeletePodsRemovesTheFinalizerFirstWhenAsked(t *testing.T) {
	pod := testPod("pi-a", corev1.PodRunning)
	f := newFixture(t, testJob(), pod)
	f.plans = []*jobdeciderv1.DecideJobResponse{{
		Actions: []*jobdeciderv1.Action{{Kind: &jobdeciderv1.Action_DeletePods{DeletePods: &jobdeciderv1.DeletePods{
			Pods: []*jobdeciderv1.PodDeletion{{Name: "pi-a", Uid: "uid-pi-a", RemoveFinalizerFirst: true}},
		}}}},
	}}
	if _, err := f.apply(); err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, a := range f.kube.Actions() {
		if a.GetResource().Resource == "pods" && (a.GetVerb() == "patch" || a.GetVerb() == "delete") {
			order = append(order, a.GetVerb())
		}
	}
	if strings.Join(order, ",") != "patch,delete" {
		t.Errorf("calls %v, want patch then delete", order)
	}
	del := f.actions("delete", "pods")[0].(clienttesting.DeleteAction)
	if uid := del.GetDeleteOptions().Preconditions.UID; uid == nil || *uid != "uid-pi-a" {
		t.Errorf("delete without the uid precondition")
	}
	if ev := <-f.events.Events; !strings.Contains(ev, "SuccessfulDelete") {
		t.Errorf("event %q", ev)
	}
}

// A stuck pod is failed as the pod garbage collector fails one: its status
// first (phase Failed, the plan's condition), guarded by its UID, then a
// delete guarded by its UID; the plan goes on after.
func TestFailPodsPatchesTheStatusThenDeletes(t *testing.T) {
	f := newFixture(t, testJob(), pendingPod("pi-a"))
	f.plans = []*jobdeciderv1.DecideJobResponse{failPodsPlan("pi-a")}
	if _, err := f.apply(); err != nil {
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

// terminatingTimeout's forceDelete: the delete after the status patch asks
// for a grace period of 0; without it the pod's own grace period stands.
func TestFailPodsForceDeleteDeletesWithAGracePeriodOfZero(t *testing.T) {
	for _, force := range []bool{false, true} {
		f := newFixture(t, testJob(), pendingPod("pi-a"))
		plan := failPodsPlan("pi-a")
		plan.Actions[0].GetFailPods().Pods[0].ForceDelete = force
		f.plans = []*jobdeciderv1.DecideJobResponse{plan}
		if _, err := f.apply(); err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(f.podWrites(), ","); got != "patch/status,delete" {
			t.Fatalf("force=%v: pod writes %s", force, got)
		}
		opts := f.actions("delete", "pods")[0].(clienttesting.DeleteAction).GetDeleteOptions()
		grace := opts.GracePeriodSeconds
		if force && (grace == nil || *grace != 0) {
			t.Errorf("force delete with grace %v, want 0", grace)
		}
		if !force && grace != nil {
			t.Errorf("ordinary delete with grace %d, want the pod's own", *grace)
		}
		if opts.Preconditions == nil || opts.Preconditions.UID == nil || *opts.Preconditions.UID != "uid-pi-a" {
			t.Errorf("force=%v: delete without the uid precondition", force)
		}
	}
}

// The patch merges conditions by type: the pod's own conditions stay.
func TestFailPodsKeepsThePodsOtherConditions(t *testing.T) {
	pod := pendingPod("pi-a")
	pod.Finalizers = nil // so that the fake's delete removes it only when asked
	f := newFixture(t, testJob(), pod)
	f.plans = []*jobdeciderv1.DecideJobResponse{failPodsPlan("pi-a")}
	// Keep the pod, to read what the status patch made of it.
	f.kube.PrependReactor("delete", "pods", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, nil
	})
	if _, err := f.apply(); err != nil {
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

func TestFailPodsWithoutAConditionTypeIsAnError(t *testing.T) {
	f := newFixture(t, testJob(), pendingPod("pi-a"))
	plan := failPodsPlan("pi-a")
	plan.Actions[0].GetFailPods().Pods[0].ConditionType = ""
	f.plans = []*jobdeciderv1.DecideJobResponse{plan}
	if _, err := f.apply(); err == nil || !strings.Contains(err.Error(), "condition type") {
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
	pod, err := PodFromTemplate(job, &jobdeciderv1.PodCreation{AvoidNodes: &jobdeciderv1.AvoidNodes{Nodes: []string{"n1", "n2"}, Mode: "Required"}})
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
	pod, err := PodFromTemplate(testJob(), &jobdeciderv1.PodCreation{AvoidNodes: &jobdeciderv1.AvoidNodes{Nodes: []string{"n1"}, Mode: "Required"}})
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
	pod, err := PodFromTemplate(job, &jobdeciderv1.PodCreation{AvoidNodes: &jobdeciderv1.AvoidNodes{Nodes: []string{"n1", "n2"}, Mode: "Preferred"}})
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
		pod, err := PodFromTemplate(testJob(), &jobdeciderv1.PodCreation{AvoidNodes: an})
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
		_, err := PodFromTemplate(testJob(), &jobdeciderv1.PodCreation{AvoidNodes: &jobdeciderv1.AvoidNodes{Nodes: []string{"n1"}, Mode: mode}})
		if err == nil || !strings.Contains(err.Error(), "avoid_nodes") {
			t.Errorf("mode %q: err = %v", mode, err)
		}
	}
}
