package request

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/randfill"

	pb "job-decider.dev/clients/go/jobdecider/v1"
)

var (
	job      = JobRef{Name: "pi", UID: "job-uid"}
	yes, no  = true, false
	t0       = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	always   = corev1.ContainerRestartPolicyAlways
	never    = corev1.ContainerRestartPolicyNever
	grace    = int64(30)
	ownerRef = metav1.OwnerReference{APIVersion: "batch/v1", Kind: "Job", Name: "pi", UID: "job-uid", Controller: &yes}
)

func ts(t time.Time) *timestamppb.Timestamp { return timestamppb.New(t) }
func str(s string) *string                  { return &s }

// basePod is a running pod of job with every field a lean pod carries set.
func basePod() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: "pi-0-abc", UID: "pod-uid", Namespace: "ns",
			Labels:            map[string]string{"batch.kubernetes.io/controller-uid": "job-uid", "app": "pi"},
			Annotations:       map[string]string{"batch.kubernetes.io/job-completion-index": "0", "unrelated": "x"},
			OwnerReferences:   []metav1.OwnerReference{ownerRef},
			Finalizers:        []string{"example.com/other", "batch.kubernetes.io/job-tracking"},
			CreationTimestamp: metav1.NewTime(t0),
		},
		Spec: corev1.PodSpec{
			NodeName: "node-1",
			InitContainers: []corev1.Container{
				{Name: "setup"}, {Name: "proxy", RestartPolicy: &always}, {Name: "once", RestartPolicy: &never},
			},
		},
		Status: corev1.PodStatus{
			Phase: corev1.PodRunning,
			Conditions: []corev1.PodCondition{
				{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(t0.Add(time.Second)), Reason: "r", Message: "m"},
				{Type: corev1.DisruptionTarget, Status: corev1.ConditionFalse},
			},
			ContainerStatuses: []corev1.ContainerStatus{
				{Name: "main", RestartCount: 2, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 3, FinishedAt: metav1.NewTime(t0.Add(9 * time.Second)), Reason: "Error"}}},
				{Name: "side", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(t0)}}},
			},
			InitContainerStatuses: []corev1.ContainerStatus{{Name: "setup", RestartCount: 1}},
		},
	}
}

// baseLean is basePod in the lean encoding, written out by hand.
func baseLean() *pb.LeanPod {
	return &pb.LeanPod{
		Name: "pi-0-abc", Uid: "pod-uid",
		Labels:                map[string]string{"batch.kubernetes.io/controller-uid": "job-uid", "app": "pi"},
		CompletionIndex:       str("0"),
		ControlledByJob:       true,
		TrackingFinalizer:     true,
		CreationTimestamp:     ts(t0),
		Scheduled:             true,
		NodeName:              "node-1",
		SidecarInitContainers: []string{"proxy"},
		Phase:                 pb.LeanPodPhase_LEAN_POD_PHASE_RUNNING,
		Conditions: []*pb.LeanPodCondition{
			{Type: "Ready", Status: pb.LeanConditionStatus_LEAN_CONDITION_STATUS_TRUE, LastTransitionTime: ts(t0.Add(time.Second)), Reason: "r"},
			{Type: "DisruptionTarget", Status: pb.LeanConditionStatus_LEAN_CONDITION_STATUS_FALSE},
		},
		ContainerStatuses: []*pb.LeanContainerStatus{
			{Name: "main", RestartCount: 2, Terminated: &pb.LeanTerminated{ExitCode: 3, FinishedAt: ts(t0.Add(9 * time.Second)), Reason: "Error"}},
			{Name: "side"},
		},
		InitContainerStatuses: []*pb.LeanContainerStatus{{Name: "setup", RestartCount: 1}},
	}
}

func pbRef(apiVersion, kind, name, uid string, controller *bool) *pb.OwnerReference {
	return &pb.OwnerReference{ApiVersion: apiVersion, Kind: kind, Name: name, Uid: uid, Controller: controller}
}

