package main

// Multi-sync lifecycles. A scenario is a Job (fresh, or a random snapshot)
// and a seeded script of world events. Upstream and job-decider each get a
// simulated cluster (cluster.go) holding the same start. Every sync:
//
//  1. each side decides on a request built from its own cluster, with its
//     own `state` from its previous response fed back to it;
//  2. the two canonical plans are compared (a difference is a mismatch,
//     unless known-differences.md excuses it);
//  3. each side's plan is applied to its own cluster, and the two clusters
//     are compared (a difference is a mismatch);
//  4. sometimes (after a plan that wrote pods) the next sync sees a stale pod
//     cache, as after a sync whose writes the informers have not delivered:
//     the pods as they were before the plan, with expectations saying what is
//     in flight;
//  5. world events, chosen from the (identical) clusters and applied to both
//     alike: pods start, become Ready, succeed, fail with an exit code or a
//     condition (DisruptionTarget, ConfigIssue), restart (OnFailure), are
//     evicted, deleted by a user and stopped by the kubelet; orphans appear,
//     pods lose their labels; the Job is suspended or resumed, its
//     parallelism changed, it is deleted in the foreground; the clock moves,
//     often to exactly when upstream asked to be requeued (backoffs,
//     deadlines) or one second before.
//
// The lifecycle stops at the first mismatch (printed with the seed, the
// scenario index and the sync number; the request that sync sent is saved as
// a vector whose expected is upstream's answer), when the Job has finished and
// a sync has nothing more to do, or after its number of syncs.
//
// Every timestamp a world event writes is a whole second of its own (each
// event moves the clock by one second), so nothing depends on how a sort
// orders equal keys; pods created by one plan differ by milliseconds.

import (
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	pb "job-decider.dev/clients/go/jobdecider/v1"
	"job-decider.dev/clients/go/knowndiff"
	"job-decider.dev/conformance/internal/canon"
	"job-decider.dev/conformance/internal/gen"
	"job-decider.dev/conformance/internal/target"
	"job-decider.dev/conformance/internal/upstream"
)

// worldEvent is one thing that happens to the cluster outside the controller.
type worldEvent struct {
	kind      string
	pod       string
	container string
	code      int32
	reason    string
	n         int32
	d         time.Duration
}

func (e worldEvent) String() string {
	switch e.kind {
	case "advance":
		return "clock +" + e.d.String()
	case "fail", "failInit":
		return fmt.Sprintf("%s %s (container %s exit %d)", e.kind, e.pod, e.container, e.code)
	case "disrupt", "evict", "failCondition":
		return fmt.Sprintf("%s %s (%s)", e.kind, e.pod, e.reason)
	case "parallelism":
		return fmt.Sprintf("parallelism %d", e.n)
	case "orphan":
		return fmt.Sprintf("orphan (shape %d)", e.n)
	case "suspend", "resume", "deleteJob":
		return e.kind
	}
	return e.kind + " " + e.pod
}

// lifecycle is one scenario in progress.
type lifecycle struct {
	name   string
	seed   uint64
	index  int
	r      *rand.Rand
	up, jd *cluster
	// orphans made so far (names)
	orphans int
	trace   io.Writer // nil: quiet
	verbose bool
	counts  map[string]int
}

// lifecycleResult is what one lifecycle found.
type lifecycleResult struct {
	name     string
	syncs    int
	mismatch bool
	excused  bool
	failed   string
	text     strings.Builder // report, printed by the caller in scenario order
	trace    string          // with --only: every sync, world event and plan
	class    string          // the mismatch's shape (mismatchClass)
	where    string          // the sync that diverged
	upTime   time.Duration
	jdTime   time.Duration
	finished bool
	// counts of upstream's plan steps, world events and stale syncs (coverage)
	counts map[string]int
	// how the syncs went through the two pod encodings
	enc target.EncodingTally
}

