package controller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"

	"job-decider.dev/clients/go/apply"
	jobdeciderv1 "job-decider.dev/clients/go/jobdecider/v1"
)

// fakeDecider answers DecideJob with canned plans and records the requests.
type fakeDecider struct {
	jobdeciderv1.JobDeciderClient
	mu       sync.Mutex
	requests []*jobdeciderv1.DecideJobRequest
	plans    []*jobdeciderv1.DecideJobResponse
	err      error
}

func (f *fakeDecider) DecideJob(_ context.Context, req *jobdeciderv1.DecideJobRequest, _ ...grpc.CallOption) (*jobdeciderv1.DecideJobResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.requests = append(f.requests, proto.Clone(req).(*jobdeciderv1.DecideJobRequest))
	if f.err != nil {
		return nil, f.err
	}
	if len(f.plans) == 0 {
		return &jobdeciderv1.DecideJobResponse{}, nil
	}
	p := f.plans[0]
	f.plans = f.plans[1:]
	return p, nil
}

func (f *fakeDecider) last(t *testing.T) *jobdeciderv1.DecideJobRequest {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.requests) == 0 {
		t.Fatal("DecideJob was not called")
	}
	return f.requests[len(f.requests)-1]
}

func testJob() *batchv1.Job {
	return &batchv1.Job{
		TypeMeta: metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
		ObjectMeta: metav1.ObjectMeta{
			Name: "pi", Namespace: "ns", UID: "job-uid", ResourceVersion: "7",
			CreationTimestamp: metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)),
		},
		Spec: batchv1.JobSpec{
			ManagedBy:   ptr.To(DefaultControllerName),
			Parallelism: ptr.To[int32](2),
			Completions: ptr.To[int32](4),
			Selector:    &metav1.LabelSelector{MatchLabels: map[string]string{"batch.kubernetes.io/controller-uid": "job-uid"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{
					Labels:      map[string]string{"batch.kubernetes.io/controller-uid": "job-uid", "app": "pi"},
					Annotations: map[string]string{"note": "template"},
				},
				Spec: corev1.PodSpec{
					RestartPolicy:  corev1.RestartPolicyNever,
					InitContainers: []corev1.Container{{Name: "init", Image: "busybox"}},
					Containers: []corev1.Container{
						{Name: "main", Image: "busybox", Env: []corev1.EnvVar{{Name: "JOB_COMPLETION_INDEX", Value: "mine"}}},
						{Name: "side", Image: "busybox"},
					},
				},
			},
		},
	}
}

func testPod(name string, phase corev1.PodPhase) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: "ns", UID: types.UID("uid-" + name), ResourceVersion: "3",
			Labels:          map[string]string{"batch.kubernetes.io/controller-uid": "job-uid"},
			Finalizers:      []string{JobTrackingFinalizer},
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(testJob(), batchv1.SchemeGroupVersion.WithKind("Job"))},
		},
		Spec: corev1.PodSpec{NodeName: "node-1", Containers: []corev1.Container{{Name: "main", Image: "busybox"}}},
		Status: corev1.PodStatus{
			Phase: phase,
			ContainerStatuses: []corev1.ContainerStatus{{
				Name: "main", RestartCount: 1,
				State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 42, Reason: "Error"}},
			}},
		},
	}
}

type fixture struct {
	t       *testing.T
	kube    *fake.Clientset
	decider *fakeDecider
	ctrl    *Controller
	events  *record.FakeRecorder
}

func newFixture(t *testing.T, objs ...runtime.Object) *fixture {
	t.Helper()
	kube := fake.NewClientset(objs...)
	factory := informers.NewSharedInformerFactory(kube, 0)
	f := &fixture{t: t, kube: kube, decider: &fakeDecider{}, events: record.NewFakeRecorder(100)}
	ctrl, err := New(Config{RetryBaseDelay: time.Millisecond}, kube, factory, f.decider, f.events, nil)
	if err != nil {
		t.Fatal(err)
	}
	f.ctrl = ctrl
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), ctrl.synced...) {
		t.Fatal("caches did not sync")
	}
	return f
}

