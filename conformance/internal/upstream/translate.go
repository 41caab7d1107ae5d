package upstream

import (
	"fmt"
	"slices"
	"strconv"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	pb "job-decider.dev/clients/go/jobdecider/v1"
	"job-decider.dev/clients/go/kubejson"
	"job-decider.dev/conformance/internal/canon"
)

// translate turns the upstream sync's log into a response (before canon.Canonicalize).
func translate(s *Snapshot, log *opLog) (*pb.DecideJobResponse, error) {
	ops := pairFinalizerPatches(log.ops)
	byName := map[string]*v1.Pod{}
	for _, p := range s.Pods {
		if p.Namespace == s.Job.Namespace {
			byName[p.Name] = p
		}
	}
	ref := func(name string) *pb.PodReference {
		r := &pb.PodReference{Name: name}
		if p := byName[name]; p != nil {
			r.Uid = string(p.UID)
		}
		return r
	}
	resp := &pb.DecideJobResponse{}
	for _, o := range ops {
		if o.paired {
			continue
		}
		var a *pb.Action
		switch o.kind {
		case opAdopt:
			a = &pb.Action{Kind: &pb.Action_AdoptPods{AdoptPods: &pb.AdoptPods{Pods: []*pb.PodReference{ref(o.pod)}}}}
		case opRelease:
			a = &pb.Action{Kind: &pb.Action_ReleasePods{ReleasePods: &pb.ReleasePods{Pods: []*pb.PodReference{ref(o.pod)}}}}
		case opRemoveFinalizer:
			a = &pb.Action{Kind: &pb.Action_RemoveFinalizers{RemoveFinalizers: &pb.RemoveFinalizers{Pods: []*pb.PodReference{ref(o.pod)}}}}
		case opDelete:
			d := &pb.PodDeletion{Name: o.pod, RemoveFinalizerFirst: o.removeFinalizerFirst}
			if p := byName[o.pod]; p != nil {
				d.Uid = string(p.UID)
				d.Ready = isPodReady(p)
			}
			a = &pb.Action{Kind: &pb.Action_DeletePods{DeletePods: &pb.DeletePods{Pods: []*pb.PodDeletion{d}}}}
		case opCreate:
			c, err := podCreation(s.Job, o.created)
			if err != nil {
				return nil, err
			}
			a = &pb.Action{Kind: &pb.Action_CreatePods{CreatePods: &pb.CreatePods{Pods: []*pb.PodCreation{c}}}}
		case opUpdateStatus:
			st := &pb.JobStatus{}
			if err := kubejson.FromKube(o.status, st); err != nil {
				return nil, fmt.Errorf("job status: %w", err)
			}
			a = &pb.Action{Kind: &pb.Action_UpdateStatus{UpdateStatus: &pb.UpdateStatus{Status: st}}}
		case opEvent:
			a = &pb.Action{Kind: &pb.Action_RecordEvent{RecordEvent: &pb.RecordEvent{Type: o.event[0], Reason: o.event[1], Message: o.event[2]}}}
		}
		resp.Actions = append(resp.Actions, a)
	}
	for _, d := range log.requeues {
		resp.RequeueAfter = minDuration(resp.RequeueAfter, d)
	}
	return resp, nil
}

// pairFinalizerPatches ties each delete to a finalizer patch of the same pod
// issued just before it, in the same run of pod patches and deletes (upstream
// patches the finalizer off and then deletes, per pod, in parallel goroutines).
func pairFinalizerPatches(in []op) []op {
	ops := slices.Clone(in)
	for i := range ops {
		if ops[i].kind != opDelete {
			continue
		}
		for k := i - 1; k >= 0; k-- {
			if ops[k].kind != opRemoveFinalizer && ops[k].kind != opDelete {
				break
			}
			if ops[k].kind == opRemoveFinalizer && !ops[k].paired && ops[k].pod == ops[i].pod {
				ops[k].paired = true
				ops[i].removeFinalizerFirst = true
				break
			}
		}
	}
	return ops
}

func minDuration(cur *durationpb.Duration, d time.Duration) *durationpb.Duration {
	if cur == nil || d < cur.AsDuration() {
		return durationpb.New(d)
	}
	return cur
}

