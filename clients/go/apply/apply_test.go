package apply

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clienttesting "k8s.io/client-go/testing"

	jobdeciderv1 "job-decider.dev/clients/go/jobdecider/v1"
)

func statusAction(status *jobdeciderv1.JobStatus) *jobdeciderv1.Action {
	return &jobdeciderv1.Action{Kind: &jobdeciderv1.Action_UpdateStatus{UpdateStatus: &jobdeciderv1.UpdateStatus{Status: status}}}
}

func removeFinalizersAction(pods ...string) *jobdeciderv1.Action {
	var refs []*jobdeciderv1.PodReference
	for _, p := range pods {
		refs = append(refs, &jobdeciderv1.PodReference{Name: p, Uid: "uid-" + p})
	}
	return &jobdeciderv1.Action{Kind: &jobdeciderv1.Action_RemoveFinalizers{RemoveFinalizers: &jobdeciderv1.RemoveFinalizers{Pods: refs}}}
}

func eventAction(reason string) *jobdeciderv1.Action {
	return &jobdeciderv1.Action{Kind: &jobdeciderv1.Action_RecordEvent{RecordEvent: &jobdeciderv1.RecordEvent{Type: "Normal", Reason: reason, Message: "hello"}}}
}

// resourceVersions makes the fake API server behave as a real one for Job
// status writes: a write must carry the stored resourceVersion (else 409
// Conflict) and the stored Job gets the next one.
func resourceVersions(f *fixture) {
	var mu sync.Mutex
	f.kube.PrependReactor("update", "jobs", func(a clienttesting.Action) (bool, runtime.Object, error) {
		mu.Lock()
		defer mu.Unlock()
		job := a.(clienttesting.UpdateAction).GetObject().(*batchv1.Job).DeepCopy()
		stored, err := f.kube.Tracker().Get(batchv1.SchemeGroupVersion.WithResource("jobs"), job.Namespace, job.Name)
		if err != nil {
			return true, nil, err
		}
		have := stored.(*batchv1.Job).ResourceVersion
		if job.ResourceVersion != have {
			return true, nil, apierrors.NewConflict(schema.GroupResource{Group: "batch", Resource: "jobs"}, job.Name,
				errors.New("the object has been modified"))
		}
		n, _ := strconv.Atoi(have)
		job.ResourceVersion = strconv.Itoa(n + 1)
		if err := f.kube.Tracker().Update(batchv1.SchemeGroupVersion.WithResource("jobs"), job, job.Namespace); err != nil {
			return true, nil, err
		}
		return true, job, nil
	})
}