// waitForOwnWrites waits until the informers show what the last sync wrote,
// as the next sync in a running shim would.
func (f *fixture) waitForOwnWrites(key string) {
	f.t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		if _, behind := f.ctrl.writes.Behind(key); !behind {
			return
		}
		if time.Now().After(deadline) {
			f.t.Fatal("the informers never showed the shim's own writes")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (f *fixture) actions(verb, resource string) []clienttesting.Action {
	var out []clienttesting.Action
	for _, a := range f.kube.Actions() {
		if a.GetVerb() == verb && a.GetResource().Resource == resource {
			out = append(out, a)
		}
	}
	return out
}

// TestSnapshotRequestIsLean: the shim sends its pods in the lean encoding,
// the Job's own controller reference elided, the Job and the expectations
// as they are.
func TestSnapshotRequestIsLean(t *testing.T) {
	job := testJob()
	pod := testPod("pi-a", corev1.PodFailed)
	pod.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubelet"}} // unknown to the contract
	s := snapshot{Job: job, Pods: []*corev1.Pod{pod}, Now: time.Unix(100, 0), Controller: "x.dev/y",
		PodChangesPending: true, FinalizerRemovalsPending: []string{"u1"}}
	req, notLean := s.request()
	if notLean != nil {
		t.Fatal(notLean)
	}
	if got := req.GetJob().GetSpec().GetManagedBy(); got != DefaultControllerName {
		t.Errorf("managedBy %q", got)
	}
	if got := req.GetJob().GetSpec().GetCompletions(); got != 4 {
		t.Errorf("completions %d", got)
	}
	if got := req.GetJob().GetMetadata().GetCreationTimestamp().AsTime(); !got.Equal(job.CreationTimestamp.Time) {
		t.Errorf("creationTimestamp %v", got)
	}
	if got := req.GetJob().GetSpec().GetTemplate().GetSpec().GetContainers()[0].GetEnv()[0].GetName(); got != "JOB_COMPLETION_INDEX" {
		t.Errorf("template env %q", got)
	}
	if len(req.GetPods()) != 0 || len(req.GetLeanPods()) != 1 {
		t.Fatalf("%d pods, %d lean pods; want the one pod lean", len(req.GetPods()), len(req.GetLeanPods()))
	}
	p := req.GetLeanPods()[0]
	if p.GetPhase() != jobdeciderv1.LeanPodPhase_LEAN_POD_PHASE_FAILED || p.GetContainerStatuses()[0].GetTerminated().GetExitCode() != 42 {
		t.Errorf("pod status %v", p)
	}
	if !p.GetScheduled() || !p.GetControlledByJob() || len(p.GetOwnerReferences()) != 0 {
		t.Errorf("pod %v", p)
	}
	if req.GetControllerName() != "x.dev/y" || !req.GetExpectations().GetPodChangesPending() ||
		req.GetExpectations().GetFinalizerRemovalsPending()[0] != "u1" || req.GetNow().GetSeconds() != 100 {
		t.Errorf("request %v", req)
	}
}

// TestSnapshotWithAnUnknownPhaseGoesFull: a pod whose phase the API does
// not define has no lean form; the shim sends every pod Kubernetes-shaped
// and says why, rather than guessing a phase.
func TestSnapshotWithAnUnknownPhaseGoesFull(t *testing.T) {
	odd := testPod("pi-b", "Evicted")
	s := snapshot{Job: testJob(), Pods: []*corev1.Pod{testPod("pi-a", corev1.PodRunning), odd}, Now: time.Unix(100, 0)}
	req, notLean := s.request()
	if notLean == nil || !strings.Contains(notLean.Error(), `pods[1].status.phase "Evicted"`) {
		t.Errorf("notLean = %v, want it to name pods[1].status.phase", notLean)
	}
	if len(req.GetLeanPods()) != 0 || len(req.GetPods()) != 2 || req.GetPods()[1].GetStatus().GetPhase() != "Evicted" {
		t.Errorf("want both pods Kubernetes-shaped, the phase as it is: %d lean, pods %v", len(req.GetLeanPods()), req.GetPods())
	}
	if req.GetExpectations() == nil || req.GetNow().GetSeconds() != 100 {
		t.Errorf("the full request lost its other fields: %v", req)
	}
}

func TestSyncSkipsJobsOfOtherControllers(t *testing.T) {
	job := testJob()
	job.Spec.ManagedBy = ptr.To("kubernetes.io/job-controller")
	f := newFixture(t, job)
	if _, err := f.ctrl.syncJob(context.Background(), "ns/pi"); err != nil {
		t.Fatal(err)
	}
	if len(f.decider.requests) != 0 {
		t.Error("decided a Job of another controller")
	}
}

// A pod matching the selector but controlled by another owner (a manual
// selector overlapping another workload's labels) must not reach the snapshot:
// the decider rejects it, which would fail every sync of the Job.
func TestRegressionPodControlledByAnotherOwnerIsNotSent(t *testing.T) {
	owned := testPod("pi-a", corev1.PodRunning)
	orphan := testPod("pi-orphan", corev1.PodRunning)
	orphan.OwnerReferences = nil
	other := testPod("rs-pod", corev1.PodRunning)
	other.OwnerReferences = []metav1.OwnerReference{{
		APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web", UID: "rs-uid", Controller: ptr.To(true),
	}}
	f := newFixture(t, testJob(), owned, orphan, other)
	if _, err := f.ctrl.syncJob(context.Background(), "ns/pi"); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range f.decider.last(t).GetLeanPods() {
		names = append(names, p.GetName())
	}
	if strings.Join(names, ",") != "pi-a,pi-orphan" {
		t.Errorf("snapshot pods = %v, want the owned pod and the orphan only", names)
	}
}

func TestSyncCreatesPodsInSlowStartBatches(t *testing.T) {
	f := newFixture(t, testJob())
	var creations []*jobdeciderv1.PodCreation
	for range 7 {
		creations = append(creations, &jobdeciderv1.PodCreation{GenerateName: "pi-", Finalizers: []string{JobTrackingFinalizer}})
	}
	f.decider.plans = []*jobdeciderv1.DecideJobResponse{{
		Actions:      []*jobdeciderv1.Action{{Kind: &jobdeciderv1.Action_CreatePods{CreatePods: &jobdeciderv1.CreatePods{Pods: creations}}}},
		RequeueAfter: durationpb.New(3 * time.Second),
	}}
	// The fourth creation fails: batches 1 and 2 are done, the batch of 4
	// is attempted, and nothing after it.
	var calls int
	var mu sync.Mutex
	f.kube.PrependReactor("create", "pods", func(a clienttesting.Action) (bool, runtime.Object, error) {
		mu.Lock()
		defer mu.Unlock()
		calls++
		// The fake clientset does not generate names.
		pod := a.(clienttesting.CreateAction).GetObject().(*corev1.Pod)
		pod.Name = pod.GenerateName + strconv.Itoa(calls)
		if calls == 4 {
			return true, nil, apierrors.NewInternalError(errors.New("boom"))
		}
		return false, nil, nil
	})
	_, err := f.ctrl.syncJob(context.Background(), "ns/pi")
	if err == nil || !strings.Contains(err.Error(), "create_pods") {
		t.Fatalf("err = %v, want the create_pods failure", err)
	}
	if calls != 7 {
		t.Errorf("%d creations attempted, want 1+2+4 = 7", calls)
	}
	// 6 creations succeeded; they are expected until the informer sees them.
	if !f.ctrl.exp.PodChangesPending("ns/pi") {
		t.Error("no expectations after creating pods")
	}
	for range 6 {
		f.ctrl.exp.CreationObserved("ns/pi")
	}
	if f.ctrl.exp.PodChangesPending("ns/pi") {
		t.Error("expectations still pending after every created pod was observed")
	}
}

func TestSyncAppliesInOrderAndStopsAtFirstFailure(t *testing.T) {
	pod := testPod("pi-a", corev1.PodFailed)
	f := newFixture(t, testJob(), pod)
	status := &jobdeciderv1.JobStatus{Failed: 1, StartTime: timestamppb.New(time.Unix(50, 0)),
		UncountedTerminatedPods: &jobdeciderv1.UncountedTerminatedPods{Failed: []string{"uid-pi-a"}}}
	state := &jobdeciderv1.ControllerState{Backoff: &jobdeciderv1.BackoffRecord{FailuresAfterLastSuccess: 1}}
	f.decider.plans = []*jobdeciderv1.DecideJobResponse{{
		Actions: []*jobdeciderv1.Action{
			{Kind: &jobdeciderv1.Action_UpdateStatus{UpdateStatus: &jobdeciderv1.UpdateStatus{Status: status}}},
			{Kind: &jobdeciderv1.Action_RemoveFinalizers{RemoveFinalizers: &jobdeciderv1.RemoveFinalizers{Pods: []*jobdeciderv1.PodReference{{Name: "pi-a", Uid: "uid-pi-a"}}}}},
			{Kind: &jobdeciderv1.Action_RecordEvent{RecordEvent: &jobdeciderv1.RecordEvent{Type: "Normal", Reason: "Seen", Message: "hello"}}},
		},
		State: state,
	}}
	// The finalizer patch fails.
	f.kube.PrependReactor("patch", "pods", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewConflict(schema.GroupResource{Resource: "pods"}, "pi-a", errors.New("changed"))
	})
	_, err := f.ctrl.syncJob(context.Background(), "ns/pi")
	if err == nil || !strings.Contains(err.Error(), "action 2 of 3 (remove_finalizers)") {
		t.Fatalf("err = %v", err)
	}
	// The status went first, as a PUT of the status subresource.
	updates := f.actions("update", "jobs")
	if len(updates) != 1 || updates[0].GetSubresource() != "status" {
		t.Fatalf("status updates %v", updates)
	}
	written := updates[0].(clienttesting.UpdateAction).GetObject().(*batchv1.Job)
	if written.ResourceVersion != "7" || written.Status.Failed != 1 || written.Status.UncountedTerminatedPods.Failed[0] != "uid-pi-a" || written.Status.StartTime.Unix() != 50 {
		t.Errorf("written status %+v (rv %s)", written.Status, written.ResourceVersion)
	}
	// The patch carried the uid precondition.
	patch := f.actions("patch", "pods")[0].(clienttesting.PatchAction)
	var body map[string]map[string]any
	if err := json.Unmarshal(patch.GetPatch(), &body); err != nil {
		t.Fatal(err)
	}
	if body["metadata"]["uid"] != "uid-pi-a" || body["metadata"]["$deleteFromPrimitiveList/finalizers"] == nil {
		t.Errorf("patch %s", patch.GetPatch())
	}
	// Nothing after the failure ran.
	select {
	case ev := <-f.events.Events:
		t.Errorf("event recorded after a failed step: %s", ev)
	default:
	}
	// The failed removal is not left expected.
	if got := f.ctrl.exp.PendingFinalizerRemovals("ns/pi"); len(got) != 0 {
		t.Errorf("pending removals %v", got)
	}
	// The status was written, so the returned state holds and is sent back.
	f.decider.plans = nil
	f.waitForOwnWrites("ns/pi")
	if _, err := f.ctrl.syncJob(context.Background(), "ns/pi"); err != nil {
		t.Fatal(err)
	}
	if got := f.decider.last(t).GetState().GetBackoff().GetFailuresAfterLastSuccess(); got != 1 {
		t.Errorf("state sent back: %v", f.decider.last(t).GetState())
	}
}

func TestStateIsNotKeptWhenThePlanFailsBeforeItsStatusWrite(t *testing.T) {
	f := newFixture(t, testJob())
	f.decider.plans = []*jobdeciderv1.DecideJobResponse{{
		Actions: []*jobdeciderv1.Action{
			{Kind: &jobdeciderv1.Action_DeletePods{DeletePods: &jobdeciderv1.DeletePods{Pods: []*jobdeciderv1.PodDeletion{{Name: "x", Uid: "ux"}}}}},
			{Kind: &jobdeciderv1.Action_UpdateStatus{UpdateStatus: &jobdeciderv1.UpdateStatus{Status: &jobdeciderv1.JobStatus{}}}},
		},
		State: &jobdeciderv1.ControllerState{Backoff: &jobdeciderv1.BackoffRecord{FailuresAfterLastSuccess: 5}},
	}}
	f.kube.PrependReactor("delete", "pods", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewServiceUnavailable("down")
	})
	if _, err := f.ctrl.syncJob(context.Background(), "ns/pi"); err == nil {
		t.Fatal("want an error")
	}
	if _, err := f.ctrl.syncJob(context.Background(), "ns/pi"); err != nil {
		t.Fatal(err)
	}
	if s := f.decider.last(t).GetState(); s != nil {
		t.Errorf("state %v kept from a plan that failed before its status write", s)
	}
}