// leanCases pin the lean encoding's semantics, one rule a case.
var leanCases = []struct {
	name string
	job  JobRef
	edit func(*corev1.Pod)
	want func(*pb.LeanPod)
}{
	{name: "the Job's controller reference is elided", job: job},
	{
		name: "other references are kept in order around the elided one", job: job,
		edit: func(p *corev1.Pod) {
			a := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "a", UID: "a-uid", BlockOwnerDeletion: &yes}
			b := metav1.OwnerReference{APIVersion: "v1", Kind: "Secret", Name: "b", UID: "b-uid", Controller: &no}
			p.OwnerReferences = []metav1.OwnerReference{a, ownerRef, b}
		},
		want: func(l *pb.LeanPod) {
			a := pbRef("v1", "ConfigMap", "a", "a-uid", nil)
			a.BlockOwnerDeletion = &yes
			l.OwnerReferences = []*pb.OwnerReference{a, pbRef("v1", "Secret", "b", "b-uid", &no)}
		},
	},
	{
		name: "a controller reference to another Job is kept", job: job,
		edit: func(p *corev1.Pod) { p.OwnerReferences[0].UID = "other-uid" },
		want: func(l *pb.LeanPod) {
			l.ControlledByJob = false
			l.OwnerReferences = []*pb.OwnerReference{pbRef("batch/v1", "Job", "pi", "other-uid", &yes)}
		},
	},
	{
		name: "a reference to the Job that is not its controller is kept", job: job,
		edit: func(p *corev1.Pod) { p.OwnerReferences[0].Controller = &no },
		want: func(l *pb.LeanPod) {
			l.ControlledByJob = false
			l.OwnerReferences = []*pb.OwnerReference{pbRef("batch/v1", "Job", "pi", "job-uid", &no)}
		},
	},
	{
		name: "only the first controller reference can be the Job's", job: job,
		edit: func(p *corev1.Pod) {
			other := metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "rs", UID: "rs-uid", Controller: &yes}
			p.OwnerReferences = []metav1.OwnerReference{other, ownerRef}
		},
		want: func(l *pb.LeanPod) {
			l.ControlledByJob = false
			l.OwnerReferences = []*pb.OwnerReference{pbRef("apps/v1", "ReplicaSet", "rs", "rs-uid", &yes), pbRef("batch/v1", "Job", "pi", "job-uid", &yes)}
		},
	},
	{
		name: "a reference of another kind or apiVersion is kept", job: job,
		edit: func(p *corev1.Pod) { p.OwnerReferences[0].APIVersion = "batch/v2" },
		want: func(l *pb.LeanPod) {
			l.ControlledByJob = false
			l.OwnerReferences = []*pb.OwnerReference{pbRef("batch/v2", "Job", "pi", "job-uid", &yes)}
		},
	},
	{
		name: "a Job without a uid elides nothing", job: JobRef{Name: "pi"},
		edit: func(p *corev1.Pod) { p.OwnerReferences[0].UID = "" },
		want: func(l *pb.LeanPod) {
			l.ControlledByJob = false
			l.OwnerReferences = []*pb.OwnerReference{pbRef("batch/v1", "Job", "pi", "", &yes)}
		},
	},
	{
		name: "the index annotations verbatim, empty ones included", job: job,
		edit: func(p *corev1.Pod) {
			p.Annotations = map[string]string{
				"batch.kubernetes.io/job-completion-index":            " 07",
				"batch.kubernetes.io/job-index-failure-count":         "",
				"batch.kubernetes.io/job-index-ignored-failure-count": "x",
			}
		},
		want: func(l *pb.LeanPod) {
			l.CompletionIndex, l.IndexFailureCount, l.IndexIgnoredFailureCount = str(" 07"), str(""), str("x")
		},
	},
	{
		name: "absent annotations stay unset", job: job,
		edit: func(p *corev1.Pod) { p.Annotations = nil },
		want: func(l *pb.LeanPod) { l.CompletionIndex = nil },
	},
	{
		name: "no tracking finalizer, unscheduled, no sidecars", job: job,
		edit: func(p *corev1.Pod) { p.Finalizers = []string{"example.com/other"}; p.Spec = corev1.PodSpec{} },
		want: func(l *pb.LeanPod) {
			l.TrackingFinalizer, l.Scheduled, l.SidecarInitContainers, l.NodeName = false, false, nil, ""
		},
	},
	{
		name: "deletion and times at whole seconds", job: job,
		edit: func(p *corev1.Pod) {
			d := metav1.NewTime(t0.Add(90*time.Second + 999*time.Millisecond))
			p.DeletionTimestamp, p.DeletionGracePeriodSeconds = &d, &grace
			p.CreationTimestamp = metav1.NewTime(t0.Add(500 * time.Millisecond))
		},
		want: func(l *pb.LeanPod) {
			l.DeletionTimestamp, l.DeletionGracePeriodSeconds = ts(t0.Add(90*time.Second)), &grace
		},
	},
	{
		name: "an empty phase and condition status are unspecified", job: job,
		edit: func(p *corev1.Pod) { p.Status.Phase = ""; p.Status.Conditions[1].Status = "" },
		want: func(l *pb.LeanPod) {
			l.Phase = pb.LeanPodPhase_LEAN_POD_PHASE_UNSPECIFIED
			l.Conditions[1].Status = pb.LeanConditionStatus_LEAN_CONDITION_STATUS_UNSPECIFIED
		},
	},
	{
		name: "what only the extended failure policy reads", job: job,
		edit: func(p *corev1.Pod) {
			p.Annotations["job-decider.dev/rule-match-counts"] = "oom=1"
			p.Annotations["job-decider.dev/failed-nodes"] = "n1,n2"
			p.Status.Reason, p.Status.Message = "UnexpectedAdmissionError", "no GPU"
			p.Status.ContainerStatuses[0].State.Terminated.Message = "killed"
			p.Status.ContainerStatuses[1].State = corev1.ContainerState{
				Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff", Message: "pull"},
			}
		},
		want: func(l *pb.LeanPod) {
			l.RuleMatchCounts, l.FailedNodes = str("oom=1"), str("n1,n2")
			l.Reason, l.Message = "UnexpectedAdmissionError", "no GPU"
			l.ContainerStatuses[0].Terminated.Message = "killed"
			l.ContainerStatuses[1].WaitingReason = "ImagePullBackOff"
		},
	},
	{
		name: "every phase", job: job,
		edit: func(p *corev1.Pod) {
			p.Status.Phase = corev1.PodUnknown
			p.Status.Conditions[0].Status = corev1.ConditionUnknown
		},
		want: func(l *pb.LeanPod) {
			l.Phase = pb.LeanPodPhase_LEAN_POD_PHASE_UNKNOWN
			l.Conditions[0].Status = pb.LeanConditionStatus_LEAN_CONDITION_STATUS_UNKNOWN
		},
	},
}

