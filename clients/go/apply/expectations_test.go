package apply

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	jobdeciderv1 "job-decider.dev/clients/go/jobdecider/v1"
)

func TestExpectations(t *testing.T) {
	now := time.Unix(1000, 0)
	e := NewExpectations(func() time.Time { return now })
	if e.PodChangesPending("a") {
		t.Fatal("pending with nothing expected")
	}
	e.ExpectCreations("a", 2)
	e.ExpectDeletions("a", []string{"u1"})
	e.CreationObserved("a")
	e.CreationObserved("a")
	if !e.PodChangesPending("a") {
		t.Fatal("met before the deletion was seen")
	}
	// A terminating pod is seen several times; it counts once.
	e.DeletionObserved("a", "u1")
	e.DeletionObserved("a", "u1")
	if e.PodChangesPending("a") {
		t.Fatal("still pending after everything was seen")
	}
	// Extra observations do not shorten a later wait.
	e.CreationObserved("a")
	e.ExpectCreations("a", 1)
	if !e.PodChangesPending("a") {
		t.Fatal("a stray observation satisfied a new expectation")
	}
	// Expectations expire.
	now = now.Add(ExpectationTTL + time.Second)
	if e.PodChangesPending("a") {
		t.Fatal("did not expire")
	}

	e.ExpectFinalizerRemovals("a", []string{"z", "y"})
	if got := e.PendingFinalizerRemovals("a"); len(got) != 2 || got[0] != "y" {
		t.Fatalf("pending %v", got)
	}
	e.FinalizerRemovalObserved("a", "y")
	if got := e.PendingFinalizerRemovals("a"); len(got) != 1 || got[0] != "z" {
		t.Fatalf("pending %v", got)
	}
	e.Forget("a")
	if e.PendingFinalizerRemovals("a") != nil {
		t.Fatal("not forgotten")
	}
}

// Apply through Expectations.Hooks leaves the plan's pod writes expected
// under the Job's key until observed, and a failed removal not expected.
func TestExpectationsHooksRecordThePlansWrites(t *testing.T) {
	f := newFixture(t, testJob(), testPod("pi-a", corev1.PodSucceeded))
	exp := NewExpectations(nil)
	a := New(f.kube, Options{Hooks: exp.Hooks()})
	job := testJob()
	plan := &jobdeciderv1.DecideJobResponse{Actions: []*jobdeciderv1.Action{
		{Kind: &jobdeciderv1.Action_CreatePods{CreatePods: &jobdeciderv1.CreatePods{Pods: []*jobdeciderv1.PodCreation{{Name: "pi-b"}}}}},
		removeFinalizersAction("pi-a", "pi-gone"),
	}}
	if _, err := a.Apply(context.Background(), job, plan); err != nil {
		t.Fatal(err)
	}
	req := exp.Request(JobKey(job))
	if !req.GetPodChangesPending() || strings.Join(req.GetFinalizerRemovalsPending(), ",") != "uid-pi-a" {
		t.Fatalf("expectations %v, want the creation and pi-a's removal pending", req)
	}
	exp.CreationObserved("ns/pi")
	exp.FinalizerRemovalObserved("ns/pi", "uid-pi-a")
	if req := exp.Request("ns/pi"); req.GetPodChangesPending() || len(req.GetFinalizerRemovalsPending()) != 0 {
		t.Errorf("expectations %v after every write was observed", req)
	}
}