// podCreation diffs a pod upstream created against the Job's template.
func podCreation(j *batchv1.Job, pod *v1.Pod) (*pb.PodCreation, error) {
	t := &j.Spec.Template
	c := &pb.PodCreation{Name: pod.Name, GenerateName: pod.GenerateName, Hostname: pod.Spec.Hostname}
	if t.Spec.Hostname == pod.Spec.Hostname {
		c.Hostname = ""
	}
	c.Labels = addedEntries(t.Labels, pod.Labels)
	c.Annotations = addedEntries(t.Annotations, pod.Annotations)
	for _, f := range pod.Finalizers {
		if !slices.Contains(t.Finalizers, f) {
			c.Finalizers = append(c.Finalizers, f)
		}
	}
	// Only an Indexed Job's pods have an index; a NonIndexed Job's template
	// may carry the annotation, which is then just copied.
	indexed := j.Spec.CompletionMode != nil && *j.Spec.CompletionMode == batchv1.IndexedCompletion
	if v, ok := pod.Annotations[batchv1.JobCompletionIndexAnnotation]; ok && indexed {
		if n, err := strconv.ParseInt(v, 10, 32); err == nil {
			c.CompletionIndex = proto.Int32(int32(n))
		}
	}
	seenEnv := map[string]bool{}
	collect := func(tc, pc []v1.Container) error {
		if len(tc) != len(pc) {
			return fmt.Errorf("created pod has %d containers, template %d", len(pc), len(tc))
		}
		for i := range pc {
			for _, e := range pc[i].Env {
				if slices.ContainsFunc(tc[i].Env, func(x v1.EnvVar) bool { return x.Name == e.Name }) || seenEnv[e.Name] {
					continue
				}
				seenEnv[e.Name] = true
				pe := &pb.EnvVar{}
				if err := kubejson.FromKube(e, pe); err != nil {
					return err
				}
				c.Env = append(c.Env, pe)
			}
		}
		return nil
	}
	if err := collect(t.Spec.InitContainers, pod.Spec.InitContainers); err != nil {
		return nil, err
	}
	if err := collect(t.Spec.Containers, pod.Spec.Containers); err != nil {
		return nil, err
	}
	for _, r := range pod.OwnerReferences {
		if slices.ContainsFunc(t.OwnerReferences, func(x metav1.OwnerReference) bool { return x.UID == r.UID }) {
			continue
		}
		if c.OwnerReference != nil {
			return nil, fmt.Errorf("created pod has more than one new ownerReference")
		}
		c.OwnerReference = &pb.OwnerReference{}
		if err := kubejson.FromKube(r, c.OwnerReference); err != nil {
			return nil, err
		}
	}
	if err := checkCreation(j, c, pod); err != nil {
		return nil, fmt.Errorf("createPods cannot express the pod upstream created: %w", err)
	}
	return c, nil
}

// checkCreation applies a PodCreation to the template as the contract says a
// caller would, and checks the result is the pod upstream created, so that the
// canonical form loses nothing upstream did.
func checkCreation(j *batchv1.Job, c *pb.PodCreation, created *v1.Pod) error {
	t := j.Spec.Template.DeepCopy()
	want := &v1.Pod{ObjectMeta: *t.ObjectMeta.DeepCopy(), Spec: t.Spec}
	want.Name = c.Name
	want.GenerateName = c.GenerateName
	if want.GenerateName == "" && want.Name == "" {
		want.GenerateName = j.Name + "-"
	}
	for k, v := range c.Labels {
		if want.Labels == nil {
			want.Labels = map[string]string{}
		}
		want.Labels[k] = v
	}
	for k, v := range c.Annotations {
		if want.Annotations == nil {
			want.Annotations = map[string]string{}
		}
		want.Annotations[k] = v
	}
	for _, f := range c.Finalizers {
		if !slices.Contains(want.Finalizers, f) {
			want.Finalizers = append(want.Finalizers, f)
		}
	}
	if c.Hostname != "" {
		want.Spec.Hostname = c.Hostname
	}
	addEnv := func(cs []v1.Container) error {
		for i := range cs {
			for _, e := range c.Env {
				if slices.ContainsFunc(cs[i].Env, func(x v1.EnvVar) bool { return x.Name == e.GetName() }) {
					continue
				}
				var ke v1.EnvVar
				if err := kubejson.ToKube(e, &ke); err != nil {
					return err
				}
				cs[i].Env = append(cs[i].Env, ke)
			}
		}
		return nil
	}
	if err := addEnv(want.Spec.InitContainers); err != nil {
		return err
	}
	if err := addEnv(want.Spec.Containers); err != nil {
		return err
	}
	if c.OwnerReference != nil {
		var r metav1.OwnerReference
		if err := kubejson.ToKube(c.OwnerReference, &r); err != nil {
			return err
		}
		want.OwnerReferences = append(want.OwnerReferences, r)
	}
	got := created.DeepCopy()
	// Maps that are empty and maps that are absent mean the same.
	for _, p := range []*v1.Pod{want, got} {
		if len(p.Labels) == 0 {
			p.Labels = nil
		}
		if len(p.Annotations) == 0 {
			p.Annotations = nil
		}
		if len(p.Finalizers) == 0 {
			p.Finalizers = nil
		}
	}
	wj, _ := canon.JSONString(want)
	gj, _ := canon.JSONString(got)
	if wj != gj {
		return fmt.Errorf("applying the entry gives\n  %s\nupstream created\n  %s", wj, gj)
	}
	return nil
}

func addedEntries(base, got map[string]string) map[string]string {
	var out map[string]string
	for k, v := range got {
		if bv, ok := base[k]; ok && bv == v {
			continue
		}
		if out == nil {
			out = map[string]string{}
		}
		out[k] = v
	}
	return out
}
