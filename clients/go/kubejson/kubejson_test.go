package kubejson

import (
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	pb "job-decider.dev/clients/go/jobdecider/v1"
)

// TestLabelKeyedLikeAnInt64FieldStaysAString is the bug of the key lists the
// harnesses kept before this package: they unquoted any string under the key
// "generation" (or "activeDeadlineSeconds", ...), labels and annotations
// included. The Job harness then failed to decode a Job labelled
// generation: "7" ("cannot unmarshal number into ... labels of type string"),
// and the JobSet harness refused generation: "blue" (strconv.ParseInt).
func TestLabelKeyedLikeAnInt64FieldStaysAString(t *testing.T) {
	labels := map[string]string{"generation": "7", "activeDeadlineSeconds": "blue", "observedGeneration": "3"}
	j := &pb.Job{Metadata: &pb.ObjectMeta{Name: "a", Generation: 4, Labels: labels, Annotations: labels}}
	var out batchv1.Job
	if err := ToKube(j, &out); err != nil {
		t.Fatal(err)
	}
	for _, got := range []map[string]string{out.Labels, out.Annotations} {
		if len(got) != len(labels) {
			t.Errorf("got %v, want %v", got, labels)
		}
		for k, v := range labels {
			if got[k] != v {
				t.Errorf("%s: got %q, want %q", k, got[k], v)
			}
		}
	}
	if out.Generation != 4 {
		t.Errorf("generation %d, want 4", out.Generation)
	}
}

// TestInt64FieldsBecomeNumbers converts every 64-bit integer the Job and Pod
// messages have, with values above 2^53 where a float64 would round them.
func TestInt64FieldsBecomeNumbers(t *testing.T) {
	const big = int64(1)<<62 + 1
	grace := big - 2
	deadline := big - 4
	j := &pb.Job{
		Metadata: &pb.ObjectMeta{Name: "a", Generation: big, DeletionGracePeriodSeconds: &grace},
		Spec:     &pb.JobSpec{ActiveDeadlineSeconds: &deadline},
	}
	var job batchv1.Job
	if err := ToKube(j, &job); err != nil {
		t.Fatal(err)
	}
	if job.Generation != big || job.DeletionGracePeriodSeconds == nil || *job.DeletionGracePeriodSeconds != grace ||
		job.Spec.ActiveDeadlineSeconds == nil || *job.Spec.ActiveDeadlineSeconds != deadline {
		t.Errorf("got generation %d, grace %v, deadline %v", job.Generation, job.DeletionGracePeriodSeconds, job.Spec.ActiveDeadlineSeconds)
	}
	p := &pb.Pod{Metadata: &pb.ObjectMeta{Name: "p", Generation: 2, DeletionGracePeriodSeconds: &grace}}
	var pod corev1.Pod
	if err := ToKube(p, &pod); err != nil {
		t.Fatal(err)
	}
	if pod.Generation != 2 || pod.DeletionGracePeriodSeconds == nil || *pod.DeletionGracePeriodSeconds != grace {
		t.Errorf("pod: got generation %d, grace %v", pod.Generation, pod.DeletionGracePeriodSeconds)
	}
}

// TestConditionObservedGeneration is the JobSet status's int64 inside a
// repeated message, through ToMap and FromMap as the JobSet harness uses them.
func TestConditionObservedGeneration(t *testing.T) {
	s := &pb.JobSetStatus{Conditions: []*pb.Condition{{Type: "Completed", Status: "True", ObservedGeneration: 9}}}
	g, err := ToMap(s)
	if err != nil {
		t.Fatal(err)
	}
	var out struct {
		Conditions []metav1.Condition `json:"conditions"`
	}
	if err := FromMap(g, &out); err != nil {
		t.Fatal(err)
	}
	if len(out.Conditions) != 1 || out.Conditions[0].ObservedGeneration != 9 {
		t.Errorf("got %+v", out.Conditions)
	}
}

