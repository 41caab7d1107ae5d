// Package controller is the shim: a Kubernetes controller that owns every
// stateful concern of running Jobs (caches, the work queue, expectations, the
// per-job controller state) and none of the decisions. For each Job whose
// spec.managedBy names it, it sends a snapshot to the job-decider service and
// applies the plan it gets back, in order, stopping at the first failure.
package controller

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	batchlisters "k8s.io/client-go/listers/batch/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"job-decider.dev/clients/go/apply"
	jobdeciderv1 "job-decider.dev/clients/go/jobdecider/v1"
	"job-decider.dev/shim/internal/shard"
)

// DefaultControllerName is the spec.managedBy value the shim answers to by default.
const DefaultControllerName = "job-decider.dev/shim"

// DefaultDecideTimeout bounds one DecideJob call unless configured: far above
// a decision's cost (well under a second at 100,000 pods), and short enough
// that calls a hung decider never answers free their workers for other Jobs.
const DefaultDecideTimeout = 5 * time.Second

// JobTrackingFinalizer is the finalizer through which Jobs track their pods.
const JobTrackingFinalizer = apply.JobTrackingFinalizer

// podControllerUIDIndex indexes pods by the UID of their controller owner.
const podControllerUIDIndex = "controllerUID"

// Config tunes a Controller.
type Config struct {
	// ControllerName is the spec.managedBy value of the Jobs to manage.
	ControllerName string
	// Workers is the number of jobs synced at once.
	Workers int
	// PodEventBatchPeriod delays a sync caused by pod events, so a burst
	// of pod changes costs one decision (upstream waits one second).
	PodEventBatchPeriod time.Duration
	// DecideTimeout bounds one DecideJob call.
	DecideTimeout time.Duration
	// RetryBaseDelay and RetryMaxDelay bound the per-job exponential
	// backoff after a failed sync.
	RetryBaseDelay, RetryMaxDelay time.Duration
	// ShutdownGrace is how long, once Run's context is done, the syncs in
	// flight may take to finish; then their calls are cancelled.
	ShutdownGrace time.Duration
	// Metadata, when set, turns on the freshness barrier: on Run, before
	// any worker acts, the caches must catch up with a consistent list of
	// the API server's Jobs and pods (see barrier.go). A leader-electing
	// shim sets it; its standby's caches may lag the previous leader's writes.
	Metadata metadata.Interface
	// Namespace is the one namespace the informers watch; all when empty.
	Namespace string
	// FreshnessTimeout bounds the barrier's wait.
	FreshnessTimeout time.Duration
	// BeforeStep, when set, is called before each step of a plan after its
	// first, with the job key; tests use it to crash between steps.
	BeforeStep func(jobKey string)
	// Shard is the range of namespaces this controller acts on (the zero
	// value: all). The informers must hold only that range
	// (shard.NewInformerFactory); the barrier's list is cut the same way.
	Shard shard.Range
	// ShardMode is where the informers' range is applied: ModeServer sends
	// the selector with the barrier's list too.
	ShardMode shard.Mode
}

// queueName names a work queue in the metrics, by shard when sharded.
func (c *Config) queueName(base string) string {
	if c.Shard.Whole() {
		return base
	}
	return fmt.Sprintf("%s-shard-%d", base, c.Shard.Index)
}

func (c *Config) defaults() {
	if c.ControllerName == "" {
		c.ControllerName = DefaultControllerName
	}
	if c.Workers <= 0 {
		c.Workers = 5
	}
	if c.DecideTimeout <= 0 {
		c.DecideTimeout = DefaultDecideTimeout
	}
	if c.RetryBaseDelay <= 0 {
		c.RetryBaseDelay = time.Second
	}
	if c.RetryMaxDelay <= 0 {
		c.RetryMaxDelay = time.Minute
	}
	if c.ShutdownGrace <= 0 {
		c.ShutdownGrace = 30 * time.Second
	}
	if c.FreshnessTimeout <= 0 {
		c.FreshnessTimeout = DefaultFreshnessTimeout
	}
}

