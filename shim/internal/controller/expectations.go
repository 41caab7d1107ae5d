package controller

import (
	"sort"
	"sync"
	"time"
)

// expectationTTL bounds how long a job waits for pod events it expects; after
// that the expectations are considered met (upstream waits five minutes too),
// so a lost watch event delays a job but never stalls it.
const expectationTTL = 5 * time.Minute

// expectations records, per job key, the shim's own writes that its pod cache
// does not show yet: pods it created or deleted, and pods whose tracking
// finalizer it removed. They are sent with every DecideJob so that the
// service plans from what will be, not from a stale cache.
type expectations struct {
	mu   sync.Mutex
	now  func() time.Time
	jobs map[string]*jobExpectations
}

type jobExpectations struct {
	adds  int
	since time.Time
	// dels holds UIDs of pods whose deletion was issued and not yet seen;
	// tracking UIDs rather than a count means that repeated updates of one
	// terminating pod count once.
	dels map[string]struct{}
	// finalizers holds UIDs of pods whose finalizer removal was issued
	// and not yet observed.
	finalizers map[string]struct{}
}

func newExpectations(now func() time.Time) *expectations {
	return &expectations{now: now, jobs: map[string]*jobExpectations{}}
}

func (e *expectations) get(key string) *jobExpectations {
	j := e.jobs[key]
	if j == nil {
		j = &jobExpectations{dels: map[string]struct{}{}, finalizers: map[string]struct{}{}}
		e.jobs[key] = j
	}
	return j
}

// podChangesFor returns the job's expectations, its pod changes started over
// when the earlier ones are met or expired. The caller holds e.mu.
func (e *expectations) podChangesFor(key string) *jobExpectations {
	j := e.get(key)
	if j.podChangesMet(e.now()) {
		j.adds = 0
		clear(j.dels)
	}
	return j
}

// expectCreations raises the creations the job waits for. A count left from
// an earlier plan that is met or expired starts over from zero, so a
// double-observed event never makes a later wait shorter.
func (e *expectations) expectCreations(key string, n int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	j := e.podChangesFor(key)
	j.adds += n
	j.since = e.now()
}

// expectDeletions records pods whose deletion is about to be issued.
func (e *expectations) expectDeletions(key string, uids []string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	j := e.podChangesFor(key)
	for _, uid := range uids {
		j.dels[uid] = struct{}{}
	}
	j.since = e.now()
}

// creationObserved lowers the creations the job waits for by one.
func (e *expectations) creationObserved(key string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if j := e.jobs[key]; j != nil {
		j.adds--
	}
}

// deletionObserved forgets one pod whose deletion was seen or failed.
func (e *expectations) deletionObserved(key, uid string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if j := e.jobs[key]; j != nil {
		delete(j.dels, uid)
	}
}

func (j *jobExpectations) podChangesMet(now time.Time) bool {
	return (j.adds <= 0 && len(j.dels) == 0) || now.Sub(j.since) > expectationTTL
}

// podChangesPending reports whether the job still waits for pod events.
func (e *expectations) podChangesPending(key string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	j := e.jobs[key]
	return j != nil && !j.podChangesMet(e.now())
}

// expectFinalizerRemovals records pods whose finalizer removal is issued.
func (e *expectations) expectFinalizerRemovals(key string, uids []string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	j := e.get(key)
	for _, uid := range uids {
		j.finalizers[uid] = struct{}{}
	}
}

// finalizerRemovalObserved forgets one pod, whether the removal was seen
// in the cache or failed.
func (e *expectations) finalizerRemovalObserved(key, uid string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if j := e.jobs[key]; j != nil {
		delete(j.finalizers, uid)
	}
}

// pendingFinalizerRemovals lists, sorted, the pods whose removal is not yet seen.
func (e *expectations) pendingFinalizerRemovals(key string) []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	j := e.jobs[key]
	if j == nil || len(j.finalizers) == 0 {
		return nil
	}
	uids := make([]string, 0, len(j.finalizers))
	for uid := range j.finalizers {
		uids = append(uids, uid)
	}
	sort.Strings(uids)
	return uids
}

// forget drops everything known about a job (it was deleted or left us).
func (e *expectations) forget(key string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.jobs, key)
}
