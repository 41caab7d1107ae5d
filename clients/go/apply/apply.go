// Package apply turns a job-decider plan into Kubernetes API calls with
// client-go: the code the job-decider shim itself applies its plans with.
//
// A plan (a DecideJobResponse) is checked whole before its first write, then
// its actions run in order and the first that fails stops it:
//
//   - create_pods: pods built from the Job's template overlaid with each
//     PodCreation, created in slow-start batches of 1, 2, 4, ..., stopping
//     after a batch in which a creation failed;
//   - delete_pods: each delete guarded by the pod's UID (a precondition),
//     the tracking finalizer removed first when the plan says so;
//   - remove_finalizers: a strategic merge patch per pod carrying the pod's
//     UID, so the API server refuses it for another pod of the same name;
//   - update_status: a PUT of the status subresource carrying the
//     resourceVersion of the Job the decision was made on; a second status
//     write in the same plan carries the resourceVersion the first returned,
//     so a Job changed since the decision answers 409 Conflict;
//   - record_event, adopt_pods (after a fresh read of the Job), release_pods,
//     fail_pods (a status patch to Failed, then a delete guarded by UID).
//
// A conflict, like any other error, stops the plan and is returned: decide
// again from fresh caches rather than retry the write. Keep the plan's state
// for the next request when [Result.StateHolds] says so.
package apply

import (
	"context"
	"errors"
	"fmt"
	"sync"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"

	jobdeciderv1 "job-decider.dev/clients/go/jobdecider/v1"
	"job-decider.dev/clients/go/kubejson"
)

// JobTrackingFinalizer is the finalizer through which Jobs track their pods.
const JobTrackingFinalizer = batchv1.JobTrackingFinalizer

// Action names, as the contract spells the Action kinds; hooks receive them.
const (
	ActionCreatePods       = "create_pods"
	ActionDeletePods       = "delete_pods"
	ActionRemoveFinalizers = "remove_finalizers"
	ActionUpdateStatus     = "update_status"
	ActionRecordEvent      = "record_event"
	ActionAdoptPods        = "adopt_pods"
	ActionReleasePods      = "release_pods"
	ActionFailPods         = "fail_pods"
	// ActionUnknown names an action of a kind this package does not know.
	ActionUnknown = "unknown"
)

// Reasons a plan is refused whole, passed to Hooks.PlanRefused.
const (
	// RefusedUnknownAction: the plan holds a kind from a newer decider.
	RefusedUnknownAction = "unknown_action"
	// RefusedInvalidAction: an action this package knows but cannot apply
	// (a pod that does not build, a status that does not convert).
	RefusedInvalidAction = "invalid_action"
)

// Event reasons recorded on the Job for its pod writes, as upstream's pod
// control records them.
const (
	ReasonSuccessfulCreate = "SuccessfulCreate"
	ReasonFailedCreate     = "FailedCreate"
	ReasonSuccessfulDelete = "SuccessfulDelete"
	ReasonFailedDelete     = "FailedDelete"
	// ReasonUnsupportedPlan is a plan refused whole before its first write.
	ReasonUnsupportedPlan = "UnsupportedPlan"
)

// ErrUnknownAction marks an action of a kind this package does not know: the
// decider is newer than the applier.
var ErrUnknownAction = errors.New("unknown action")

// podWriteConcurrency bounds the pod writes of one action in flight at once.
const podWriteConcurrency = 50

