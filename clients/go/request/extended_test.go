package request

import (
	"strings"
	"testing"
	"unicode/utf8"

	"google.golang.org/protobuf/proto"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	pb "job-decider.dev/clients/go/jobdecider/v1"
)

const policyDoc = "apiVersion: job-decider.dev/v1alpha1\nkind: FailurePolicy\n"

// detailedPod is basePod with everything the extended failure policy reads set.
func detailedPod() *corev1.Pod {
	p := basePod()
	p.Annotations[ruleMatchCountsKey] = "oom=2"
	p.Annotations[failedNodesKey] = "node-0,node-9"
	p.Status.Reason, p.Status.Message = "UnexpectedAdmissionError", "Allocate failed"
	p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{
		Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable", LastTransitionTime: metav1.NewTime(t0),
	})
	p.Status.ContainerStatuses[0].State.Terminated.Reason = "OOMKilled"
	p.Status.ContainerStatuses[0].State.Terminated.Message = "CUDA error"
	p.Status.InitContainerStatuses[0].State.Waiting = &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff", Message: "not read"}
	return p
}

// detailedLean is detailedPod's lean form for a Job with a document, by hand.
func detailedLean() *pb.LeanPod {
	l := baseLean()
	l.RuleMatchCounts, l.FailedNodes = str("oom=2"), str("node-0,node-9")
	l.Reason, l.Message, l.NodeName = "UnexpectedAdmissionError", "Allocate failed", "node-1"
	l.Conditions[0].Reason = "r"
	l.Conditions = append(l.Conditions, &pb.LeanPodCondition{
		Type: "PodScheduled", Status: pb.LeanConditionStatus_LEAN_CONDITION_STATUS_FALSE, Reason: "Unschedulable", LastTransitionTime: ts(t0),
	})
	l.ContainerStatuses[0].Terminated.Reason, l.ContainerStatuses[0].Terminated.Message = "OOMKilled", "CUDA error"
	l.InitContainerStatuses[0].WaitingReason = "ImagePullBackOff"
	return l
}

func extendedJob() *batchv1.Job {
	j := trimJob()
	j.Annotations = map[string]string{FailurePolicyAnnotation: policyDoc}
	return j
}

// With a document, a lean pod carries what the policy reads, by both routes.
func TestExtendedLeanPodCarriesTheDetails(t *testing.T) {
	ref := JobRef{Name: "pi", UID: "job-uid", Extended: true}
	want := detailedLean()
	got, err := LeanPod(detailedPod(), ref)
	if err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(got, want) {
		t.Errorf("from corev1.Pod:\n%s", diffText(t, got, want, "got", "want"))
	}
	got, err = LeanPodFromProto(Pod(detailedPod()), ref)
	if err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(got, want) {
		t.Errorf("from pb.Pod:\n%s", diffText(t, got, want, "got", "want"))
	}
	if !JobRefOf(extendedJob()).Extended || !JobRefOfProto(Job(extendedJob())).Extended || JobRefOf(trimJob()).Extended {
		t.Error("Extended does not follow the annotation")
	}
}

