package upstream

// The upstream runner: one sync of upstream's Job controller on one snapshot.
//
// It follows route 2 of the harness notes (the way upstream's own unit tests
// drive the controller): the controller is built with newControllerWithClock
// over a fake clientset and informers that are never started; the Job and
// Pods go straight into the informers' indexers; a fake clock stands at the
// request's `now`; syncJob runs once. Everything the sync does goes into one
// ordered log (opLog): pod writes through a clientset reactor, status writes
// through the controller's status handler, Job events through a recorder, and
// requeues through a spy on the work queue.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"google.golang.org/protobuf/types/known/timestamppb"
	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	batchdefaults "k8s.io/kubernetes/pkg/apis/batch/v1"
	"k8s.io/kubernetes/pkg/controller"
	"k8s.io/kubernetes/pkg/controller/job"
	jobutil "k8s.io/kubernetes/pkg/controller/job/util"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	pb "job-decider.dev/clients/go/jobdecider/v1"
	"job-decider.dev/clients/go/kubejson"
)

// DefaultControllerName is upstream's own managedBy value.
const DefaultControllerName = "kubernetes.io/job-controller"

// ElsewhereControllerName stands for "a controller other than the deciding
// one" when upstream runs as the deciding controller on a Job that is not its.
const ElsewhereControllerName = "harness.example/elsewhere"

// Snapshot is a request turned into Kubernetes objects.
type Snapshot struct {
	Job  *batchv1.Job
	Pods []*v1.Pod
	Now  time.Time
	// Ours is false when the Job is managed by a controller other than the
	// one the request decides for.
	Ours bool
}

// SnapshotFromRequest converts a request. The Job gets the API server's
// defaults (SetDefaults_Job and the pod-condition pattern status), as every
// Job read from the API server has them; pods without a namespace are taken
// to be in the Job's namespace (the request's pods are by definition).
func SnapshotFromRequest(req *pb.DecideJobRequest) (*Snapshot, error) {
	if req.GetJob() == nil {
		return nil, errors.New("request has no job")
	}
	if req.GetNow() == nil {
		return nil, errors.New("request has no now")
	}
	j := &batchv1.Job{}
	if err := kubejson.ToKube(req.GetJob(), j); err != nil {
		return nil, fmt.Errorf("job: %w", err)
	}
	if j.Namespace == "" || j.Name == "" || j.UID == "" {
		return nil, errors.New("job.metadata needs namespace, name and uid")
	}
	batchdefaults.SetDefaults_Job(j)
	if pfp := j.Spec.PodFailurePolicy; pfp != nil {
		for i := range pfp.Rules {
			for k := range pfp.Rules[i].OnPodConditions {
				batchdefaults.SetDefaults_PodFailurePolicyOnPodConditionsPattern(&pfp.Rules[i].OnPodConditions[k])
			}
		}
	}
	s := &Snapshot{Job: j, Now: req.GetNow().AsTime()}
	name := req.GetControllerName()
	if name == "" {
		name = DefaultControllerName
	}
	managedBy := DefaultControllerName
	if j.Spec.ManagedBy != nil {
		managedBy = *j.Spec.ManagedBy
	}
	s.Ours = managedBy == name
	if s.Ours && managedBy != DefaultControllerName {
		// Upstream acts only on its own Jobs; the request decides as the
		// named controller would, which is upstream's logic for that name.
		j.Spec.ManagedBy = nil
	}
	seen := map[string]bool{}
	for _, p := range req.GetPods() {
		pod := &v1.Pod{}
		if err := kubejson.ToKube(p, pod); err != nil {
			return nil, fmt.Errorf("pod %s: %w", p.GetMetadata().GetName(), err)
		}
		if pod.Namespace == "" {
			pod.Namespace = j.Namespace
		}
		if pod.Name == "" || pod.UID == "" {
			return nil, fmt.Errorf("pod %q needs a name and a uid", pod.Name)
		}
		key := pod.Namespace + "/" + pod.Name
		if seen[key] {
			return nil, fmt.Errorf("pod %s appears twice", key)
		}
		seen[key] = true
		s.Pods = append(s.Pods, pod)
	}
	return s, nil
}