// Controller syncs Jobs through the decider.
type Controller struct {
	cfg      Config
	kube     kubernetes.Interface
	decider  jobdeciderv1.JobDeciderClient
	recorder record.EventRecorder
	metrics  *Metrics
	now      func() time.Time
	// applier applies the plans; its hooks keep the expectations, the
	// own-writes guard and the metrics (applyHooks).
	applier *apply.Applier

	jobLister  batchlisters.JobLister
	podLister  corelisters.PodLister
	podIndexer cache.Indexer
	synced     []cache.InformerSynced
	// nodes is the node cache requests read (WatchNodes); nil sends none.
	nodes *nodeWatch

	queue       workqueue.TypedRateLimitingInterface[string]
	orphanQueue workqueue.TypedRateLimitingInterface[string]

	exp *apply.Expectations

	// writes holds the shim's own writes per Job until the caches show them.
	writes *apply.OwnWrites
	// freshCaches are the stores the freshness barrier waits on.
	freshCaches map[cachedResource]cacheView

	// draining is set once Run's context is done: no new sync starts.
	draining atomic.Bool
	// aborted is done once Abort was called: Run's syncs in flight are
	// cancelled with it, and a Run not yet acting never acts.
	aborted     context.Context
	cancelAbort context.CancelFunc

	statesMu sync.Mutex
	states   map[string]jobState
}

// jobState is the controller state the decider returned for one Job.
type jobState struct {
	uid   types.UID
	state *jobdeciderv1.ControllerState
}

// New wires a Controller to informers from factory. Call factory.Start after New.
func New(cfg Config, kube kubernetes.Interface, factory informers.SharedInformerFactory,
	decider jobdeciderv1.JobDeciderClient, recorder record.EventRecorder, metrics *Metrics) (*Controller, error) {
	cfg.defaults()
	if metrics == nil {
		metrics = NewMetrics(nil)
	}
	jobInformer := factory.Batch().V1().Jobs()
	podInformer := factory.Core().V1().Pods()
	c := &Controller{
		cfg:        cfg,
		kube:       kube,
		decider:    decider,
		recorder:   recorder,
		metrics:    metrics,
		now:        time.Now,
		jobLister:  jobInformer.Lister(),
		podLister:  podInformer.Lister(),
		podIndexer: podInformer.Informer().GetIndexer(),
		synced:     []cache.InformerSynced{jobInformer.Informer().HasSynced, podInformer.Informer().HasSynced},
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.NewTypedItemExponentialFailureRateLimiter[string](cfg.RetryBaseDelay, cfg.RetryMaxDelay),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: cfg.queueName("job")}),
		orphanQueue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.NewTypedItemExponentialFailureRateLimiter[string](cfg.RetryBaseDelay, cfg.RetryMaxDelay),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: cfg.queueName("orphan_pod")}),
		exp: apply.NewExpectations(time.Now),
		writes: apply.NewOwnWrites(map[cachedResource]syncedVersion{
			jobsCache: jobInformer.Informer().GetStore(),
			podsCache: podInformer.Informer().GetStore(),
		}),
		freshCaches: map[cachedResource]cacheView{
			jobsCache: jobInformer.Informer().GetStore(),
			podsCache: podInformer.Informer().GetStore(),
		},
		states: map[string]jobState{},
	}
	c.aborted, c.cancelAbort = context.WithCancel(context.Background())
	c.applier = apply.New(kube, apply.Options{Recorder: recorder, Hooks: c.applyHooks()})
	if err := podInformer.Informer().AddIndexers(cache.Indexers{
		podControllerUIDIndex: indexByControllerUID,
		podNodeIndex:          indexTerminatingByNode,
	}); err != nil {
		return nil, err
	}
	// Managed fields are never read; dropping them halves the cache.
	for _, inf := range []cache.SharedIndexInformer{jobInformer.Informer(), podInformer.Informer()} {
		if err := inf.SetTransform(dropManagedFields); err != nil {
			return nil, err
		}
	}
	if _, err := jobInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.addJob,
		UpdateFunc: func(_, cur any) { c.addJob(cur) },
		DeleteFunc: c.deleteJob,
	}); err != nil {
		return nil, err
	}
	if _, err := podInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.addPod,
		UpdateFunc: c.updatePod,
		DeleteFunc: c.deletePod,
	}); err != nil {
		return nil, err
	}
	return c, nil
}

