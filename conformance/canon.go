package main

// The canonical form of a DecideJobResponse, which both sides are compared in.
//
// Rules (applied to upstream's translated log and to job-decider's response alike):
//   - consecutive list actions of one kind (createPods, deletePods,
//     removeFinalizers, adoptPods, releasePods) coalesce into one action;
//     a run of adoptions and releases becomes adoptPods then releasePods
//     (upstream claims pods one by one in informer order, which is random);
//   - pods within createPods are sorted by completion index, then
//     generateName; within the other list actions by name (upstream issues
//     them in parallel goroutines);
//   - an empty createPods generateName is the API default "<job name>-";
//   - the UID lists of status.uncountedTerminatedPods are sorted (upstream
//     appends them in informer order);
//   - timestamps in a written status are whole seconds, as the Kubernetes
//     API serialises them;
//   - a backoff record with no failures and no failure time is no state.
// updateStatus and recordEvent actions are never merged: each is one write.

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"
	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	pb "job-decider.dev/clients/go/jobdecider/v1"
	"job-decider.dev/clients/go/kubejson"
)

// translate turns the upstream sync's log into a response (before canonicalize).
func translate(s *snapshot, log *opLog) (*pb.DecideJobResponse, error) {
	ops := pairFinalizerPatches(log.ops)
	byName := map[string]*v1.Pod{}
	for _, p := range s.pods {
		if p.Namespace == s.job.Namespace {
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
			c, err := podCreation(s.job, o.created)
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
	wj, _ := jsonString(want)
	gj, _ := jsonString(got)
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

// listKind says which list action an action is, or "" for the others.
func listKind(a *pb.Action) string {
	switch a.GetKind().(type) {
	case *pb.Action_CreatePods:
		return "create"
	case *pb.Action_DeletePods:
		return "delete"
	case *pb.Action_RemoveFinalizers:
		return "removeFinalizers"
	case *pb.Action_AdoptPods, *pb.Action_ReleasePods:
		return "claim"
	}
	return ""
}

// canonicalize returns the canonical form of a response for a Job.
func canonicalize(in *pb.DecideJobResponse, job *pb.Job) *pb.DecideJobResponse {
	jobName := job.GetMetadata().GetName()
	out := &pb.DecideJobResponse{RequeueAfter: in.GetRequeueAfter()}
	if b := in.GetState().GetBackoff(); b != nil && (b.GetFailuresAfterLastSuccess() != 0 || b.GetLastFailureTime() != nil) {
		out.State = proto.Clone(in.GetState()).(*pb.ControllerState)
	}
	acts := in.GetActions()
	for i := 0; i < len(acts); {
		k := listKind(acts[i])
		if k == "" {
			a := proto.Clone(acts[i]).(*pb.Action)
			if us := a.GetUpdateStatus(); us != nil && us.Status != nil {
				canonicalStatus(us.Status)
			}
			out.Actions = append(out.Actions, a)
			i++
			continue
		}
		e := i
		for e < len(acts) && listKind(acts[e]) == k {
			e++
		}
		run := acts[i:e]
		i = e
		switch k {
		case "create":
			var pods []*pb.PodCreation
			for _, a := range run {
				for _, p := range a.GetCreatePods().GetPods() {
					p = proto.Clone(p).(*pb.PodCreation)
					if p.GetName() == "" && p.GetGenerateName() == "" {
						p.GenerateName = jobName + "-"
					}
					minimalCreation(p, job.GetSpec().GetTemplate())
					pods = append(pods, p)
				}
			}
			sort.SliceStable(pods, func(x, y int) bool {
				ix, iy := pods[x].CompletionIndex, pods[y].CompletionIndex
				if (ix == nil) != (iy == nil) {
					return ix == nil
				}
				if ix != nil && *ix != *iy {
					return *ix < *iy
				}
				if pods[x].GetGenerateName() != pods[y].GetGenerateName() {
					return pods[x].GetGenerateName() < pods[y].GetGenerateName()
				}
				return pods[x].GetName() < pods[y].GetName()
			})
			out.Actions = append(out.Actions, &pb.Action{Kind: &pb.Action_CreatePods{CreatePods: &pb.CreatePods{Pods: pods}}})
		case "delete":
			var pods []*pb.PodDeletion
			for _, a := range run {
				for _, p := range a.GetDeletePods().GetPods() {
					pods = append(pods, proto.Clone(p).(*pb.PodDeletion))
				}
			}
			sort.SliceStable(pods, func(x, y int) bool { return pods[x].GetName() < pods[y].GetName() })
			out.Actions = append(out.Actions, &pb.Action{Kind: &pb.Action_DeletePods{DeletePods: &pb.DeletePods{Pods: pods}}})
		case "removeFinalizers":
			var pods []*pb.PodReference
			for _, a := range run {
				pods = append(pods, cloneRefs(a.GetRemoveFinalizers().GetPods())...)
			}
			sortRefs(pods)
			out.Actions = append(out.Actions, &pb.Action{Kind: &pb.Action_RemoveFinalizers{RemoveFinalizers: &pb.RemoveFinalizers{Pods: pods}}})
		case "claim":
			var adopt, release []*pb.PodReference
			for _, a := range run {
				adopt = append(adopt, cloneRefs(a.GetAdoptPods().GetPods())...)
				release = append(release, cloneRefs(a.GetReleasePods().GetPods())...)
			}
			if len(adopt) > 0 {
				sortRefs(adopt)
				out.Actions = append(out.Actions, &pb.Action{Kind: &pb.Action_AdoptPods{AdoptPods: &pb.AdoptPods{Pods: adopt}}})
			}
			if len(release) > 0 {
				sortRefs(release)
				out.Actions = append(out.Actions, &pb.Action{Kind: &pb.Action_ReleasePods{ReleasePods: &pb.ReleasePods{Pods: release}}})
			}
		}
	}
	return out
}

// minimalCreation drops from a PodCreation what the template already gives
// the pod, so that two entries making the same pod compare equal: labels and
// annotations with the template's value, finalizers the template has, and
// env vars that every container and init container already defines (the
// contract appends a var only where it is missing).
func minimalCreation(p *pb.PodCreation, t *pb.PodTemplateSpec) {
	for k, v := range p.Labels {
		if tv, ok := t.GetMetadata().GetLabels()[k]; ok && tv == v {
			delete(p.Labels, k)
		}
	}
	if len(p.Labels) == 0 {
		p.Labels = nil
	}
	for k, v := range p.Annotations {
		if tv, ok := t.GetMetadata().GetAnnotations()[k]; ok && tv == v {
			delete(p.Annotations, k)
		}
	}
	if len(p.Annotations) == 0 {
		p.Annotations = nil
	}
	p.Finalizers = slices.DeleteFunc(p.Finalizers, func(f string) bool {
		return slices.Contains(t.GetMetadata().GetFinalizers(), f)
	})
	if len(p.Finalizers) == 0 {
		p.Finalizers = nil
	}
	containers := append(slices.Clone(t.GetSpec().GetInitContainers()), t.GetSpec().GetContainers()...)
	p.Env = slices.DeleteFunc(p.Env, func(e *pb.EnvVar) bool {
		for _, c := range containers {
			if !slices.ContainsFunc(c.GetEnv(), func(x *pb.EnvVar) bool { return x.GetName() == e.GetName() }) {
				return false
			}
		}
		return len(containers) > 0
	})
	if len(p.Env) == 0 {
		p.Env = nil
	}
}

func cloneRefs(in []*pb.PodReference) []*pb.PodReference {
	out := make([]*pb.PodReference, len(in))
	for i, r := range in {
		out[i] = proto.Clone(r).(*pb.PodReference)
	}
	return out
}

func sortRefs(r []*pb.PodReference) {
	sort.SliceStable(r, func(x, y int) bool { return r[x].GetName() < r[y].GetName() })
}

func canonicalStatus(s *pb.JobStatus) {
	if u := s.GetUncountedTerminatedPods(); u != nil {
		sort.Strings(u.Succeeded)
		sort.Strings(u.Failed)
	}
	trunc := func(t *timestamppb.Timestamp) {
		if t != nil {
			t.Nanos = 0
		}
	}
	trunc(s.StartTime)
	trunc(s.CompletionTime)
	for _, c := range s.GetConditions() {
		trunc(c.LastProbeTime)
		trunc(c.LastTransitionTime)
	}
}

// summary is a one-line description of a response, for progress output.
func summary(r *pb.DecideJobResponse) string {
	var parts []string
	for _, a := range r.GetActions() {
		switch k := a.GetKind().(type) {
		case *pb.Action_CreatePods:
			parts = append(parts, fmt.Sprintf("create %d", len(k.CreatePods.GetPods())))
		case *pb.Action_DeletePods:
			parts = append(parts, fmt.Sprintf("delete %d", len(k.DeletePods.GetPods())))
		case *pb.Action_RemoveFinalizers:
			parts = append(parts, fmt.Sprintf("removeFinalizers %d", len(k.RemoveFinalizers.GetPods())))
		case *pb.Action_AdoptPods:
			parts = append(parts, fmt.Sprintf("adopt %d", len(k.AdoptPods.GetPods())))
		case *pb.Action_ReleasePods:
			parts = append(parts, fmt.Sprintf("release %d", len(k.ReleasePods.GetPods())))
		case *pb.Action_UpdateStatus:
			parts = append(parts, "updateStatus")
		case *pb.Action_RecordEvent:
			parts = append(parts, "event "+k.RecordEvent.GetReason())
		}
	}
	if r.GetRequeueAfter() != nil {
		parts = append(parts, "requeue "+r.GetRequeueAfter().AsDuration().String())
	}
	if len(parts) == 0 {
		return "nothing"
	}
	return strings.Join(parts, ", ")
}
