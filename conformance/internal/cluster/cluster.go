package cluster

// A simulated cluster for multi-sync lifecycles: one Job, its pods, the
// clock, the caller's controller state and the events recorded so far. A
// plan (a canonical DecideJobResponse) is applied to it the way a caller of
// job-decider applies one against a real API server; world events (pods
// starting, finishing, being deleted, the clock moving, the Job being edited)
// are applied by lifecycle.go.
//
// What the API server and kubelet would do is modelled only as far as the
// Job controller can see it:
//   - a created pod is the Job's template overlaid with its PodCreation
//     entry, named generateName (cut to 58 characters, as the API server
//     does) + a 5-character suffix from a per-cluster counter, with a UID
//     from the same counter, in phase Pending, created at now + k ms (k-th
//     pod of the sync) so that no two pods share a creation time;
//   - deleting a pod that is unscheduled or terminal is immediate (grace 0),
//     otherwise it gets deletionTimestamp = now + 30s and stays until the
//     kubelet stops it (a world event);
//   - a pod with a deletionTimestamp and no finalizer left is removed once
//     it is terminal, unscheduled or its grace period is 0;
//   - adoption adds the controller reference and the tracking finalizer;
//     release removes the reference to the Job.

import (
	"fmt"
	"slices"
	"strconv"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	pb "job-decider.dev/clients/go/jobdecider/v1"
	"job-decider.dev/clients/go/kubejson"
	"job-decider.dev/conformance/internal/canon"
	"job-decider.dev/conformance/internal/gen"
	"job-decider.dev/conformance/internal/upstream"
)

// Cluster is a fake cluster of one Job and its pods, which plans are applied to.
type Cluster struct {
	Job     *pb.Job
	Pods    []*pb.Pod // in creation order; requests list them in this order
	Now     time.Time
	state   *pb.ControllerState
	events  []*pb.RecordEvent
	Created int // pods created by plans (names and UIDs)
	rv      int // resourceVersion of the Job
	// ctrlName is the request's controllerName.
	ctrlName string
}

// New is the cluster a request describes.
func New(req *pb.DecideJobRequest) *Cluster {
	c := &Cluster{
		Job:      proto.Clone(req.Job).(*pb.Job),
		Now:      req.Now.AsTime(),
		state:    upstream.StateCopy(req.State),
		ctrlName: req.ControllerName,
	}
	for _, p := range req.Pods {
		c.Pods = append(c.Pods, proto.Clone(p).(*pb.Pod))
	}
	c.rv, _ = strconv.Atoi(c.Job.Metadata.ResourceVersion)
	return c
}

// Clone is a deep copy.
func (c *Cluster) Clone() *Cluster {
	out := *c
	out.Job = proto.Clone(c.Job).(*pb.Job)
	out.Pods = make([]*pb.Pod, len(c.Pods))
	for i, p := range c.Pods {
		out.Pods[i] = proto.Clone(p).(*pb.Pod)
	}
	out.state = upstream.StateCopy(c.state)
	out.events = slices.Clone(c.events)
	return &out
}

// Request is the snapshot a caller would send Now: as the contract says,
// the pods the Job controls or whose labels match its selector.
func (c *Cluster) Request() *pb.DecideJobRequest {
	req := &pb.DecideJobRequest{
		Job:            proto.Clone(c.Job).(*pb.Job),
		Now:            timestamppb.New(c.Now),
		State:          upstream.StateCopy(c.state),
		ControllerName: c.ctrlName,
	}
	for _, p := range c.related(c.Pods) {
		req.Pods = append(req.Pods, proto.Clone(p).(*pb.Pod))
	}
	return req
}

// related filters pods down to those a request carries.
func (c *Cluster) related(pods []*pb.Pod) []*pb.Pod {
	sel := c.selector()
	var out []*pb.Pod
	for _, p := range pods {
		if OwnedBy(p, c.Job) || (sel != nil && sel.Matches(labels.Set(p.Metadata.Labels))) {
			out = append(out, p)
		}
	}
	return out
}

func (c *Cluster) selector() labels.Selector {
	var ls metav1.LabelSelector
	if c.Job.Spec.GetSelector() == nil || kubejson.ToKube(c.Job.Spec.Selector, &ls) != nil {
		return nil
	}
	sel, err := metav1.LabelSelectorAsSelector(&ls)
	if err != nil {
		return nil
	}
	return sel
}

// OrphanCleanup is upstream's orphan-pod worker for pods that have left the
// Job (released, no longer matching): it takes their tracking finalizer off.
// job-decider's requests do not carry such pods, so neither side's plan can;
// the simulator does it for both, as the rest of the controller would.
func (c *Cluster) OrphanCleanup() {
	related := c.related(c.Pods)
	for _, p := range c.Pods {
		if !slices.Contains(related, p) && slices.Contains(p.Metadata.Finalizers, gen.Finalizer) && metaController(p) == nil {
			removeFinalizer(p)
		}
	}
	c.Collect()
}

func metaController(p *pb.Pod) *pb.OwnerReference {
	for _, r := range p.Metadata.OwnerReferences {
		if r.GetController() {
			return r
		}
	}
	return nil
}

