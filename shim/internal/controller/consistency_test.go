package controller

import (
	"context"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"

	jobdeciderv1 "job-decider.dev/clients/go/jobdecider/v1"
)

// fakeSynced is a cache whose last seen resourceVersion the test sets.
type fakeSynced struct{ rv atomic.Value }

func newFakeSynced(rv string) *fakeSynced {
	f := &fakeSynced{}
	f.rv.Store(rv)
	return f
}

func (f *fakeSynced) LastStoreSyncResourceVersion() string { return f.rv.Load().(string) }

func TestOwnWritesWaitForEveryCache(t *testing.T) {
	jobs, pods := newFakeSynced("5"), newFakeSynced("5")
	w := newOwnWrites(map[cachedResource]syncedVersion{jobsCache: jobs, podsCache: pods})
	if _, behind := w.behind("ns/job"); behind {
		t.Fatal("nothing written yet: not behind")
	}
	w.wrote("ns/job", "uid", jobsCache, "10")
	w.wrote("ns/job", "uid", podsCache, "12")
	w.wrote("ns/job", "uid", podsCache, "11") // an older write does not lower the bar
	if res, behind := w.behind("ns/job"); !behind || res != jobsCache && res != podsCache {
		t.Fatalf("behind = %v %q, want behind", behind, res)
	}
	jobs.rv.Store("10")
	if res, behind := w.behind("ns/job"); !behind || res != podsCache {
		t.Fatalf("behind = %v %q, want the pod cache behind", behind, res)
	}
	pods.rv.Store("11")
	if _, behind := w.behind("ns/job"); !behind {
		t.Fatal("pod cache at 11 has not seen the write at 12")
	}
	pods.rv.Store("12")
	if _, behind := w.behind("ns/job"); behind {
		t.Fatal("both caches show the writes")
	}
	// Once seen, the record is dropped: a cache that reports less later
	// (another informer, a restart) does not block.
	pods.rv.Store("1")
	if _, behind := w.behind("ns/job"); behind {
		t.Fatal("a met record is forgotten")
	}
}

func TestOwnWritesNeverBlockOnWhatDoesNotCompare(t *testing.T) {
	jobs := newFakeSynced("")
	w := newOwnWrites(map[cachedResource]syncedVersion{jobsCache: jobs})
	w.wrote("ns/job", "uid", jobsCache, "10")
	if _, behind := w.behind("ns/job"); behind {
		t.Fatal("a cache that reports no version does not block")
	}
	jobs.rv.Store("not-a-number")
	w.wrote("ns/job", "uid", jobsCache, "10")
	if _, behind := w.behind("ns/job"); behind {
		t.Fatal("an unparseable version does not block")
	}
	w.wrote("ns/job", "uid", podsCache, "10") // no pod cache registered
	if _, behind := w.behind("ns/job"); behind {
		t.Fatal("a cache that is not watched does not block")
	}
	w.wrote("ns/job", "uid", jobsCache, "")
	if _, behind := w.behind("ns/job"); behind {
		t.Fatal("a write without a version is not recorded")
	}
}

func TestOwnWritesOfARecreatedJobStartOver(t *testing.T) {
	jobs := newFakeSynced("10")
	w := newOwnWrites(map[cachedResource]syncedVersion{jobsCache: jobs})
	w.wrote("ns/job", "old-uid", jobsCache, "20")
	w.wrote("ns/job", "new-uid", jobsCache, "9")
	if _, behind := w.behind("ns/job"); behind {
		t.Fatal("the writes for the old Job are not waited for")
	}
	w.wrote("ns/job", "uid", jobsCache, "20")
	w.forget("ns/job")
	if _, behind := w.behind("ns/job"); behind {
		t.Fatal("a forgotten Job does not block")
	}
}

// Regression: under load, a sync right after a plan that removed finalizers
// saw some of those pods still carrying the finalizer and no longer expected,
// and counted them a second time (a 500-pod Job then scaled down 5 pods). A
// sync now waits until the pod cache shows the shim's own pod writes.
func TestSyncWaitsForThePodCacheAfterRemovingFinalizers(t *testing.T) {
	pod := testPod("pi-a", corev1.PodSucceeded)
	f := newFixture(t, testJob(), pod)
	pods := newFakeSynced("11")
	f.ctrl.writes.caches[podsCache] = pods
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
	pods.rv.Store("12")
	if _, err := f.ctrl.syncJob(ctx, "ns/pi"); err != nil {
		t.Fatal(err)
	}
	if n := len(f.decider.requests); n != 2 {
		t.Fatalf("%d decisions, want a second once the pod cache shows the write", n)
	}
}
