package gen

// A seeded generator of random snapshots: random specs and policies, pods in
// every phase with exit codes, conditions, annotations, deletion timestamps,
// uncounted lists and index strings. Scenario i of seed S depends on (S, i)
// only, so any one replays with --seed S --only i. Every generated Job passes
// upstream's own API validation (ValidateJobCreate after API defaulting).
//
// Timestamps are whole seconds and distinct, so that nothing hinges on the
// order of an unstable sort between equal keys (upstream's pod lists come in
// informer order, which is random; see orderedIndexer).

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"
	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	batchinternal "k8s.io/kubernetes/pkg/apis/batch"
	_ "k8s.io/kubernetes/pkg/apis/batch/install"
	batchdefaults "k8s.io/kubernetes/pkg/apis/batch/v1"
	batchvalidation "k8s.io/kubernetes/pkg/apis/batch/validation"
	_ "k8s.io/kubernetes/pkg/apis/core/install"
	jobutil "k8s.io/kubernetes/pkg/controller/job/util"

	pb "job-decider.dev/clients/go/jobdecider/v1"
	"job-decider.dev/clients/go/kubejson"
	"job-decider.dev/conformance/internal/upstream"
)

const (
	Finalizer   = "batch.kubernetes.io/job-tracking"
	IndexKey    = "batch.kubernetes.io/job-completion-index"
	failCount   = "batch.kubernetes.io/job-index-failure-count"
	ignoreCount = "batch.kubernetes.io/job-index-ignored-failure-count"
)

// BaseNow is the clock every generated scenario starts near.
var BaseNow = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

type gen struct {
	r    *rand.Rand
	now  time.Time
	tick int // distinct past timestamps: now - tick seconds
}

func (g *gen) chance(p float64) bool { return g.r.Float64() < p }
func (g *gen) intn(n int) int        { return g.r.IntN(n) }
func (g *gen) pick(xs ...string) string {
	return xs[g.r.IntN(len(xs))]
}

// past returns a distinct whole-second time in the last ~hour.
func (g *gen) past() *timestamppb.Timestamp {
	g.tick += 1 + g.intn(40)
	return timestamppb.New(g.now.Add(-time.Duration(g.tick) * time.Second))
}

func (g *gen) pastRange(maxAgo int) *timestamppb.Timestamp {
	return timestamppb.New(g.now.Add(-time.Duration(1+g.intn(maxAgo)) * time.Second))
}

// ScenarioName names scenario i of a seed.
func ScenarioName(seed uint64, i int) string { return fmt.Sprintf("random-%d-%d", seed, i) }

// Request builds scenario i of seed, with about `pods` pods (-1: small random).
func Request(seed uint64, i int, pods int) (*pb.DecideJobRequest, error) {
	g := &gen{r: rand.New(rand.NewPCG(seed, uint64(i)))}
	var lastErr error
	for attempt := 0; attempt < 50; attempt++ {
		g.now = BaseNow.Add(time.Duration(g.intn(86400)) * time.Second)
		g.tick = 0
		req := g.request(pods)
		if err := ValidateJob(req.Job); err != nil {
			lastErr = err
			continue
		}
		return req, nil
	}
	return nil, fmt.Errorf("generator made no valid Job in 50 attempts; last: %v", lastErr)
}

func (g *gen) request(npods int) *pb.DecideJobRequest {
	j := g.job()
	req := &pb.DecideJobRequest{Job: j, Now: timestamppb.New(g.now)}
	if npods < 0 {
		npods = g.intn(13)
	}
	g.pods(req, npods)
	g.status(req)
	if g.chance(0.1) {
		req.Expectations = &pb.Expectations{PodChangesPending: true}
	}
	if g.chance(0.05) && len(req.Pods) > 0 {
		if req.Expectations == nil {
			req.Expectations = &pb.Expectations{}
		}
		for _, p := range req.Pods {
			if g.chance(0.3) {
				req.Expectations.FinalizerRemovalsPending = append(req.Expectations.FinalizerRemovalsPending, p.Metadata.Uid)
			}
		}
	}
	if g.chance(0.3) {
		req.State = &pb.ControllerState{Backoff: &pb.BackoffRecord{
			FailuresAfterLastSuccess: int32(1 + g.intn(8)),
			LastFailureTime:          g.pastRange(900),
		}}
	}
	g.managedBy(req)
	return req
}