// Hooks are optional calls for what a controller keeps besides the API
// objects: expectations, metrics, fault injection. Each gets the Job the plan
// was decided on. Pod writes run in parallel, so hooks must be safe for
// concurrent use. A nil hook is skipped.
type Hooks struct {
	// BeforeStep is called before each step of a plan after its first
	// (each action, and each creation batch after the first).
	BeforeStep func(job *batchv1.Job)
	// ExpectCreations is called with the number of pods the action is
	// about to create, before the first create is sent.
	ExpectCreations func(job *batchv1.Job, n int)
	// CreationsNotMade is called with a number of planned creations that
	// failed or were never attempted: no watch will show them.
	CreationsNotMade func(job *batchv1.Job, n int)
	// ExpectDeletions is called with the UIDs of pods about to be deleted
	// (delete_pods, fail_pods), before the first delete is sent.
	ExpectDeletions func(job *batchv1.Job, uids []string)
	// DeletionNotMade is called for a pod whose deletion failed, or whose
	// pod was already gone: no watch will show this deletion.
	DeletionNotMade func(job *batchv1.Job, uid string)
	// ExpectFinalizerRemovals is called with the UIDs of pods whose
	// tracking finalizer remove_finalizers is about to remove.
	ExpectFinalizerRemovals func(job *batchv1.Job, uids []string)
	// FinalizerRemovalNotMade is called for a pod whose finalizer removal
	// failed or whose pod was gone.
	FinalizerRemovalNotMade func(job *batchv1.Job, uid string)
	// PodWritten is called with each pod the API server returned from a
	// create or a patch (its resourceVersion is the write's).
	PodWritten func(job *batchv1.Job, pod *corev1.Pod)
	// StatusWritten is called with the Job the API server returned from a
	// status write.
	StatusWritten func(job, written *batchv1.Job)
	// ActionFailed is called with the name of an action that failed
	// (ActionUnknown for a plan refused for an unknown kind).
	ActionFailed func(job *batchv1.Job, action string, err error)
	// PlanRefused is called when a plan is refused whole, before any write,
	// with RefusedUnknownAction or RefusedInvalidAction.
	PlanRefused func(job *batchv1.Job, reason string, err error)
}

// Options configure an Applier.
type Options struct {
	// Recorder records the events of the plan (record_event) and of the
	// pod writes on the Job; nil records none.
	Recorder record.EventRecorder
	// Hooks are called as the plan is applied.
	Hooks Hooks
}

// Applier applies plans with one client. It holds no per-Job state, so one
// Applier serves any number of Jobs and goroutines.
type Applier struct {
	kube     kubernetes.Interface
	recorder record.EventRecorder
	hooks    Hooks
}

// New returns an Applier that writes through client.
func New(client kubernetes.Interface, opts Options) *Applier {
	return &Applier{kube: client, recorder: opts.Recorder, hooks: opts.Hooks}
}

// Result is what Apply did.
type Result struct {
	// Job is the Job as the last successful status write returned it, or
	// the Job given to Apply when no status was written.
	Job *batchv1.Job
	// Applied is the number of actions applied in full, in order.
	Applied int
	// Complete is set when every action was applied.
	Complete bool
	// StatusWritten is set once an update_status action succeeded.
	StatusWritten bool
}

// StateHolds reports whether the plan's ControllerState is to be sent with
// the next request for this Job: the state describes the Job as of the plan's
// first status write, so it holds once that write succeeded (or the whole
// plan applied); otherwise send the state you sent before.
func (r Result) StateHolds() bool {
	return r.Complete || r.StatusWritten
}

// Apply applies plan to job, the Job the plan was decided on, as read (its
// resourceVersion guards the status write). It refuses the plan, writing
// nothing, when any action cannot be applied; otherwise it runs the actions
// in order and returns the first error, wrapped with the action's position
// and name.
func (a *Applier) Apply(ctx context.Context, job *batchv1.Job, plan *jobdeciderv1.DecideJobResponse) (Result, error) {
	r := &run{a: a, decided: job, job: job}
	actions := plan.GetActions()
	if err := r.validate(actions); err != nil {
		reason := RefusedInvalidAction
		if errors.Is(err, ErrUnknownAction) {
			reason = RefusedUnknownAction
			if h := a.hooks.ActionFailed; h != nil {
				h(job, ActionUnknown, err)
			}
		}
		if h := a.hooks.PlanRefused; h != nil {
			h(job, reason, err)
		}
		r.eventf(corev1.EventTypeWarning, ReasonUnsupportedPlan, "Plan refused, nothing applied: %v", err)
		return r.result(0, false), err
	}
	for i, action := range actions {
		if i > 0 {
			r.beforeStep()
		}
		name, err := r.applyOne(ctx, action)
		if err != nil {
			if h := a.hooks.ActionFailed; h != nil {
				h(job, name, err)
			}
			return r.result(i, false), fmt.Errorf("action %d of %d (%s): %w", i+1, len(actions), name, err)
		}
	}
	return r.result(len(actions), true), nil
}

// run is one plan being applied to one Job.
type run struct {
	a *Applier
	// decided is the Job the plan was decided on; hooks receive it.
	decided *batchv1.Job
	// job is decided until a status write; then the object the API server
	// returned, so a second write in the same plan carries the current
	// resourceVersion.
	job *batchv1.Job
	// statusWritten is set once an UpdateStatus has succeeded.
	statusWritten bool
}