func TestLeanPod(t *testing.T) {
	for _, c := range leanCases {
		t.Run(c.name, func(t *testing.T) {
			pod, want := basePod(), baseLean()
			if c.edit != nil {
				c.edit(pod)
			}
			if c.want != nil {
				c.want(want)
			}
			got, err := LeanPod(pod, c.job)
			if err != nil {
				t.Fatal(err)
			}
			if !proto.Equal(got, want) {
				t.Errorf("from corev1.Pod:\n%s", diffText(t, got, want, "got", "want"))
			}
			// The harness's route, through the contract's Pod, agrees.
			got, err = LeanPodFromProto(Pod(pod), c.job)
			if err != nil {
				t.Fatal(err)
			}
			if !proto.Equal(got, want) {
				t.Errorf("from pb.Pod:\n%s", diffText(t, got, want, "got", "want"))
			}
		})
	}
}

func TestLeanPodEveryPhase(t *testing.T) {
	for phase, want := range map[corev1.PodPhase]pb.LeanPodPhase{
		corev1.PodPending: pb.LeanPodPhase_LEAN_POD_PHASE_PENDING, corev1.PodRunning: pb.LeanPodPhase_LEAN_POD_PHASE_RUNNING,
		corev1.PodSucceeded: pb.LeanPodPhase_LEAN_POD_PHASE_SUCCEEDED, corev1.PodFailed: pb.LeanPodPhase_LEAN_POD_PHASE_FAILED,
		corev1.PodUnknown: pb.LeanPodPhase_LEAN_POD_PHASE_UNKNOWN, "": pb.LeanPodPhase_LEAN_POD_PHASE_UNSPECIFIED,
	} {
		pod := basePod()
		pod.Status.Phase = phase
		got, err := LeanPod(pod, job)
		if err != nil || got.GetPhase() != want {
			t.Errorf("phase %q: got %v, %v; want %v", phase, got.GetPhase(), err, want)
		}
	}
}