func dropManagedFields(obj any) (any, error) {
	if o, err := meta.Accessor(obj); err == nil {
		o.SetManagedFields(nil)
	}
	return obj, nil
}

// orphanIndexKey is the podControllerUIDIndex key of a namespace's pods that
// have no controller; the prefix cannot begin a UID, so the keys never meet.
func orphanIndexKey(namespace string) string {
	return "orphan/" + namespace
}

// indexByControllerUID indexes a pod under its controller's UID, or, without
// one, under its namespace's orphan key: a Job's pods and the orphans it may
// adopt are then two index reads, not a scan of the namespace.
func indexByControllerUID(obj any) ([]string, error) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return nil, nil
	}
	if ref := controllerOf(pod); ref != nil {
		return []string{string(ref.UID)}, nil
	}
	return []string{orphanIndexKey(pod.Namespace)}, nil
}

// Synced reports whether the caches have been filled once.
func (c *Controller) Synced() bool {
	for _, s := range c.synced {
		if !s() {
			return false
		}
	}
	return true
}

// Run waits for the caches, then runs the workers until ctx is done. Then it
// drains: no new sync starts, and the syncs in flight finish on a context
// that outlives ctx by ShutdownGrace (cancelled only then), so a plan being
// applied is not cut between its writes. It returns once the workers are done.
func (c *Controller) Run(ctx context.Context) error {
	defer utilruntime.HandleCrash()
	logger := klog.FromContext(ctx)
	defer c.queue.ShutDown()
	defer c.orphanQueue.ShutDown()
	if c.nodes != nil {
		defer c.nodes.remove()
	}

	logger.Info("Starting job-decider shim", "controllerName", c.cfg.ControllerName, "workers", c.cfg.Workers)
	if !cache.WaitForCacheSync(ctx.Done(), c.synced...) {
		if ctx.Err() != nil {
			return nil // stopped before it started
		}
		return errors.New("caches did not sync")
	}
	c.awaitFreshCaches(ctx)
	if ctx.Err() != nil {
		return nil // stopped before it acted
	}
	workCtx, cancelWork := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelWork()
	defer context.AfterFunc(c.aborted, cancelWork)()
	if c.aborted.Err() != nil {
		return nil // aborted before it acted
	}
	var wg sync.WaitGroup
	for range c.cfg.Workers {
		wg.Go(func() { wait.UntilWithContext(ctx, func(context.Context) { c.jobWorker(ctx, workCtx) }, time.Second) })
	}
	wg.Go(func() {
		wait.UntilWithContext(ctx, func(context.Context) { c.orphanWorker(ctx, workCtx) }, time.Second)
	})
	<-ctx.Done()
	logger.Info("Shutting down job-decider shim: finishing the syncs in flight", "grace", c.cfg.ShutdownGrace)
	c.draining.Store(true)
	grace := time.AfterFunc(c.cfg.ShutdownGrace, cancelWork)
	defer grace.Stop()
	c.queue.ShutDownWithDrain()
	c.orphanQueue.ShutDownWithDrain()
	wg.Wait()
	return nil
}

// Abort cancels the syncs in flight at once, without Run's grace: for a
// shard whose Lease was lost, another replica may already be acting on it.
// Cancel Run's context as well; Run then returns as the workers stop.
func (c *Controller) Abort() {
	c.draining.Store(true)
	c.cancelAbort()
}

// jobWorker syncs Jobs until stop is done; each sync runs on work, which
// outlives stop by the shutdown grace.
func (c *Controller) jobWorker(stop, work context.Context) {
	for stop.Err() == nil && c.processNextJob(work) {
	}
}

