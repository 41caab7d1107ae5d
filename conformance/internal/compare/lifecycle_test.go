package compare

import (
	"net"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	pb "job-decider.dev/clients/go/jobdecider/v1"
	"job-decider.dev/conformance/internal/cluster"
	"job-decider.dev/conformance/internal/decider"
	"job-decider.dev/conformance/internal/gen"
	"job-decider.dev/conformance/internal/refserver"
	"job-decider.dev/testkit/knowndiff"
)

func simJob() *pb.Job {
	labels := map[string]string{"batch.kubernetes.io/controller-uid": "u1", "batch.kubernetes.io/job-name": "j"}
	return &pb.Job{
		Metadata: &pb.ObjectMeta{Name: "j", Namespace: "ns", Uid: "u1", ResourceVersion: "7"},
		Spec: &pb.JobSpec{
			Selector: &pb.LabelSelector{MatchLabels: map[string]string{"batch.kubernetes.io/controller-uid": "u1"}},
			Template: &pb.PodTemplateSpec{Metadata: &pb.ObjectMeta{Labels: labels},
				Spec: &pb.PodSpec{RestartPolicy: "Never", Containers: []*pb.Container{{Name: "main"}}}},
		},
		Status: &pb.JobStatus{},
	}
}

func TestClusterCreateDeleteCollect(t *testing.T) {
	now := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	c := cluster.New(&pb.DecideJobRequest{Job: simJob(), Now: timestamppb.New(now)})
	owner := c.OwnerRef()
	err := c.Apply(&pb.DecideJobResponse{Actions: []*pb.Action{
		{Kind: &pb.Action_CreatePods{CreatePods: &pb.CreatePods{Pods: []*pb.PodCreation{
			{GenerateName: "j-", Finalizers: []string{gen.Finalizer}, OwnerReference: owner},
			{GenerateName: strings.Repeat("x", 62) + "-", Finalizers: []string{gen.Finalizer}, OwnerReference: owner},
		}}}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Pods) != 2 || c.Created != 2 {
		t.Fatalf("pods %d, created %d", len(c.Pods), c.Created)
	}
	a, b := c.Pods[0], c.Pods[1]
	if a.Metadata.Name != "j-"+cluster.Suffix(0) || len(b.Metadata.Name) != 63 {
		t.Errorf("names %q %q", a.Metadata.Name, b.Metadata.Name)
	}
	if !a.Metadata.CreationTimestamp.AsTime().Before(b.Metadata.CreationTimestamp.AsTime()) {
		t.Errorf("pods of one plan must have distinct, ordered creation times")
	}
	if a.Metadata.Labels["batch.kubernetes.io/controller-uid"] != "u1" || a.Status.Phase != "Pending" {
		t.Errorf("created pod %v", a)
	}
	// Unscheduled pod with a finalizer: deleted at once (grace 0) but kept until the finalizer goes.
	if err := c.Apply(&pb.DecideJobResponse{Actions: []*pb.Action{{Kind: &pb.Action_DeletePods{DeletePods: &pb.DeletePods{
		Pods: []*pb.PodDeletion{{Name: a.Metadata.Name, Uid: a.Metadata.Uid}}}}}}}); err != nil {
		t.Fatal(err)
	}
	if len(c.Pods) != 2 || a.Metadata.GetDeletionGracePeriodSeconds() != 0 || a.Metadata.DeletionTimestamp == nil {
		t.Fatalf("after delete: %d pods, %v", len(c.Pods), a.Metadata)
	}
	if err := c.Apply(&pb.DecideJobResponse{Actions: []*pb.Action{{Kind: &pb.Action_RemoveFinalizers{RemoveFinalizers: &pb.RemoveFinalizers{
		Pods: []*pb.PodReference{{Name: a.Metadata.Name, Uid: a.Metadata.Uid}}}}}}}); err != nil {
		t.Fatal(err)
	}
	if len(c.Pods) != 1 {
		t.Fatalf("the pod should be gone once its gen.Finalizer is: %d pods", len(c.Pods))
	}
	// A running pod deleted with removeFinalizerFirst stays until the kubelet stops it.
	c.ApplyEvent(cluster.Event{Kind: "start", Pod: b.Metadata.Name})
	if err := c.Apply(&pb.DecideJobResponse{Actions: []*pb.Action{{Kind: &pb.Action_DeletePods{DeletePods: &pb.DeletePods{
		Pods: []*pb.PodDeletion{{Name: b.Metadata.Name, Uid: b.Metadata.Uid, RemoveFinalizerFirst: true}}}}}}}); err != nil {
		t.Fatal(err)
	}
	if len(c.Pods) != 1 || b.Metadata.GetDeletionGracePeriodSeconds() != 30 || len(b.Metadata.Finalizers) != 0 {
		t.Fatalf("running pod after delete: %v", b.Metadata)
	}
	c.ApplyEvent(cluster.Event{Kind: "kubeletStop", Pod: b.Metadata.Name})
	if len(c.Pods) != 0 {
		t.Fatalf("stopped pod without finalizers should be gone")
	}
	// A UID precondition that does not hold is an error, as the API server's.
	c.ApplyEvent(cluster.Event{Kind: "orphan"})
	err = c.Apply(&pb.DecideJobResponse{Actions: []*pb.Action{{Kind: &pb.Action_AdoptPods{AdoptPods: &pb.AdoptPods{
		Pods: []*pb.PodReference{{Name: c.Pods[0].Metadata.Name, Uid: "other"}}}}}}})
	if err == nil {
		t.Fatal("adoption with a wrong UID should fail")
	}
}

func TestClusterAdoptTwiceIsOneReference(t *testing.T) {
	c := cluster.New(&pb.DecideJobRequest{Job: simJob(), Now: timestamppb.New(gen.BaseNow)})
	c.ApplyEvent(cluster.Event{Kind: "orphan"})
	p := c.Pods[0]
	adopt := &pb.DecideJobResponse{Actions: []*pb.Action{{Kind: &pb.Action_AdoptPods{AdoptPods: &pb.AdoptPods{
		Pods: []*pb.PodReference{{Name: p.Metadata.Name, Uid: p.Metadata.Uid}}}}}}}
	for i := 0; i < 2; i++ {
		if err := c.Apply(adopt); err != nil {
			t.Fatal(err)
		}
	}
	if len(p.Metadata.OwnerReferences) != 1 || len(p.Metadata.Finalizers) != 1 {
		t.Fatalf("after two adoptions: %v", p.Metadata)
	}
	release := &pb.DecideJobResponse{Actions: []*pb.Action{{Kind: &pb.Action_ReleasePods{ReleasePods: &pb.ReleasePods{
		Pods: []*pb.PodReference{{Name: p.Metadata.Name, Uid: p.Metadata.Uid}}}}}}}
	if err := c.Apply(release); err != nil {
		t.Fatal(err)
	}
	if len(p.Metadata.OwnerReferences) != 0 {
		t.Fatalf("after release: %v", p.Metadata.OwnerReferences)
	}
}

// TestLifecycleIsDeterministic: a lifecycle depends on (seed, index) only.
func TestLifecycleIsDeterministic(t *testing.T) {
	for i := 0; i < 20; i++ {
		var a, b strings.Builder
		ra := runLifecycle(nil, nil, 7, i, "", &a, false)
		runLifecycle(nil, nil, 7, i, "", &b, false)
		if ra.failed != "" {
			t.Fatalf("lifecycle %d: %s", i, ra.failed)
		}
		if a.String() != b.String() {
			t.Fatalf("lifecycle %d ran differently twice:\n%s\n---\n%s", i, a.String(), b.String())
		}
	}
}

// startReference serves upstream's own answers on a loopback port.
func startReference(t *testing.T, tamper bool) *decider.Conn {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer()
	pb.RegisterJobDeciderServer(s, refserver.Server{Tamper: tamper})
	go s.Serve(l)
	t.Cleanup(s.Stop)
	tf := decider.Flags{Server: l.Addr().String(), Timeout: 30 * time.Second}
	d, err := tf.Connect()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Close)
	return d
}

// TestLifecyclesAgainstReference validates the simulator: upstream against
// itself through gRPC must never diverge, in plans or in clusters; and a
// server that answers wrongly must be caught.
func TestLifecyclesAgainstReference(t *testing.T) {
	n := 60
	if testing.Short() {
		n = 15
	}
	d := startReference(t, false)
	syncs := 0
	for i := 0; i < n; i++ {
		r := runLifecycle(d, &knowndiff.List{}, 11, i, "", nil, false)
		if r.failed != "" || r.mismatch || r.excused {
			t.Fatalf("lifecycle %d against upstream itself: failed %q\n%s", i, r.failed, r.text.String())
		}
		syncs += r.syncs
	}
	t.Logf("%d lifecycles, %d syncs", n, syncs)

	bad := startReference(t, true)
	caught := 0
	for i := 0; i < 10; i++ {
		if r := runLifecycle(bad, &knowndiff.List{}, 11, i, "", nil, false); r.mismatch {
			caught++
		}
	}
	if caught == 0 {
		t.Fatal("a tampering server went unnoticed")
	}
}

// TestStaleViewExpectations: a plan that wrote pods leaves expectations for a stale sync.
func TestStaleViewExpectations(t *testing.T) {
	resp := &pb.DecideJobResponse{Actions: []*pb.Action{
		{Kind: &pb.Action_RemoveFinalizers{RemoveFinalizers: &pb.RemoveFinalizers{Pods: []*pb.PodReference{{Name: "a", Uid: "ua"}}}}},
		{Kind: &pb.Action_UpdateStatus{UpdateStatus: &pb.UpdateStatus{Status: &pb.JobStatus{}}}},
	}}
	want := &pb.Expectations{FinalizerRemovalsPending: []string{"ua"}}
	if got := inFlight(resp); !proto.Equal(got, want) {
		t.Errorf("inFlight = %v, want %v", got, want)
	}
	if got := inFlight(&pb.DecideJobResponse{}); got != nil {
		t.Errorf("an empty plan leaves nothing in flight, got %v", got)
	}
}