// TestNotLean: a value the API does not define is an error naming it, from
// either route and from the request builders, never a guess.
func TestNotLean(t *testing.T) {
	cases := []struct {
		name  string
		edit  func(*corev1.Pod)
		field string
		value string
	}{
		{"unknown phase", func(p *corev1.Pod) { p.Status.Phase = "Evicted" }, "status.phase", "Evicted"},
		{"lower-case phase", func(p *corev1.Pod) { p.Status.Phase = "running" }, "status.phase", "running"},
		{"unknown condition status", func(p *corev1.Pod) { p.Status.Conditions[1].Status = "Maybe" }, "status.conditions[1].status", "Maybe"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			pod := basePod()
			c.edit(pod)
			want := &NotLeanError{Pod: -1, Field: c.field, Value: c.value}
			check := func(route string, l *pb.LeanPod, err error, want *NotLeanError) {
				t.Helper()
				var nl *NotLeanError
				if !errors.As(err, &nl) || *nl != *want || l != nil {
					t.Errorf("%s: got %v, %v; want the error %v", route, l, err, want)
				}
			}
			l, err := LeanPod(pod, job)
			check("LeanPod", l, err, want)
			l, err = LeanPodFromProto(Pod(pod), job)
			check("LeanPodFromProto", l, err, want)

			at := &NotLeanError{Pod: 1, Field: c.field, Value: c.value}
			req, err := Build(&batchv1.Job{}, []*corev1.Pod{basePod(), pod})
			if req != nil {
				t.Errorf("Build gave a request: %v", req)
			}
			check("Build", nil, err, at)
			full := BuildFull(&batchv1.Job{}, []*corev1.Pod{basePod(), pod})
			req, err = Lean(full)
			if req != nil {
				t.Errorf("Lean gave a request: %v", req)
			}
			check("Lean", nil, err, at)
			if len(full.GetPods()) != 2 || full.GetPods()[1].GetStatus().GetPhase() != string(pod.Status.Phase) {
				t.Errorf("BuildFull lost the pod as it is: %v", full.GetPods())
			}
		})
	}
}