// Without a document, requests are byte for byte what they were: the
// details a pod has change nothing in the lean or the full request.
func TestWithoutAPolicyTheRequestIsUnchanged(t *testing.T) {
	plain := basePod()
	plain.Status.ContainerStatuses[0].State.Terminated.Reason = "" // basePod's "Error"
	marshal := func(req *pb.DecideJobRequest) string {
		t.Helper()
		b, err := proto.MarshalOptions{Deterministic: true}.Marshal(req)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	withDetails, err := Build(trimJob(), []*corev1.Pod{detailedPod()})
	if err != nil {
		t.Fatal(err)
	}
	without, err := Build(trimJob(), []*corev1.Pod{withoutDetails(detailedPod())})
	if err != nil {
		t.Fatal(err)
	}
	if marshal(withDetails) != marshal(without) {
		t.Errorf("the lean request changed with the pod's details:\n%s", diffText(t, withDetails, without, "details", "none"))
	}
	full, fullWithout := BuildFull(trimJob(), []*corev1.Pod{detailedPod()}), BuildFull(trimJob(), []*corev1.Pod{withoutStatusText(detailedPod())})
	if marshal(full) != marshal(fullWithout) {
		t.Errorf("the full request changed with the pod's status reason:\n%s", diffText(t, full, fullWithout, "details", "none"))
	}
	// With the document both carry them.
	req, err := Build(extendedJob(), []*corev1.Pod{detailedPod()})
	if err != nil {
		t.Fatal(err)
	}
	if l := req.GetLeanPods()[0]; l.GetReason() != "UnexpectedAdmissionError" || l.GetNodeName() != "node-1" || l.GetFailedNodes() != "node-0,node-9" {
		t.Errorf("lean pod %v", l)
	}
	if p := BuildFull(extendedJob(), []*corev1.Pod{detailedPod()}).GetPods()[0]; p.GetStatus().GetReason() != "UnexpectedAdmissionError" || p.GetStatus().GetMessage() != "Allocate failed" {
		t.Errorf("full pod status %v", p.GetStatus())
	}
}

// withoutDetails clears what only the extended policy reads (the
// conditions' reasons included: without a document they go nowhere).
func withoutDetails(p *corev1.Pod) *corev1.Pod {
	p = withoutStatusText(p)
	delete(p.Annotations, ruleMatchCountsKey)
	delete(p.Annotations, failedNodesKey)
	for i := range p.Status.Conditions {
		p.Status.Conditions[i].Reason = ""
	}
	for _, ss := range [][]corev1.ContainerStatus{p.Status.ContainerStatuses, p.Status.InitContainerStatuses} {
		for i := range ss {
			if t := ss[i].State.Terminated; t != nil {
				t.Reason, t.Message = "", ""
			}
			if w := ss[i].State.Waiting; w != nil {
				w.Reason = ""
			}
		}
	}
	return p
}

func withoutStatusText(p *corev1.Pod) *corev1.Pod {
	p.Status.Reason, p.Status.Message = "", ""
	return p
}

// A document keeps every condition (PodScheduled, the PendingTimeout
// condition, whatever the document names), where a Job without one keeps
// only the types its pod failure policy names.
func TestExtendedKeepsEveryCondition(t *testing.T) {
	pod := detailedPod()
	pod.Status.Conditions = append(pod.Status.Conditions, corev1.PodCondition{Type: "job-decider.dev/PendingTimeout", Status: corev1.ConditionTrue, Reason: "ErrImagePull"})
	types := func(job *batchv1.Job) string {
		t.Helper()
		req, err := Build(job, []*corev1.Pod{pod})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, c := range req.GetLeanPods()[0].GetConditions() {
			out = append(out, c.GetType()+"/"+c.GetReason())
		}
		return strings.Join(out, ",")
	}
	if got, want := types(extendedJob()), "Ready/r,DisruptionTarget/,PodScheduled/Unschedulable,job-decider.dev/PendingTimeout/ErrImagePull"; got != want {
		t.Errorf("with a document: %s, want %s", got, want)
	}
	if got, want := types(trimJob()), "Ready/,DisruptionTarget/"; got != want {
		t.Errorf("without: %s, want %s", got, want)
	}
	if !ReadsOf(extendedJob()).AllConditions || !ReadsOfProto(Job(extendedJob())).AllConditions || ReadsOf(trimJob()).AllConditions {
		t.Error("AllConditions does not follow the annotation")
	}
}

// Lean treats a document in the request's failure_policy as the annotation,
// and agrees with Build on a Job that has the annotation.
func TestLeanWithAPolicyInTheRequest(t *testing.T) {
	full := BuildFull(trimJob(), []*corev1.Pod{detailedPod()})
	full.GetPods()[0].Status.Reason, full.GetPods()[0].Status.Message = "UnexpectedAdmissionError", "Allocate failed"
	full.FailurePolicy = policyDoc
	lean, err := Lean(full)
	if err != nil {
		t.Fatal(err)
	}
	l := lean.GetLeanPods()[0]
	if l.GetReason() != "UnexpectedAdmissionError" || l.GetRuleMatchCounts() != "oom=2" || len(l.GetConditions()) != 3 ||
		l.GetInitContainerStatuses()[0].GetWaitingReason() != "ImagePullBackOff" || lean.GetFailurePolicy() != policyDoc {
		t.Errorf("lean pod %v", l)
	}
	built, err := Build(extendedJob(), []*corev1.Pod{detailedPod()})
	if err != nil {
		t.Fatal(err)
	}
	viaLean, err := Lean(BuildFull(extendedJob(), []*corev1.Pod{detailedPod()}))
	if err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(built, viaLean) {
		t.Errorf("Lean(BuildFull) differs from Build:\n%s", diffText(t, viaLean, built, "Lean", "Build"))
	}
}

// Messages are cut at MaxMessageBytes on a rune boundary, by both routes.
func TestExtendedMessagesAreBounded(t *testing.T) {
	long := strings.Repeat("é", MaxMessageBytes) // two bytes each; the cut falls mid-rune at an odd limit too
	long = "x" + long                            // so that byte MaxMessageBytes is a continuation byte
	pod := detailedPod()
	pod.Status.Message = long
	pod.Status.ContainerStatuses[0].State.Terminated.Message = long
	ref := JobRef{Name: "pi", UID: "job-uid", Extended: true}
	fromKube, err := LeanPod(pod, ref)
	if err != nil {
		t.Fatal(err)
	}
	fromProto, err := LeanPodFromProto(Pod(pod), ref)
	if err != nil {
		t.Fatal(err)
	}
	for route, l := range map[string]*pb.LeanPod{"LeanPod": fromKube, "LeanPodFromProto": fromProto} {
		for what, m := range map[string]string{"status.message": l.GetMessage(), "terminated.message": l.GetContainerStatuses()[0].GetTerminated().GetMessage()} {
			if len(m) > MaxMessageBytes || len(m) < MaxMessageBytes-utf8.UTFMax || !utf8.ValidString(m) || !strings.HasPrefix(long, m) {
				t.Errorf("%s %s: %d bytes, valid %v", route, what, len(m), utf8.ValidString(m))
			}
		}
	}
	if got := boundedMessage("short"); got != "short" {
		t.Errorf("a short message changed: %q", got)
	}
}

// A document in the request rather than on the Job: the pods carry the same
// details, by both builders, and Lean of the full request agrees.
func TestBuildWithPolicy(t *testing.T) {
	pods := []*corev1.Pod{detailedPod()}
	req, err := BuildWithPolicy(trimJob(), pods, policyDoc)
	if err != nil {
		t.Fatal(err)
	}
	withAnnotation, err := Build(extendedJob(), pods)
	if err != nil {
		t.Fatal(err)
	}
	if req.GetFailurePolicy() != policyDoc || !proto.Equal(req.GetLeanPods()[0], withAnnotation.GetLeanPods()[0]) {
		t.Errorf("BuildWithPolicy:\n%s", diffText(t, req.GetLeanPods()[0], withAnnotation.GetLeanPods()[0], "request field", "annotation"))
	}
	full := BuildFullWithPolicy(trimJob(), pods, policyDoc)
	if full.GetFailurePolicy() != policyDoc || full.GetPods()[0].GetStatus().GetReason() != "UnexpectedAdmissionError" {
		t.Errorf("BuildFullWithPolicy: %v", full.GetPods()[0].GetStatus())
	}
	lean, err := Lean(full)
	if err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(lean, req) {
		t.Errorf("Lean(BuildFullWithPolicy) differs from BuildWithPolicy:\n%s", diffText(t, lean, req, "Lean", "Build"))
	}
}