type opKind int

const (
	opAdopt opKind = iota
	opRelease
	opCreate
	opRemoveFinalizer
	opDelete
	opUpdateStatus
	opEvent
)

// op is one thing the sync did.
type op struct {
	kind    opKind
	pod     string // pod name, for pod operations
	created *v1.Pod
	status  *batchv1.JobStatus
	event   [3]string // type, reason, message
	// paired marks a finalizer patch that belongs to the delete after it.
	paired bool
	// removeFinalizerFirst is set on a delete whose pod's finalizer was patched off just before.
	removeFinalizerFirst bool
}

// opLog collects what the sync does, in order. The controller writes from
// several goroutines (parallel creates, deletes and patches).
type opLog struct {
	mu         sync.Mutex
	ops        []op
	requeues   []time.Duration
	rateLimits int
	unexpected []string
}

func (l *opLog) add(o op) {
	l.mu.Lock()
	l.ops = append(l.ops, o)
	l.mu.Unlock()
}

func (l *opLog) odd(format string, args ...any) {
	l.mu.Lock()
	l.unexpected = append(l.unexpected, fmt.Sprintf(format, args...))
	l.mu.Unlock()
}

// eventSpy records the events the controller itself emits about the Job.
// (Pod control has its own recorder; its SuccessfulCreate/SuccessfulDelete/
// FailedCreate/FailedDelete events are the caller's business.)
type eventSpy struct{ log *opLog }

func (e eventSpy) Event(_ runtime.Object, eventtype, reason, message string) {
	e.log.add(op{kind: opEvent, event: [3]string{eventtype, reason, message}})
}

func (e eventSpy) Eventf(o runtime.Object, eventtype, reason, messageFmt string, args ...any) {
	e.Event(o, eventtype, reason, fmt.Sprintf(messageFmt, args...))
}

func (e eventSpy) AnnotatedEventf(o runtime.Object, _ map[string]string, eventtype, reason, messageFmt string, args ...any) {
	e.Eventf(o, eventtype, reason, messageFmt, args...)
}

// queueSpy stands in for the controller's work queue and records the
// requeues the sync asks for instead of queueing them.
type queueSpy struct {
	workqueue.TypedRateLimitingInterface[string]
	log *opLog
}

func (q *queueSpy) AddAfter(_ string, d time.Duration) {
	q.log.mu.Lock()
	q.log.requeues = append(q.log.requeues, d)
	q.log.mu.Unlock()
}

func (q *queueSpy) Add(item string) { q.AddAfter(item, 0) }

func (q *queueSpy) AddRateLimited(string) {
	q.log.mu.Lock()
	q.log.rateLimits++
	q.log.mu.Unlock()
}

// orderedIndexer returns the pods of an index in the request's order. The
// informer's own order is a map's (random); fixing it to the request's order
// makes upstream deterministic where it depends on list order (which failed
// pod's FailJob message wins, the order of uncounted UIDs).
type orderedIndexer struct {
	cache.Indexer
	rank map[string]int
}

func (o orderedIndexer) ByIndex(indexName, indexedValue string) ([]any, error) {
	items, err := o.Indexer.ByIndex(indexName, indexedValue)
	if err != nil {
		return nil, err
	}
	sort.SliceStable(items, func(a, b int) bool {
		return o.rank[podKey(items[a])] < o.rank[podKey(items[b])]
	})
	return items, nil
}

func podKey(obj any) string {
	if p, ok := obj.(*v1.Pod); ok {
		return p.Namespace + "/" + p.Name
	}
	return ""
}

// Result is the outcome of one upstream sync.
type Result struct {
	Resp    *pb.DecideJobResponse
	SyncErr error         // what syncJob returned, if anything
	Elapsed time.Duration // time spent in syncJob alone
}