// longControllerName is a managedBy value at the API's limit of 63 characters.
var longControllerName = "example.com/" + strings.Repeat("c", 63-len("example.com/"))

// managedBy gives the Job every managedBy the API allows next to every
// deciding controller: unset or upstream's own name, decided by upstream's
// name (by default or named) or by another; another controller's, decided
// by upstream's or by a third; the deciding controller's own. A Job managed
// elsewhere is often finished, so that the orphan-pod worker's sweep of it
// (known-differences.md, shape finished-managed-elsewhere) is exercised.
func (g *gen) managedBy(req *pb.DecideJobRequest) {
	j := req.Job
	const shim = "example.com/job-decider"
	switch x := g.r.Float64(); {
	case x < 0.04: // another controller's Job, decided as upstream
		j.Spec.ManagedBy = proto.String(g.pick("example.com/other-controller", longControllerName))
	case x < 0.06: // another controller's Job, decided as a third one
		j.Spec.ManagedBy = proto.String("example.com/other-controller")
		req.ControllerName = shim
	case x < 0.09: // upstream's Job (unset or named), decided as another controller
		if g.chance(0.5) {
			j.Spec.ManagedBy = proto.String(upstream.DefaultControllerName)
		}
		req.ControllerName = shim
	case x < 0.13: // the deciding controller's own Job
		name := g.pick(shim, longControllerName)
		j.Spec.ManagedBy = proto.String(name)
		req.ControllerName = name
	case x < 0.16: // upstream's own name, explicit on the Job or in the request
		if g.chance(0.5) {
			j.Spec.ManagedBy = proto.String(upstream.DefaultControllerName)
		}
		req.ControllerName = upstream.DefaultControllerName
	default:
		return
	}
	if s, err := upstream.SnapshotFromRequest(req); err == nil && !s.Ours && !jobutil.IsJobFinished(s.Job) && g.chance(0.4) {
		finish(g, j.Status)
	}
}

// finish gives a status the conditions of a finished Job.
func finish(g *gen, st *pb.JobStatus) {
	t := g.past()
	if g.chance(0.5) {
		st.Conditions = append(st.Conditions,
			&pb.JobCondition{Type: "SuccessCriteriaMet", Status: "True", Reason: "CompletionsReached", Message: "Reached expected number of succeeded pods", LastProbeTime: t, LastTransitionTime: t},
			&pb.JobCondition{Type: "Complete", Status: "True", Reason: "CompletionsReached", Message: "Reached expected number of succeeded pods", LastProbeTime: t, LastTransitionTime: t})
		st.CompletionTime = t
		return
	}
	st.Conditions = append(st.Conditions,
		&pb.JobCondition{Type: "FailureTarget", Status: "True", Reason: "BackoffLimitExceeded", Message: "Job has reached the specified backoff limit", LastProbeTime: t, LastTransitionTime: t},
		&pb.JobCondition{Type: "Failed", Status: "True", Reason: "BackoffLimitExceeded", Message: "Job has reached the specified backoff limit", LastProbeTime: t, LastTransitionTime: t})
}