// Diff compares two clusters field by field: what a request
// carries, the events recorded and the number of pods created.
func Diff(a, b *Cluster) []canon.FieldDiff {
	var out []canon.FieldDiff
	canon.DiffValues("cluster", canon.ToGenericMsg(a.Request()), canon.ToGenericMsg(b.Request()), &out)
	ea, eb := &pb.DecideJobResponse{}, &pb.DecideJobResponse{}
	for _, e := range a.events {
		ea.Actions = append(ea.Actions, &pb.Action{Kind: &pb.Action_RecordEvent{RecordEvent: e}})
	}
	for _, e := range b.events {
		eb.Actions = append(eb.Actions, &pb.Action{Kind: &pb.Action_RecordEvent{RecordEvent: e}})
	}
	canon.DiffValues("cluster.events", canon.ToGenericMsg(ea), canon.ToGenericMsg(eb), &out)
	if a.Created != b.Created {
		out = append(out, canon.FieldDiff{Path: "cluster.podsCreated", Left: a.Created, Right: b.Created})
	}
	return out
}

// Pod finds a pod by name: its index and the pod, or -1 and nil.
func (c *Cluster) Pod(name string) (int, *pb.Pod) {
	for i, p := range c.Pods {
		if p.Metadata.Name == name {
			return i, p
		}
	}
	return -1, nil
}

// Apply applies a canonical plan. It returns an error where a real API
// server would refuse a write (the caller stops at the first failure).
func (c *Cluster) Apply(resp *pb.DecideJobResponse) error {
	c.state = upstream.StateCopy(resp.GetState())
	for ai, a := range resp.GetActions() {
		var err error
		switch k := a.GetKind().(type) {
		case *pb.Action_CreatePods:
			for i, pc := range k.CreatePods.GetPods() {
				if err = c.createPod(pc, i); err != nil {
					break
				}
			}
		case *pb.Action_DeletePods:
			for _, d := range k.DeletePods.GetPods() {
				_, p := c.Pod(d.GetName())
				if p == nil {
					continue // NotFound: already gone, as upstream treats it
				}
				if d.GetUid() != "" && d.GetUid() != p.Metadata.Uid {
					err = fmt.Errorf("delete %s: uid precondition %s, pod has %s", d.GetName(), d.GetUid(), p.Metadata.Uid)
					break
				}
				if d.GetRemoveFinalizerFirst() {
					removeFinalizer(p)
				}
				c.DeletePod(p, c.Now)
			}
		case *pb.Action_RemoveFinalizers:
			err = c.eachRef(k.RemoveFinalizers.GetPods(), func(p *pb.Pod) {
				removeFinalizer(p)
			})
		case *pb.Action_AdoptPods:
			err = c.eachRef(k.AdoptPods.GetPods(), func(p *pb.Pod) {
				// A strategic merge patch keyed by uid: adopting twice is one reference.
				p.Metadata.OwnerReferences = slices.DeleteFunc(p.Metadata.OwnerReferences, func(r *pb.OwnerReference) bool {
					return r.Uid == c.Job.Metadata.Uid
				})
				p.Metadata.OwnerReferences = append(p.Metadata.OwnerReferences, c.OwnerRef())
				if !slices.Contains(p.Metadata.Finalizers, gen.Finalizer) {
					p.Metadata.Finalizers = append(p.Metadata.Finalizers, gen.Finalizer)
				}
			})
		case *pb.Action_ReleasePods:
			err = c.eachRef(k.ReleasePods.GetPods(), func(p *pb.Pod) {
				p.Metadata.OwnerReferences = slices.DeleteFunc(p.Metadata.OwnerReferences, func(r *pb.OwnerReference) bool {
					return r.Uid == c.Job.Metadata.Uid
				})
			})
		case *pb.Action_UpdateStatus:
			c.Job.Status = proto.Clone(k.UpdateStatus.GetStatus()).(*pb.JobStatus)
			c.BumpRV()
		case *pb.Action_RecordEvent:
			c.events = append(c.events, proto.Clone(k.RecordEvent).(*pb.RecordEvent))
		default:
			err = fmt.Errorf("unknown action %T", k)
		}
		c.Collect()
		if err != nil {
			return fmt.Errorf("action %d: %w", ai, err)
		}
	}
	return nil
}

func (c *Cluster) eachRef(refs []*pb.PodReference, f func(*pb.Pod)) error {
	for _, r := range refs {
		_, p := c.Pod(r.GetName())
		if p == nil {
			continue // NotFound counts as done upstream
		}
		if r.GetUid() != "" && r.GetUid() != p.Metadata.Uid {
			return fmt.Errorf("pod %s: uid precondition %s, pod has %s", r.GetName(), r.GetUid(), p.Metadata.Uid)
		}
		f(p)
	}
	return nil
}

// BumpRV is a write to the Job: a new resourceVersion.
func (c *Cluster) BumpRV() {
	c.rv++
	c.Job.Metadata.ResourceVersion = strconv.Itoa(c.rv)
}