func TestBuildAndLeanAgree(t *testing.T) {
	j := trimJob()
	a, b := basePod(), basePod()
	b.Name, b.UID, b.Status.Phase = "pi-1", "uid-1", corev1.PodSucceeded
	b.OwnerReferences[0].UID = "foreign"
	pods := []*corev1.Pod{a, b}
	req, err := Build(j, pods)
	if err != nil {
		t.Fatal(err)
	}
	if len(req.GetPods()) != 0 || len(req.GetLeanPods()) != 2 {
		t.Fatalf("Build: %d pods, %d lean pods", len(req.GetPods()), len(req.GetLeanPods()))
	}
	if !req.GetLeanPods()[0].GetControlledByJob() || req.GetLeanPods()[1].GetControlledByJob() {
		t.Errorf("controlled_by_job: %v, %v", req.GetLeanPods()[0].GetControlledByJob(), req.GetLeanPods()[1].GetControlledByJob())
	}
	full := BuildFull(j, pods)
	full.ControllerName, full.Now = "x.dev/y", ts(t0)
	full.Expectations = &pb.Expectations{PodChangesPending: true}
	lean, err := Lean(full)
	if err != nil {
		t.Fatal(err)
	}
	req.ControllerName, req.Now, req.Expectations = "x.dev/y", ts(t0), &pb.Expectations{PodChangesPending: true}
	if !proto.Equal(lean, req) {
		t.Errorf("Lean(BuildFull) differs from Build:\n%s", diffText(t, lean, req, "Lean", "Build"))
	}
	if len(full.GetPods()) != 2 || len(full.GetLeanPods()) != 0 {
		t.Errorf("Lean changed its input: %d pods, %d lean pods", len(full.GetPods()), len(full.GetLeanPods()))
	}
}

// viaJSON is the route the shim took before this package: encoding/json,
// then protojson with unknown fields dropped.
func viaJSON(t *testing.T, obj any, msg proto.Message) bool {
	t.Helper()
	data, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	if err := (protojson.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(data, msg); err != nil {
		// Random values JSON cannot carry (a time past year 9999, say): no oracle.
		return false
	}
	return true
}

// TestJobAndPodMatchTheJSONRoute fills Jobs and Pods with random values and
// checks the direct conversions against the JSON route, field for field.
func TestJobAndPodMatchTheJSONRoute(t *testing.T) {
	f := randfill.NewWithSeed(1).NilChance(0.2).NumElements(0, 3).Funcs(
		// Quantities and raw extensions do not survive random filling, and
		// the contract reads neither.
		func(r *corev1.ResourceRequirements, c randfill.Continue) {},
		func(r *corev1.Volume, c randfill.Continue) { r.Name = c.String(5) },
		func(m *metav1.ManagedFieldsEntry, c randfill.Continue) { m.Manager = c.String(5) },
	)
	compared := 0
	for i := 0; i < 300; i++ {
		j := &batchv1.Job{}
		f.Fill(j)
		want := &pb.Job{}
		if viaJSON(t, j, want) {
			compared++
			if got := Job(j); !proto.Equal(got, want) {
				t.Fatalf("Job %d differs from the JSON route:\n%s", i, diffText(t, got, want, "direct", "json"))
			}
		}
		p := &corev1.Pod{}
		f.Fill(p)
		wantPod := &pb.Pod{}
		if viaJSON(t, p, wantPod) {
			compared++
			if got := Pod(p); !proto.Equal(got, wantPod) {
				t.Fatalf("Pod %d differs from the JSON route:\n%s", i, diffText(t, got, wantPod, "direct", "json"))
			}
		}
	}
	if compared < 300 {
		t.Fatalf("only %d of 600 random objects went through JSON: the test compares too little", compared)
	}
	t.Logf("%d random objects compared", compared)
}

// TestJobFieldsAllSet is the hand-written complement of the random test:
// a Job with every contract field set converts to exactly these values.
func TestJobFieldsAllSet(t *testing.T) {
	i32 := func(v int32) *int32 { return &v }
	i64 := func(v int64) *int64 { return &v }
	mode, repl := batchv1.IndexedCompletion, batchv1.Failed
	start := metav1.NewTime(t0)
	j := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "pi", UID: "job-uid", Generation: 3, Labels: map[string]string{"a": "b"}},
		Spec: batchv1.JobSpec{
			Parallelism: i32(2), Completions: i32(5), ActiveDeadlineSeconds: i64(60), BackoffLimit: i32(1),
			BackoffLimitPerIndex: i32(2), MaxFailedIndexes: i32(3), CompletionMode: &mode, PodReplacementPolicy: &repl,
			ManagedBy: str("x.dev/y"), Suspend: &no, ManualSelector: &yes, TTLSecondsAfterFinished: i32(9),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"k": "v"},
				MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "e", Operator: metav1.LabelSelectorOpIn, Values: []string{"1"}}}},
			PodFailurePolicy: &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{
				{Action: batchv1.PodFailurePolicyActionFailJob, OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{ContainerName: str("main"), Operator: batchv1.PodFailurePolicyOnExitCodesOpIn, Values: []int32{1, 2}}},
				{Action: batchv1.PodFailurePolicyActionIgnore, OnPodConditions: []batchv1.PodFailurePolicyOnPodConditionsPattern{{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue}}},
			}},
			SuccessPolicy: &batchv1.SuccessPolicy{Rules: []batchv1.SuccessPolicyRule{{SucceededIndexes: str("0-2"), SucceededCount: i32(2)}}},
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
				Containers: []corev1.Container{{Name: "main", Env: []corev1.EnvVar{{Name: "A", Value: "1"},
					{Name: "I", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.name"}}},
					{Name: "S", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{Key: "k"}}}}}}}},
		},
		Status: batchv1.JobStatus{StartTime: &start, Active: 1, Succeeded: 2, Failed: 3, Terminating: i32(4), Ready: i32(1),
			CompletedIndexes: "0,1", FailedIndexes: str("2"),
			UncountedTerminatedPods: &batchv1.UncountedTerminatedPods{Failed: []types.UID{"u"}},
			Conditions:              []batchv1.JobCondition{{Type: batchv1.JobSuspended, Status: corev1.ConditionFalse, LastTransitionTime: start, Reason: "R"}}},
	}
	got := Job(j)
	want := &pb.Job{}
	if !viaJSON(t, j, want) {
		t.Fatal("no JSON form")
	}
	if !proto.Equal(got, want) {
		t.Fatalf("differs from the JSON route:\n%s", diffText(t, got, want, "direct", "json"))
	}
	spec := got.GetSpec()
	if spec.GetCompletionMode() != "Indexed" || spec.GetPodReplacementPolicy() != "Failed" || spec.GetManagedBy() != "x.dev/y" ||
		spec.GetTemplate().GetSpec().GetContainers()[0].GetEnv()[2].GetValueFrom() == nil ||
		got.GetStatus().GetUncountedTerminatedPods().GetFailed()[0] != "u" || got.GetStatus().GetStartTime().GetSeconds() != t0.Unix() {
		t.Errorf("fields lost: %v", got)
	}
	// The message shares no pointer with the Job.
	*got.Spec.Parallelism = 99
	got.Metadata.Labels["a"] = "changed"
	if *j.Spec.Parallelism != 2 || j.Labels["a"] != "b" {
		t.Errorf("changing the message changed the Job")
	}
}