// runLifecycle runs lifecycle i of seed against d (nil: upstream only, which
// exercises the simulator and upstream's runner on its own).
func runLifecycle(d *target.Decider, known *knowndiff.List, seed uint64, i int, saveDir string, trace io.Writer, verbose bool) *lifecycleResult {
	res := &lifecycleResult{name: gen.LifecycleName(seed, i), counts: map[string]int{}}
	start, r, err := gen.LifecycleStart(seed, i)
	if err != nil {
		res.failed = err.Error()
		return res
	}
	lc := &lifecycle{name: res.name, seed: seed, index: i, r: r, up: newCluster(start), jd: newCluster(start), trace: trace, verbose: verbose, counts: res.counts}
	maxSyncs := 4 + r.IntN(13)
	// staleUp and staleJd, when set, are the next sync's requests: each
	// side's cluster with the pods as they were before its last plan.
	var staleUp, staleJd *pb.DecideJobRequest
	for sync := 0; sync < maxSyncs; sync++ {
		res.syncs++
		syncName := fmt.Sprintf("%s-s%d", res.name, sync)
		reqUp, reqJd := lc.up.request(), lc.jd.request()
		if staleUp != nil {
			reqUp, reqJd = staleUp, staleJd
		}
		reqJd = contractRequest(reqJd)
		lc.tracef("-- sync %d at %s%s: %s\n", sync, lc.up.now.Format(time.TimeOnly), map[bool]string{true: " (stale pod cache)"}[staleUp != nil], podSummary(reqUp))
		if verbose {
			lc.tracef("request: %s\n", canon.PrettyProto(reqUp))
		}
		up, run, err := upstream.CanonicalWith(reqUp, upstream.Whole)
		if err == nil && run.SyncErr != nil {
			err = fmt.Errorf("syncJob returned an error: %w", run.SyncErr)
		}
		if err != nil {
			res.failed = fmt.Sprintf("sync %d: upstream: %v", sync, err)
			return res
		}
		res.upTime += run.Elapsed
		lc.tracef("   upstream:    %s\n", canon.Summary(up))
		for _, w := range strings.Split(canon.Summary(up), ", ") {
			f := strings.Fields(w)
			if f[0] == "event" {
				f[0] += " " + f[1]
			}
			lc.counts["plan: "+f[0]]++
		}
		if staleUp != nil {
			lc.counts["sync with a stale pod cache"]++
		}
		if verbose {
			lc.tracef("upstream: %s\n", canon.PrettyProto(up))
		}
		jdResp := up
		if d != nil {
			raw, took, err := d.Decide(reqJd)
			res.jdTime += took
			var diffs []canon.FieldDiff
			if err != nil {
				diffs = []canon.FieldDiff{{Path: "(rpc)", Left: "a plan", Right: "error: " + err.Error()}}
				jdResp = nil
			} else {
				jdResp = canon.Canonicalize(raw, reqJd.GetJob())
				lc.tracef("   job-decider: %s\n", canon.Summary(jdResp))
				diffs = canon.DiffResponses(up, jdResp)
			}
			encDiffs, notLean := d.CheckLean(reqJd, raw, err)
			res.enc.Add(syncName, notLean)
			if len(encDiffs) > 0 {
				o := &outcome{name: syncName, encDiffs: encDiffs, upstream: up, decided: jdResp}
				origin := fmt.Sprintf("lifecycle --seed %d --only %d", seed, i)
				fmt.Fprintf(&res.text, "MISMATCH: sync %d of lifecycle %d (seed %d; replay: conformance %s -v)\n", sync, i, seed, origin)
				o.report(&res.text, reqJd, saveDir, origin)
				res.mismatch = true
				res.class, res.where = o.class(), syncName
				return res
			}
			if len(diffs) > 0 {
				o := &outcome{name: syncName, diffs: diffs, upstream: up, decided: jdResp}
				o.excused = excuses(known, syncName, diffs, shapes(reqUp)...)
				origin := fmt.Sprintf("lifecycle --seed %d --only %d", seed, i)
				fmt.Fprintf(&res.text, "%s: sync %d of lifecycle %d (seed %d; replay: conformance %s -v)\n",
					map[bool]string{true: "known difference", false: "MISMATCH"}[o.excused], sync, i, seed, origin)
				o.report(&res.text, reqJd, saveDir, origin)
				if !o.excused || jdResp == nil {
					res.mismatch = !o.excused
					res.class, res.where = mismatchClass(diffs), syncName
					res.excused = o.excused
					return res
				}
				res.excused = true
			}
		}
		prevUp, prevJd := lc.up.clone(), lc.jd.clone()
		errUp := lc.up.apply(up)
		errJd := lc.jd.apply(jdResp)
		if (errUp == nil) != (errJd == nil) || errUp != nil {
			res.failed = fmt.Sprintf("sync %d: applying the plans: upstream's: %v, job-decider's: %v", sync, errUp, errJd)
			return res
		}
		if diffs := diffClusters(lc.up, lc.jd); len(diffs) > 0 {
			if res.excused {
				// An excused difference that changes the cluster: the two
				// sides no longer continue from the same state.
				return res
			}
			res.mismatch = true
			res.class, res.where = "(cluster) "+mismatchClass(diffs), syncName
			fmt.Fprintf(&res.text, "MISMATCH %s: the clusters differ after sync %d of lifecycle %d (seed %d; replay: conformance lifecycle --seed %d --only %d -v)\n%s",
				syncName, sync, i, seed, seed, i, canon.FormatDiff(diffs, "upstream", "job-decider"))
			return res
		}
		if lc.done(up, reqUp) {
			res.finished = lc.up.finished()
			break
		}
		// A stale pod cache for the next sync, sometimes, after a plan that wrote pods.
		staleUp, staleJd = nil, nil
		if exp := inFlight(up); exp != nil && r.Float64() < 0.15 {
			staleUp, staleJd = lc.up.request(), lc.jd.request()
			staleUp.Pods, staleJd.Pods = prevUp.request().Pods, prevJd.request().Pods // the pods before the plan
			staleUp.Expectations, staleJd.Expectations = exp, proto.Clone(exp).(*pb.Expectations)
			continue // the stale sync comes at once, before the world moves
		}
		lc.world(up.GetRequeueAfter(), reqUp.Now.AsTime())
	}
	return res
}

