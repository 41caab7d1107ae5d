package shard

import (
	"context"
	"fmt"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// Mode says where a shard's range is applied to lists and watches.
type Mode string

// The modes of --shard-selector-mode.
const (
	// ModeAuto asks the API server once and picks server or client.
	ModeAuto Mode = "auto"
	// ModeServer sends shardSelector: the API server sends only the range
	// (KEP-5866, gate ShardedListAndWatch, alpha in 1.36).
	ModeServer Mode = "server"
	// ModeClient lists and watches every namespace and keeps the range:
	// each replica then receives and decodes the whole cluster's Jobs and
	// pods, though it caches only its own.
	ModeClient Mode = "client"
)

// ParseMode reads a --shard-selector-mode value.
func ParseMode(s string) (Mode, error) {
	switch m := Mode(s); m {
	case ModeAuto, ModeServer, ModeClient:
		return m, nil
	}
	return "", fmt.Errorf("--shard-selector-mode %q: want auto, server or client", s)
}

// ServerSelects asks the API server whether it applies shard selectors: a
// list with one answers with listMeta.shardInfo only when the
// ShardedListAndWatch gate is on (an API server without it drops the
// parameter and answers with the whole collection).
func ServerSelects(ctx context.Context, kube kubernetes.Interface, r Range) (bool, error) {
	if r.Whole() {
		return false, nil
	}
	list, err := kube.BatchV1().Jobs("").List(ctx, metav1.ListOptions{Limit: 1, ShardSelector: r.String()})
	if err != nil {
		return false, fmt.Errorf("listing Jobs with shardSelector %q: %w", r.String(), err)
	}
	return list.ShardInfo != nil, nil
}

// Resolve turns ModeAuto into ModeServer or ModeClient for this API server.
func Resolve(ctx context.Context, kube kubernetes.Interface, r Range, m Mode) (Mode, error) {
	if m != ModeAuto {
		return m, nil
	}
	server, err := ServerSelects(ctx, kube, r)
	if err != nil {
		return "", err
	}
	if server {
		return ModeServer, nil
	}
	return ModeClient, nil
}

// NewInformerFactory returns an informer factory whose Job and Pod informers
// hold only the range's namespaces (within namespace, or all when empty):
// the API server selects in ModeServer, the informers' list and watch drop
// the rest in ModeClient. Get the informers from it as from any factory.
func NewInformerFactory(kube kubernetes.Interface, namespace string, r Range, m Mode) informers.SharedInformerFactory {
	if r.Whole() {
		return informers.NewSharedInformerFactoryWithOptions(kube, 0, informers.WithNamespace(namespace))
	}
	if m == ModeServer {
		selector := r.String()
		return informers.NewSharedInformerFactoryWithOptions(kube, 0, informers.WithNamespace(namespace),
			informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.ShardSelector = selector }))
	}
	f := informers.NewSharedInformerFactoryWithOptions(kube, 0, informers.WithNamespace(namespace))
	// Registered before anyone asks the factory for Jobs or Pods, so that
	// the typed accessors return these informers.
	f.InformerFor(&batchv1.Job{}, func(c kubernetes.Interface, resync time.Duration) cache.SharedIndexInformer {
		jobs := c.BatchV1().Jobs(namespace)
		return newFilteredInformer(&batchv1.Job{}, resync, r.HasNamespace,
			func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) { return jobs.List(ctx, o) },
			jobs.Watch)
	})
	f.InformerFor(&corev1.Pod{}, func(c kubernetes.Interface, resync time.Duration) cache.SharedIndexInformer {
		pods := c.CoreV1().Pods(namespace)
		return newFilteredInformer(&corev1.Pod{}, resync, r.HasNamespace,
			func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) { return pods.List(ctx, o) },
			pods.Watch)
	})
	return f
}

// newFilteredInformer is an informer over list and watch that keeps only the
// objects whose namespace keep accepts.
func newFilteredInformer(obj runtime.Object, resync time.Duration, keep func(namespace string) bool,
	list func(context.Context, metav1.ListOptions) (runtime.Object, error),
	watchFn func(context.Context, metav1.ListOptions) (watch.Interface, error)) cache.SharedIndexInformer {
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			out, err := list(ctx, o)
			if err != nil {
				return nil, err
			}
			return out, KeepList(out, keep)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			w, err := watchFn(ctx, o)
			if err != nil {
				return nil, err
			}
			return watch.Filter(w, func(e watch.Event) (watch.Event, bool) { return e, KeepEvent(e, keep) }), nil
		},
	}
	return cache.NewSharedIndexInformer(lw, obj, resync, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
}

// KeepList removes from a list the items whose namespace keep refuses.
func KeepList(list runtime.Object, keep func(namespace string) bool) error {
	items, err := meta.ExtractList(list)
	if err != nil {
		return err
	}
	kept := items[:0]
	for _, item := range items {
		if acc, err := meta.Accessor(item); err != nil || keep(acc.GetNamespace()) {
			kept = append(kept, item)
		}
	}
	return meta.SetList(list, kept)
}

// KeepEvent reports whether a watch event is for the range: bookmarks and
// errors always are (they carry the watch's progress, not an object of ours).
func KeepEvent(e watch.Event, keep func(namespace string) bool) bool {
	if e.Type == watch.Bookmark || e.Type == watch.Error {
		return true
	}
	acc, err := meta.Accessor(e.Object)
	if err != nil {
		return true
	}
	return keep(acc.GetNamespace())
}