func (g *gen) job() *pb.Job {
	name := "job"
	if g.chance(0.2) {
		name = "job-" + strings.Repeat("x", 1+g.intn(58)) // up to 63 characters
	}
	uid := fmt.Sprintf("uid-%08x", g.r.Uint32())
	labels := map[string]string{
		"batch.kubernetes.io/controller-uid": uid,
		"batch.kubernetes.io/job-name":       name,
		"controller-uid":                     uid,
		"job-name":                           name,
	}
	j := &pb.Job{
		ApiVersion: "batch/v1", Kind: "Job",
		Metadata: &pb.ObjectMeta{
			Name: name, Namespace: g.pick("default", "team-a"), Uid: uid,
			ResourceVersion: strconv.Itoa(1 + g.intn(1000)), Generation: 1,
			CreationTimestamp: timestamppb.New(g.now.Add(-2 * time.Hour)),
			Labels:            CopyMap(labels),
		},
		Spec: &pb.JobSpec{
			Selector: &pb.LabelSelector{MatchLabels: map[string]string{"batch.kubernetes.io/controller-uid": uid}},
			Template: &pb.PodTemplateSpec{
				Metadata: &pb.ObjectMeta{Labels: CopyMap(labels)},
				Spec: &pb.PodSpec{
					RestartPolicy: "Never",
					Containers:    []*pb.Container{{Name: "main"}},
				},
			},
		},
		Status: &pb.JobStatus{},
	}
	s := j.Spec
	if g.chance(0.3) {
		s.Template.Spec.Containers = append(s.Template.Spec.Containers, &pb.Container{Name: "sidecar"})
	}
	if g.chance(0.2) {
		s.Template.Spec.InitContainers = []*pb.Container{{Name: "init"}}
	}
	if g.chance(0.1) {
		c := s.Template.Spec.Containers[0]
		c.Env = append(c.Env, &pb.EnvVar{Name: "JOB_COMPLETION_INDEX", Value: "7"})
	}
	if g.chance(0.2) {
		s.Template.Metadata.Annotations = map[string]string{"example.com/note": "hello"}
	}
	if g.chance(0.04) {
		// The template already carries the keys the controller writes on
		// created pods, with odd values (the controller's values win).
		if s.Template.Metadata.Annotations == nil {
			s.Template.Metadata.Annotations = map[string]string{}
		}
		for _, k := range []string{IndexKey, failCount, ignoreCount} {
			if g.chance(0.5) {
				s.Template.Metadata.Annotations[k] = g.oddNumber(3)
			}
		}
	}
	if g.chance(0.05) {
		s.Template.Metadata.Finalizers = []string{Finalizer}
	}
	indexed := g.chance(0.5)
	switch {
	case indexed:
		s.CompletionMode = proto.String("Indexed")
	case g.chance(0.5):
		s.CompletionMode = proto.String("NonIndexed")
	}
	if indexed || g.chance(0.8) {
		c := int32(1 + g.intn(12))
		if g.chance(0.05) {
			c = int32(100 + g.intn(100000))
		}
		s.Completions = &c
	}
	if g.chance(0.9) {
		s.Parallelism = proto.Int32(int32(g.intn(8)))
	}
	if indexed && g.chance(0.35) {
		s.BackoffLimitPerIndex = proto.Int32(int32(g.intn(3)))
		if g.chance(0.5) {
			s.MaxFailedIndexes = proto.Int32(int32(g.intn(int(min(*s.Completions, 5)) + 1)))
		}
	}
	if g.chance(0.8) {
		s.BackoffLimit = proto.Int32(int32(g.pick3(g.intn(3), 2+g.intn(6), 6)))
	}
	if g.chance(0.35) {
		var names []string
		for _, c := range s.Template.Spec.Containers {
			names = append(names, c.Name)
		}
		for _, c := range s.Template.Spec.InitContainers {
			names = append(names, c.Name)
		}
		s.PodFailurePolicy = g.podFailurePolicy(s.BackoffLimitPerIndex != nil, names)
		if g.chance(0.6) {
			s.PodReplacementPolicy = proto.String("Failed")
		}
	} else {
		if g.chance(0.2) {
			s.Template.Spec.RestartPolicy = "OnFailure"
		}
		switch {
		case g.chance(0.3):
			s.PodReplacementPolicy = proto.String("Failed")
		case g.chance(0.3):
			s.PodReplacementPolicy = proto.String("TerminatingOrFailed")
		}
	}
	if indexed && g.chance(0.25) {
		s.SuccessPolicy = g.successPolicy(int(*s.Completions))
	}
	if g.chance(0.2) {
		s.ActiveDeadlineSeconds = proto.Int64(int64(60 + g.intn(7200)))
	}
	if g.chance(0.15) {
		s.Suspend = proto.Bool(true)
	} else if g.chance(0.3) {
		s.Suspend = proto.Bool(false)
	}
	if g.chance(0.3) {
		s.ManualSelector = proto.Bool(false)
	}
	return j
}

// ExitCodePool is the exit codes generated failures and rules pick from.
var ExitCodePool = []int32{1, 2, 3, 5, 42, 127, 137, 143}