func TestDecideErrorRequeues(t *testing.T) {
	f := newFixture(t, testJob())
	f.decider.err = errors.New("unavailable")
	if _, err := f.ctrl.syncJob(context.Background(), "ns/pi"); err == nil {
		t.Fatal("want an error")
	}
	f.ctrl.queue.Add("ns/pi")
	if !f.ctrl.processNextJob(context.Background()) {
		t.Fatal("queue shut down")
	}
	if n := f.ctrl.queue.NumRequeues("ns/pi"); n != 2-1 {
		t.Errorf("requeues %d, want 1 (rate limited)", n)
	}
}

func TestGoneJobIsForgotten(t *testing.T) {
	f := newFixture(t)
	f.ctrl.setState("ns/pi", "job-uid", &jobdeciderv1.ControllerState{})
	f.ctrl.exp.ExpectCreations("ns/pi", 3)
	if _, err := f.ctrl.syncJob(context.Background(), "ns/pi"); err != nil {
		t.Fatal(err)
	}
	if f.ctrl.state("ns/pi", "job-uid") != nil || f.ctrl.exp.PodChangesPending("ns/pi") {
		t.Error("state or expectations kept for a Job that is gone")
	}
}

func TestOrphanPodOfDeletedJobLosesItsFinalizer(t *testing.T) {
	pod := testPod("pi-a", corev1.PodSucceeded)
	f := newFixture(t, pod) // the Job is gone
	if err := f.ctrl.syncOrphanPod(context.Background(), "ns/pi-a"); err != nil {
		t.Fatal(err)
	}
	patches := f.actions("patch", "pods")
	if len(patches) != 1 {
		t.Fatalf("patches %v", patches)
	}
	got, err := f.kube.CoreV1().Pods("ns").Get(context.Background(), "pi-a", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Finalizers) != 0 {
		t.Errorf("finalizers %v", got.Finalizers)
	}
}