// The actions run in order, the status first as a PUT of the status
// subresource carrying the resourceVersion of the Job decided on; the first
// failure stops the plan and names the action.
func TestApplyRunsInOrderAndStopsAtTheFirstFailure(t *testing.T) {
	f := newFixture(t, testJob(), testPod("pi-a", corev1.PodFailed))
	status := &jobdeciderv1.JobStatus{Failed: 1, StartTime: timestamppb.New(time.Unix(50, 0)),
		UncountedTerminatedPods: &jobdeciderv1.UncountedTerminatedPods{Failed: []string{"uid-pi-a"}}}
	f.plans = []*jobdeciderv1.DecideJobResponse{{Actions: []*jobdeciderv1.Action{
		statusAction(status), removeFinalizersAction("pi-a"), eventAction("Seen"),
	}}}
	f.kube.PrependReactor("patch", "pods", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewConflict(schema.GroupResource{Resource: "pods"}, "pi-a", errors.New("changed"))
	})
	res, err := f.apply()
	if err == nil || !strings.Contains(err.Error(), "action 2 of 3 (remove_finalizers)") || !apierrors.IsConflict(err) {
		t.Fatalf("err = %v, want the conflict of action 2", err)
	}
	if res.Applied != 1 || res.Complete || !res.StatusWritten || !res.StateHolds() {
		t.Errorf("result %+v", res)
	}
	if got := strings.Join(f.writes(), ","); got != "update jobs/status,patch pods" {
		t.Errorf("writes %s", got)
	}
	written := f.actions("update", "jobs")[0].(clienttesting.UpdateAction).GetObject().(*batchv1.Job)
	if written.ResourceVersion != "7" || written.Status.Failed != 1 || written.Status.UncountedTerminatedPods.Failed[0] != "uid-pi-a" || written.Status.StartTime.Unix() != 50 {
		t.Errorf("written status %+v (rv %s)", written.Status, written.ResourceVersion)
	}
	patch := f.actions("patch", "pods")[0].(clienttesting.PatchAction)
	var body map[string]map[string]any
	if err := json.Unmarshal(patch.GetPatch(), &body); err != nil {
		t.Fatal(err)
	}
	if patch.GetPatchType() != "application/strategic-merge-patch+json" || body["metadata"]["uid"] != "uid-pi-a" ||
		body["metadata"]["$deleteFromPrimitiveList/finalizers"] == nil {
		t.Errorf("patch %s %s", patch.GetPatchType(), patch.GetPatch())
	}
	if len(f.events.Events) != 0 {
		t.Errorf("event recorded after a failed step: %s", <-f.events.Events)
	}
	want := []string{"actionFailed remove_finalizers", "expectFinalizerRemovals uid-pi-a", "finalizerRemovalNotMade uid-pi-a", "statusWritten 7", "step"}
	if got := f.hooks.with(""); strings.Join(got, ";") != strings.Join(want, ";") {
		t.Errorf("hooks %q, want %q", got, want)
	}
}

// A second status write in one plan carries the resourceVersion the first
// returned: against a server that checks it, both land; the Job in the
// result is the last one written.
func TestSecondStatusWriteCarriesTheReturnedResourceVersion(t *testing.T) {
	f := newFixture(t, testJob(), testPod("pi-a", corev1.PodSucceeded))
	resourceVersions(f)
	f.plans = []*jobdeciderv1.DecideJobResponse{{Actions: []*jobdeciderv1.Action{
		statusAction(&jobdeciderv1.JobStatus{UncountedTerminatedPods: &jobdeciderv1.UncountedTerminatedPods{Succeeded: []string{"uid-pi-a"}}}),
		removeFinalizersAction("pi-a"),
		statusAction(&jobdeciderv1.JobStatus{Succeeded: 1}),
	}}}
	res, err := f.apply()
	if err != nil {
		t.Fatal(err)
	}
	var rvs []string
	for _, a := range f.actions("update", "jobs") {
		rvs = append(rvs, a.(clienttesting.UpdateAction).GetObject().(*batchv1.Job).ResourceVersion)
	}
	if strings.Join(rvs, ",") != "7,8" {
		t.Errorf("status writes carried resourceVersions %v, want 7 then 8", rvs)
	}
	if !res.Complete || res.Applied != 3 || res.Job.ResourceVersion != "9" || res.Job.Status.Succeeded != 1 {
		t.Errorf("result %+v (job rv %s)", res, res.Job.ResourceVersion)
	}
}

