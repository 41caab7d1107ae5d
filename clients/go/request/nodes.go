package request

import (
	"sort"

	corev1 "k8s.io/api/core/v1"

	pb "job-decider.dev/clients/go/jobdecider/v1"
)

// NodeLookup returns a node as the caller knows it: the node; or nil and
// found false when the node is known to be gone (a missing node counts as
// unhealthy, so a caller whose cache may lag should confirm it, e.g. with a
// GET); or a non-nil error when the caller cannot tell, and the node is then
// left out of the request (taken as healthy).
type NodeLookup func(name string) (node *corev1.Node, found bool, err error)

// Nodes fills req.Nodes and req.MissingNodes from get: the nodes of the pods
// that are being deleted but not yet terminal, each once, sorted by name,
// reduced to what the extended failure policy's terminatingTimeout reads
// (taints, and the Ready and MaintenanceInProgress conditions). Only a Job
// with a failure policy document (annotation or request field) reads them,
// so for others the request is left as it is.
func Nodes(req *pb.DecideJobRequest, pods []*corev1.Pod, get NodeLookup) {
	if get == nil || !(hasDocument(req.GetJob()) || req.GetFailurePolicy() != "") {
		return
	}
	names := map[string]bool{}
	for _, p := range pods {
		if node, ok := TerminatingOn(p); ok {
			names[node] = true
		}
	}
	sorted := make([]string, 0, len(names))
	for n := range names {
		sorted = append(sorted, n)
	}
	sort.Strings(sorted)
	req.Nodes, req.MissingNodes = nil, nil
	for _, name := range sorted {
		node, found, err := get(name)
		switch {
		case err != nil:
			// Unknown: say nothing rather than call a live node lost.
		case !found || node == nil:
			req.MissingNodes = append(req.MissingNodes, name)
		default:
			req.Nodes = append(req.Nodes, Node(node))
		}
	}
}

// TerminatingOn is the node of a pod that is being deleted and is not yet
// terminal: the pods whose nodes a request carries, and whose Jobs a
// change of that node's health concerns.
func TerminatingOn(p *corev1.Pod) (node string, ok bool) {
	if p.DeletionTimestamp == nil || p.Spec.NodeName == "" ||
		p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
		return "", false
	}
	return p.Spec.NodeName, true
}

// Node is a node reduced to what terminatingTimeout reads: its name, its
// taints' keys and effects, and its Ready and MaintenanceInProgress conditions.
func Node(node *corev1.Node) *pb.Node {
	out := &pb.Node{Name: node.Name}
	for _, t := range node.Spec.Taints {
		out.Taints = append(out.Taints, &pb.Taint{Key: t.Key, Effect: string(t.Effect)})
	}
	for _, c := range node.Status.Conditions {
		if readsNodeCondition(c.Type) {
			out.Conditions = append(out.Conditions, &pb.NodeCondition{Type: string(c.Type), Status: string(c.Status)})
		}
	}
	return out
}

// ReduceNode is a copy of node keeping only what Node reads (and the
// identity a cache needs): for a node cache that should not hold the rest of
// a node's bytes (images, addresses, capacity, heartbeats).
func ReduceNode(node *corev1.Node) *corev1.Node {
	reduced := &corev1.Node{}
	reduced.Name, reduced.UID, reduced.ResourceVersion = node.Name, node.UID, node.ResourceVersion
	reduced.Spec.Taints = node.Spec.Taints
	for _, c := range node.Status.Conditions {
		if readsNodeCondition(c.Type) {
			reduced.Status.Conditions = append(reduced.Status.Conditions, corev1.NodeCondition{Type: c.Type, Status: c.Status})
		}
	}
	return reduced
}

// readsNodeCondition says which node conditions the service reads.
func readsNodeCondition(t corev1.NodeConditionType) bool {
	return t == corev1.NodeReady || t == MaintenanceCondition
}

// MaintenanceCondition is the node condition KEP-5683 sets while a node is
// drained for maintenance.
const MaintenanceCondition corev1.NodeConditionType = "MaintenanceInProgress"

// NodeHealthChanged reports whether what Node keeps of a node differs
// between two versions of it: a change a controller should resync the Jobs
// of the node's terminating pods for.
func NodeHealthChanged(old, cur *corev1.Node) bool {
	a, b := Node(old), Node(cur)
	if len(a.Taints) != len(b.Taints) || len(a.Conditions) != len(b.Conditions) {
		return true
	}
	for i := range a.Taints {
		if a.Taints[i].Key != b.Taints[i].Key || a.Taints[i].Effect != b.Taints[i].Effect {
			return true
		}
	}
	for i := range a.Conditions {
		if a.Conditions[i].Type != b.Conditions[i].Type || a.Conditions[i].Status != b.Conditions[i].Status {
			return true
		}
	}
	return false
}