func TestOrphanPodOfLiveJobIsLeftAlone(t *testing.T) {
	pod := testPod("pi-a", corev1.PodSucceeded)
	f := newFixture(t, testJob(), pod)
	if err := f.ctrl.syncOrphanPod(context.Background(), "ns/pi-a"); err != nil {
		t.Fatal(err)
	}
	if len(f.actions("patch", "pods")) != 0 {
		t.Error("patched a pod whose Job exists")
	}
}

// An action this shim does not know (a newer decider's, parsed here as an
// Action with no kind) must stop the plan before its first write: applied
// up to it, every retry would write the same prefix again.
func TestRegressionUnknownActionWritesNothing(t *testing.T) {
	pod := testPod("pi-a", corev1.PodFailed)
	f := newFixture(t, testJob(), pod)
	plan := func() *jobdeciderv1.DecideJobResponse {
		return &jobdeciderv1.DecideJobResponse{
			Actions: []*jobdeciderv1.Action{
				{Kind: &jobdeciderv1.Action_CreatePods{CreatePods: &jobdeciderv1.CreatePods{Pods: []*jobdeciderv1.PodCreation{{GenerateName: "pi-"}}}}},
				{Kind: &jobdeciderv1.Action_RemoveFinalizers{RemoveFinalizers: &jobdeciderv1.RemoveFinalizers{Pods: []*jobdeciderv1.PodReference{{Name: "pi-a", Uid: "uid-pi-a"}}}}},
				{Kind: &jobdeciderv1.Action_UpdateStatus{UpdateStatus: &jobdeciderv1.UpdateStatus{Status: &jobdeciderv1.JobStatus{Failed: 1}}}},
				{}, // a kind from a newer contract
			},
			State: &jobdeciderv1.ControllerState{Backoff: &jobdeciderv1.BackoffRecord{FailuresAfterLastSuccess: 9}},
		}
	}
	f.decider.plans = []*jobdeciderv1.DecideJobResponse{plan(), plan()}
	before := len(f.kube.Actions())
	for attempt := range 2 {
		_, err := f.ctrl.syncJob(context.Background(), "ns/pi")
		if err == nil || !strings.Contains(err.Error(), "action 4 of 4") {
			t.Fatalf("attempt %d: err = %v, want the plan refused at action 4", attempt, err)
		}
	}
	for _, a := range f.kube.Actions()[before:] {
		if v := a.GetVerb(); v != "get" && v != "list" && v != "watch" {
			t.Errorf("a refused plan wrote: %s %s/%s", v, a.GetResource().Resource, a.GetSubresource())
		}
	}
	if f.ctrl.exp.PodChangesPending("ns/pi") || len(f.ctrl.exp.PendingFinalizerRemovals("ns/pi")) != 0 {
		t.Error("a refused plan left expectations")
	}
	if s := f.ctrl.state("ns/pi", "job-uid"); s != nil {
		t.Errorf("state %v kept from a refused plan", s)
	}
	var warnings int
	for len(f.events.Events) > 0 {
		ev := <-f.events.Events
		if !strings.HasPrefix(ev, "Warning "+apply.ReasonUnsupportedPlan+" ") {
			t.Errorf("event %q", ev)
		}
		warnings++
	}
	if warnings != 2 {
		t.Errorf("%d warning events, want one per refused plan", warnings)
	}
	if got := counterValue(t, f.ctrl.metrics.plansRefused.WithLabelValues("unknown_action")); got != 2 {
		t.Errorf("plans_refused_total{reason=unknown_action} = %v, want 2", got)
	}
	if got := counterValue(t, f.ctrl.metrics.applyErrors.WithLabelValues("unknown")); got != 2 {
		t.Errorf("apply_errors_total{action=unknown} = %v, want 2", got)
	}
}

