package tests

import (
	"context"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

const terminatingTimeoutCondition corev1.PodConditionType = "job-decider.dev/TerminatingTimeout"

// newNode creates a Ready node for one test, deleted when the test ends.
func newNode(t *testing.T, ctx context.Context, name string) *corev1.Node {
	t.Helper()
	n, err := e.client.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating node %s: %v", name, err)
	}
	t.Cleanup(func() {
		_ = e.client.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}}
	if n, err = e.client.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("node %s Ready: %v", name, err)
	}
	return n
}

// Feature: terminatingTimeout with onNodes: Unhealthy and forceDelete. A pod
// deleted on a node that stays healthy is left terminating past the timeout;
// once the node goes unreachable (Ready Unknown, the unreachable taint, as
// the node lifecycle controller marks it) the node's change wakes the shim,
// which fails the pod (status Failed with job-decider.dev/TerminatingTimeout),
// force-deletes it, counts it and replaces it although the Job's
// podReplacementPolicy is Failed. The shim runs with deploy/'s RBAC only, so
// nodes list/watch must be in it.
func TestExtendedTerminatingTimeoutOnAnUnreachableNode(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const name = "job-decider.dev/extended-terminating"
	startShimWithDeployRBAC(t, ctx, name, "extended-terminating")
	ns := newNamespace(t)
	history := recordPods(t, ctx, ns)
	node := newNode(t, ctx, "node-"+ns)
	j := start(t, newJob(ns, "stuck", func(job *batchv1.Job) {
		job.Spec.ManagedBy = ptr.To(name)
		job.Spec.BackoffLimit = ptr.To[int32](3)
		job.Spec.PodReplacementPolicy = ptr.To(batchv1.Failed)
	}, withPolicy(`
terminatingTimeout:
  seconds: 1
  onNodes: Unhealthy
  forceDelete: true
`)), 2*time.Minute)
	first := j.waitActive(1)[0]
	if err := e.client.CoreV1().Pods(ns).Bind(ctx, &corev1.Binding{
		ObjectMeta: metav1.ObjectMeta{Name: first.Name},
		Target:     corev1.ObjectReference{Kind: "Node", Name: node.Name},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("binding %s: %v", first.Name, err)
	}
	if err := e.client.CoreV1().Pods(ns).Delete(ctx, first.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](1)}); err != nil {
		t.Fatalf("deleting %s: %v", first.Name, err)
	}

	// Healthy node: 1 s of grace and 1 s of timeout have long passed, and
	// the pod is still terminating, unreplaced.
	time.Sleep(5 * time.Second)
	p, err := e.client.CoreV1().Pods(ns).Get(ctx, first.Name, metav1.GetOptions{})
	if err != nil {
		history.mu.Lock()
		for _, v := range history.versions[first.Name] {
			t.Logf("version rv=%s phase=%s deletion=%v finalizers=%v node=%s conds=%+v", v.ResourceVersion, v.Status.Phase, v.DeletionTimestamp, v.Finalizers, v.Spec.NodeName, v.Status.Conditions)
		}
		history.mu.Unlock()
		t.Fatalf("the pod on a healthy node is gone: %v", err)
	}
	if p.Status.Phase == corev1.PodFailed || podCondition(p, terminatingTimeoutCondition) != nil {
		t.Fatalf("the pod on a healthy node was failed: %+v", p.Status)
	}
	if pods := j.pods(); len(pods) != 1 {
		t.Fatalf("%d pods while the only one is terminating under podReplacementPolicy Failed", len(pods))
	}

	// The node becomes unreachable.
	n, err := e.client.CoreV1().Nodes().Get(ctx, node.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: "node.kubernetes.io/unreachable", Effect: corev1.TaintEffectNoExecute})
	if n, err = e.client.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("tainting the node: %v", err)
	}
	n.Status.Conditions[0].Status = corev1.ConditionUnknown
	if _, err := e.client.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("node Ready Unknown: %v", err)
	}
	marked := time.Now()

	j.waitStatus("the stuck pod counted as failed", func(s *batchv1.JobStatus) bool { return s.Failed == 1 })
	failed := history.find(first.Name, func(p *corev1.Pod) bool {
		c := podCondition(p, terminatingTimeoutCondition)
		return p.Status.Phase == corev1.PodFailed && c != nil && c.Status == corev1.ConditionTrue
	})
	if failed == nil {
		j.fatalf("pod %s was never seen Failed with %s", first.Name, terminatingTimeoutCondition)
	}
	c := podCondition(failed, terminatingTimeoutCondition)
	if c.Reason != "TerminatingTimeout" || !strings.Contains(c.Message, node.Name) {
		t.Errorf("condition %+v, want reason TerminatingTimeout and a message naming the node", c)
	}
	if d := c.LastTransitionTime.Sub(marked); d > 30*time.Second {
		t.Errorf("failed %s after the node went unreachable; the node's change should wake the shim", d)
	}
	j.waitGone(first.Name)
	if r := j.waitReplacement(first.Name); r.Name == first.Name {
		t.Errorf("no replacement")
	}
}