func (c *Controller) processNextJob(ctx context.Context) bool {
	key, quit := c.queue.Get()
	if quit {
		return false
	}
	defer c.queue.Done(key)
	if c.draining.Load() {
		// After a shutdown, Get still hands out the queued keys; a
		// draining controller starts none of them.
		return false
	}
	requeueAfter, err := c.syncJob(ctx, key)
	switch {
	case err != nil:
		utilruntime.HandleErrorWithContext(ctx, err, "Syncing job", "key", key)
		c.queue.AddRateLimited(key)
	default:
		c.queue.Forget(key)
		if requeueAfter > 0 {
			c.queue.AddAfter(key, requeueAfter)
		}
	}
	return true
}

func (c *Controller) orphanWorker(stop, work context.Context) {
	for stop.Err() == nil && c.processNextOrphan(work) {
	}
}

func (c *Controller) processNextOrphan(ctx context.Context) bool {
	key, quit := c.orphanQueue.Get()
	if quit {
		return false
	}
	defer c.orphanQueue.Done(key)
	if c.draining.Load() {
		return false
	}
	if err := c.syncOrphanPod(ctx, key); err != nil {
		utilruntime.HandleErrorWithContext(ctx, err, "Removing the finalizer of an orphan pod", "pod", key)
		c.orphanQueue.AddRateLimited(key)
		return true
	}
	c.orphanQueue.Forget(key)
	return true
}

// ours reports whether a Job names this controller in spec.managedBy.
func (c *Controller) ours(job *batchv1.Job) bool {
	return job.Spec.ManagedBy != nil && *job.Spec.ManagedBy == c.cfg.ControllerName
}

// syncJob makes one decision for one Job and applies it.
func (c *Controller) syncJob(ctx context.Context, key string) (requeueAfter time.Duration, err error) {
	start := c.now()
	result := "error"
	defer func() {
		c.metrics.observeSync(result, time.Since(start))
		if !c.cfg.Shard.Whole() {
			c.metrics.shardSync(c.cfg.Shard.Index)
		}
	}()
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		result = "invalid_key"
		return 0, nil
	}
	// As upstream: decide only on caches that show this shim's own writes.
	if res, behind := c.writes.Behind(key); behind {
		klog.FromContext(ctx).V(4).Info("Cache behind the shim's own writes; waiting", "job", key, "cache", res)
		result = "cache_behind"
		return cacheBehindRetry, nil
	}
	job, err := c.jobLister.Jobs(ns).Get(name)
	if apierrors.IsNotFound(err) {
		c.forgetJob(key)
		result = "gone"
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	if !c.ours(job) {
		c.forgetJob(key)
		result = "skipped"
		return 0, nil
	}
	// Expectations before pods: an expectation met after this read is met
	// by an event the pod cache already showed when the pods are listed
	// next. Read after the pods, a removal met in between would leave a
	// pod listed with its finalizer yet no longer expected, and be
	// counted a second time.
	podChangesPending := c.exp.PodChangesPending(key)
	finalizerRemovalsPending := c.exp.PendingFinalizerRemovals(key)
	pods, err := c.podsForJob(job)
	if err != nil {
		return 0, err
	}
	snap := snapshot{
		Job:                      job,
		Pods:                     pods,
		Now:                      c.now(),
		State:                    c.state(key, job.UID),
		Controller:               c.cfg.ControllerName,
		PodChangesPending:        podChangesPending,
		FinalizerRemovalsPending: finalizerRemovalsPending,
		Nodes:                    c.nodeLookup(ctx),
	}
	req, notLean := snap.request()
	if notLean != nil {
		klog.FromContext(ctx).V(2).Info("Sending Kubernetes-shaped pods", "job", key, "reason", notLean)
	}
	resp, err := c.decide(ctx, req)
	if err != nil {
		return 0, err
	}
	logger := klog.FromContext(ctx)
	if logger.V(4).Enabled() {
		logger.V(4).Info("Plan", "job", key, "pods", len(pods), "plan", resp)
	} else {
		logger.V(2).Info("Plan", "job", key, "pods", len(pods), "actions", len(resp.GetActions()), "requeueAfter", resp.GetRequeueAfter().AsDuration())
	}
	res, err := c.applier.Apply(ctx, job, resp)
	if res.StateHolds() {
		// The returned state describes the Job as of the plan's first
		// status write (upstream saves its backoff record when it
		// flushes the status), so it holds once that write succeeded.
		c.setState(key, job.UID, resp.GetState())
	}
	if err != nil {
		return 0, err
	}
	result = "success"
	if d := resp.GetRequeueAfter(); d != nil {
		requeueAfter = d.AsDuration()
	}
	return requeueAfter, nil
}

