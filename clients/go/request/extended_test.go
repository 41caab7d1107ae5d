package request

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"google.golang.org/protobuf/proto"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const policyDoc = "apiVersion: job-decider.dev/v1alpha1\nkind: FailurePolicy\n"

// detailedPod is basePod with everything the extended failure policy reads set.
func detailedPod() *corev1.Pod {
	p := basePod()
	p.Annotations[ruleMatchCountsKey] = "oom=2"
	p.Annotations[failedNodesKey] = "node-0,node-9"
	p.Status.Reason, p.Status.Message = "UnexpectedAdmissionError", "Allocate failed"
	start := metav1.NewTime(t0)
	p.Status.StartTime = &start
	p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{
		Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable", LastTransitionTime: metav1.NewTime(t0),
	})
	p.Status.ContainerStatuses[0].State.Terminated.Reason = "OOMKilled"
	p.Status.ContainerStatuses[0].State.Terminated.Message = "CUDA error"
	p.Status.InitContainerStatuses[0].State.Waiting = &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff", Message: "not read"}
	return p
}

func extendedJob() *batchv1.Job {
	j := trimJob()
	j.Annotations = map[string]string{failurePolicyAnnotation: policyDoc}
	return j
}

// withoutDetails clears what only the extended failure policy reads (the
// conditions' reasons and the condition types the Job does not name too).
func withoutDetails(p *corev1.Pod) *corev1.Pod {
	p.Status.Reason, p.Status.Message = "", ""
	p.Status.StartTime = nil
	p.Spec.NodeName = ""
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

// Without a document the lean request is byte for byte what it was: the
// details a pod has change nothing in it.
func TestWithoutAPolicyTheLeanRequestIsUnchanged(t *testing.T) {
	bytesOf := func(pods ...*corev1.Pod) string {
		t.Helper()
		req, err := Build(trimJob(), pods)
		if err != nil {
			t.Fatal(err)
		}
		b, err := proto.MarshalOptions{Deterministic: true}.Marshal(req)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	plain := withoutDetails(detailedPod())
	plain.Spec.NodeName = "node-1" // scheduled either way
	if bytesOf(detailedPod()) != bytesOf(plain) {
		a, _ := Build(trimJob(), []*corev1.Pod{detailedPod()})
		b, _ := Build(trimJob(), []*corev1.Pod{plain})
		t.Errorf("the lean request changed with the pod's details:\n%s", diffText(t, a, b, "details", "none"))
	}
	// With the document, the same pods give different requests.
	a, err := Build(extendedJob(), []*corev1.Pod{detailedPod()})
	if err != nil {
		t.Fatal(err)
	}
	b, err := Build(extendedJob(), []*corev1.Pod{plain})
	if err != nil {
		t.Fatal(err)
	}
	if proto.Equal(a, b) {
		t.Error("with a document the details made no difference")
	}
}

// A document in the request rather than on the Job: the pods carry the same
// details by both builders, and Lean of the full request agrees with Build.
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
	l := req.GetLeanPods()[0]
	if l.GetReason() != "UnexpectedAdmissionError" || l.GetRuleMatchCounts() != "oom=2" || len(l.GetConditions()) != 3 ||
		l.GetStartTime().GetSeconds() != t0.Unix() ||
		l.GetInitContainerStatuses()[0].GetWaitingReason() != "ImagePullBackOff" {
		t.Errorf("lean pod %v", l)
	}
	full := BuildFullWithPolicy(trimJob(), pods, policyDoc)
	if full.GetFailurePolicy() != policyDoc {
		t.Errorf("BuildFullWithPolicy lost the document")
	}
	lean, err := Lean(full)
	if err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(lean, req) {
		t.Errorf("Lean(BuildFullWithPolicy) differs from BuildWithPolicy:\n%s", diffText(t, lean, req, "Lean", "Build"))
	}
	// Without a document neither carries details.
	plain, err := BuildWithPolicy(trimJob(), pods, "")
	if err != nil {
		t.Fatal(err)
	}
	if plain.GetLeanPods()[0].GetReason() != "" || plain.GetFailurePolicy() != "" {
		t.Errorf("an empty document brought details: %v", plain.GetLeanPods()[0])
	}
}

// Messages longer than the server keeps are sent as the server cuts them:
// a prefix on a rune boundary and the server's mark, MaxMessageBytes in all;
// by every route.
func TestExtendedMessagesAreCutAsTheServerCutsThem(t *testing.T) {
	long := "x" + strings.Repeat("é", MaxMessageBytes) // two bytes a rune, starting odd
	mark := fmt.Sprintf("…[truncated from %d bytes]", len(long))
	pod := detailedPod()
	pod.Status.Message = long
	pod.Status.ContainerStatuses[0].State.Terminated.Message = long
	fromKube, err := LeanPod(pod, job)
	if err != nil {
		t.Fatal(err)
	}
	fromProto, err := LeanPodFromProto(Pod(pod), job)
	if err != nil {
		t.Fatal(err)
	}
	built, err := Build(extendedJob(), []*corev1.Pod{pod})
	if err != nil {
		t.Fatal(err)
	}
	for route, l := range map[string]interface {
		GetMessage() string
	}{"LeanPod": fromKube, "LeanPodFromProto": fromProto, "Build": built.GetLeanPods()[0]} {
		m := l.GetMessage()
		if len(m) > MaxMessageBytes || len(m) < MaxMessageBytes-utf8.UTFMax || !utf8.ValidString(m) ||
			!strings.HasSuffix(m, mark) || !strings.HasPrefix(long, strings.TrimSuffix(m, mark)) {
			t.Errorf("%s: status message of %d bytes, valid %v, ends %q", route, len(m), utf8.ValidString(m), m[max(0, len(m)-40):])
		}
	}
	if got := fromKube.GetContainerStatuses()[0].GetTerminated().GetMessage(); got != fromKube.GetMessage() {
		t.Errorf("termination message cut differently: %d bytes", len(got))
	}
	// What fits is sent as it is: the server leaves it alone too.
	exact := strings.Repeat("a", MaxMessageBytes)
	if boundedMessage(exact) != exact || boundedMessage("short") != "short" {
		t.Error("a message that fits was changed")
	}
	// A cut message is left alone by a second cut, as by the server.
	if once := boundedMessage(long); boundedMessage(once) != once {
		t.Error("cutting twice changed the message")
	}
}