// A Job changed since the decision answers 409 to the status write: the plan
// stops there, nothing after it is written, and the state does not hold.
func TestStatusWriteOnAChangedJobIsAConflict(t *testing.T) {
	f := newFixture(t, testJob(), testPod("pi-a", corev1.PodSucceeded))
	resourceVersions(f)
	decided, err := f.kube.BatchV1().Jobs("ns").Get(context.Background(), "pi", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	changed := decided.DeepCopy()
	changed.ResourceVersion = "8"
	if err := f.kube.Tracker().Update(batchv1.SchemeGroupVersion.WithResource("jobs"), changed, "ns"); err != nil {
		t.Fatal(err)
	}
	plan := &jobdeciderv1.DecideJobResponse{Actions: []*jobdeciderv1.Action{
		statusAction(&jobdeciderv1.JobStatus{Succeeded: 1}), removeFinalizersAction("pi-a"),
	}}
	res, err := f.applier.Apply(context.Background(), decided, plan)
	if !apierrors.IsConflict(err) || !strings.Contains(err.Error(), "action 1 of 2 (update_status)") {
		t.Fatalf("err = %v, want a conflict on the status write", err)
	}
	if res.StatusWritten || res.StateHolds() || res.Job != decided {
		t.Errorf("result %+v", res)
	}
	if n := len(f.actions("patch", "pods")); n != 0 {
		t.Errorf("%d finalizer patches after a refused status write", n)
	}
}

// Pods are created in batches of 1, 2, 4, ...; after a batch with a failure
// no more are attempted, and the pods never created are reported to the hook.
func TestCreatePodsInSlowStartBatches(t *testing.T) {
	f := newFixture(t, testJob())
	var creations []*jobdeciderv1.PodCreation
	for range 10 {
		creations = append(creations, &jobdeciderv1.PodCreation{GenerateName: "pi-", Finalizers: []string{JobTrackingFinalizer}})
	}
	f.plans = []*jobdeciderv1.DecideJobResponse{{Actions: []*jobdeciderv1.Action{
		{Kind: &jobdeciderv1.Action_CreatePods{CreatePods: &jobdeciderv1.CreatePods{Pods: creations}}},
	}}}
	var calls int
	var mu sync.Mutex
	f.kube.PrependReactor("create", "pods", func(a clienttesting.Action) (bool, runtime.Object, error) {
		mu.Lock()
		defer mu.Unlock()
		calls++
		pod := a.(clienttesting.CreateAction).GetObject().(*corev1.Pod)
		pod.Name = pod.GenerateName + strconv.Itoa(calls) // the fake does not generate names
		if calls == 4 {
			return true, nil, apierrors.NewInternalError(errors.New("boom"))
		}
		return false, nil, nil
	})
	res, err := f.apply()
	if err == nil || !strings.Contains(err.Error(), "create_pods") || res.Applied != 0 {
		t.Fatalf("err = %v, result %+v", err, res)
	}
	if calls != 7 {
		t.Errorf("%d creations attempted, want 1+2+4 = 7", calls)
	}
	if got := f.hooks.with("expectCreations"); len(got) != 1 || got[0] != "expectCreations 10" {
		t.Errorf("expected creations %v", got)
	}
	// One failed, three never attempted.
	notMade := 0
	for _, c := range f.hooks.with("creationsNotMade ") {
		n, _ := strconv.Atoi(strings.TrimPrefix(c, "creationsNotMade "))
		notMade += n
	}
	if notMade != 4 || len(f.hooks.with("podWritten ")) != 6 || len(f.hooks.with("step")) != 2 {
		t.Errorf("hooks %v", f.hooks.with(""))
	}
	var failed, created int
	for len(f.events.Events) > 0 {
		switch ev := <-f.events.Events; {
		case strings.HasPrefix(ev, "Warning "+ReasonFailedCreate):
			failed++
		case strings.HasPrefix(ev, "Normal "+ReasonSuccessfulCreate):
			created++
		}
	}
	if failed != 1 || created != 6 {
		t.Errorf("events: %d failed, %d created", failed, created)
	}
}

// A plan holding an action of a kind this package does not know (an Action
// with no kind: a newer contract) is refused before its first write: applied
// up to it, every retry would write the same prefix again.
func TestRegressionUnknownActionWritesNothing(t *testing.T) {
	f := newFixture(t, testJob(), testPod("pi-a", corev1.PodFailed))
	f.plans = []*jobdeciderv1.DecideJobResponse{{Actions: []*jobdeciderv1.Action{
		{Kind: &jobdeciderv1.Action_CreatePods{CreatePods: &jobdeciderv1.CreatePods{Pods: []*jobdeciderv1.PodCreation{{GenerateName: "pi-"}}}}},
		removeFinalizersAction("pi-a"),
		statusAction(&jobdeciderv1.JobStatus{Failed: 1}),
		{},
	}}}
	res, err := f.apply()
	if !errors.Is(err, ErrUnknownAction) || !strings.Contains(err.Error(), "action 4 of 4") {
		t.Fatalf("err = %v, want the plan refused at action 4", err)
	}
	if res.Applied != 0 || res.StateHolds() {
		t.Errorf("result %+v", res)
	}
	if w := f.writes(); len(w) != 0 {
		t.Errorf("a refused plan wrote %v", w)
	}
	if got := strings.Join(f.hooks.with(""), ";"); got != "actionFailed unknown;planRefused unknown_action" {
		t.Errorf("hooks %s", got)
	}
	if ev := <-f.events.Events; !strings.HasPrefix(ev, "Warning "+ReasonUnsupportedPlan+" ") {
		t.Errorf("event %q", ev)
	}
}

// A plan whose pod creation cannot be built (an avoid_nodes mode this
// package does not know) is refused whole too, before the finalizer patch
// ahead of it.
func TestRegressionUnbuildablePodCreationWritesNothing(t *testing.T) {
	f := newFixture(t, testJob(), testPod("pi-a", corev1.PodFailed))
	f.plans = []*jobdeciderv1.DecideJobResponse{{Actions: []*jobdeciderv1.Action{
		removeFinalizersAction("pi-a"),
		{Kind: &jobdeciderv1.Action_CreatePods{CreatePods: &jobdeciderv1.CreatePods{Pods: []*jobdeciderv1.PodCreation{
			{GenerateName: "pi-", AvoidNodes: &jobdeciderv1.AvoidNodes{Mode: "Sometimes", Nodes: []string{"n1"}}},
		}}}},
	}}}
	if _, err := f.apply(); err == nil || !strings.Contains(err.Error(), "Sometimes") {
		t.Fatalf("err = %v, want the bad mode named", err)
	}
	if w := f.writes(); len(w) != 0 {
		t.Errorf("a refused plan wrote %v", w)
	}
	if got := strings.Join(f.hooks.with(""), ";"); got != "planRefused invalid_action" {
		t.Errorf("hooks %s", got)
	}
}

// A deletion of a pod already gone is not an error, and is reported as not
// made (no watch will show it); others are expected first.
func TestDeletePodsOfAGonePodIsNotAnError(t *testing.T) {
	f := newFixture(t, testJob(), testPod("pi-a", corev1.PodRunning))
	f.plans = []*jobdeciderv1.DecideJobResponse{{Actions: []*jobdeciderv1.Action{
		{Kind: &jobdeciderv1.Action_DeletePods{DeletePods: &jobdeciderv1.DeletePods{Pods: []*jobdeciderv1.PodDeletion{
			{Name: "pi-a", Uid: "uid-pi-a"}, {Name: "pi-gone", Uid: "uid-pi-gone"},
		}}}},
	}}}
	if _, err := f.apply(); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(f.hooks.with(""), ";"); got != "deletionNotMade uid-pi-gone;expectDeletions uid-pi-a,uid-pi-gone" {
		t.Errorf("hooks %s", got)
	}
}

// A delete whose UID precondition fails (the name now belongs to another
// pod) stops the plan with the API server's error.
func TestDeleteOfAPodRecreatedUnderItsNameFails(t *testing.T) {
	pod := testPod("pi-a", corev1.PodRunning)
	pod.UID = "uid-new"
	f := newFixture(t, testJob(), pod)
	f.kube.PrependReactor("delete", "pods", func(a clienttesting.Action) (bool, runtime.Object, error) {
		pre := a.(clienttesting.DeleteAction).GetDeleteOptions().Preconditions
		if pre == nil || pre.UID == nil || *pre.UID != "uid-new" {
			return true, nil, apierrors.NewConflict(schema.GroupResource{Resource: "pods"}, "pi-a", errors.New("precondition failed: UID"))
		}
		return false, nil, nil
	})
	f.plans = []*jobdeciderv1.DecideJobResponse{{Actions: []*jobdeciderv1.Action{
		{Kind: &jobdeciderv1.Action_DeletePods{DeletePods: &jobdeciderv1.DeletePods{Pods: []*jobdeciderv1.PodDeletion{{Name: "pi-a", Uid: "uid-pi-a"}}}}},
	}}}
	if _, err := f.apply(); !apierrors.IsConflict(err) {
		t.Fatalf("err = %v, want the precondition's conflict", err)
	}
	if _, err := f.kube.CoreV1().Pods("ns").Get(context.Background(), "pi-a", metav1.GetOptions{}); err != nil {
		t.Errorf("the other pod of the name was deleted: %v", err)
	}
}

// Adoption reads the Job afresh and refuses when it was re-created under
// its name or is being deleted; otherwise one patch per pod sets the
// controller reference and the tracking finalizer, guarded by the pod's UID.
func TestAdoptPodsChecksTheJobFirst(t *testing.T) {
	adopt := &jobdeciderv1.DecideJobResponse{Actions: []*jobdeciderv1.Action{
		{Kind: &jobdeciderv1.Action_AdoptPods{AdoptPods: &jobdeciderv1.AdoptPods{Pods: []*jobdeciderv1.PodReference{{Name: "pi-a", Uid: "uid-pi-a"}}}}},
	}}
	orphan := testPod("pi-a", corev1.PodRunning)
	orphan.OwnerReferences, orphan.Finalizers = nil, nil

	f := newFixture(t, testJob(), orphan.DeepCopy())
	f.plans = []*jobdeciderv1.DecideJobResponse{adopt}
	if _, err := f.apply(); err != nil {
		t.Fatal(err)
	}
	got, err := f.kube.CoreV1().Pods("ns").Get(context.Background(), "pi-a", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ref := metav1.GetControllerOf(got); ref == nil || ref.UID != "job-uid" || len(got.Finalizers) != 1 || got.Finalizers[0] != JobTrackingFinalizer {
		t.Errorf("adopted pod: owners %v, finalizers %v", got.OwnerReferences, got.Finalizers)
	}

	recreated := testJob()
	recreated.UID = "other-uid"
	f = newFixture(t, recreated, orphan.DeepCopy())
	if _, err := f.applier.Apply(context.Background(), testJob(), adopt); err == nil || !strings.Contains(err.Error(), "recreated") {
		t.Errorf("err = %v, want the adoption refused for a re-created Job", err)
	}
	deleting := testJob()
	deleting.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	deleting.Finalizers = []string{"example.com/hold"}
	f = newFixture(t, deleting, orphan.DeepCopy())
	if _, err := f.applier.Apply(context.Background(), testJob(), adopt); err == nil || !strings.Contains(err.Error(), "being deleted") {
		t.Errorf("err = %v, want the adoption refused for a Job being deleted", err)
	}
	if n := len(f.actions("patch", "pods")); n != 0 {
		t.Errorf("%d pod patches after a refused adoption", n)
	}
}

// Without a recorder and hooks, a plan applies the same.
func TestApplyWithoutRecorderOrHooks(t *testing.T) {
	kubeFixture := newFixture(t, testJob(), testPod("pi-a", corev1.PodSucceeded))
	a := New(kubeFixture.kube, Options{})
	job, err := kubeFixture.kube.BatchV1().Jobs("ns").Get(context.Background(), "pi", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := a.Apply(context.Background(), job, &jobdeciderv1.DecideJobResponse{Actions: []*jobdeciderv1.Action{
		statusAction(&jobdeciderv1.JobStatus{Succeeded: 1}), removeFinalizersAction("pi-a"), eventAction("Done"),
		{Kind: &jobdeciderv1.Action_CreatePods{CreatePods: &jobdeciderv1.CreatePods{Pods: []*jobdeciderv1.PodCreation{{GenerateName: "pi-"}}}}},
	}})
	if err != nil || !res.Complete {
		t.Fatalf("err = %v, result %+v", err, res)
	}
	pod, err := kubeFixture.kube.CoreV1().Pods("ns").Get(context.Background(), "pi-a", metav1.GetOptions{})
	if err != nil || len(pod.Finalizers) != 0 {
		t.Errorf("pod %v (err %v), want the finalizer removed", pod.Finalizers, err)
	}
}
