package controller

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/resourceversion"
)

// cachedResource names an informer cache the shim reads decisions from.
type cachedResource string

const (
	jobsCache cachedResource = "jobs"
	podsCache cachedResource = "pods"
)

// syncedVersion reports the newest resourceVersion an informer's store has
// seen; client-go's stores implement it (empty when the AtomicFIFO feature
// is off).
type syncedVersion interface {
	LastStoreSyncResourceVersion() string
}

// ownWrites holds, per Job, the newest resourceVersion of each kind of object
// this shim wrote for it, until both caches have caught up with them. A sync
// that read a cache older than the shim's own writes would decide on a world
// that no longer exists: count again pods whose count the last status write
// moved, or miss a finalizer removal that the expectations no longer list.
// Upstream's Job controller keeps the same guard (StaleControllerConsistencyJob,
// on by default since 1.36).
type ownWrites struct {
	mu     sync.Mutex
	caches map[cachedResource]syncedVersion
	jobs   map[string]*jobWrites
}

type jobWrites struct {
	uid      types.UID
	versions map[cachedResource]string
}

func newOwnWrites(caches map[cachedResource]syncedVersion) *ownWrites {
	return &ownWrites{caches: caches, jobs: map[string]*jobWrites{}}
}

// wrote records that a write for the Job (by key and UID) returned resourceVersion rv.
func (w *ownWrites) wrote(key string, uid types.UID, res cachedResource, rv string) {
	if rv == "" {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	j := w.jobs[key]
	if j == nil || j.uid != uid {
		j = &jobWrites{uid: uid, versions: map[cachedResource]string{}}
		w.jobs[key] = j
	}
	if have, ok := j.versions[res]; ok {
		if cmp, err := resourceversion.CompareResourceVersion(have, rv); err == nil && cmp >= 0 {
			return
		}
	}
	j.versions[res] = rv
}

// behind reports a cache that has not yet seen one of the shim's writes for
// the Job. Once every cache has, the record is dropped. Versions that do not
// compare (or a cache that does not report one) never block.
func (w *ownWrites) behind(key string) (cachedResource, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	j := w.jobs[key]
	if j == nil {
		return "", false
	}
	for res, wrote := range j.versions {
		cache := w.caches[res]
		if cache == nil {
			continue
		}
		seen := cache.LastStoreSyncResourceVersion()
		if seen == "" {
			continue
		}
		if cmp, err := resourceversion.CompareResourceVersion(wrote, seen); err == nil && cmp > 0 {
			return res, true
		}
	}
	delete(w.jobs, key)
	return "", false
}

// forget drops the record of a Job that is gone or no longer ours.
func (w *ownWrites) forget(key string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.jobs, key)
}
