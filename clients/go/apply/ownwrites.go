package apply

import (
	"sync"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/resourceversion"
)

// Resource names an informer cache decisions are read from.
type Resource string

// The two caches a Job controller decides from.
const (
	ResourceJobs Resource = "jobs"
	ResourcePods Resource = "pods"
)

// SyncedVersion reports the newest resourceVersion an informer's store has
// seen; client-go's stores (Informer().GetStore()) implement it, empty when
// client-go's AtomicFIFO feature is off.
type SyncedVersion interface {
	LastStoreSyncResourceVersion() string
}

// OwnWrites holds, per Job key, the newest resourceVersion of each kind of
// object a controller wrote for the Job, until the caches have caught up
// with them. A sync that read a cache older than its own writes would decide
// on a world that no longer exists: count again pods whose count the last
// status write moved, or miss a finalizer removal the expectations no longer
// list. Upstream's Job controller keeps the same guard
// (StaleControllerConsistencyJob, on by default since 1.36). Feed it with the
// PodWritten and StatusWritten methods as Apply hooks; check Behind before
// each sync. Safe for concurrent use.
type OwnWrites struct {
	mu     sync.Mutex
	caches map[Resource]SyncedVersion
	jobs   map[string]*jobWrites
}

type jobWrites struct {
	uid      types.UID
	versions map[Resource]string
}

// NewOwnWrites waits on the given caches; a write to a resource without one
// never blocks.
func NewOwnWrites(caches map[Resource]SyncedVersion) *OwnWrites {
	return &OwnWrites{caches: caches, jobs: map[string]*jobWrites{}}
}

// Wrote records that a write for the Job (by key and UID) returned
// resourceVersion rv. A write for another UID under the key starts over.
func (w *OwnWrites) Wrote(key string, uid types.UID, res Resource, rv string) {
	if rv == "" {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	j := w.jobs[key]
	if j == nil || j.uid != uid {
		j = &jobWrites{uid: uid, versions: map[Resource]string{}}
		w.jobs[key] = j
	}
	if have, ok := j.versions[res]; ok {
		if cmp, err := resourceversion.CompareResourceVersion(have, rv); err == nil && cmp >= 0 {
			return
		}
	}
	j.versions[res] = rv
}

// PodWritten is the Hooks.PodWritten that records a pod write.
func (w *OwnWrites) PodWritten(job *batchv1.Job, pod *corev1.Pod) {
	w.Wrote(JobKey(job), job.UID, ResourcePods, pod.ResourceVersion)
}

// StatusWritten is the Hooks.StatusWritten that records a status write.
func (w *OwnWrites) StatusWritten(job, written *batchv1.Job) {
	w.Wrote(JobKey(job), written.UID, ResourceJobs, written.ResourceVersion)
}

// Behind reports a cache that has not yet seen one of the writes for the
// Job: decide on it later. Once every cache has, the record is dropped.
// Versions that do not compare (or a cache that reports none) never block.
func (w *OwnWrites) Behind(key string) (Resource, bool) {
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

// Forget drops the record of a Job that is gone or no longer managed.
func (w *OwnWrites) Forget(key string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.jobs, key)
}