// diffText lists the lines of the two messages' proto3 JSON forms that only
// one side has (a failure message's guide, not a check).
func diffText(t *testing.T, left, right proto.Message, leftName, rightName string) string {
	t.Helper()
	lines := func(m proto.Message) []string {
		return strings.Split(protojson.MarshalOptions{Multiline: true}.Format(m), "\n")
	}
	l, r := lines(left), lines(right)
	var out []string
	for _, side := range []struct {
		name       string
		own, other []string
	}{{leftName, l, r}, {rightName, r, l}} {
		for _, line := range side.own {
			if !slices.Contains(side.other, line) {
				out = append(out, "  "+side.name+": "+strings.TrimSpace(line))
			}
		}
	}
	return strings.Join(out, "\n")
}

// trimJob selects on two keys and has a policy on DisruptionTarget.
func trimJob() *batchv1.Job {
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "pi", UID: "job-uid"},
		Spec: batchv1.JobSpec{
			Selector: &metav1.LabelSelector{
				MatchLabels:      map[string]string{"batch.kubernetes.io/controller-uid": "job-uid"},
				MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "tier", Operator: metav1.LabelSelectorOpExists}},
			},
			PodFailurePolicy: &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{{
				Action:          batchv1.PodFailurePolicyActionIgnore,
				OnPodConditions: []batchv1.PodFailurePolicyOnPodConditionsPattern{{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue}},
			}}},
		},
	}
}

