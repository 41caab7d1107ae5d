package request

import (
	"errors"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	pb "job-decider.dev/clients/go/jobdecider/v1"
)

func terminatingOn(name, node string, phase corev1.PodPhase) *corev1.Pod {
	now := metav1.Now()
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, DeletionTimestamp: &now},
		Spec:       corev1.PodSpec{NodeName: node},
		Status:     corev1.PodStatus{Phase: phase},
	}
}

// Only the nodes of terminating, non-terminal pods are sent, each once and
// sorted, reduced to taints and the two conditions read; a node known to be
// gone is a missing node, one the caller cannot tell about is left out; a
// Job without a document sends none.
func TestNodesAreThoseOfTerminatingPodsOnceSortedAndReduced(t *testing.T) {
	lost := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "b-lost"},
		Spec:       corev1.NodeSpec{Taints: []corev1.Taint{{Key: "node.kubernetes.io/unreachable", Effect: corev1.TaintEffectNoExecute}}},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{
			{Type: corev1.NodeReady, Status: corev1.ConditionUnknown},
			{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse},
			{Type: MaintenanceCondition, Status: corev1.ConditionTrue},
		}},
	}
	get := func(name string) (*corev1.Node, bool, error) {
		switch name {
		case lost.Name:
			return lost, true, nil
		case "e-unknown":
			return nil, false, errors.New("cannot tell")
		}
		return nil, false, nil
	}
	pods := []*corev1.Pod{
		terminatingOn("p1", "b-lost", corev1.PodRunning),
		terminatingOn("p2", "b-lost", corev1.PodPending),
		terminatingOn("p3", "a-gone", corev1.PodRunning),
		terminatingOn("p4", "c-done", corev1.PodFailed),
		terminatingOn("p6", "e-unknown", corev1.PodRunning),
		{ObjectMeta: metav1.ObjectMeta{Name: "p5"}, Spec: corev1.PodSpec{NodeName: "d-running"}},
	}
	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{failurePolicyAnnotation: "kind: FailurePolicy"}}}
	req := &pb.DecideJobRequest{Job: Job(job)}
	Nodes(req, pods, get)
	if len(req.MissingNodes) != 1 || req.MissingNodes[0] != "a-gone" {
		t.Errorf("missing %v", req.MissingNodes)
	}
	if len(req.Nodes) != 1 || req.Nodes[0].GetName() != "b-lost" {
		t.Fatalf("nodes %v", req.Nodes)
	}
	n := req.Nodes[0]
	if len(n.Taints) != 1 || n.Taints[0].GetKey() != "node.kubernetes.io/unreachable" || n.Taints[0].GetEffect() != "NoExecute" {
		t.Errorf("taints %v", n.Taints)
	}
	if len(n.Conditions) != 2 || n.Conditions[0].GetType() != "Ready" || n.Conditions[0].GetStatus() != "Unknown" ||
		n.Conditions[1].GetType() != "MaintenanceInProgress" {
		t.Errorf("conditions %v", n.Conditions)
	}

	plain := &pb.DecideJobRequest{Job: Job(&batchv1.Job{})}
	Nodes(plain, pods, get)
	if plain.Nodes != nil || plain.MissingNodes != nil {
		t.Errorf("a Job without a document got nodes %v %v", plain.Nodes, plain.MissingNodes)
	}
	plain.FailurePolicy = "kind: FailurePolicy"
	Nodes(plain, pods, get)
	if len(plain.Nodes) != 1 || len(plain.MissingNodes) != 1 {
		t.Errorf("a document in the request's field: nodes %v missing %v", plain.Nodes, plain.MissingNodes)
	}
}

func TestNodeHealthChangedSeesTaintsAndReadConditionsOnly(t *testing.T) {
	base := &corev1.Node{Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}}
	heartbeat := base.DeepCopy()
	heartbeat.Status.Conditions[0].LastHeartbeatTime = metav1.Now()
	heartbeat.Status.Conditions = append(heartbeat.Status.Conditions, corev1.NodeCondition{Type: corev1.NodeDiskPressure, Status: corev1.ConditionTrue})
	if NodeHealthChanged(base, heartbeat) {
		t.Errorf("a heartbeat or an unread condition is a health change")
	}
	unknown := base.DeepCopy()
	unknown.Status.Conditions[0].Status = corev1.ConditionUnknown
	tainted := base.DeepCopy()
	tainted.Spec.Taints = []corev1.Taint{{Key: "node.kubernetes.io/out-of-service", Effect: corev1.TaintEffectNoExecute}}
	for name, n := range map[string]*corev1.Node{"ready unknown": unknown, "tainted": tainted} {
		if !NodeHealthChanged(base, n) {
			t.Errorf("%s: not seen as a health change", name)
		}
	}
}
