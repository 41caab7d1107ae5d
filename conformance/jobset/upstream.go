package main

// Running upstream: one Reconcile of sigs.k8s.io/jobset v0.12.0's
// JobSetReconciler over a controller-runtime fake client that holds the
// vector's JobSet and Jobs, with every write and event recorded in order.

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/go-logr/logr"
	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	jobset "sigs.k8s.io/jobset/api/jobset/v1alpha2"
	"sigs.k8s.io/jobset/pkg/controllers"
	"sigs.k8s.io/jobset/pkg/features"

	pb "job-decider.dev/clients/go/jobdecider/v1"
	"job-decider.dev/clients/go/kubejson"
	"job-decider.dev/testkit/vectors"
)

// The label (and annotation) keys a JobCreation decides; upstream sets more
// (uid, global and group indexes, job hash), which the caller derives itself.
var decidedKeys = []string{
	"jobset.sigs.k8s.io/job-index",
	"jobset.sigs.k8s.io/job-restart-attempt",
	"jobset.sigs.k8s.io/jobset-name",
	"jobset.sigs.k8s.io/replicatedjob-name",
	"jobset.sigs.k8s.io/replicatedjob-replicas",
	"jobset.sigs.k8s.io/restart-attempt",
}

var setupOnce struct {
	sync.Once
	err error
}

// setupUpstream turns on the RestartJob gate (v0.12.0 ships it off; our core
// models it on) and silences controller-runtime's logger.
func setupUpstream() error {
	setupOnce.Do(func() {
		ctrllog.SetLogger(logr.Discard())
		setupOnce.err = features.SetEnable(features.RestartJob, true)
	})
	return setupOnce.err
}

// effect is one thing upstream did, in the order it did it.
type effect struct {
	kind        string // "deleteJob", "status", "event"
	job         *pb.JobReference
	propagation string
	status      *jobset.JobSetStatus
	event       *pb.RecordEvent
}

// recorder is the reconciler's state of the world as it writes to it.
type recorder struct {
	mu      sync.Mutex
	effects []effect
	created []*batchv1.Job
	notes   []string // writes outside DecideJobSet's scope, for the report
}

func (r *recorder) add(e effect) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.effects = append(r.effects, e)
}

func (r *recorder) note(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.notes = append(r.notes, fmt.Sprintf(format, args...))
}

// Eventf implements k8s.io/client-go/tools/events.EventRecorder, the
// recorder JobSetReconciler takes; it formats the note as the real one does.
func (r *recorder) Eventf(regarding runtime.Object, _ runtime.Object, eventtype, reason, _, note string, args ...any) {
	msg := note
	if len(args) > 0 {
		msg = fmt.Sprintf(note, args...)
	}
	if _, ok := regarding.(*jobset.JobSet); !ok {
		r.note("event %s/%s on a %T: %s", eventtype, reason, regarding, msg)
		return
	}
	r.add(effect{kind: "event", event: &pb.RecordEvent{Type: eventtype, Reason: reason, Message: msg}})
}

// indexAdapter registers upstream's own field indexes on the fake client builder.
type indexAdapter struct{ b *fake.ClientBuilder }

func (a indexAdapter) IndexField(_ context.Context, obj client.Object, field string, fn client.IndexerFunc) error {
	a.b.WithIndex(obj, field, fn)
	return nil
}

// upstreamResult is what one Reconcile did, in the contract's canonical form.
type upstreamResult struct {
	resp *pb.DecideJobSetResponse
	err  error       // Reconcile's error, if any
	diff []fieldDiff // things upstream did that the contract cannot carry
	// created holds upstream's created Jobs by name, for label notes.
	created map[string]*batchv1.Job
	notes   []string
}