func (lc *lifecycle) tracef(format string, args ...any) {
	if lc.trace != nil {
		fmt.Fprintf(lc.trace, format, args...)
	}
}

// done reports whether the lifecycle has nothing left to show: the Job is
// finished (or being deleted with no pods left, or not ours) and the sync did nothing.
func (lc *lifecycle) done(resp *pb.DecideJobResponse, req *pb.DecideJobRequest) bool {
	if len(resp.GetActions()) > 0 {
		return false
	}
	c := lc.up
	if c.finished() {
		return true
	}
	if c.job.Metadata.DeletionTimestamp != nil && len(c.pods) == 0 {
		return true
	}
	s, err := upstream.SnapshotFromRequest(req)
	return err == nil && !s.Ours
}

// inFlight is what a plan leaves in flight until the informers deliver it:
// expectations for a sync that sees the pods as they were before the plan.
func inFlight(resp *pb.DecideJobResponse) *pb.Expectations {
	exp := &pb.Expectations{}
	any := false
	for _, a := range resp.GetActions() {
		switch k := a.GetKind().(type) {
		case *pb.Action_CreatePods, *pb.Action_DeletePods:
			exp.PodChangesPending = true
			any = true
		case *pb.Action_RemoveFinalizers:
			for _, p := range k.RemoveFinalizers.GetPods() {
				exp.FinalizerRemovalsPending = append(exp.FinalizerRemovalsPending, p.GetUid())
			}
			any = true
		case *pb.Action_AdoptPods, *pb.Action_ReleasePods:
			any = true
		}
	}
	if !any {
		return nil
	}
	if !exp.PodChangesPending && len(exp.FinalizerRemovalsPending) == 0 {
		return &pb.Expectations{}
	}
	return exp
}

