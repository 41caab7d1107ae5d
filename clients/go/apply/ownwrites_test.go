package apply

import (
	"sync/atomic"
	"testing"
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
	w := NewOwnWrites(map[Resource]SyncedVersion{ResourceJobs: jobs, ResourcePods: pods})
	if _, behind := w.Behind("ns/job"); behind {
		t.Fatal("nothing written yet: not behind")
	}
	w.Wrote("ns/job", "uid", ResourceJobs, "10")
	w.Wrote("ns/job", "uid", ResourcePods, "12")
	w.Wrote("ns/job", "uid", ResourcePods, "11") // an older write does not lower the bar
	if res, behind := w.Behind("ns/job"); !behind || res != ResourceJobs && res != ResourcePods {
		t.Fatalf("behind = %v %q, want behind", behind, res)
	}
	jobs.rv.Store("10")
	if res, behind := w.Behind("ns/job"); !behind || res != ResourcePods {
		t.Fatalf("behind = %v %q, want the pod cache behind", behind, res)
	}
	pods.rv.Store("11")
	if _, behind := w.Behind("ns/job"); !behind {
		t.Fatal("pod cache at 11 has not seen the write at 12")
	}
	pods.rv.Store("12")
	if _, behind := w.Behind("ns/job"); behind {
		t.Fatal("both caches show the writes")
	}
	// Once seen, the record is dropped: a cache that reports less later
	// (another informer, a restart) does not block.
	pods.rv.Store("1")
	if _, behind := w.Behind("ns/job"); behind {
		t.Fatal("a met record is forgotten")
	}
}

func TestOwnWritesNeverBlockOnWhatDoesNotCompare(t *testing.T) {
	jobs := newFakeSynced("")
	w := NewOwnWrites(map[Resource]SyncedVersion{ResourceJobs: jobs})
	w.Wrote("ns/job", "uid", ResourceJobs, "10")
	if _, behind := w.Behind("ns/job"); behind {
		t.Fatal("a cache that reports no version does not block")
	}
	jobs.rv.Store("not-a-number")
	w.Wrote("ns/job", "uid", ResourceJobs, "10")
	if _, behind := w.Behind("ns/job"); behind {
		t.Fatal("an unparseable version does not block")
	}
	w.Wrote("ns/job", "uid", ResourcePods, "10") // no pod cache registered
	if _, behind := w.Behind("ns/job"); behind {
		t.Fatal("a cache that is not watched does not block")
	}
	w.Wrote("ns/job", "uid", ResourceJobs, "")
	if _, behind := w.Behind("ns/job"); behind {
		t.Fatal("a write without a version is not recorded")
	}
}

func TestOwnWritesOfARecreatedJobStartOver(t *testing.T) {
	jobs := newFakeSynced("10")
	w := NewOwnWrites(map[Resource]SyncedVersion{ResourceJobs: jobs})
	w.Wrote("ns/job", "old-uid", ResourceJobs, "20")
	w.Wrote("ns/job", "new-uid", ResourceJobs, "9")
	if _, behind := w.Behind("ns/job"); behind {
		t.Fatal("the writes for the old Job are not waited for")
	}
	w.Wrote("ns/job", "uid", ResourceJobs, "20")
	w.Forget("ns/job")
	if _, behind := w.Behind("ns/job"); behind {
		t.Fatal("a forgotten Job does not block")
	}
}