// TestInt64FieldsListed names the contract's 64-bit integers: a new one shows
// up here, and ToKube unquotes it from the descriptor without a list to edit.
func TestInt64FieldsListed(t *testing.T) {
	for _, c := range []struct {
		msg  proto.Message
		want []string
	}{
		{&pb.Job{}, []string{"metadata.generation", "metadata.deletionGracePeriodSeconds", "spec.activeDeadlineSeconds"}},
		{&pb.Pod{}, []string{"metadata.generation", "metadata.deletionGracePeriodSeconds"}},
		{&pb.JobSetStatus{}, []string{"conditions.observedGeneration"}},
		{&pb.JobStatus{}, nil},
		{&pb.EnvVar{}, nil},
		{&pb.OwnerReference{}, nil},
	} {
		got := Int64Fields(c.msg.ProtoReflect().Descriptor())
		for _, w := range c.want {
			if !slices.Contains(got, w) {
				t.Errorf("%T: %s missing from %v", c.msg, w, got)
			}
		}
		if c.want == nil && len(got) > 0 {
			t.Errorf("%T: unexpected 64-bit integers %v", c.msg, got)
		}
	}
}

// TestUnknownFieldsRefused: a field one side lacks is an error both ways.
func TestUnknownFieldsRefused(t *testing.T) {
	// The contract's Job has a spec; an OwnerReference does not.
	var ref metav1.OwnerReference
	if err := ToKube(&pb.Job{Spec: &pb.JobSpec{}}, &ref); err == nil || !strings.Contains(err.Error(), "unknown field") {
		t.Errorf("a Job into an OwnerReference: %v, want an unknown-field error", err)
	}
	// The contract's env var source is the downward API only.
	e := corev1.EnvVar{Name: "X", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{Key: "k"}}}
	if err := FromKube(e, &pb.EnvVar{}); err == nil || !strings.Contains(err.Error(), "the contract cannot carry") {
		t.Errorf("a secret env var: %v, want the contract to refuse it", err)
	}
}

// TestRoundTrip goes from a client-go object to the contract and back.
func TestRoundTrip(t *testing.T) {
	in := corev1.EnvVar{Name: "JOB_COMPLETION_INDEX", ValueFrom: &corev1.EnvVarSource{
		FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels['batch.kubernetes.io/job-completion-index']"}}}
	msg := &pb.EnvVar{}
	if err := FromKube(in, msg); err != nil {
		t.Fatal(err)
	}
	if msg.GetValueFrom().GetFieldRef().GetFieldPath() != in.ValueFrom.FieldRef.FieldPath {
		t.Errorf("to the contract: %v", msg)
	}
	var back corev1.EnvVar
	if err := ToKube(msg, &back); err != nil {
		t.Fatal(err)
	}
	if back.Name != in.Name || back.ValueFrom == nil || back.ValueFrom.FieldRef == nil || *back.ValueFrom.FieldRef != *in.ValueFrom.FieldRef {
		t.Errorf("back: %+v", back)
	}
}

// TestBadInt64Refused: a quoted 64-bit integer that is not one is an error naming its field.
func TestBadInt64Refused(t *testing.T) {
	err := unquoteInt64s(map[string]any{"metadata": map[string]any{"generation": "x"}}, (&pb.Job{}).ProtoReflect().Descriptor(), "")
	if err == nil || !strings.Contains(err.Error(), "metadata.generation") {
		t.Errorf("got %v, want an error naming metadata.generation", err)
	}
}

// TestFromProtoJSONKeepsTypeMeta: a hand-written object keeps what the Kubernetes
// type has and the contract lacks, and its quoted int64s become numbers.
func TestFromProtoJSONKeepsTypeMeta(t *testing.T) {
	data := []byte(`{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"a","generation":"3","labels":{"generation":"x"}}}`)
	var job batchv1.Job
	if err := FromProtoJSON(data, (&pb.Job{}).ProtoReflect().Descriptor(), &job); err != nil {
		t.Fatal(err)
	}
	if job.Kind != "Job" || job.APIVersion != "batch/v1" || job.Generation != 3 || job.Labels["generation"] != "x" {
		t.Errorf("got %+v", job)
	}
	if err := FromProtoJSON([]byte(`{"metadata":{"nmae":"a"}}`), (&pb.Job{}).ProtoReflect().Descriptor(), &job); err == nil {
		t.Error("a misspelt field was accepted")
	}
}
