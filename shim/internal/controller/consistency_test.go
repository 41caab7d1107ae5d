package controller

import (
	"context"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"

	"job-decider.dev/clients/go/apply"
	jobdeciderv1 "job-decider.dev/clients/go/jobdecider/v1"
)

// fakeSynced is a cache whose last seen resourceVersion the test sets.
type fakeSynced struct {
	mu sync.Mutex
	rv string
}

func (f *fakeSynced) set(rv string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rv = rv
}

func (f *fakeSynced) LastStoreSyncResourceVersion() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.rv
}

// Regression: under load, a sync right after a plan that removed finalizers
// saw some of those pods still carrying the finalizer and no longer expected,
// and counted them a second time (a 500-pod Job then scaled down 5 pods). A
// sync now waits until the pod cache shows the shim's own pod writes.
func TestSyncWaitsForThePodCacheAfterRemovingFinalizers(t *testing.T) {
	pod := testPod("pi-a", corev1.PodSucceeded)
	f := newFixture(t, testJob(), pod)
	pods := &fakeSynced{rv: "11"}
	f.ctrl.writes = apply.NewOwnWrites(map[cachedResource]syncedVersion{podsCache: pods})
	f.kube.PrependReactor("patch", "pods", func(clienttesting.Action) (bool, runtime.Object, error) {
		patched := pod.DeepCopy()
		patched.Finalizers = nil
		patched.ResourceVersion = "12"
		return true, patched, nil
	})
	f.decider.plans = []*jobdeciderv1.DecideJobResponse{{Actions: []*jobdeciderv1.Action{{
		Kind: &jobdeciderv1.Action_RemoveFinalizers{RemoveFinalizers: &jobdeciderv1.RemoveFinalizers{
			Pods: []*jobdeciderv1.PodReference{{Name: pod.Name, Uid: string(pod.UID)}},
		}},
	}}}}
	ctx := context.Background()
	if _, err := f.ctrl.syncJob(ctx, "ns/pi"); err != nil {
		t.Fatal(err)
	}
	after, err := f.ctrl.syncJob(ctx, "ns/pi")
	if err != nil {
		t.Fatal(err)
	}
	if n := len(f.decider.requests); n != 1 || after != cacheBehindRetry {
		t.Fatalf("%d decisions, requeue %s: want no decision while the pod cache is at 11 < 12", n, after)
	}
	pods.set("12")
	if _, err := f.ctrl.syncJob(ctx, "ns/pi"); err != nil {
		t.Fatal(err)
	}
	if n := len(f.decider.requests); n != 2 {
		t.Fatalf("%d decisions, want a second once the pod cache shows the write", n)
	}
}
