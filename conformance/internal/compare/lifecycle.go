package compare

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
	"strings"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	pb "job-decider.dev/clients/go/jobdecider/v1"
	"job-decider.dev/conformance/internal/canon"
	"job-decider.dev/conformance/internal/cluster"
	"job-decider.dev/conformance/internal/decider"
	"job-decider.dev/conformance/internal/gen"
	"job-decider.dev/conformance/internal/upstream"
	"job-decider.dev/testkit/knowndiff"
)

// lifecycle is one scenario in progress.
type lifecycle struct {
	name   string
	seed   uint64
	index  int
	r      *rand.Rand
	up, jd *cluster.Cluster
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
	enc decider.EncodingTally
}

// runLifecycle runs lifecycle i of seed against d (nil: upstream only, which
// exercises the simulator and upstream's runner on its own).
func runLifecycle(d *decider.Conn, known *knowndiff.List, seed uint64, i int, saveDir string, trace io.Writer, verbose bool) *lifecycleResult {
	res := &lifecycleResult{name: gen.LifecycleName(seed, i), counts: map[string]int{}}
	start, r, err := gen.LifecycleStart(seed, i)
	if err != nil {
		res.failed = err.Error()
		return res
	}
	lc := &lifecycle{name: res.name, seed: seed, index: i, r: r, up: cluster.New(start), jd: cluster.New(start), trace: trace, verbose: verbose, counts: res.counts}
	maxSyncs := 4 + r.IntN(13)
	// staleUp and staleJd, when set, are the next sync's requests: each
	// side's cluster with the pods as they were before its last plan.
	var staleUp, staleJd *pb.DecideJobRequest
	for sync := 0; sync < maxSyncs; sync++ {
		res.syncs++
		syncName := fmt.Sprintf("%s-s%d", res.name, sync)
		reqUp, reqJd := lc.up.Request(), lc.jd.Request()
		if staleUp != nil {
			reqUp, reqJd = staleUp, staleJd
		}
		reqJd = contractRequest(reqJd)
		lc.tracef("-- sync %d at %s%s: %s\n", sync, lc.up.Now.Format(time.TimeOnly), map[bool]string{true: " (stale pod cache)"}[staleUp != nil], podSummary(reqUp))
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
				o := &Outcome{name: syncName, encDiffs: encDiffs, upstream: up, decided: jdResp}
				origin := fmt.Sprintf("lifecycle --seed %d --only %d", seed, i)
				fmt.Fprintf(&res.text, "MISMATCH: sync %d of lifecycle %d (seed %d; replay: conformance %s -v)\n", sync, i, seed, origin)
				o.Report(&res.text, reqJd, saveDir, origin)
				res.mismatch = true
				res.class, res.where = o.class(), syncName
				return res
			}
			if len(diffs) > 0 {
				o := &Outcome{name: syncName, diffs: diffs, upstream: up, decided: jdResp}
				o.excused = excuses(known, syncName, diffs, shapes(reqUp)...)
				origin := fmt.Sprintf("lifecycle --seed %d --only %d", seed, i)
				fmt.Fprintf(&res.text, "%s: sync %d of lifecycle %d (seed %d; replay: conformance %s -v)\n",
					map[bool]string{true: "known difference", false: "MISMATCH"}[o.excused], sync, i, seed, origin)
				o.Report(&res.text, reqJd, saveDir, origin)
				if !o.excused || jdResp == nil {
					res.mismatch = !o.excused
					res.class, res.where = mismatchClass(diffs), syncName
					res.excused = o.excused
					return res
				}
				res.excused = true
			}
		}
		prevUp, prevJd := lc.up.Clone(), lc.jd.Clone()
		errUp := lc.up.Apply(up)
		errJd := lc.jd.Apply(jdResp)
		if (errUp == nil) != (errJd == nil) || errUp != nil {
			res.failed = fmt.Sprintf("sync %d: applying the plans: upstream's: %v, job-decider's: %v", sync, errUp, errJd)
			return res
		}
		if diffs := cluster.Diff(lc.up, lc.jd); len(diffs) > 0 {
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
			res.finished = lc.up.Finished()
			break
		}
		// A stale pod cache for the next sync, sometimes, after a plan that wrote pods.
		staleUp, staleJd = nil, nil
		if exp := inFlight(up); exp != nil && r.Float64() < 0.15 {
			staleUp, staleJd = lc.up.Request(), lc.jd.Request()
			staleUp.Pods, staleJd.Pods = prevUp.Request().Pods, prevJd.Request().Pods // the pods before the plan
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
	if c.Finished() {
		return true
	}
	if c.Job.Metadata.DeletionTimestamp != nil && len(c.Pods) == 0 {
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
	lc.up.OrphanCleanup()
	lc.jd.OrphanCleanup()
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
	if len(lc.up.Pods) > 12 {
		n *= 1 + len(lc.up.Pods)/12 // bigger Jobs see more happen between syncs
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
			d = fire.Sub(lc.up.Now)
			lc.counts["world: clock to the requeue"]++
		case x < 0.5:
			d = fire.Sub(lc.up.Now) - time.Second
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
		lc.event(cluster.Event{Kind: "advance", D: d})
	}
}

func (lc *lifecycle) event(e cluster.Event) {
	lc.tracef("   world: %s\n", e)
	lc.counts["world: "+e.Kind]++
	lc.up.ApplyEvent(e)
	lc.jd.ApplyEvent(e)
}

// nextEvent picks a world event that makes sense in the current cluster.
func (lc *lifecycle) nextEvent() (cluster.Event, bool) {
	c, r := lc.up, lc.r
	spec := c.Job.Spec
	onFailure := spec.Template.Spec.RestartPolicy == "OnFailure"
	type choice struct {
		w float64
		e func() cluster.Event
	}
	var choices []choice
	add := func(w float64, pods []*pb.Pod, f func(p *pb.Pod) cluster.Event) {
		if len(pods) == 0 {
			return
		}
		choices = append(choices, choice{w, func() cluster.Event { return f(pods[r.IntN(len(pods))]) }})
	}
	var pending, running, notReady, deleting, live, owned []*pb.Pod
	for _, p := range c.Pods {
		deleted := p.Metadata.DeletionTimestamp != nil
		if !deleted {
			live = append(live, p)
		}
		if !deleted && cluster.OwnedBy(p, c.Job) {
			owned = append(owned, p)
		}
		switch {
		case cluster.Terminal(p):
		case deleted:
			deleting = append(deleting, p)
		case p.Status.Phase == "Pending":
			pending = append(pending, p)
		default:
			running = append(running, p)
			if !cluster.PodReady(p) {
				notReady = append(notReady, p)
			}
		}
	}
	containers := cluster.ContainerNames(spec.Template.Spec.Containers)
	add(4, pending, func(p *pb.Pod) cluster.Event { return cluster.Event{Kind: "start", Pod: p.Metadata.Name} })
	add(1.5, pending, func(p *pb.Pod) cluster.Event { return cluster.Event{Kind: "quickSucceed", Pod: p.Metadata.Name} })
	add(3, notReady, func(p *pb.Pod) cluster.Event { return cluster.Event{Kind: "ready", Pod: p.Metadata.Name} })
	add(4, running, func(p *pb.Pod) cluster.Event { return cluster.Event{Kind: "succeed", Pod: p.Metadata.Name} })
	if onFailure {
		add(2.5, running, func(p *pb.Pod) cluster.Event {
			return cluster.Event{Kind: "restart", Pod: p.Metadata.Name, Container: containers[r.IntN(len(containers))]}
		})
	} else {
		add(1.8, running, func(p *pb.Pod) cluster.Event {
			return cluster.Event{Kind: "fail", Pod: p.Metadata.Name, Container: containers[r.IntN(len(containers))], Code: lc.exitCode()}
		})
		// A container restarted in place by its own restart rules (KEP-5307): the pod stays Running.
		add(0.6, running, func(p *pb.Pod) cluster.Event {
			return cluster.Event{Kind: "restart", Pod: p.Metadata.Name, Container: containers[r.IntN(len(containers))]}
		})
		if len(spec.Template.Spec.InitContainers) > 0 {
			add(0.3, pending, func(p *pb.Pod) cluster.Event {
				return cluster.Event{Kind: "failInit", Pod: p.Metadata.Name, Container: spec.Template.Spec.InitContainers[0].Name, Code: lc.exitCode()}
			})
		}
		add(0.3, pending, func(p *pb.Pod) cluster.Event {
			return cluster.Event{Kind: "failCondition", Pod: p.Metadata.Name, Reason: "ConfigIssue"}
		})
	}
	add(0.7, running, func(p *pb.Pod) cluster.Event {
		return cluster.Event{Kind: "disrupt", Pod: p.Metadata.Name, Reason: "PreemptionByScheduler"}
	})
	add(0.7, running, func(p *pb.Pod) cluster.Event {
		return cluster.Event{Kind: "evict", Pod: p.Metadata.Name, Reason: "EvictionByEvictionAPI"}
	})
	add(3, deleting, func(p *pb.Pod) cluster.Event { return cluster.Event{Kind: "kubeletStop", Pod: p.Metadata.Name} })
	add(0.5, live, func(p *pb.Pod) cluster.Event { return cluster.Event{Kind: "delete", Pod: p.Metadata.Name} })
	add(0.1, owned, func(p *pb.Pod) cluster.Event { return cluster.Event{Kind: "unlabel", Pod: p.Metadata.Name} })
	if c.Job.Metadata.DeletionTimestamp == nil {
		job := func(w float64, f func() cluster.Event) { choices = append(choices, choice{w, f}) }
		if spec.GetSuspend() {
			job(0.6, func() cluster.Event { return cluster.Event{Kind: "resume"} })
		} else {
			job(0.12, func() cluster.Event { return cluster.Event{Kind: "suspend"} })
		}
		job(0.2, func() cluster.Event { return cluster.Event{Kind: "parallelism", N: int32(r.IntN(9))} })
		job(0.1, func() cluster.Event { return cluster.Event{Kind: "orphan", N: int32(r.IntN(32))} })
		job(0.02, func() cluster.Event { return cluster.Event{Kind: "deleteJob"} })
	}
	var total float64
	for _, ch := range choices {
		total += ch.w
	}
	if total == 0 {
		return cluster.Event{}, false
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
	for _, rule := range lc.up.Job.Spec.GetPodFailurePolicy().GetRules() {
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
