// Package canon is the canonical form of a DecideJobResponse, which both
// sides are compared in, and the comparison itself.
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
//
// updateStatus and recordEvent actions are never merged: each is one write.
package canon

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	pb "job-decider.dev/clients/go/jobdecider/v1"
)

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

// Canonicalize returns the canonical form of a response for a Job.
func Canonicalize(in *pb.DecideJobResponse, job *pb.Job) *pb.DecideJobResponse {
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

// Summary is a one-line description of a response, for progress output.
func Summary(r *pb.DecideJobResponse) string {
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