// OwnerRef is the Job's controller reference, as a pod it creates carries it.
func (c *Cluster) OwnerRef() *pb.OwnerReference {
	return &pb.OwnerReference{ApiVersion: "batch/v1", Kind: "Job", Name: c.Job.Metadata.Name, Uid: c.Job.Metadata.Uid,
		Controller: proto.Bool(true), BlockOwnerDeletion: proto.Bool(true)}
}

// Suffix is the deterministic stand-in for the API server's random 5-character name suffix.
func Suffix(n int) string {
	const alphabet = "bcdfghjklmnpqrstvwxz2456789" // the API server's alphabet
	b := make([]byte, 5)
	for i := 4; i >= 0; i-- {
		b[i] = alphabet[n%len(alphabet)]
		n /= len(alphabet)
	}
	return string(b)
}

func (c *Cluster) createPod(pc *pb.PodCreation, k int) error {
	t := c.Job.Spec.Template
	name := pc.GetName()
	if name == "" {
		base := pc.GetGenerateName()
		if base == "" {
			base = c.Job.Metadata.Name + "-"
		}
		if len(base) > 58 {
			base = base[:58]
		}
		name = base + Suffix(c.Created)
	}
	if _, p := c.Pod(name); p != nil {
		return fmt.Errorf("create %s: already exists", name)
	}
	c.Created++
	m := &pb.ObjectMeta{
		Name: name, GenerateName: pc.GetGenerateName(), Namespace: c.Job.Metadata.Namespace,
		Uid:               fmt.Sprintf("sim-%s-%d", c.Job.Metadata.Uid, c.Created),
		CreationTimestamp: timestamppb.New(c.Now.Add(time.Duration(k+1) * time.Millisecond)),
		Labels:            gen.CopyMap(t.GetMetadata().GetLabels()),
		Annotations:       gen.CopyMap(t.GetMetadata().GetAnnotations()),
		Finalizers:        slices.Clone(t.GetMetadata().GetFinalizers()),
		OwnerReferences:   cloneOwnerRefs(t.GetMetadata().GetOwnerReferences()),
	}
	for k, v := range pc.GetLabels() {
		m.Labels[k] = v
	}
	for k, v := range pc.GetAnnotations() {
		m.Annotations[k] = v
	}
	for _, f := range pc.GetFinalizers() {
		if !slices.Contains(m.Finalizers, f) {
			m.Finalizers = append(m.Finalizers, f)
		}
	}
	if pc.GetOwnerReference() != nil {
		m.OwnerReferences = append(m.OwnerReferences, proto.Clone(pc.GetOwnerReference()).(*pb.OwnerReference))
	}
	if len(m.Labels) == 0 {
		m.Labels = nil
	}
	if len(m.Annotations) == 0 {
		m.Annotations = nil
	}
	c.Pods = append(c.Pods, &pb.Pod{Metadata: m, Spec: &pb.PodSpecSummary{}, Status: &pb.PodStatus{Phase: "Pending"}})
	return nil
}

func cloneOwnerRefs(in []*pb.OwnerReference) []*pb.OwnerReference {
	var out []*pb.OwnerReference
	for _, r := range in {
		out = append(out, proto.Clone(r).(*pb.OwnerReference))
	}
	return out
}

func removeFinalizer(p *pb.Pod) {
	p.Metadata.Finalizers = slices.DeleteFunc(p.Metadata.Finalizers, func(f string) bool { return f == gen.Finalizer })
	if len(p.Metadata.Finalizers) == 0 {
		p.Metadata.Finalizers = nil
	}
}

// Terminal reports whether a pod has succeeded or failed.
func Terminal(p *pb.Pod) bool {
	ph := p.GetStatus().GetPhase()
	return ph == "Succeeded" || ph == "Failed"
}

// DeletePod is a DELETE of a pod at time t with the default grace period.
func (c *Cluster) DeletePod(p *pb.Pod, t time.Time) {
	if p.Metadata.DeletionTimestamp != nil {
		return
	}
	grace := int64(30)
	if p.GetSpec().GetNodeName() == "" || Terminal(p) {
		grace = 0
	}
	p.Metadata.DeletionTimestamp = timestamppb.New(t.Truncate(time.Second).Add(time.Duration(grace) * time.Second))
	p.Metadata.DeletionGracePeriodSeconds = proto.Int64(grace)
}

// Collect removes deleted pods that nothing holds any more.
func (c *Cluster) Collect() {
	c.Pods = slices.DeleteFunc(c.Pods, func(p *pb.Pod) bool {
		m := p.Metadata
		if m.DeletionTimestamp == nil || len(m.Finalizers) > 0 {
			return false
		}
		return Terminal(p) || p.GetSpec().GetNodeName() == "" || m.GetDeletionGracePeriodSeconds() == 0
	})
}

// Finished reports whether the Job has a Complete or Failed condition.
func (c *Cluster) Finished() bool {
	for _, cond := range c.Job.GetStatus().GetConditions() {
		if (cond.Type == "Complete" || cond.Type == "Failed") && cond.Status == "True" {
			return true
		}
	}
	return false
}