// A plan whose pod creation cannot be built (an avoid_nodes mode this shim
// does not know) is refused whole too, before the finalizer patch ahead of it.
func TestRegressionUnbuildablePodCreationWritesNothing(t *testing.T) {
	f := newFixture(t, testJob(), testPod("pi-a", corev1.PodFailed))
	f.decider.plans = []*jobdeciderv1.DecideJobResponse{{Actions: []*jobdeciderv1.Action{
		{Kind: &jobdeciderv1.Action_RemoveFinalizers{RemoveFinalizers: &jobdeciderv1.RemoveFinalizers{Pods: []*jobdeciderv1.PodReference{{Name: "pi-a", Uid: "uid-pi-a"}}}}},
		{Kind: &jobdeciderv1.Action_CreatePods{CreatePods: &jobdeciderv1.CreatePods{Pods: []*jobdeciderv1.PodCreation{
			{GenerateName: "pi-", AvoidNodes: &jobdeciderv1.AvoidNodes{Mode: "Sometimes", Nodes: []string{"n1"}}},
		}}}},
	}}}
	before := len(f.kube.Actions())
	if _, err := f.ctrl.syncJob(context.Background(), "ns/pi"); err == nil || !strings.Contains(err.Error(), "Sometimes") {
		t.Fatalf("err = %v, want the bad mode named", err)
	}
	if n := len(f.kube.Actions()) - before; n != 0 {
		t.Errorf("%d API calls for a refused plan: %v", n, f.kube.Actions()[before:])
	}
	if got := counterValue(t, f.ctrl.metrics.plansRefused.WithLabelValues("invalid_action")); got != 1 {
		t.Errorf("plans_refused_total{reason=invalid_action} = %v, want 1", got)
	}
}