func (r *run) result(applied int, complete bool) Result {
	return Result{Job: r.job, Applied: applied, Complete: complete, StatusWritten: r.statusWritten}
}

func (r *run) beforeStep() {
	if h := r.a.hooks.BeforeStep; h != nil {
		h(r.decided)
	}
}

func (r *run) event(eventType, reason, message string) {
	if r.a.recorder != nil {
		r.a.recorder.Event(r.decided, eventType, reason, message)
	}
}

func (r *run) eventf(eventType, reason, format string, args ...any) {
	if r.a.recorder != nil {
		r.a.recorder.Eventf(r.decided, eventType, reason, format, args...)
	}
}

func (r *run) applyOne(ctx context.Context, action *jobdeciderv1.Action) (string, error) {
	switch kind := action.GetKind().(type) {
	case *jobdeciderv1.Action_CreatePods:
		return ActionCreatePods, r.createPods(ctx, kind.CreatePods.GetPods())
	case *jobdeciderv1.Action_DeletePods:
		return ActionDeletePods, r.deletePods(ctx, kind.DeletePods.GetPods())
	case *jobdeciderv1.Action_RemoveFinalizers:
		return ActionRemoveFinalizers, r.removeFinalizers(ctx, kind.RemoveFinalizers.GetPods())
	case *jobdeciderv1.Action_UpdateStatus:
		return ActionUpdateStatus, r.updateStatus(ctx, kind.UpdateStatus.GetStatus())
	case *jobdeciderv1.Action_RecordEvent:
		e := kind.RecordEvent
		r.event(e.GetType(), e.GetReason(), e.GetMessage())
		return ActionRecordEvent, nil
	case *jobdeciderv1.Action_AdoptPods:
		return ActionAdoptPods, r.adoptPods(ctx, kind.AdoptPods.GetPods())
	case *jobdeciderv1.Action_ReleasePods:
		return ActionReleasePods, r.releasePods(ctx, kind.ReleasePods.GetPods())
	case *jobdeciderv1.Action_FailPods:
		return ActionFailPods, r.failPods(ctx, kind.FailPods.GetPods())
	default:
		// validate refuses such a plan before its first write.
		return ActionUnknown, fmt.Errorf("%w %T", ErrUnknownAction, kind)
	}
}

// validate checks, without writing, that every action of the plan is one
// this package knows and can apply: a plan refused part-way would leave its
// prefix written, and each retry would write that prefix again.
func (r *run) validate(actions []*jobdeciderv1.Action) error {
	for i, action := range actions {
		if err := r.validateOne(action); err != nil {
			return fmt.Errorf("action %d of %d: %w", i+1, len(actions), err)
		}
	}
	return nil
}

func (r *run) validateOne(action *jobdeciderv1.Action) error {
	switch kind := action.GetKind().(type) {
	case *jobdeciderv1.Action_CreatePods:
		for _, pc := range kind.CreatePods.GetPods() {
			if _, err := PodFromTemplate(r.job, pc); err != nil {
				return fmt.Errorf("%s: %w", ActionCreatePods, err)
			}
		}
	case *jobdeciderv1.Action_UpdateStatus:
		var status batchv1.JobStatus
		if err := kubejson.ToKube(kind.UpdateStatus.GetStatus(), &status); err != nil {
			return fmt.Errorf("%s: converting the status: %w", ActionUpdateStatus, err)
		}
	case *jobdeciderv1.Action_FailPods:
		for _, p := range kind.FailPods.GetPods() {
			if _, err := PodFailurePatch(p, metav1.Time{}); err != nil {
				return err
			}
		}
	case *jobdeciderv1.Action_DeletePods, *jobdeciderv1.Action_RemoveFinalizers, *jobdeciderv1.Action_RecordEvent,
		*jobdeciderv1.Action_AdoptPods, *jobdeciderv1.Action_ReleasePods:
	default:
		// A newer decider's kind arrives here with no kind set.
		return fmt.Errorf("%w %T: this applier is older than the decider", ErrUnknownAction, kind)
	}
	return nil
}

// forEachPod runs fn on every pod, a bounded number at once, and joins the errors.
func forEachPod[T any](pods []T, fn func(T) error) error {
	errs := make([]error, len(pods))
	var wg sync.WaitGroup
	sem := make(chan struct{}, podWriteConcurrency)
	for i, p := range pods {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			errs[i] = fn(p)
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}