func (g *gen) podFailurePolicy(perIndex bool, containers []string) *pb.PodFailurePolicy {
	p := &pb.PodFailurePolicy{}
	n := 1 + g.intn(4)
	for i := 0; i < n; i++ {
		actions := []string{"FailJob", "Ignore", "Count"}
		if perIndex {
			actions = append(actions, "FailIndex")
		}
		rule := &pb.PodFailurePolicyRule{Action: g.pick(actions...)}
		if g.chance(0.6) {
			req := &pb.PodFailurePolicyOnExitCodesRequirement{Operator: g.pick("In", "NotIn")}
			if g.chance(0.3) {
				req.ContainerName = proto.String(g.pick(containers...))
			}
			seen := map[int32]bool{}
			for k := 0; k < 1+g.intn(3); k++ {
				c := ExitCodePool[g.intn(len(ExitCodePool))]
				if !seen[c] {
					seen[c] = true
					req.Values = append(req.Values, c)
				}
			}
			if req.Operator == "NotIn" && g.chance(0.3) {
				req.Values = append(req.Values, 0)
			}
			sort.Slice(req.Values, func(a, b int) bool { return req.Values[a] < req.Values[b] })
			rule.OnExitCodes = req
		} else {
			for k := 0; k < 1+g.intn(2); k++ {
				pat := &pb.PodFailurePolicyOnPodConditionsPattern{Type: g.pick("DisruptionTarget", "ConfigIssue", "DisruptionTarget")}
				if g.chance(0.6) {
					pat.Status = g.pick("True", "True", "False", "Unknown")
				}
				rule.OnPodConditions = append(rule.OnPodConditions, pat)
			}
		}
		p.Rules = append(p.Rules, rule)
	}
	return p
}

func (g *gen) successPolicy(completions int) *pb.SuccessPolicy {
	sp := &pb.SuccessPolicy{}
	for i := 0; i < 1+g.intn(2); i++ {
		rule := &pb.SuccessPolicyRule{}
		var set []int
		if g.chance(0.6) {
			set = g.indexSubset(min(completions, 40), 0.4)
			if len(set) == 0 {
				set = []int{g.intn(min(completions, 40))}
			}
			rule.SucceededIndexes = proto.String(formatIndexes(set))
		}
		if rule.SucceededIndexes == nil || g.chance(0.4) {
			limit := completions
			if set != nil {
				limit = len(set)
			}
			rule.SucceededCount = proto.Int32(int32(1 + g.intn(limit)))
		}
		sp.Rules = append(sp.Rules, rule)
	}
	return sp
}

// indexSubset returns a sorted random subset of [0, n).
func (g *gen) indexSubset(n int, p float64) []int {
	var out []int
	for i := 0; i < n; i++ {
		if g.chance(p) {
			out = append(out, i)
		}
	}
	return out
}

// formatIndexes writes a sorted index list in the API's interval format.
func formatIndexes(xs []int) string {
	var parts []string
	for i := 0; i < len(xs); {
		k := i
		for k+1 < len(xs) && xs[k+1] == xs[k]+1 {
			k++
		}
		switch {
		case k == i:
			parts = append(parts, strconv.Itoa(xs[i]))
		case k == i+1:
			parts = append(parts, strconv.Itoa(xs[i]), strconv.Itoa(xs[k]))
		default:
			parts = append(parts, fmt.Sprintf("%d-%d", xs[i], xs[k]))
		}
		i = k + 1
	}
	return strings.Join(parts, ",")
}