func runUpstream(v *vectors.JobSet) (res *upstreamResult, err error) {
	// The fake client's builder and upstream's code panic on some inputs; a
	// panic is reported as this vector's error, not the end of the run.
	defer func() {
		if p := recover(); p != nil {
			res, err = nil, fmt.Errorf("%s: upstream or the fake client panicked: %v", v.Name, p)
		}
	}()
	if err := setupUpstream(); err != nil {
		return nil, fmt.Errorf("turning on the RestartJob gate: %w", err)
	}
	js, err := jobSetFromRequest(v.Name, v.Request.GetJobSet())
	if err != nil {
		return nil, err
	}
	admission := admissionErrors(context.Background(), js)
	order := map[string]int{}
	objs := []client.Object{js}
	for i, m := range v.Request.GetJobs() {
		job, err := jobFromRequest(v.Name, i, m, js)
		if err != nil {
			return nil, err
		}
		if _, dup := order[job.Name]; dup {
			return nil, fmt.Errorf("%s: request.jobs[%d].metadata.name: %q listed twice", v.Name, i, job.Name)
		}
		order[job.Name] = i
		objs = append(objs, job)
	}

	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, fmt.Errorf("%s: scheme: %w", v.Name, err)
	}
	if err := jobset.AddToScheme(scheme); err != nil {
		return nil, fmt.Errorf("%s: scheme: %w", v.Name, err)
	}
	rec := &recorder{}
	b := fake.NewClientBuilder().
		WithScheme(scheme).
		WithObjects(objs...).
		WithStatusSubresource(&jobset.JobSet{}, &batchv1.Job{}).
		WithInterceptorFuncs(rec.interceptors(order))
	ctx := ctrl.LoggerInto(context.Background(), logr.Discard())
	if err := controllers.SetupJobSetIndexes(ctx, indexAdapter{b}); err != nil {
		return nil, fmt.Errorf("%s: upstream's indexes: %w", v.Name, err)
	}
	r := controllers.NewJobSetReconciler(b.Build(), scheme, rec)

	start := time.Now()
	_, recErr := r.Reconcile(ctx, ctrl.Request{NamespacedName: types.NamespacedName{Namespace: js.Namespace, Name: js.Name}})
	end := time.Now()

	res = &upstreamResult{err: recErr, created: map[string]*batchv1.Job{}, notes: rec.notes}
	for _, a := range admission {
		res.notes = append(res.notes, "upstream's API would reject this JobSet: "+a)
	}
	now := v.Request.GetNow().AsTime().Truncate(time.Second)
	res.resp, res.diff, err = rec.canonical(v, now, start, end)
	if err != nil {
		return nil, fmt.Errorf("%s: upstream's result: %w", v.Name, err)
	}
	for _, j := range rec.created {
		res.created[j.Name] = j
	}
	return res, nil
}

func (rec *recorder) interceptors(order map[string]int) interceptor.Funcs {
	return interceptor.Funcs{
		// The fake client lists by name; feed the Jobs in request order, as job-decider reads them.
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			if err := c.List(ctx, list, opts...); err != nil {
				return err
			}
			if jl, ok := list.(*batchv1.JobList); ok {
				sort.SliceStable(jl.Items, func(i, j int) bool { return order[jl.Items[i].Name] < order[jl.Items[j].Name] })
			}
			return nil
		},
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if job, ok := obj.(*batchv1.Job); ok {
				rec.mu.Lock()
				rec.created = append(rec.created, job.DeepCopy())
				rec.mu.Unlock()
			} else {
				rec.note("created %T %s (not decided by DecideJobSet)", obj, obj.GetName())
			}
			return c.Create(ctx, obj, opts...)
		},
		Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			do := client.DeleteOptions{}
			do.ApplyOptions(opts)
			prop := ""
			if do.PropagationPolicy != nil {
				prop = string(*do.PropagationPolicy)
			}
			if _, ok := obj.(*batchv1.Job); ok {
				rec.add(effect{kind: "deleteJob", job: &pb.JobReference{Name: obj.GetName(), Uid: string(obj.GetUID())}, propagation: prop})
			} else {
				rec.note("deleted %T %s", obj, obj.GetName())
			}
			return c.Delete(ctx, obj, opts...)
		},
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			if job, ok := obj.(*batchv1.Job); ok {
				rec.note("updated Job %s, spec.suspend=%v (child Jobs' suspend flag is the caller's)", job.Name, ptrBool(job.Spec.Suspend))
			} else {
				rec.note("updated %T %s", obj, obj.GetName())
			}
			return c.Update(ctx, obj, opts...)
		},
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			rec.note("patched %T %s", obj, obj.GetName())
			return c.Patch(ctx, obj, patch, opts...)
		},
		SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
			if js, ok := obj.(*jobset.JobSet); ok && sub == "status" {
				rec.add(effect{kind: "status", status: js.Status.DeepCopy()})
			} else {
				rec.note("updated %s of %T %s", sub, obj, obj.GetName())
			}
			return c.SubResource(sub).Update(ctx, obj, opts...)
		},
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
			rec.note("patched %s of %T %s", sub, obj, obj.GetName())
			return c.SubResource(sub).Patch(ctx, obj, patch, opts...)
		},
	}
}

func ptrBool(b *bool) string {
	if b == nil {
		return "unset"
	}
	return strconv.FormatBool(*b)
}

