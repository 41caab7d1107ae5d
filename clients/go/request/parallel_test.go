package request

import (
	"errors"
	"fmt"
	"runtime"
	"testing"

	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	pb "job-decider.dev/clients/go/jobdecider/v1"
)

// manyPods are n pods of trimJob, each a little different, so that several
// workers' ranges are exercised; GOMAXPROCS is raised for the test, so that
// they are on a one-CPU machine too.
func manyPods(t *testing.T, n int) []*corev1.Pod {
	t.Helper()
	prev := runtime.GOMAXPROCS(4)
	t.Cleanup(func() { runtime.GOMAXPROCS(prev) })
	pods := make([]*corev1.Pod, n)
	for i := range pods {
		p := basePod()
		p.Name, p.UID = fmt.Sprintf("pi-%d", i), types.UID(fmt.Sprintf("uid-%d", i))
		p.Annotations = map[string]string{"batch.kubernetes.io/job-completion-index": fmt.Sprint(i)}
		if i%3 == 0 {
			p.Labels = map[string]string{"batch.kubernetes.io/controller-uid": "job-uid", "tier": fmt.Sprint(i % 7)}
		}
		if i%5 == 0 {
			p.Status.Phase = corev1.PodSucceeded
		}
		pods[i] = p
	}
	return pods
}

// TestBuildInParallelIsBuildInOrder: the parallel conversion gives the pods
// in order, each as Lean gives it from the Kubernetes-shaped request.
func TestBuildInParallelIsBuildInOrder(t *testing.T) {
	pods := manyPods(t, 3*parallelMin+17)
	if workersFor(len(pods)) < 2 {
		t.Fatalf("%d workers: the test runs nothing in parallel", workersFor(len(pods)))
	}
	req, err := Build(trimJob(), pods)
	if err != nil {
		t.Fatal(err)
	}
	want, err := Lean(BuildFull(trimJob(), pods))
	if err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(req, want) {
		for i := range want.LeanPods {
			if !proto.Equal(req.LeanPods[i], want.LeanPods[i]) {
				t.Fatalf("pod %d:\n%s", i, diffText(t, req.LeanPods[i], want.LeanPods[i], "Build", "Lean"))
			}
		}
		t.Fatal("the requests differ outside the pods")
	}
}

// TestBuildInParallelNamesTheFirstBadPod: with bad pods in two workers'
// ranges, the error names the first.
func TestBuildInParallelNamesTheFirstBadPod(t *testing.T) {
	pods := manyPods(t, 3*parallelMin)
	first, later := parallelMin+5, 2*parallelMin+5
	pods[later].Status.Phase = "Evicted"
	pods[first].Status.Phase = "Lost"
	_, err := Build(&batchv1.Job{}, pods)
	var nl *NotLeanError
	if !errors.As(err, &nl) || nl.Pod != first || nl.Value != "Lost" {
		t.Errorf("err = %v, want pods[%d].status.phase \"Lost\"", err, first)
	}
}

// TestCodecWritesWhatProtoMarshalWrites: the parallel marshalling reads back
// as the request, byte for byte what proto.Marshal writes (each pod's label
// map has one entry, so map order cannot differ).
func TestCodecWritesWhatProtoMarshalWrites(t *testing.T) {
	pods := manyPods(t, 3*parallelMin+17)
	for _, p := range pods {
		delete(p.Labels, "tier")
	}
	req, err := Build(trimJob(), pods)
	if err != nil {
		t.Fatal(err)
	}
	req.ControllerName = "x.dev/y"
	req.Expectations = &pb.Expectations{FinalizerRemovalsPending: []string{"u"}}
	out, err := Codec{}.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) < 3 {
		t.Errorf("%d buffers: the pods were not marshalled in parallel", len(out))
	}
	got := out.Materialize()
	want, err := proto.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Errorf("codec wrote %d bytes, proto.Marshal %d; they differ", len(got), len(want))
	}
	back := &pb.DecideJobRequest{}
	if err := (Codec{}).Unmarshal(mem.BufferSlice{mem.SliceBuffer(got)}, back); err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(back, req) {
		t.Error("the request does not read back")
	}
	// Anything else is gRPC's own codec's.
	small := &pb.DecideJobResponse{RequeueAfter: nil, Actions: []*pb.Action{{}}}
	out, err = Codec{}.Marshal(small)
	if err != nil {
		t.Fatal(err)
	}
	if want, _ := proto.Marshal(small); string(out.Materialize()) != string(want) {
		t.Error("a response marshals differently")
	}
}