func (g *gen) pods(req *pb.DecideJobRequest, n int) {
	j := req.Job
	s := j.Spec
	indexed := s.GetCompletionMode() == "Indexed"
	completions := int(s.GetCompletions())
	parallelism := 1
	if s.Parallelism != nil {
		parallelism = int(*s.Parallelism)
	}
	running := 0
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("%s-%05x", j.Metadata.Name, g.r.Uint32()&0xfffff)
		if len(name) > 63 {
			name = name[len(name)-63:]
		}
		p := &pb.Pod{
			Metadata: &pb.ObjectMeta{
				Name: fmt.Sprintf("%s-%d", name, i), Namespace: j.Metadata.Namespace,
				Uid:               fmt.Sprintf("pod-uid-%d-%08x", i, g.r.Uint32()),
				CreationTimestamp: g.past(),
				Labels:            CopyMap(s.Template.Metadata.Labels),
			},
			Spec:   &pb.PodSpecSummary{},
			Status: &pb.PodStatus{},
		}
		orphanNamingJob := g.ownerRefs(p, j)
		if g.chance(0.85) || (orphanNamingJob && g.chance(0.5)) {
			p.Metadata.Finalizers = []string{Finalizer}
		}
		if indexed || g.chance(0.05) {
			ann := map[string]string{}
			switch x := g.r.Float64(); {
			case x < 0.82:
				ann[IndexKey] = strconv.Itoa(g.intn(max(1, min(completions, 40))))
			case x < 0.87:
				ann[IndexKey] = strconv.Itoa(completions + g.intn(3))
			case x < 0.95:
				ann[IndexKey] = g.oddNumber(max(1, min(completions, 40)))
			}
			if v, ok := ann[IndexKey]; ok && g.chance(0.9) {
				p.Metadata.Labels[IndexKey] = v
			} else if !ok && g.chance(0.3) {
				// The label alone: upstream reads the index from the annotation only.
				p.Metadata.Labels[IndexKey] = strconv.Itoa(g.intn(max(1, completions)))
			}
			if (s.BackoffLimitPerIndex != nil && g.chance(0.6)) || g.chance(0.05) {
				ann[failCount] = strconv.Itoa(g.intn(4))
				if g.chance(0.2) {
					ann[ignoreCount] = strconv.Itoa(1 + g.intn(2))
				}
				if g.chance(0.1) {
					ann[failCount] = g.oddNumber(4)
				}
				if g.chance(0.05) {
					ann[ignoreCount] = g.oddNumber(3)
				}
				if g.chance(0.04) { // sums with the failure count beyond int32
					ann[ignoreCount] = g.pick("2147483647", "2147483646")
				}
			}
			if g.chance(0.03) {
				ann["example.com/long"] = strings.Repeat("v", 1000+g.intn(20000))
			}
			if len(ann) > 0 {
				p.Metadata.Annotations = ann
			}
		}
		// Mostly no more running pods than parallelism, as in a real Job.
		g.podStatus(p, s, running < parallelism || g.chance(0.1))
		if ph := p.Status.Phase; ph != "Succeeded" && ph != "Failed" {
			running++
		}
		if g.chance(0.12) {
			p.Metadata.DeletionTimestamp = g.pastRange(60)
			if g.chance(0.7) {
				p.Metadata.DeletionGracePeriodSeconds = proto.Int64(int64(g.pick3(0, 30, 5)))
			}
		}
		req.Pods = append(req.Pods, p)
	}
}

// ownerRefs gives a pod one of the owner-reference shapes the API allows
// (at most one controller reference; apiVersion, kind, name and uid set;
// blockOwnerDeletion true, false or unset) and returns whether it is an
// orphan that names the Job in a non-controller reference.
func (g *gen) ownerRefs(p *pb.Pod, j *pb.Job) bool {
	block := func() *bool {
		switch g.intn(3) {
		case 0:
			return proto.Bool(true)
		case 1:
			return proto.Bool(false)
		}
		return nil
	}
	notController := func() *bool {
		if g.chance(0.5) {
			return proto.Bool(false)
		}
		return nil
	}
	ref := func(apiVersion, kind, name, uid string, controller *bool) *pb.OwnerReference {
		return &pb.OwnerReference{ApiVersion: apiVersion, Kind: kind, Name: name, Uid: uid, Controller: controller, BlockOwnerDeletion: block()}
	}
	name, uid := j.Metadata.Name, j.Metadata.Uid
	thisJob := func(controller *bool) *pb.OwnerReference { return ref("batch/v1", "Job", name, uid, controller) }
	// Non-controller references to others: another Job, a ReplicaSet, a custom kind.
	others := func() []*pb.OwnerReference {
		var out []*pb.OwnerReference
		for k := 0; k < 1+g.intn(2); k++ {
			switch g.intn(3) {
			case 0:
				out = append(out, ref("batch/v1", "Job", "other-job", fmt.Sprintf("uid-other-job-%d", k), notController()))
			case 1:
				out = append(out, ref("apps/v1", "ReplicaSet", "rs", fmt.Sprintf("uid-rs-%d", k), notController()))
			default:
				out = append(out, ref("example.com/v1alpha1", "Workflow", "wf", fmt.Sprintf("uid-wf-%d", k), notController()))
			}
		}
		return out
	}
	refs := func(rs ...*pb.OwnerReference) {
		g.r.Shuffle(len(rs), func(a, b int) { rs[a], rs[b] = rs[b], rs[a] })
		p.Metadata.OwnerReferences = rs
	}
	switch x := g.r.Float64(); {
	case x < 0.04: // orphan without owners: adopted
	case x < 0.06: // orphan owned (not as controller) by others: adopted
		refs(others()...)
	case x < 0.09: // orphan naming the Job, not as controller (any kind): adopted, counted once it has the finalizer
		named := thisJob(notController())
		if g.chance(0.3) {
			named = ref(g.pick("v1", "apps/v1"), g.pick("ConfigMap", "ReplicaSet"), "x", uid, notController())
		}
		rs := []*pb.OwnerReference{named}
		if g.chance(0.4) {
			rs = append(rs, others()...)
		}
		refs(rs...)
		return true
	case x < 0.12: // owned but no longer matching: released
		refs(thisJob(proto.Bool(true)))
		delete(p.Metadata.Labels, "batch.kubernetes.io/controller-uid")
	case x < 0.14: // controlled by another owner: another Job of the same name, a ReplicaSet
		if g.chance(0.5) {
			refs(ref("batch/v1", "Job", name, "uid-of-an-older-job", proto.Bool(true)))
		} else {
			refs(append(others(), ref("apps/v1", "ReplicaSet", "rs-owner", "uid-rs-owner", proto.Bool(true)))...)
		}
	case x < 0.16: // a controller reference with the Job's uid under another kind, name or apiVersion
		switch g.intn(3) {
		case 0:
			refs(ref("apps/v1", "ReplicaSet", name, uid, proto.Bool(true)))
		case 1:
			refs(ref("batch/v1", "Job", name+"-renamed", uid, proto.Bool(true)))
		default:
			refs(ref(g.pick("batch/v2", "batch/v1beta1"), "Job", name, uid, proto.Bool(true)))
		}
	case x < 0.22: // owned, with other non-controller owners too
		refs(append(others(), thisJob(proto.Bool(true)))...)
	default:
		refs(thisJob(proto.Bool(true)))
	}
	return false
}