// world moves the world between two syncs: the orphan worker's cleanup, a
// few events, then maybe the clock.
func (lc *lifecycle) world(requeue *durationpb.Duration, syncNow time.Time) {
	r := lc.r
	lc.up.orphanCleanup()
	lc.jd.orphanCleanup()
	n := 0
	switch x := r.Float64(); {
	case x < 0.15:
	case x < 0.50:
		n = 1
	case x < 0.75:
		n = 2
	case x < 0.90:
		n = 3
	default:
		n = 4 + r.IntN(3)
	}
	if len(lc.up.pods) > 12 {
		n *= 1 + len(lc.up.pods)/12 // bigger Jobs see more happen between syncs
	}
	for k := 0; k < n; k++ {
		e, ok := lc.nextEvent()
		if !ok {
			break
		}
		lc.event(e)
	}
	var d time.Duration
	if requeue != nil {
		fire := syncNow.Add(requeue.AsDuration())
		switch x := r.Float64(); {
		case x < 0.4:
			d = fire.Sub(lc.up.now)
			lc.counts["world: clock to the requeue"]++
		case x < 0.5:
			d = fire.Sub(lc.up.now) - time.Second
			lc.counts["world: clock to 1s before the requeue"]++
		}
	}
	if d <= 0 {
		switch x := r.Float64(); {
		case x < 0.05:
			d = time.Duration(600+r.IntN(3000)) * time.Second
		case x < 0.35:
			d = time.Duration(1+r.IntN(60)) * time.Second
		}
	}
	if d <= 0 && n == 0 {
		d = time.Second
	}
	if r.Float64() < 0.1 {
		// A caller's clock is not whole seconds (timestamps the API stores are).
		d += time.Duration(1+r.IntN(999)) * time.Millisecond
	}
	if d > 0 {
		lc.event(worldEvent{kind: "advance", d: d})
	}
}

func (lc *lifecycle) event(e worldEvent) {
	lc.tracef("   world: %s\n", e)
	lc.counts["world: "+e.kind]++
	lc.up.applyEvent(e)
	lc.jd.applyEvent(e)
}

// nextEvent picks a world event that makes sense in the current cluster.
func (lc *lifecycle) nextEvent() (worldEvent, bool) {
	c, r := lc.up, lc.r
	spec := c.job.Spec
	onFailure := spec.Template.Spec.RestartPolicy == "OnFailure"
	type choice struct {
		w float64
		e func() worldEvent
	}
	var choices []choice
	add := func(w float64, pods []*pb.Pod, f func(p *pb.Pod) worldEvent) {
		if len(pods) == 0 {
			return
		}
		choices = append(choices, choice{w, func() worldEvent { return f(pods[r.IntN(len(pods))]) }})
	}
	var pending, running, notReady, deleting, live, owned []*pb.Pod
	for _, p := range c.pods {
		deleted := p.Metadata.DeletionTimestamp != nil
		if !deleted {
			live = append(live, p)
		}
		if !deleted && ownedBy(p, c.job) {
			owned = append(owned, p)
		}
		switch {
		case terminal(p):
		case deleted:
			deleting = append(deleting, p)
		case p.Status.Phase == "Pending":
			pending = append(pending, p)
		default:
			running = append(running, p)
			if !podReady(p) {
				notReady = append(notReady, p)
			}
		}
	}
	containers := containerNames(spec.Template.Spec.Containers)
	add(4, pending, func(p *pb.Pod) worldEvent { return worldEvent{kind: "start", pod: p.Metadata.Name} })
	add(1.5, pending, func(p *pb.Pod) worldEvent { return worldEvent{kind: "quickSucceed", pod: p.Metadata.Name} })
	add(3, notReady, func(p *pb.Pod) worldEvent { return worldEvent{kind: "ready", pod: p.Metadata.Name} })
	add(4, running, func(p *pb.Pod) worldEvent { return worldEvent{kind: "succeed", pod: p.Metadata.Name} })
	if onFailure {
		add(2.5, running, func(p *pb.Pod) worldEvent {
			return worldEvent{kind: "restart", pod: p.Metadata.Name, container: containers[r.IntN(len(containers))]}
		})
	} else {
		add(1.8, running, func(p *pb.Pod) worldEvent {
			return worldEvent{kind: "fail", pod: p.Metadata.Name, container: containers[r.IntN(len(containers))], code: lc.exitCode()}
		})
		if len(spec.Template.Spec.InitContainers) > 0 {
			add(0.3, pending, func(p *pb.Pod) worldEvent {
				return worldEvent{kind: "failInit", pod: p.Metadata.Name, container: spec.Template.Spec.InitContainers[0].Name, code: lc.exitCode()}
			})
		}
		add(0.3, pending, func(p *pb.Pod) worldEvent {
			return worldEvent{kind: "failCondition", pod: p.Metadata.Name, reason: "ConfigIssue"}
		})
	}
	add(0.7, running, func(p *pb.Pod) worldEvent {
		return worldEvent{kind: "disrupt", pod: p.Metadata.Name, reason: "PreemptionByScheduler"}
	})
	add(0.7, running, func(p *pb.Pod) worldEvent {
		return worldEvent{kind: "evict", pod: p.Metadata.Name, reason: "EvictionByEvictionAPI"}
	})
	add(3, deleting, func(p *pb.Pod) worldEvent { return worldEvent{kind: "kubeletStop", pod: p.Metadata.Name} })
	add(0.5, live, func(p *pb.Pod) worldEvent { return worldEvent{kind: "delete", pod: p.Metadata.Name} })
	add(0.1, owned, func(p *pb.Pod) worldEvent { return worldEvent{kind: "unlabel", pod: p.Metadata.Name} })
	if c.job.Metadata.DeletionTimestamp == nil {
		job := func(w float64, f func() worldEvent) { choices = append(choices, choice{w, f}) }
		if spec.GetSuspend() {
			job(0.6, func() worldEvent { return worldEvent{kind: "resume"} })
		} else {
			job(0.12, func() worldEvent { return worldEvent{kind: "suspend"} })
		}
		job(0.2, func() worldEvent { return worldEvent{kind: "parallelism", n: int32(r.IntN(9))} })
		job(0.1, func() worldEvent { return worldEvent{kind: "orphan", n: int32(r.IntN(32))} })
		job(0.02, func() worldEvent { return worldEvent{kind: "deleteJob"} })
	}
	var total float64
	for _, ch := range choices {
		total += ch.w
	}
	if total == 0 {
		return worldEvent{}, false
	}
	x := r.Float64() * total
	for _, ch := range choices {
		if x < ch.w {
			return ch.e(), true
		}
		x -= ch.w
	}
	return choices[len(choices)-1].e(), true
}