func counterValue(t *testing.T, c interface{ Write(*dto.Metric) error }) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

// A pod the garbage collector orphaned while its Job is being deleted (orphan
// propagation) has no controller and keeps the finalizer; the Job can no
// longer adopt it, so it must not shield the pod from the orphan cleanup.
func TestRegressionOrphanSelectedOnlyByAJobBeingDeletedLosesItsFinalizer(t *testing.T) {
	job := testJob()
	job.DeletionTimestamp = ptr.To(metav1.Now())
	job.Finalizers = []string{metav1.FinalizerOrphanDependents}
	pod := testPod("pi-a", corev1.PodSucceeded)
	pod.OwnerReferences = nil
	f := newFixture(t, job, pod)
	if err := f.ctrl.syncOrphanPod(context.Background(), "ns/pi-a"); err != nil {
		t.Fatal(err)
	}
	got, err := f.kube.CoreV1().Pods("ns").Get(context.Background(), "pi-a", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Finalizers) != 0 {
		t.Errorf("finalizers %v: a Job being deleted kept the orphan's finalizer on", got.Finalizers)
	}
}

// When a Job goes, the pods its selector matches that no controller owns
// (already orphaned by the garbage collector) and that carry the finalizer
// are queued for cleanup, not only those still naming the Job.
func TestRegressionDeletedJobQueuesTheOrphansItsSelectorMatches(t *testing.T) {
	job := testJob()
	owned := testPod("pi-a", corev1.PodSucceeded)
	orphan := testPod("pi-b", corev1.PodSucceeded)
	orphan.OwnerReferences = nil
	unrelated := testPod("other", corev1.PodSucceeded)
	unrelated.OwnerReferences = nil
	unrelated.Labels = map[string]string{"app": "other"}
	f := newFixture(t, job, owned, orphan, unrelated)
	// The unrelated pod is queued when first seen (no Job selects it); the
	// others go to the Job's queue. Start from an empty orphan queue.
	deadline := time.Now().Add(5 * time.Second)
	for f.ctrl.orphanQueue.Len() < 1 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	for f.ctrl.orphanQueue.Len() > 0 {
		key, _ := f.ctrl.orphanQueue.Get()
		f.ctrl.orphanQueue.Done(key)
	}
	f.ctrl.deleteJob(cache.DeletedFinalStateUnknown{Key: "ns/pi", Obj: job})
	var queued []string
	for f.ctrl.orphanQueue.Len() > 0 {
		key, _ := f.ctrl.orphanQueue.Get()
		queued = append(queued, key)
		f.ctrl.orphanQueue.Done(key)
	}
	slices.Sort(queued)
	if strings.Join(queued, ",") != "ns/pi-a,ns/pi-b" {
		t.Errorf("orphan queue %v, want the owned pod and the orphan the selector matches", queued)
	}
}