// oddNumber is an annotation value that is not a plain small integer
// below n: signs, leading zeros, spaces, other bases, Unicode digits,
// overflows of int32 and int64, empty, words and very long digit strings.
func (g *gen) oddNumber(n int) string {
	ix := strconv.Itoa(g.intn(max(1, n)))
	return g.pick(
		"abc", "junk", "-1", "-0", "", " ", "+"+ix, "0"+ix, "00"+ix, " "+ix, ix+" ", ix+"\n", ix+".0", "0x1", "1e1", "1_0",
		"١", "２", "2147483647", "2147483648", "-2147483648", "-2147483649", "4294967296", "9223372036854775807",
		"9223372036854775808", "-9223372036854775809", strings.Repeat("9", 40), "0"+strings.Repeat("0", 300)+ix,
		strings.Repeat("x", 5000),
	)
}

func (g *gen) pick3(a, b, c int) int {
	switch g.intn(3) {
	case 0:
		return a
	case 1:
		return b
	}
	return c
}

func (g *gen) podStatus(p *pb.Pod, s *pb.JobSpec, mayRun bool) {
	phase := g.pick("Pending", "Running", "Running", "Running", "Succeeded", "Succeeded", "Failed", "Failed")
	if !mayRun {
		phase = g.pick("Succeeded", "Failed")
	}
	if g.chance(0.02) {
		phase = "Unknown"
	}
	st := p.Status
	st.Phase = phase
	if phase != "Pending" || g.chance(0.5) {
		p.Spec.NodeName = g.pick("node-a", "node-b")
	}
	containers := s.Template.Spec.Containers
	terminated := func(code int32) *pb.ContainerState {
		finished := g.past() // each g.past() is earlier than the one before
		return &pb.ContainerState{Terminated: &pb.ContainerStateTerminated{
			ExitCode: code, Reason: map[bool]string{true: "Completed", false: "Error"}[code == 0],
			StartedAt: g.past(), FinishedAt: finished,
		}}
	}
	switch phase {
	case "Pending":
		for _, c := range containers {
			st.ContainerStatuses = append(st.ContainerStatuses, &pb.ContainerStatus{Name: c.Name,
				State: &pb.ContainerState{Waiting: &pb.ContainerStateWaiting{Reason: "ContainerCreating"}}})
		}
	case "Running", "Unknown":
		ready := g.chance(0.6)
		// Restarts happen under restartPolicy Never too: a container's own restart
		// rules (KEP-5307) or RestartAllContainers (KEP-5532) restart it in place.
		restarting := !ready && g.chance(0.2)
		for _, c := range containers {
			state := &pb.ContainerState{Running: &pb.ContainerStateRunning{StartedAt: g.past()}}
			restarts := int32(g.pick3(0, 0, 1+g.intn(3)))
			if restarting && g.chance(0.7) {
				// Between two in-place restarts the pod stays Running and the container waits.
				state = &pb.ContainerState{Waiting: &pb.ContainerStateWaiting{Reason: g.pick("CrashLoopBackOff", "ContainerCreating")}}
				restarts = int32(1 + g.intn(3))
			}
			st.ContainerStatuses = append(st.ContainerStatuses, &pb.ContainerStatus{Name: c.Name, Ready: ready,
				RestartCount: restarts, State: state})
		}
		st.Conditions = append(st.Conditions, &pb.PodCondition{Type: "Ready", Status: map[bool]string{true: "True", false: "False"}[ready],
			LastTransitionTime: g.past()})
		if restarting && g.chance(0.5) {
			st.Conditions = append(st.Conditions, &pb.PodCondition{Type: "AllContainersRestarting", Status: "True",
				LastTransitionTime: g.past()})
		}
	case "Succeeded":
		if !g.chance(0.1) {
			for _, c := range containers {
				st.ContainerStatuses = append(st.ContainerStatuses, &pb.ContainerStatus{Name: c.Name, State: terminated(0)})
			}
		}
		if g.chance(0.5) {
			st.Conditions = append(st.Conditions, &pb.PodCondition{Type: "Ready", Status: "False", LastTransitionTime: g.past()})
		}
	case "Failed":
		if !g.chance(0.1) {
			for k, c := range containers {
				code := ExitCodePool[g.intn(len(ExitCodePool))]
				if k > 0 && g.chance(0.5) {
					code = 0
				}
				// A pod that fails after in-place restarts still has its restart count.
				st.ContainerStatuses = append(st.ContainerStatuses, &pb.ContainerStatus{Name: c.Name, State: terminated(code),
					RestartCount: int32(g.pick3(0, 0, 1+g.intn(3)))})
			}
		}
		if g.chance(0.3) {
			st.Conditions = append(st.Conditions, &pb.PodCondition{Type: g.pick("DisruptionTarget", "ConfigIssue"),
				Status: g.pick("True", "True", "False"), Reason: "Test", LastTransitionTime: g.past()})
		}
		if g.chance(0.5) {
			st.Conditions = append(st.Conditions, &pb.PodCondition{Type: "Ready", Status: "False", LastTransitionTime: g.past()})
		}
	}
	if len(s.Template.Spec.InitContainers) > 0 && phase != "Pending" && g.chance(0.8) {
		code := int32(0)
		if phase == "Failed" && g.chance(0.3) {
			code = ExitCodePool[g.intn(len(ExitCodePool))]
		}
		st.InitContainerStatuses = []*pb.ContainerStatus{{Name: "init", State: terminated(code)}}
	}
}

