package apply

import (
	"sort"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"

	jobdeciderv1 "job-decider.dev/clients/go/jobdecider/v1"
)

// ExpectationTTL bounds how long a job waits for pod events it expects; after
// that the expectations are considered met (upstream waits five minutes too),
// so a lost watch event delays a job but never stalls it.
const ExpectationTTL = 5 * time.Minute

// Expectations records, per Job key (namespace/name, as JobKey makes it), a
// controller's own pod writes that its pod cache (an informer) does not show
// yet: pods it created or deleted, and pods whose tracking finalizer it
// removed. Sent with every DecideJob (Request), they make the service plan
// from what will be, not from a stale cache: without them a lagging cache
// creates pods twice, or counts a finished pod again after its finalizer was
// removed. Hooks feeds them from Apply; the controller's pod event handlers
// call the Observed methods. Safe for concurrent use.
type Expectations struct {
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

// NewExpectations returns empty expectations; now is the clock of the
// ExpectationTTL (time.Now when nil).
func NewExpectations(now func() time.Time) *Expectations {
	if now == nil {
		now = time.Now
	}
	return &Expectations{now: now, jobs: map[string]*jobExpectations{}}
}

func (e *Expectations) get(key string) *jobExpectations {
	j := e.jobs[key]
	if j == nil {
		j = &jobExpectations{dels: map[string]struct{}{}, finalizers: map[string]struct{}{}}
		e.jobs[key] = j
	}
	return j
}

// podChangesFor returns the job's expectations, its pod changes started over
// when the earlier ones are met or expired. The caller holds e.mu.
func (e *Expectations) podChangesFor(key string) *jobExpectations {
	j := e.get(key)
	if j.podChangesMet(e.now()) {
		j.adds = 0
		clear(j.dels)
	}
	return j
}

// ExpectCreations raises the creations the job waits for. A count left from
// an earlier plan that is met or expired starts over from zero, so a
// double-observed event never makes a later wait shorter.
func (e *Expectations) ExpectCreations(key string, n int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	j := e.podChangesFor(key)
	j.adds += n
	j.since = e.now()
}

// ExpectDeletions records pods whose deletion is about to be issued.
func (e *Expectations) ExpectDeletions(key string, uids []string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	j := e.podChangesFor(key)
	for _, uid := range uids {
		j.dels[uid] = struct{}{}
	}
	j.since = e.now()
}

// CreationObserved lowers the creations the job waits for by one: call it
// when the pod cache shows a new pod the Job controls.
func (e *Expectations) CreationObserved(key string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if j := e.jobs[key]; j != nil {
		j.adds--
	}
}

// DeletionObserved forgets one pod whose deletion was seen (the cache shows
// it being deleted, or gone) or failed.
func (e *Expectations) DeletionObserved(key, uid string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if j := e.jobs[key]; j != nil {
		delete(j.dels, uid)
	}
}

func (j *jobExpectations) podChangesMet(now time.Time) bool {
	return (j.adds <= 0 && len(j.dels) == 0) || now.Sub(j.since) > ExpectationTTL
}

// PodChangesPending reports whether the job still waits for pod events.
func (e *Expectations) PodChangesPending(key string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	j := e.jobs[key]
	return j != nil && !j.podChangesMet(e.now())
}

// ExpectFinalizerRemovals records pods whose finalizer removal is issued.
func (e *Expectations) ExpectFinalizerRemovals(key string, uids []string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	j := e.get(key)
	for _, uid := range uids {
		j.finalizers[uid] = struct{}{}
	}
}

// FinalizerRemovalObserved forgets one pod, whether the removal was seen
// in the cache or failed.
func (e *Expectations) FinalizerRemovalObserved(key, uid string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if j := e.jobs[key]; j != nil {
		delete(j.finalizers, uid)
	}
}

// PendingFinalizerRemovals lists, sorted, the pods whose removal is not yet seen.
func (e *Expectations) PendingFinalizerRemovals(key string) []string {
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

// Forget drops everything known about a job (it was deleted or left us).
func (e *Expectations) Forget(key string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.jobs, key)
}

// Request is what to send as DecideJobRequest.expectations for the Job. Read
// it before listing the Job's pods: an expectation met after this read is met
// by an event the cache already shows when the pods are listed, whereas one
// met between a listing and this read would leave a pod listed with its
// finalizer yet no longer expected, counted a second time.
func (e *Expectations) Request(key string) *jobdeciderv1.Expectations {
	return &jobdeciderv1.Expectations{
		PodChangesPending:        e.PodChangesPending(key),
		FinalizerRemovalsPending: e.PendingFinalizerRemovals(key),
	}
}

// Hooks are the Apply hooks that record the plan's pod writes here, keyed by
// JobKey: set the other fields of the result for what else you keep.
func (e *Expectations) Hooks() Hooks {
	return Hooks{
		ExpectCreations: func(job *batchv1.Job, n int) { e.ExpectCreations(JobKey(job), n) },
		CreationsNotMade: func(job *batchv1.Job, n int) {
			for range n {
				e.CreationObserved(JobKey(job))
			}
		},
		ExpectDeletions: func(job *batchv1.Job, uids []string) { e.ExpectDeletions(JobKey(job), uids) },
		DeletionNotMade: func(job *batchv1.Job, uid string) { e.DeletionObserved(JobKey(job), uid) },
		ExpectFinalizerRemovals: func(job *batchv1.Job, uids []string) {
			e.ExpectFinalizerRemovals(JobKey(job), uids)
		},
		FinalizerRemovalNotMade: func(job *batchv1.Job, uid string) { e.FinalizerRemovalObserved(JobKey(job), uid) },
	}
}

// JobKey is a Job's key: namespace/name, as cache.MetaNamespaceKeyFunc and
// work queues spell it.
func JobKey(job *batchv1.Job) string {
	if job.Namespace == "" {
		return job.Name
	}
	return job.Namespace + "/" + job.Name
}
