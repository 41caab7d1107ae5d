package cluster

import (
	"fmt"
	"strconv"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"
	pb "job-decider.dev/clients/go/jobdecider/v1"
	"job-decider.dev/conformance/internal/gen"
)

// Event is one thing that happens to the cluster outside the controller.
type Event struct {
	Kind      string
	Pod       string
	Container string
	Code      int32
	Reason    string
	N         int32
	D         time.Duration
}

// String is the event as the trace prints it.
func (e Event) String() string {
	switch e.Kind {
	case "advance":
		return "clock +" + e.D.String()
	case "fail", "failInit":
		return fmt.Sprintf("%s %s (container %s exit %d)", e.Kind, e.Pod, e.Container, e.Code)
	case "disrupt", "evict", "failCondition":
		return fmt.Sprintf("%s %s (%s)", e.Kind, e.Pod, e.Reason)
	case "parallelism":
		return fmt.Sprintf("parallelism %d", e.N)
	case "orphan":
		return fmt.Sprintf("orphan (shape %d)", e.N)
	case "suspend", "resume", "deleteJob":
		return e.Kind
	}
	return e.Kind + " " + e.Pod
}

// ContainerNames lists the containers by name.
func ContainerNames(cs []*pb.Container) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Name)
	}
	return out
}

// OwnedBy reports whether the Job is the pod's controller.
func OwnedBy(p *pb.Pod, j *pb.Job) bool {
	for _, r := range p.Metadata.OwnerReferences {
		if r.Uid == j.Metadata.Uid && r.GetController() {
			return true
		}
	}
	return false
}

// PodReady reports whether the pod has a Ready condition that is True.
func PodReady(p *pb.Pod) bool {
	for _, c := range p.GetStatus().GetConditions() {
		if c.Type == "Ready" {
			return c.Status == "True"
		}
	}
	return false
}

// ApplyEvent applies a world event; every event but a clock advance takes one second.
func (c *Cluster) ApplyEvent(e Event) {
	if e.Kind == "advance" {
		c.Now = c.Now.Add(e.D)
		return
	}
	c.Now = c.Now.Add(time.Second)
	t := timestamppb.New(c.Now.Truncate(time.Second)) // the API stores whole seconds
	if e.Kind == "suspend" || e.Kind == "resume" || e.Kind == "parallelism" || e.Kind == "orphan" || e.Kind == "deleteJob" {
		c.JobEvent(e, t)
		return
	}
	_, p := c.Pod(e.Pod)
	if p == nil {
		return
	}
	spec := c.Job.Spec.Template.Spec
	st := p.Status
	setReady := func(ready bool) {
		status := map[bool]string{true: "True", false: "False"}[ready]
		for _, cond := range st.Conditions {
			if cond.Type == "Ready" {
				if cond.Status != status {
					cond.Status = status
					cond.LastTransitionTime = t
				}
				return
			}
		}
		st.Conditions = append(st.Conditions, &pb.PodCondition{Type: "Ready", Status: status, LastTransitionTime: t})
	}
	// terminate ends every container; the named one with code, the rest with rest.
	terminate := func(name string, code, rest int32) {
		for _, cs := range st.ContainerStatuses {
			started := cs.GetState().GetRunning().GetStartedAt()
			if started == nil {
				started = t
			}
			c := rest
			if cs.Name == name {
				c = code
			}
			cs.Ready = false
			cs.State = &pb.ContainerState{Terminated: &pb.ContainerStateTerminated{ExitCode: c,
				Reason: map[bool]string{true: "Completed", false: "Error"}[c == 0], StartedAt: started, FinishedAt: t}}
		}
		setReady(false)
	}
	addCondition := func(typ, reason string) {
		st.Conditions = append(st.Conditions, &pb.PodCondition{Type: typ, Status: "True", Reason: reason, LastTransitionTime: t})
	}
	if e.Kind == "quickSucceed" {
		// Scheduled, run and done between two syncs.
		e.Kind = "succeed"
		Start(p, spec, t)
	}
	switch e.Kind {
	case "start":
		Start(p, spec, t)
		setReady(false)
	case "ready":
		for _, cs := range st.ContainerStatuses {
			cs.Ready = true
		}
		setReady(true)
	case "succeed":
		st.Phase = "Succeeded"
		terminate("", 0, 0)
	case "fail":
		st.Phase = "Failed"
		terminate(e.Container, e.Code, 0)
	case "restart":
		for _, cs := range st.ContainerStatuses {
			if cs.Name == e.Container {
				cs.RestartCount++
				cs.Ready = false
				cs.State = &pb.ContainerState{Running: &pb.ContainerStateRunning{StartedAt: t}}
			}
		}
		setReady(false)
	case "failInit":
		st.Phase = "Failed"
		st.InitContainerStatuses = []*pb.ContainerStatus{{Name: e.Container, State: &pb.ContainerState{Terminated: &pb.ContainerStateTerminated{
			ExitCode: e.Code, Reason: "Error", StartedAt: t, FinishedAt: t}}}}
		st.ContainerStatuses = nil
		for _, ct := range spec.Containers {
			st.ContainerStatuses = append(st.ContainerStatuses, &pb.ContainerStatus{Name: ct.Name,
				State: &pb.ContainerState{Waiting: &pb.ContainerStateWaiting{Reason: "PodInitializing"}}})
		}
		setReady(false)
	case "failCondition":
		st.Phase = "Failed"
		addCondition(e.Reason, "Test")
		setReady(false)
	case "disrupt":
		addCondition("DisruptionTarget", e.Reason)
		st.Phase = "Failed"
		terminate("", 137, 137)
	case "evict":
		addCondition("DisruptionTarget", e.Reason)
		c.DeletePod(p, c.Now)
	case "delete":
		c.DeletePod(p, c.Now)
	case "kubeletStop":
		if !Terminal(p) {
			st.Phase = "Failed"
			if len(st.ContainerStatuses) == 0 || st.ContainerStatuses[0].GetState().GetRunning() == nil {
				setReady(false)
			} else {
				terminate("", 143, 143)
			}
		}
		p.Metadata.DeletionGracePeriodSeconds = proto.Int64(0)
	case "unlabel":
		delete(p.Metadata.Labels, "batch.kubernetes.io/controller-uid")
	}
	c.Collect()
}