func (g *gen) status(req *pb.DecideJobRequest) {
	j := req.Job
	s := j.Spec
	st := j.Status
	indexed := s.GetCompletionMode() == "Indexed"
	suspended := s.GetSuspend()
	fresh := g.chance(0.15)
	if fresh {
		if g.chance(0.5) {
			st.UncountedTerminatedPods = &pb.UncountedTerminatedPods{}
		}
		return
	}
	if !suspended || g.chance(0.5) {
		st.StartTime = timestamppb.New(g.now.Add(-time.Duration(60+g.intn(4000)) * time.Second))
	}
	active := 0
	for _, p := range req.Pods {
		if ph := p.Status.Phase; ph != "Succeeded" && ph != "Failed" && p.Metadata.DeletionTimestamp == nil {
			active++
		}
	}
	if g.chance(0.7) {
		st.Active = int32(active)
	} else {
		st.Active = int32(g.intn(active + 2))
	}
	if g.chance(0.8) {
		st.Ready = proto.Int32(int32(g.intn(int(st.Active) + 1)))
	}
	if g.chance(0.7) {
		st.Terminating = proto.Int32(int32(g.intn(3)))
	}
	st.Failed = int32(g.pick3(0, 0, g.intn(4)))
	if indexed {
		completions := int(s.GetCompletions())
		done := g.indexSubset(min(completions, 40), 0.25)
		var failed []int
		if s.BackoffLimitPerIndex != nil {
			for _, x := range g.indexSubset(min(completions, 40), 0.1) {
				if !containsInt(done, x) {
					failed = append(failed, x)
				}
			}
			if len(failed) > 0 || g.chance(0.6) {
				st.FailedIndexes = proto.String(formatIndexes(failed))
			}
		}
		st.CompletedIndexes = formatIndexes(done)
		st.Succeeded = int32(len(done))
	} else {
		st.Succeeded = int32(g.intn(3))
	}
	if g.chance(0.8) {
		u := &pb.UncountedTerminatedPods{}
		for _, p := range req.Pods {
			if len(p.Metadata.Finalizers) == 0 || !g.chance(0.3) {
				continue
			}
			switch p.Status.Phase {
			case "Succeeded":
				if !indexed {
					u.Succeeded = append(u.Succeeded, p.Metadata.Uid)
				}
			case "Failed":
				u.Failed = append(u.Failed, p.Metadata.Uid)
			}
		}
		if g.chance(0.1) {
			u.Failed = append(u.Failed, "uid-of-a-pod-already-gone")
		}
		st.UncountedTerminatedPods = u
	}
	if suspended && g.chance(0.6) {
		st.Conditions = append(st.Conditions, &pb.JobCondition{Type: "Suspended", Status: "True", Reason: "JobSuspended",
			Message: "Job suspended", LastProbeTime: g.past(), LastTransitionTime: g.past()})
	} else if suspended && g.chance(0.4) {
		// Suspended again after a resume: the flip back to True clears startTime (KEP-5440).
		st.Conditions = append(st.Conditions, &pb.JobCondition{Type: "Suspended", Status: "False", Reason: "JobResumed",
			Message: "Job resumed", LastProbeTime: g.past(), LastTransitionTime: g.past()})
	} else if !suspended && g.chance(0.1) {
		st.Conditions = append(st.Conditions, &pb.JobCondition{Type: "Suspended", Status: g.pick("True", "False"), Reason: "JobResumed",
			Message: "Job resumed", LastProbeTime: g.past(), LastTransitionTime: g.past()})
	}
	switch x := g.r.Float64(); {
	case x < 0.06:
		st.Conditions = append(st.Conditions, &pb.JobCondition{Type: "FailureTarget", Status: "True", Reason: "BackoffLimitExceeded",
			Message: "Job has reached the specified backoff limit", LastProbeTime: g.past(), LastTransitionTime: g.past()})
	case x < 0.10:
		st.Conditions = append(st.Conditions, &pb.JobCondition{Type: "SuccessCriteriaMet", Status: "True", Reason: "CompletionsReached",
			Message: "Reached expected number of succeeded pods", LastProbeTime: g.past(), LastTransitionTime: g.past()})
	case x < 0.12:
		t := g.past()
		st.Conditions = append(st.Conditions,
			&pb.JobCondition{Type: "SuccessCriteriaMet", Status: "True", Reason: "CompletionsReached", Message: "Reached expected number of succeeded pods", LastProbeTime: t, LastTransitionTime: t},
			&pb.JobCondition{Type: "Complete", Status: "True", Reason: "CompletionsReached", Message: "Reached expected number of succeeded pods", LastProbeTime: t, LastTransitionTime: t})
		st.CompletionTime = t
	}
}

func containsInt(xs []int, x int) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// CopyMap is a copy of a string map, never nil.
func CopyMap(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// ValidateJob runs upstream's API validation on a Job, after the API
// server's defaulting, with an image filled in (the contract does not carry one).
func ValidateJob(pj *pb.Job) error {
	j := &batchv1.Job{}
	if err := kubejson.ToKube(pj, j); err != nil {
		return fmt.Errorf("job: %w", err)
	}
	for _, cs := range [][]v1.Container{j.Spec.Template.Spec.Containers, j.Spec.Template.Spec.InitContainers} {
		for i := range cs {
			cs[i].Image = "busybox"
		}
	}
	batchdefaults.SetObjectDefaults_Job(j)
	internal := &batchinternal.Job{}
	if err := legacyscheme.Scheme.Convert(j, internal, nil); err != nil {
		return err
	}
	opts := batchvalidation.JobValidationOptions{RequirePrefixedLabels: true}
	if errs := batchvalidation.ValidateJobCreate(internal, opts); len(errs) > 0 {
		return errs.ToAggregate()
	}
	return nil
}