// canonical turns the recorded effects into a DecideJobSetResponse in the
// canonical form expected plans are compared in (see canon.go).
func (rec *recorder) canonical(v *vectors.JobSet, now, start, end time.Time) (*pb.DecideJobSetResponse, []fieldDiff, error) {
	resp := &pb.DecideJobSetResponse{}
	var extra []fieldDiff
	var deletes *pb.DeleteJobs
	for _, e := range rec.effects {
		if e.kind != "deleteJob" {
			deletes = nil
		}
		i := len(resp.Actions)
		switch e.kind {
		case "deleteJob":
			if deletes == nil {
				deletes = &pb.DeleteJobs{}
				resp.Actions = append(resp.Actions, &pb.JobSetAction{Kind: &pb.JobSetAction_DeleteJobs{DeleteJobs: deletes}})
			}
			if e.propagation != string(metav1.DeletePropagationForeground) {
				extra = append(extra, fieldDiff{Path: fmt.Sprintf("actions[%d].deleteJobs(propagation of %s)", len(resp.Actions)-1, e.job.Name), Left: e.propagation, Right: string(metav1.DeletePropagationForeground)})
			}
			deletes.Jobs = append(deletes.Jobs, e.job)
		case "status":
			st := e.status.DeepCopy()
			normaliseTimes(st, now, start, end)
			if st.PreviousInPlaceRestartAttempt != nil || st.CurrentInPlaceRestartAttempt != nil {
				extra = append(extra, fieldDiff{Path: fmt.Sprintf("actions[%d].updateStatus.status(in-place restart attempts)", i), Left: "set", Right: nil})
				st.PreviousInPlaceRestartAttempt, st.CurrentInPlaceRestartAttempt = nil, nil
			}
			ps := &pb.JobSetStatus{}
			if err := kubejson.FromKube(st, ps); err != nil {
				return nil, nil, err
			}
			resp.Actions = append(resp.Actions, &pb.JobSetAction{Kind: &pb.JobSetAction_UpdateStatus{UpdateStatus: &pb.UpdateJobSetStatus{Status: ps}}})
		case "event":
			resp.Actions = append(resp.Actions, &pb.JobSetAction{Kind: &pb.JobSetAction_RecordEvent{RecordEvent: e.event}})
		}
	}
	expectedLabels := map[string]*pb.JobCreation{}
	for _, jc := range v.Expected.GetJobsToCreate() {
		expectedLabels[jc.GetName()] = jc
	}
	for _, job := range rec.created {
		jc, d, err := jobCreation(job, expectedLabels[job.Name])
		if err != nil {
			return nil, nil, err
		}
		resp.JobsToCreate = append(resp.JobsToCreate, jc)
		extra = append(extra, d...)
	}
	canonicalise(resp)
	return resp, extra, nil
}

// normaliseTimes replaces the wall-clock times upstream stamped during the
// run (metav1.Now in updateCondition) by the vector's now; times carried over
// from the request are left alone.
func normaliseTimes(st *jobset.JobSetStatus, now, start, end time.Time) {
	lo, hi := start.Add(-time.Second), end.Add(time.Second)
	for i := range st.Conditions {
		t := st.Conditions[i].LastTransitionTime.Time
		if !t.Before(lo) && !t.After(hi) {
			st.Conditions[i].LastTransitionTime = metav1.NewTime(now)
		}
	}
}

// jobCreation is one created Job in the contract's terms: labels and
// annotations cut to the keys the contract decides (plus any the expected
// entry names), and a check that the pod template got the same ones.
func jobCreation(job *batchv1.Job, want *pb.JobCreation) (*pb.JobCreation, []fieldDiff, error) {
	keys := map[string]bool{}
	for _, k := range decidedKeys {
		keys[k] = true
	}
	for k := range want.GetLabels() {
		keys[k] = true
	}
	for k := range want.GetAnnotations() {
		keys[k] = true
	}
	cut := func(m map[string]string) map[string]string {
		out := map[string]string{}
		for k, v := range m {
			if keys[k] {
				out[k] = v
			}
		}
		return out
	}
	jc := &pb.JobCreation{
		Name:          job.Name,
		ReplicatedJob: job.Labels[jobset.ReplicatedJobNameKey],
		Labels:        cut(job.Labels),
		Annotations:   cut(job.Annotations),
	}
	idx, err := strconv.Atoi(job.Labels[jobset.JobIndexKey])
	if err != nil {
		return nil, nil, fmt.Errorf("created Job %s: label %s: %w", job.Name, jobset.JobIndexKey, err)
	}
	jc.JobIndex = int32(idx)
	var extra []fieldDiff
	if got := cut(job.Spec.Template.Labels); !mapsEqual(got, jc.Labels) {
		extra = append(extra, fieldDiff{Path: "jobsToCreate(" + job.Name + ").podTemplate.labels", Left: got, Right: jc.Labels})
	}
	if got := cut(job.Spec.Template.Annotations); !mapsEqual(got, jc.Annotations) {
		extra = append(extra, fieldDiff{Path: "jobsToCreate(" + job.Name + ").podTemplate.annotations", Left: got, Right: jc.Annotations})
	}
	return jc, extra, nil
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// undecidedLabels lists the label keys upstream put on created Jobs that the
// comparison leaves out, for the report.
func undecidedLabels(created map[string]*batchv1.Job) []string {
	keys := map[string]bool{}
	for _, j := range created {
		for k := range j.Labels {
			keys[k] = true
		}
	}
	for _, k := range decidedKeys {
		delete(keys, k)
	}
	out := make([]string, 0, len(keys))
	for k := range keys {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