// hangingDecider never answers for the Jobs hang names (a decider replica
// that accepts calls and never replies); it answers the others at once.
type hangingDecider struct {
	jobdeciderv1.JobDeciderClient
	hang     func(name string) bool
	inFlight chan string
	answered chan string
}

func (h *hangingDecider) DecideJob(ctx context.Context, req *jobdeciderv1.DecideJobRequest, _ ...grpc.CallOption) (*jobdeciderv1.DecideJobResponse, error) {
	name := req.GetJob().GetMetadata().GetName()
	if h.hang(name) {
		h.inFlight <- name
		<-ctx.Done()
		return nil, ctx.Err()
	}
	h.answered <- name
	return &jobdeciderv1.DecideJobResponse{}, nil
}

// With every worker held by a call the decider never answers, another Job
// must still be synced soon: at the default decide timeout each hung call
// ends in time for the worker to move on (it was 30 s, with 5 workers).
func TestRegressionHungDeciderDoesNotStallOtherJobs(t *testing.T) {
	const hung = 5 // the default worker count
	var objs []runtime.Object
	for i := range hung {
		job := testJob()
		job.Name, job.UID = fmt.Sprint("hung-", i), types.UID(fmt.Sprint("hung-uid-", i))
		objs = append(objs, job)
	}
	kube := fake.NewClientset(objs...)
	factory := informers.NewSharedInformerFactory(kube, 0)
	d := &hangingDecider{
		hang:     func(name string) bool { return strings.HasPrefix(name, "hung-") },
		inFlight: make(chan string, 100), answered: make(chan string, 100),
	}
	ctrl, err := New(Config{}, kube, factory, d, record.NewFakeRecorder(1000), nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	factory.Start(ctx.Done())
	go func() { _ = ctrl.Run(ctx) }()
	for range hung {
		select {
		case <-d.inFlight:
		case <-time.After(10 * time.Second):
			t.Fatal("the hung Jobs were not all being decided")
		}
	}
	fine := testJob()
	fine.Name = "fine"
	start := time.Now()
	if _, err := kube.BatchV1().Jobs("ns").Create(ctx, fine, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	const bound = 12 * time.Second
	select {
	case <-d.answered:
		t.Logf("the other Job was decided %s after it was created", time.Since(start).Round(time.Millisecond))
	case <-time.After(bound):
		t.Fatalf("no other Job decided within %s while the decider hung on %d calls", bound, hung)
	}
}

// gatedDecider holds each call until release is closed (or the call's
// context ends), then answers with plan.
type gatedDecider struct {
	jobdeciderv1.JobDeciderClient
	inFlight chan struct{}
	release  chan struct{}
	plan     *jobdeciderv1.DecideJobResponse
}

func (g *gatedDecider) DecideJob(ctx context.Context, _ *jobdeciderv1.DecideJobRequest, _ ...grpc.CallOption) (*jobdeciderv1.DecideJobResponse, error) {
	g.inFlight <- struct{}{}
	select {
	case <-g.release:
		return g.plan, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Stopping the controller (SIGTERM) lets the sync in flight finish its plan
// within the grace period instead of aborting its calls.
func TestRegressionShutdownFinishesTheSyncInFlight(t *testing.T) {
	kube := fake.NewClientset(testJob())
	factory := informers.NewSharedInformerFactory(kube, 0)
	d := &gatedDecider{inFlight: make(chan struct{}, 10), release: make(chan struct{}), plan: &jobdeciderv1.DecideJobResponse{
		Actions: []*jobdeciderv1.Action{{Kind: &jobdeciderv1.Action_UpdateStatus{UpdateStatus: &jobdeciderv1.UpdateStatus{Status: &jobdeciderv1.JobStatus{Active: 2}}}}},
	}}
	ctrl, err := New(Config{ShutdownGrace: 10 * time.Second}, kube, factory, d, record.NewFakeRecorder(100), nil)
	if err != nil {
		t.Fatal(err)
	}
	informerCtx, stopInformers := context.WithCancel(context.Background())
	defer stopInformers()
	factory.Start(informerCtx.Done())
	runCtx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ctrl.Run(runCtx) }()
	select {
	case <-d.inFlight:
	case <-time.After(10 * time.Second):
		t.Fatal("the Job was never decided")
	}
	stop()
	time.Sleep(100 * time.Millisecond) // the stop has reached the worker
	close(d.release)
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("Run did not return after the sync in flight finished")
	}
	var statusWrites int
	for _, a := range kube.Actions() {
		if a.GetVerb() == "update" && a.GetResource().Resource == "jobs" && a.GetSubresource() == "status" {
			statusWrites++
		}
	}
	if statusWrites != 1 {
		t.Errorf("%d status writes, want the plan in flight applied once", statusWrites)
	}
}