// decide calls DecideJob with a timeout, measuring it.
func (c *Controller) decide(ctx context.Context, req *jobdeciderv1.DecideJobRequest) (*jobdeciderv1.DecideJobResponse, error) {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.DecideTimeout)
	defer cancel()
	start := time.Now()
	resp, err := c.decider.DecideJob(ctx, req)
	c.metrics.observeDecide(err, time.Since(start))
	if err != nil {
		return nil, fmt.Errorf("DecideJob: %w", err)
	}
	return resp, nil
}

// podsForJob returns the pods the Job controls, then the orphans its selector
// matches. A matching pod that another owner controls is not the Job's to claim
// (upstream's pod claim skips it), and the decider rejects a snapshot holding one.
// Two index reads, as upstream's listing: the pods under the Job's UID and the
// namespace's pods without a controller, so a sync costs the Job's pods, not
// every pod of a namespace shared by many Jobs. A pod sits under one key only,
// so none can be listed twice.
func (c *Controller) podsForJob(job *batchv1.Job) ([]*corev1.Pod, error) {
	owned, err := c.podIndexer.ByIndex(podControllerUIDIndex, string(job.UID))
	if err != nil {
		return nil, err
	}
	orphans, err := c.podIndexer.ByIndex(podControllerUIDIndex, orphanIndexKey(job.Namespace))
	if err != nil {
		return nil, err
	}
	// An unparseable selector selects no orphan; the decider reports it.
	selector, selectorErr := jobSelector(job)
	pods := make([]*corev1.Pod, 0, len(owned))
	for _, obj := range owned {
		// A UID is unique across namespaces; the check costs nothing.
		if pod, ok := obj.(*corev1.Pod); ok && pod.Namespace == job.Namespace {
			pods = append(pods, pod)
		}
	}
	if selectorErr != nil {
		return pods, nil
	}
	for _, obj := range orphans {
		if pod, ok := obj.(*corev1.Pod); ok && selector.Matches(labels.Set(pod.Labels)) {
			pods = append(pods, pod)
		}
	}
	return pods, nil
}

func (c *Controller) state(key string, uid types.UID) *jobdeciderv1.ControllerState {
	c.statesMu.Lock()
	defer c.statesMu.Unlock()
	if s, ok := c.states[key]; ok && s.uid == uid {
		return s.state
	}
	return nil
}

func (c *Controller) setState(key string, uid types.UID, state *jobdeciderv1.ControllerState) {
	c.statesMu.Lock()
	defer c.statesMu.Unlock()
	c.states[key] = jobState{uid: uid, state: state}
}

// cacheBehindRetry is how soon a Job whose caches lag this shim's own writes is tried again.
const cacheBehindRetry = 100 * time.Millisecond

// forgetJob drops what is kept for a Job that is gone or no longer ours.
func (c *Controller) forgetJob(key string) {
	c.statesMu.Lock()
	delete(c.states, key)
	c.statesMu.Unlock()
	c.exp.Forget(key)
	c.writes.Forget(key)
}

// JobsManaged counts the Jobs of this controller in its cache.
func (c *Controller) JobsManaged() int {
	jobs, err := c.jobLister.List(labels.Everything())
	if err != nil {
		return 0
	}
	n := 0
	for _, j := range jobs {
		if c.ours(j) {
			n++
		}
	}
	return n
}