func TestReadsOf(t *testing.T) {
	j := trimJob()
	want := &Reads{LabelKeys: []string{"batch.kubernetes.io/controller-uid", "tier"}, ConditionTypes: []string{"DisruptionTarget", "Ready"}}
	for route, got := range map[string]*Reads{"ReadsOf": ReadsOf(j), "ReadsOfProto": ReadsOfProto(Job(j))} {
		if !slices.Equal(got.LabelKeys, want.LabelKeys) || !slices.Equal(got.ConditionTypes, want.ConditionTypes) {
			t.Errorf("%s = %+v, want %+v", route, got, want)
		}
	}
	// No selector: no label is read; no policy: only Ready.
	got := ReadsOf(&batchv1.Job{})
	if len(got.LabelKeys) != 0 || !slices.Equal(got.ConditionTypes, []string{"Ready"}) {
		t.Errorf("ReadsOf(empty Job) = %+v", got)
	}
}

// TestBuildTrims: Build keeps the labels the selector names and the
// conditions decisions read, nothing else, and shares equal label maps.
func TestBuildTrims(t *testing.T) {
	a, b, c := basePod(), basePod(), basePod()
	b.Name, b.UID = "b", "uid-b"
	c.Name, c.UID = "c", "uid-c"
	c.Labels = map[string]string{"batch.kubernetes.io/controller-uid": "job-uid", "tier": "gpu"}
	c.Status.Conditions = append(c.Status.Conditions, corev1.PodCondition{Type: "Custom", Status: corev1.ConditionTrue})
	req, err := Build(trimJob(), []*corev1.Pod{a, b, c})
	if err != nil {
		t.Fatal(err)
	}
	la, lb, lc := req.GetLeanPods()[0], req.GetLeanPods()[1], req.GetLeanPods()[2]
	if want := map[string]string{"batch.kubernetes.io/controller-uid": "job-uid"}; !maps.Equal(la.GetLabels(), want) || !maps.Equal(lb.GetLabels(), want) {
		t.Errorf("labels %v, %v; want %v", la.GetLabels(), lb.GetLabels(), want)
	}
	if reflect.ValueOf(la.GetLabels()).UnsafePointer() != reflect.ValueOf(lb.GetLabels()).UnsafePointer() {
		t.Errorf("equal selector labels got two maps")
	}
	if want := map[string]string{"batch.kubernetes.io/controller-uid": "job-uid", "tier": "gpu"}; !maps.Equal(lc.GetLabels(), want) {
		t.Errorf("labels %v, want %v", lc.GetLabels(), want)
	}
	var types []string
	for _, cond := range lc.GetConditions() {
		types = append(types, cond.GetType())
	}
	if !slices.Equal(types, []string{"Ready", "DisruptionTarget"}) {
		t.Errorf("conditions %v, want Ready and DisruptionTarget in pod order", types)
	}
	// Carved from shared chunks, yet no slice can grow into a neighbour's.
	if cap(la.Conditions) != len(la.Conditions) || cap(la.ContainerStatuses) != len(la.ContainerStatuses) {
		t.Errorf("conditions cap %d len %d", cap(la.Conditions), len(la.Conditions))
	}
	// Untrimmed, the same pod keeps everything.
	full, err := LeanPod(c, JobRefOf(trimJob()))
	if err != nil {
		t.Fatal(err)
	}
	if len(full.GetConditions()) != 3 || len(full.GetLabels()) != 2 {
		t.Errorf("LeanPod trimmed: %v", full)
	}
}

