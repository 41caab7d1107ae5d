// Command controller is "your own controller" with job-decider, about a
// screen: it watches the Jobs whose spec.managedBy names it, asks the
// job-decider service what to do with each (the Job and its pods, the state the
// previous plan returned, the writes its cache does not show yet), applies the
// plan with client-go (job-decider.dev/clients/go/apply) and looks again after
// the plan's requeueAfter.
//
//	go run . --kubeconfig ~/.kube/config --decider 127.0.0.1:50051 --controller-name example.com/my-controller
package main

import (
	"context"
	"errors"
	"flag"
	"log"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/timestamppb"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"

	"job-decider.dev/clients/go/apply"
	jobdeciderv1 "job-decider.dev/clients/go/jobdecider/v1"
	"job-decider.dev/clients/go/request"
)

func main() {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig file (in-cluster config when empty)")
	deciderAddr := flag.String("decider", "127.0.0.1:50051", "address of the job-decider service")
	name := flag.String("controller-name", "example.com/my-controller", "the spec.managedBy value of the Jobs to run")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()

	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	check(err)
	kube := kubernetes.NewForConfigOrDie(cfg)
	conn, err := grpc.NewClient(*deciderAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	check(err)
	decider := jobdeciderv1.NewJobDeciderClient(conn)
	events := record.NewBroadcaster(record.WithContext(ctx))
	events.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: kube.CoreV1().Events("")})
	recorder := events.NewRecorder(scheme.Scheme, corev1.EventSource{Component: *name})

	type saved struct {
		uid   types.UID
		state *jobdeciderv1.ControllerState
	}
	var mu sync.Mutex
	states := map[string]saved{} // the last plan's state, per Job key (and UID: a Job re-created under its name starts afresh)

	factory := informers.NewSharedInformerFactory(kube, 0)
	jobs, pods := factory.Batch().V1().Jobs(), factory.Core().V1().Pods()
	// What the caches do not show yet of our own writes, fed by the applier:
	// the pod changes to expect (sent with each request), and the writes a
	// sync waits for the caches to show before it decides again.
	exp := apply.NewExpectations(nil)
	writes := apply.NewOwnWrites(map[apply.Resource]apply.SyncedVersion{
		apply.ResourceJobs: jobs.Informer().GetStore(), apply.ResourcePods: pods.Informer().GetStore(),
	})
	hooks := exp.Hooks()
	hooks.PodWritten, hooks.StatusWritten = writes.PodWritten, writes.StatusWritten
	applier := apply.New(kube, apply.Options{Recorder: recorder, Hooks: hooks})
	queue := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]())
	enqueueJob := func(obj any) {
		if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = tomb.Obj
		}
		if job, ok := obj.(*batchv1.Job); ok && job.Spec.ManagedBy != nil && *job.Spec.ManagedBy == *name {
			queue.Add(apply.JobKey(job))
		}
	}
	// A pod event is the cache catching up with a write: note it, then decide again.
	podEvent := func(pod *corev1.Pod, added, gone bool) {
		ref := metav1.GetControllerOfNoCopy(pod)
		if ref == nil || ref.Kind != "Job" {
			return
		}
		key := pod.Namespace + "/" + ref.Name
		if added {
			exp.CreationObserved(key)
		}
		if gone || pod.DeletionTimestamp != nil {
			exp.DeletionObserved(key, string(pod.UID))
		}
		if gone || !hasFinalizer(pod) {
			exp.FinalizerRemovalObserved(key, string(pod.UID))
		}
		queue.Add(key)
	}
	_, err = jobs.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: enqueueJob, UpdateFunc: func(_, cur any) { enqueueJob(cur) }, DeleteFunc: enqueueJob,
	})
	check(err)
	_, err = pods.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { podEvent(obj.(*corev1.Pod), true, false) },
		UpdateFunc: func(_, cur any) { podEvent(cur.(*corev1.Pod), false, false) },
		DeleteFunc: func(obj any) {
			if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = tomb.Obj
			}
			if pod, ok := obj.(*corev1.Pod); ok {
				podEvent(pod, false, true)
			}
		},
	})
	check(err)
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())

	syncJob := func(key string) (time.Duration, error) {
		ns, jobName, _ := cache.SplitMetaNamespaceKey(key)
		job, err := jobs.Lister().Jobs(ns).Get(jobName)
		if apierrors.IsNotFound(err) {
			mu.Lock()
			delete(states, key)
			mu.Unlock()
			exp.Forget(key)
			writes.Forget(key)
			return 0, nil
		}
		if err != nil || job.Spec.ManagedBy == nil || *job.Spec.ManagedBy != *name {
			return 0, err
		}
		if _, behind := writes.Behind(key); behind {
			return 100 * time.Millisecond, nil // decide once the caches show our last plan
		}
		expectations := exp.Request(key) // before the pods are listed
		selector, err := metav1.LabelSelectorAsSelector(job.Spec.Selector)
		if err != nil {
			return 0, err
		}
		all, err := pods.Lister().Pods(ns).List(selector)
		if err != nil {
			return 0, err
		}
		var mine []*corev1.Pod // the Job's pods and the orphans it may adopt
		for _, p := range all {
			if ref := metav1.GetControllerOfNoCopy(p); ref == nil || ref.UID == job.UID {
				mine = append(mine, p)
			}
		}
		req, err := request.Build(job, mine)
		if errors.As(err, new(*request.NotLeanError)) {
			req, err = request.BuildFull(job, mine), nil
		}
		if err != nil {
			return 0, err
		}
		mu.Lock()
		if s := states[key]; s.uid == job.UID {
			req.State = s.state
		}
		mu.Unlock()
		req.Now, req.ControllerName, req.Expectations = timestamppb.Now(), *name, expectations
		callCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		plan, err := decider.DecideJob(callCtx, req)
		if err != nil {
			return 0, err
		}
		res, err := applier.Apply(ctx, job, plan)
		if res.StateHolds() {
			mu.Lock()
			states[key] = saved{job.UID, plan.GetState()}
			mu.Unlock()
		}
		log.Printf("job %s: %d pods, %d of %d actions applied, requeue after %s, err %v",
			key, len(mine), res.Applied, len(plan.GetActions()), plan.GetRequeueAfter().AsDuration(), err)
		return plan.GetRequeueAfter().AsDuration(), err
	}

	for range 2 {
		go func() {
			for {
				key, quit := queue.Get()
				if quit {
					return
				}
				after, err := syncJob(key)
				switch {
				case err != nil:
					log.Printf("job %s: %v", key, err)
					queue.AddRateLimited(key)
				case after > 0:
					queue.Forget(key)
					queue.AddAfter(key, after)
				default:
					queue.Forget(key)
				}
				queue.Done(key)
			}
		}()
	}
	log.Printf("controller %s: watching Jobs, deciding with %s", *name, *deciderAddr)
	<-ctx.Done()
	queue.ShutDown()
}

func hasFinalizer(pod *corev1.Pod) bool {
	for _, f := range pod.Finalizers {
		if f == apply.JobTrackingFinalizer {
			return true
		}
	}
	return false
}

func check(err error) {
	if err != nil {
		log.Fatal(err)
	}
}