// exitCode is a failing exit code, often one the Job's pod failure policy names.
func (lc *lifecycle) exitCode() int32 {
	var named []int32
	for _, rule := range lc.up.job.Spec.GetPodFailurePolicy().GetRules() {
		for _, v := range rule.GetOnExitCodes().GetValues() {
			if v != 0 {
				named = append(named, v)
			}
		}
	}
	if len(named) > 0 && lc.r.Float64() < 0.6 {
		return named[lc.r.IntN(len(named))]
	}
	return gen.ExitCodePool[lc.r.IntN(len(gen.ExitCodePool))]
}

func containerNames(cs []*pb.Container) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Name)
	}
	return out
}

func ownedBy(p *pb.Pod, j *pb.Job) bool {
	for _, r := range p.Metadata.OwnerReferences {
		if r.Uid == j.Metadata.Uid && r.GetController() {
			return true
		}
	}
	return false
}

func podReady(p *pb.Pod) bool {
	for _, c := range p.GetStatus().GetConditions() {
		if c.Type == "Ready" {
			return c.Status == "True"
		}
	}
	return false
}

// applyEvent applies a world event; every event but a clock advance takes one second.
func (c *cluster) applyEvent(e worldEvent) {
	if e.kind == "advance" {
		c.now = c.now.Add(e.d)
		return
	}
	c.now = c.now.Add(time.Second)
	t := timestamppb.New(c.now.Truncate(time.Second)) // the API stores whole seconds
	if e.kind == "suspend" || e.kind == "resume" || e.kind == "parallelism" || e.kind == "orphan" || e.kind == "deleteJob" {
		c.jobEvent(e, t)
		return
	}
	_, p := c.pod(e.pod)
	if p == nil {
		return
	}
	spec := c.job.Spec.Template.Spec
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
	if e.kind == "quickSucceed" {
		// Scheduled, run and done between two syncs.
		e.kind = "succeed"
		start(p, spec, t)
	}
	switch e.kind {
	case "start":
		start(p, spec, t)
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
		terminate(e.container, e.code, 0)
	case "restart":
		for _, cs := range st.ContainerStatuses {
			if cs.Name == e.container {
				cs.RestartCount++
				cs.Ready = false
				cs.State = &pb.ContainerState{Running: &pb.ContainerStateRunning{StartedAt: t}}
			}
		}
		setReady(false)
	case "failInit":
		st.Phase = "Failed"
		st.InitContainerStatuses = []*pb.ContainerStatus{{Name: e.container, State: &pb.ContainerState{Terminated: &pb.ContainerStateTerminated{
			ExitCode: e.code, Reason: "Error", StartedAt: t, FinishedAt: t}}}}
		st.ContainerStatuses = nil
		for _, ct := range spec.Containers {
			st.ContainerStatuses = append(st.ContainerStatuses, &pb.ContainerStatus{Name: ct.Name,
				State: &pb.ContainerState{Waiting: &pb.ContainerStateWaiting{Reason: "PodInitializing"}}})
		}
		setReady(false)
	case "failCondition":
		st.Phase = "Failed"
		addCondition(e.reason, "Test")
		setReady(false)
	case "disrupt":
		addCondition("DisruptionTarget", e.reason)
		st.Phase = "Failed"
		terminate("", 137, 137)
	case "evict":
		addCondition("DisruptionTarget", e.reason)
		c.deletePod(p, c.now)
	case "delete":
		c.deletePod(p, c.now)
	case "kubeletStop":
		if !terminal(p) {
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
	c.collect()
}

// start schedules a pod and starts its containers (after its init containers).
func start(p *pb.Pod, spec *pb.PodSpec, t *timestamppb.Timestamp) {
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

func (c *cluster) jobEvent(e worldEvent, t *timestamppb.Timestamp) {
	j := c.job
	switch e.kind {
	case "suspend", "resume":
		j.Spec.Suspend = proto.Bool(e.kind == "suspend")
	case "parallelism":
		j.Spec.Parallelism = proto.Int32(e.n)
	case "orphan":
		c.created++
		name := fmt.Sprintf("orphan-%s", suffix(c.created))
		labels := gen.CopyMap(j.Spec.Template.Metadata.Labels)
		var ann map[string]string
		if j.Spec.GetCompletionMode() == "Indexed" && c.created%2 == 0 {
			ix := strconv.Itoa(c.created % int(max(1, j.Spec.GetCompletions())))
			ann = map[string]string{gen.IndexKey: ix}
			labels[gen.IndexKey] = ix
		}
		p := &pb.Pod{
			Metadata: &pb.ObjectMeta{Name: name, Namespace: j.Metadata.Namespace, Uid: fmt.Sprintf("orphan-uid-%d", c.created),
				CreationTimestamp: t, Labels: labels, Annotations: ann},
			Spec: &pb.PodSpecSummary{NodeName: "node-a"},
			Status: &pb.PodStatus{Phase: "Running", ContainerStatuses: []*pb.ContainerStatus{{Name: j.Spec.Template.Spec.Containers[0].Name,
				State: &pb.ContainerState{Running: &pb.ContainerStateRunning{StartedAt: t}}}},
				Conditions: []*pb.PodCondition{{Type: "Ready", Status: "False", LastTransitionTime: t}}},
		}
		orphanShape(p, j, e.n, t)
		c.pods = append(c.pods, p)
		return
	case "deleteJob":
		// Foreground deletion: the Job keeps existing, marked, while the
		// garbage collector deletes the pods it owns.
		j.Metadata.DeletionTimestamp = t
		j.Metadata.Finalizers = append(j.Metadata.Finalizers, "foregroundDeletion")
		for _, p := range c.pods {
			if ownedBy(p, j) {
				c.deletePod(p, c.now)
			}
		}
		c.collect()
	}
	j.Metadata.Generation++
	c.bumpRV()
}

// orphanShape varies a new orphan by the bits of n: its non-controller owner
// references (none; the Job; others; the Job's uid under another kind and
// others), its phase (Running, or already Succeeded or Failed) and whether
// it carries the tracking finalizer already.
func orphanShape(p *pb.Pod, j *pb.Job, n int32, t *timestamppb.Timestamp) {
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

// podSummary is a one-line description of a request's pods, for traces.
func podSummary(req *pb.DecideJobRequest) string {
	counts := map[string]int{}
	for _, p := range req.GetPods() {
		k := p.GetStatus().GetPhase()
		if p.GetMetadata().GetDeletionTimestamp() != nil {
			k += "(deleting)"
		}
		if slices.Contains(p.GetMetadata().GetFinalizers(), gen.Finalizer) {
			k += "+f"
		}
		counts[k]++
	}
	var keys []string
	for k := range counts {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %d", k, counts[k]))
	}
	s := req.GetJob().GetStatus()
	return fmt.Sprintf("pods [%s], status active %d succeeded %d failed %d", strings.Join(parts, ", "), s.GetActive(), s.GetSucceeded(), s.GetFailed())
}