// Opts says how much of upstream's controller a run covers.
type Opts struct {
	// OrphanSweep: for a Job already finished, also run what the rest of
	// the controller does with it, the orphan-pod worker's sweep of its pods
	// (see orphanSweep). job-decider's plan includes it; vectors pin
	// syncJob alone, as upstream's unit tests do.
	OrphanSweep bool
}

// Run runs one sync of upstream's controller on the request.
func Run(req *pb.DecideJobRequest, opts Opts) (*Result, error) {
	s, err := SnapshotFromRequest(req)
	if err != nil {
		return nil, err
	}
	j := s.Job
	if !s.Ours {
		if !opts.OrphanSweep || !jobutil.IsJobFinished(j) {
			// Upstream skips Jobs managed by another controller and leaves
			// its in-memory state alone.
			return &Result{Resp: &pb.DecideJobResponse{State: StateCopy(req.GetState())}}, nil
		}
		// A finished Job managed elsewhere still has its selector swept by
		// the orphan-pod worker (updateJob has no managedBy check). Seen from
		// the deciding controller, the Job is external whatever it names.
		if j.Spec.ManagedBy == nil || *j.Spec.ManagedBy == DefaultControllerName {
			j.Spec.ManagedBy = ptr.To(ElsewhereControllerName)
		}
	}
	key := j.Namespace + "/" + j.Name
	log := &opLog{}
	podsByName := map[string]*v1.Pod{}
	for _, p := range s.Pods {
		if p.Namespace == j.Namespace {
			podsByName[p.Name] = p
		}
	}

	client := fake.NewClientset(j.DeepCopy())
	var created int
	client.PrependReactor("*", "*", func(action clienttesting.Action) (bool, runtime.Object, error) {
		res := action.GetResource().Resource
		switch action.GetVerb() {
		case "get", "list", "watch":
			return false, nil, nil
		}
		if res != "pods" {
			log.odd("unexpected %s of %s", action.GetVerb(), res)
			return true, nil, fmt.Errorf("harness: unexpected %s of %s", action.GetVerb(), res)
		}
		switch a := action.(type) {
		case clienttesting.CreateAction:
			pod, ok := a.GetObject().(*v1.Pod)
			if !ok {
				log.odd("create of %T", a.GetObject())
				return true, nil, fmt.Errorf("harness: create of %T", a.GetObject())
			}
			log.add(op{kind: opCreate, created: pod.DeepCopy()})
			out := pod.DeepCopy()
			log.mu.Lock()
			created++
			out.Name = fmt.Sprintf("%s%05d", pod.GenerateName, created)
			log.mu.Unlock()
			return true, out, nil
		case clienttesting.PatchAction:
			pod := podsByName[a.GetName()]
			kind, err := classifyPatch(a.GetPatch())
			if err != nil {
				log.odd("patch of pod %s: %v", a.GetName(), err)
				return true, nil, err
			}
			log.add(op{kind: kind, pod: a.GetName()})
			if pod == nil || a.GetNamespace() != j.Namespace {
				return true, nil, apierrors.NewNotFound(v1.Resource("pods"), a.GetName())
			}
			return true, pod.DeepCopy(), nil
		case clienttesting.DeleteAction:
			log.add(op{kind: opDelete, pod: a.GetName()})
			if podsByName[a.GetName()] == nil || a.GetNamespace() != j.Namespace {
				return true, nil, apierrors.NewNotFound(v1.Resource("pods"), a.GetName())
			}
			return true, nil, nil
		}
		log.odd("unexpected %s of pods", action.GetVerb())
		return true, nil, fmt.Errorf("harness: unexpected %s of pods", action.GetVerb())
	})

	// The controller logs through the context's logger; keep it quiet.
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), logr.Discard()))
	defer cancel()
	factory := informers.NewSharedInformerFactory(client, 0)
	podInformer := factory.Core().V1().Pods()
	jobInformer := factory.Batch().V1().Jobs()
	fakeClock := clocktesting.NewFakeClock(s.Now)
	jm, err := newControllerWithClock(ctx, client, fakeClock, podInformer, jobInformer,
		factory.Scheduling().V1beta1().Workloads(), factory.Scheduling().V1beta1().PodGroups())
	if err != nil {
		return nil, fmt.Errorf("building upstream controller: %w", err)
	}
	defer func() {
		callMethod(jm, "queue", "ShutDown")
		callMethod(jm, "orphanQueue", "ShutDown")
		callMethod(jm, "broadcaster", "Shutdown")
	}()
	if err := checkBackoffLayout(jm); err != nil {
		return nil, err
	}

	// Swap in the spies.
	*fieldPtr[record.EventRecorder](jm, "recorder") = eventSpy{log}
	queue := fieldPtr[workqueue.TypedRateLimitingInterface[string]](jm, "queue")
	*queue = &queueSpy{TypedRateLimitingInterface: *queue, log: log}
	*fieldPtr[func(context.Context, *batchv1.Job) (*batchv1.Job, error)](jm, "updateStatusHandler") =
		func(_ context.Context, job *batchv1.Job) (*batchv1.Job, error) {
			st := job.Status.DeepCopy()
			log.add(op{kind: opUpdateStatus, status: st})
			return job.DeepCopy(), nil
		}
	indexer := fieldPtr[cache.Indexer](jm, "podIndexer")
	rank := make(map[string]int, len(s.Pods))
	for i, p := range s.Pods {
		rank[p.Namespace+"/"+p.Name] = i
	}
	*indexer = orderedIndexer{Indexer: *indexer, rank: rank}

	// Load the snapshot into the informers' caches.
	if err := jobInformer.Informer().GetIndexer().Add(j); err != nil {
		return nil, err
	}
	for _, p := range s.Pods {
		if err := podInformer.Informer().GetIndexer().Add(p); err != nil {
			return nil, err
		}
	}

	// Load the caller's state: expectations and the backoff record.
	logger := klog.FromContext(ctx)
	if req.GetExpectations().GetPodChangesPending() {
		exp := *fieldPtr[controller.ControllerExpectationsInterface](jm, "expectations")
		if err := exp.ExpectCreations(logger, key, 1); err != nil {
			return nil, err
		}
	}
	if pending := req.GetExpectations().GetFinalizerRemovalsPending(); len(pending) > 0 {
		uids := make([]types.UID, len(pending))
		for i, u := range pending {
			uids[i] = types.UID(u)
		}
		fe := opaquePtrField(jm, "finalizerExpectations", "uidTrackingExpectations")
		if err := expectFinalizersRemoved(fe, logger, key, uids); err != nil {
			return nil, err
		}
	}
	if b := req.GetState().GetBackoff(); b != nil {
		rec := backoffRecordMirror{key: key, failuresAfterLastSuccess: b.GetFailuresAfterLastSuccess()}
		if b.GetLastFailureTime() != nil {
			t := b.GetLastFailureTime().AsTime()
			rec.lastFailureTime = &t
		}
		bs, _ := backoffStoreOf(jm)
		if err := updateBackoffRecord(bs, rec); err != nil {
			return nil, err
		}
	}

	start := time.Now()
	var syncErr error
	if s.Ours {
		syncErr = syncJob(jm, ctx, key)
	}
	if syncErr == nil && opts.OrphanSweep && jobutil.IsJobFinished(j) {
		// syncJob leaves a finished Job alone; the rest of the controller
		// does not: the Job's update to finished queues the orphan-pod
		// worker for every pod matching its selector (updateJob ->
		// enqueueLabelSelector), and any event of a pod being deleted whose
		// Job is finished queues it too (deletePod, updatePod). The worker
		// takes the tracking finalizer off pods no unfinished Job of ours
		// controls. That is what the controller does with a finished Job,
		// so it is part of the plan.
		syncErr = orphanSweep(ctx, jm, s)
	}
	elapsed := time.Since(start)

	log.mu.Lock()
	defer log.mu.Unlock()
	if len(log.unexpected) > 0 {
		return nil, fmt.Errorf("upstream did something the harness does not model: %v", log.unexpected)
	}
	resp, err := translate(s, log)
	if err != nil {
		return nil, err
	}
	if syncErr != nil && log.rateLimits == 0 {
		// The worker re-adds a key whose sync failed with the per-item
		// rate limiter (1s for a first failure).
		resp.RequeueAfter = minDuration(resp.RequeueAfter, job.DefaultJobApiBackOff)
	}
	if rec, ok := readBackoffRecord(jm, key); ok && (rec.failuresAfterLastSuccess != 0 || rec.lastFailureTime != nil) {
		b := &pb.BackoffRecord{FailuresAfterLastSuccess: rec.failuresAfterLastSuccess}
		if rec.lastFailureTime != nil {
			b.LastFailureTime = timestamppb.New(*rec.lastFailureTime)
		}
		resp.State = &pb.ControllerState{Backoff: b}
	}
	return &Result{Resp: resp, SyncErr: syncErr, Elapsed: elapsed}, nil
}