// TestBuildAllocatesPerChunk: Build's allocations grow with chunks of pods,
// not with pods (a million small objects at 100,000 pods would be the
// collector's work).
func TestBuildAllocatesPerChunk(t *testing.T) {
	pods := make([]*corev1.Pod, 10_000)
	for i := range pods {
		p := basePod()
		p.Name, p.UID = fmt.Sprint("pi-", i), types.UID(fmt.Sprint("uid-", i))
		pods[i] = p
	}
	job := trimJob()
	allocs := testing.AllocsPerRun(3, func() {
		if _, err := Build(job, pods); err != nil {
			t.Fatal(err)
		}
	})
	// Per pod: its completion-index string is carved too; the Job's own
	// conversion and the chunks are a few hundred allocations in all.
	if allocs > float64(len(pods))/10 {
		t.Errorf("Build of %d pods made %.0f allocations, want at most %d", len(pods), allocs, len(pods)/10)
	}
	t.Logf("%d pods: %.0f allocations", len(pods), allocs)
}

// TestBuildOfASmallJobIsSmall: chunks are sized to the request, so a
// one-pod sync does not carve its messages out of thousand-message chunks.
func TestBuildOfASmallJobIsSmall(t *testing.T) {
	pods := []*corev1.Pod{basePod()}
	job := trimJob()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	const runs = 100
	for range runs {
		if _, err := Build(job, pods); err != nil {
			t.Fatal(err)
		}
	}
	runtime.ReadMemStats(&after)
	if perRun := (after.TotalAlloc - before.TotalAlloc) / runs; perRun > 16<<10 {
		t.Errorf("Build of one pod allocated %d bytes, want at most 16 KiB", perRun)
	}
}

// TestBuildReadsDetailsOnlyWithADocument: a Job with an extended failure
// policy document (annotation, or the request's field for Lean) gets every
// condition and the fields only that policy reads; a Job without one gets
// neither, as before.
func TestBuildReadsDetailsOnlyWithADocument(t *testing.T) {
	pod := basePod()
	pod.Status.Reason = "UnexpectedAdmissionError"
	pod.Status.Conditions = append(pod.Status.Conditions, corev1.PodCondition{Type: "PodScheduled", Status: corev1.ConditionFalse, Reason: "Unschedulable"})
	plain := trimJob()
	documented := trimJob()
	documented.Annotations = map[string]string{"job-decider.dev/failure-policy": "apiVersion: job-decider.dev/v1alpha1\nkind: FailurePolicy\n"}
	for _, c := range []struct {
		job     *batchv1.Job
		details bool
	}{{plain, false}, {documented, true}} {
		req, err := Build(c.job, []*corev1.Pod{pod})
		if err != nil {
			t.Fatal(err)
		}
		l := req.GetLeanPods()[0]
		if got := l.GetNodeName() != "" && l.GetReason() != "" && l.GetConditions()[0].GetReason() != ""; got != c.details {
			t.Errorf("details %v, want %v: %v", got, c.details, l)
		}
		if c.details && len(l.GetConditions()) != len(pod.Status.Conditions) {
			t.Errorf("with a document every condition is kept: %v", l.GetConditions())
		}
		if !c.details && (l.GetNodeName() != "" || l.GetReason() != "" || l.GetContainerStatuses()[0].GetTerminated().GetReason() != "") {
			t.Errorf("without a document no detail is sent: %v", l)
		}
		// The harness's route agrees.
		viaLean, err := Lean(BuildFull(c.job, []*corev1.Pod{pod}))
		if err != nil {
			t.Fatal(err)
		}
		if !proto.Equal(viaLean.GetLeanPods()[0], l) {
			t.Errorf("Lean differs from Build:\n%s", diffText(t, viaLean.GetLeanPods()[0], l, "Lean", "Build"))
		}
	}
	// A document in the request's field reads as the annotation does.
	full := BuildFull(plain, []*corev1.Pod{pod})
	full.FailurePolicy = documented.Annotations["job-decider.dev/failure-policy"]
	viaField, err := Lean(full)
	if err != nil {
		t.Fatal(err)
	}
	if viaField.GetLeanPods()[0].GetReason() != "UnexpectedAdmissionError" {
		t.Errorf("the request's document did not bring the details: %v", viaField.GetLeanPods()[0])
	}
}