// Start schedules a pod and starts its containers (after its init containers).
func Start(p *pb.Pod, spec *pb.PodSpec, t *timestamppb.Timestamp) {
	st := p.Status
	p.Spec.NodeName = []string{"node-a", "node-b"}[len(p.Metadata.Name)%2]
	st.Phase = "Running"
	st.ContainerStatuses = nil
	for _, ct := range spec.Containers {
		st.ContainerStatuses = append(st.ContainerStatuses, &pb.ContainerStatus{Name: ct.Name,
			State: &pb.ContainerState{Running: &pb.ContainerStateRunning{StartedAt: t}}})
	}
	st.InitContainerStatuses = nil
	for _, ct := range spec.InitContainers {
		st.InitContainerStatuses = append(st.InitContainerStatuses, &pb.ContainerStatus{Name: ct.Name,
			State: &pb.ContainerState{Terminated: &pb.ContainerStateTerminated{Reason: "Completed", StartedAt: t, FinishedAt: t}}})
	}
}

// JobEvent applies a world event that changes the Job itself.
func (c *Cluster) JobEvent(e Event, t *timestamppb.Timestamp) {
	j := c.Job
	switch e.Kind {
	case "suspend", "resume":
		j.Spec.Suspend = proto.Bool(e.Kind == "suspend")
	case "parallelism":
		j.Spec.Parallelism = proto.Int32(e.N)
	case "orphan":
		c.Created++
		name := fmt.Sprintf("orphan-%s", Suffix(c.Created))
		labels := gen.CopyMap(j.Spec.Template.Metadata.Labels)
		var ann map[string]string
		if j.Spec.GetCompletionMode() == "Indexed" && c.Created%2 == 0 {
			ix := strconv.Itoa(c.Created % int(max(1, j.Spec.GetCompletions())))
			ann = map[string]string{gen.IndexKey: ix}
			labels[gen.IndexKey] = ix
		}
		p := &pb.Pod{
			Metadata: &pb.ObjectMeta{Name: name, Namespace: j.Metadata.Namespace, Uid: fmt.Sprintf("orphan-uid-%d", c.Created),
				CreationTimestamp: t, Labels: labels, Annotations: ann},
			Spec: &pb.PodSpecSummary{NodeName: "node-a"},
			Status: &pb.PodStatus{Phase: "Running", ContainerStatuses: []*pb.ContainerStatus{{Name: j.Spec.Template.Spec.Containers[0].Name,
				State: &pb.ContainerState{Running: &pb.ContainerStateRunning{StartedAt: t}}}},
				Conditions: []*pb.PodCondition{{Type: "Ready", Status: "False", LastTransitionTime: t}}},
		}
		OrphanShape(p, j, e.N, t)
		c.Pods = append(c.Pods, p)
		return
	case "deleteJob":
		// Foreground deletion: the Job keeps existing, marked, while the
		// garbage collector deletes the pods it owns.
		j.Metadata.DeletionTimestamp = t
		j.Metadata.Finalizers = append(j.Metadata.Finalizers, "foregroundDeletion")
		for _, p := range c.Pods {
			if OwnedBy(p, j) {
				c.DeletePod(p, c.Now)
			}
		}
		c.Collect()
	}
	j.Metadata.Generation++
	c.BumpRV()
}

// OrphanShape varies a new orphan by the bits of n: its non-controller owner
// references (none; the Job; others; the Job's uid under another kind and
// others), its phase (Running, or already Succeeded or Failed) and whether
// it carries the tracking finalizer already.
func OrphanShape(p *pb.Pod, j *pb.Job, n int32, t *timestamppb.Timestamp) {
	m := p.Metadata
	other := &pb.OwnerReference{ApiVersion: "apps/v1", Kind: "ReplicaSet", Name: "rs", Uid: "uid-rs", BlockOwnerDeletion: proto.Bool(true)}
	switch n & 3 {
	case 1:
		m.OwnerReferences = []*pb.OwnerReference{{ApiVersion: "batch/v1", Kind: "Job", Name: j.Metadata.Name, Uid: j.Metadata.Uid, Controller: proto.Bool(false)}}
	case 2:
		m.OwnerReferences = []*pb.OwnerReference{other}
	case 3:
		m.OwnerReferences = []*pb.OwnerReference{other, {ApiVersion: "v1", Kind: "ConfigMap", Name: "cm", Uid: j.Metadata.Uid}}
	}
	if phase := (n >> 2) & 3; phase >= 2 {
		code, reason := int32(0), "Completed"
		p.Status.Phase = "Succeeded"
		if phase == 3 {
			code, reason, p.Status.Phase = 1, "Error", "Failed"
		}
		p.Status.ContainerStatuses[0].State = &pb.ContainerState{Terminated: &pb.ContainerStateTerminated{
			ExitCode: code, Reason: reason, StartedAt: t, FinishedAt: t}}
	}
	if n&16 != 0 {
		m.Finalizers = append(m.Finalizers, gen.Finalizer)
	}
}