// orphanSweep runs the orphan-pod worker (handleSingleOrphanPod) over the
// Job's own pods and orphans that match the Job's selector or are being
// deleted, in request order. (Pods controlled by someone else are the
// business of their owner's cleanup, and outside job-decider's requests.)
func orphanSweep(ctx context.Context, jm *job.Controller, s *Snapshot) error {
	sel, err := metav1.LabelSelectorAsSelector(s.Job.Spec.Selector)
	if err != nil {
		return nil // upstream logs the bad selector and does nothing
	}
	for _, p := range s.Pods {
		if c := metav1.GetControllerOf(p); c != nil && c.UID != s.Job.UID {
			continue
		}
		if p.Namespace != s.Job.Namespace || (!sel.Matches(labels.Set(p.Labels)) && p.DeletionTimestamp == nil) {
			continue
		}
		if err := handleSingleOrphanPod(jm, ctx, p); err != nil {
			return err
		}
	}
	return nil
}

// classifyPatch tells the three kinds of pod patches the controller sends
// apart: adoption (adds the controller ownerReference and the finalizer),
// release (deletes the ownerReference) and finalizer removal.
func classifyPatch(patch []byte) (opKind, error) {
	var p struct {
		Metadata map[string]json.RawMessage `json:"metadata"`
	}
	if err := json.Unmarshal(patch, &p); err != nil {
		return 0, fmt.Errorf("unreadable patch %s: %w", patch, err)
	}
	if refs, ok := p.Metadata["ownerReferences"]; ok {
		var list []map[string]any
		if err := json.Unmarshal(refs, &list); err != nil {
			return 0, fmt.Errorf("unreadable patch %s: %w", patch, err)
		}
		for _, r := range list {
			if r["$patch"] == "delete" {
				return opRelease, nil
			}
		}
		return opAdopt, nil
	}
	if fin, ok := p.Metadata["$deleteFromPrimitiveList/finalizers"]; ok && len(p.Metadata) == 1 {
		var list []string
		if err := json.Unmarshal(fin, &list); err == nil && len(list) == 1 && list[0] == batchv1.JobTrackingFinalizer {
			return opRemoveFinalizer, nil
		}
	}
	return 0, fmt.Errorf("unknown patch %s", patch)
}

// StateCopy is a copy of a controller state, nil when it holds no backoff
// (no failures and no failure time), as the canonical form has it.
func StateCopy(s *pb.ControllerState) *pb.ControllerState {
	if s == nil || s.GetBackoff() == nil {
		return nil
	}
	b := s.GetBackoff()
	if b.GetFailuresAfterLastSuccess() == 0 && b.GetLastFailureTime() == nil {
		return nil
	}
	return &pb.ControllerState{Backoff: &pb.BackoffRecord{
		FailuresAfterLastSuccess: b.GetFailuresAfterLastSuccess(),
		LastFailureTime:          b.GetLastFailureTime(),
	}}
}

func isPodReady(p *v1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == v1.PodReady {
			return c.Status == v1.ConditionTrue
		}
	}
	return false
}

var _ = metav1.Now
