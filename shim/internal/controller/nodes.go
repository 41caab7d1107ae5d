package controller

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"job-decider.dev/clients/go/request"
)

// podNodeIndex indexes the pods that are being deleted and not yet terminal
// by their node: the pods whose Jobs decide again when that node's health
// changes (terminatingTimeout with onNodes: Unhealthy).
const podNodeIndex = "terminatingOnNode"

// indexTerminatingByNode keys a terminating, non-terminal pod by its node;
// every other pod is left out, so the index stays as small as the pods stuck.
func indexTerminatingByNode(obj any) ([]string, error) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return nil, nil
	}
	if node, terminating := request.TerminatingOn(pod); terminating {
		return []string{node}, nil
	}
	return nil, nil
}

// nodeWatch is the node cache one controller reads and the handler it added.
type nodeWatch struct {
	lister corelisters.NodeLister
	remove func()
}

// NewNodeFactory is the informer factory WatchNodes wants: every node of the
// cluster, each reduced by reduceNode as it enters the cache.
func NewNodeFactory(kube kubernetes.Interface) informers.SharedInformerFactory {
	return informers.NewSharedInformerFactoryWithOptions(kube, 0, informers.WithTransform(reduceNode))
}

// WatchNodes gives the controller the nodes of factory (cluster-scoped, not
// sharded: a pod's node is anyone's; see NewNodeFactory): requests then carry the nodes of a
// Job's terminating pods, and a node whose health changes sends those pods'
// Jobs to be decided again. Call it before factory.Start and before Run;
// several controllers may share one factory (each removes its handler when
// its Run returns).
func (c *Controller) WatchNodes(factory informers.SharedInformerFactory) error {
	inf := factory.Core().V1().Nodes()
	reg, err := inf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(old, cur any) {
			o, ok1 := old.(*corev1.Node)
			n, ok2 := cur.(*corev1.Node)
			if ok1 && ok2 && request.NodeHealthChanged(o, n) {
				c.nodeHealthChanged(n.Name)
			}
		},
		DeleteFunc: func(obj any) {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			if n, ok := obj.(*corev1.Node); ok {
				c.nodeHealthChanged(n.Name)
			}
		},
	})
	if err != nil {
		return err
	}
	c.nodes = &nodeWatch{
		lister: inf.Lister(),
		remove: func() { _ = inf.Informer().RemoveEventHandler(reg) },
	}
	c.synced = append(c.synced, reg.HasSynced)
	return nil
}

// reduceNode keeps of a node what requests carry (request.ReduceNode).
func reduceNode(obj any) (any, error) {
	if n, ok := obj.(*corev1.Node); ok {
		return request.ReduceNode(n), nil
	}
	return obj, nil
}

// nodeHealthChanged sends the Jobs of the node's terminating pods to be
// decided again: a terminatingTimeout that waits for an unhealthy node may
// now apply, or its deadline may already have passed.
func (c *Controller) nodeHealthChanged(node string) {
	pods, err := c.podIndexer.ByIndex(podNodeIndex, node)
	if err != nil {
		return
	}
	for _, obj := range pods {
		pod, ok := obj.(*corev1.Pod)
		if !ok {
			continue
		}
		ref := controllerOf(pod)
		if ref == nil {
			continue
		}
		if job := c.resolveControllerRef(pod.Namespace, ref); job != nil && c.ours(job) {
			c.enqueueJob(job, c.cfg.PodEventBatchPeriod)
		}
	}
}

// nodeLookup reads the node cache, or is nil when the controller watches no
// nodes. A node the cache lacks may be one it has not seen yet (a node just
// registered), and a missing node counts as unhealthy: it is confirmed with a
// GET, and only a 404 makes it missing.
func (c *Controller) nodeLookup(ctx context.Context) request.NodeLookup {
	if c.nodes == nil {
		return nil
	}
	return func(name string) (*corev1.Node, bool, error) {
		if n, err := c.nodes.lister.Get(name); err == nil {
			return n, true, nil
		}
		ctx, cancel := context.WithTimeout(ctx, nodeGetTimeout)
		defer cancel()
		n, err := c.kube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			return nil, false, nil
		case err != nil:
			return nil, false, err
		}
		return n, true, nil
	}
}

// nodeGetTimeout bounds the GET that confirms a node the cache lacks.
const nodeGetTimeout = 5 * time.Second
