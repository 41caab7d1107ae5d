package controller

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	"k8s.io/client-go/metadata"
	"k8s.io/klog/v2"

	"job-decider.dev/shim/internal/shard"
)

// DefaultFreshnessTimeout bounds the wait for the caches on becoming leader
// unless configured: past it the shim acts anyway, as it did before it had a
// barrier, and says so.
const DefaultFreshnessTimeout = 30 * time.Second

// A standby's informers run long before it wins the Lease, and its watch may
// lag the API server: the previous leader's last creations may not be in its
// cache yet. Acting on such a cache creates those pods again (the class of
// kubernetes/kubernetes#130103; upstream's answer is KEP-5647's
// resourceVersion tracking). So, on becoming leader and before any worker
// starts, the shim reads from the API server, consistently, the newest
// resourceVersion among the objects that exist of each cached resource, and
// waits until each informer's store has seen at least that version. The
// newest existing object, not the list's own version, is the target: a
// resource nobody writes would otherwise never reach a version that other
// resources' writes moved, until a bookmark minutes later.

// listedVersions is what one consistent list found.
type listedVersions struct {
	// newest is the greatest resourceVersion among the objects; "" when none.
	newest string
	// comparable is false when some version does not compare as a number.
	comparable bool
	// keys are the objects' namespace/name, for the check that does not
	// compare versions.
	keys []string
}

// cacheView is what the barrier reads of an informer's store.
type cacheView interface {
	LastStoreSyncResourceVersion() string
	GetByKey(key string) (any, bool, error)
}

// versionLister lists a resource consistently from the API server.
type versionLister func(ctx context.Context, res cachedResource) (listedVersions, error)

// freshnessBarrier waits until every cache has caught up with a consistent read.
type freshnessBarrier struct {
	list     versionLister
	caches   map[cachedResource]cacheView
	timeout  time.Duration
	interval time.Duration
}

// Results of a wait, as the metric labels them.
const (
	freshCaughtUp = "caught_up"
	freshTimeout  = "timeout"
	freshStopped  = "stopped"
)

// wait returns the result once every cache caught up, the timeout passed,
// or ctx is done; detail says what was still missing.
func (b *freshnessBarrier) wait(ctx context.Context) (result string, detail string) {
	ctx, cancel := context.WithTimeout(ctx, b.timeout)
	defer cancel()
	targets := map[cachedResource]listedVersions{}
	pending := func() []cachedResource {
		var out []cachedResource
		for res, cache := range b.caches {
			t, ok := targets[res]
			if !ok || !caughtUp(cache, t) {
				out = append(out, res)
			}
		}
		return out
	}
	var lastErr error
	for {
		for res := range b.caches {
			if _, ok := targets[res]; ok {
				continue
			}
			t, err := b.list(ctx, res)
			if err != nil {
				lastErr = fmt.Errorf("listing %s: %w", res, err)
				continue
			}
			targets[res] = t
		}
		left := pending()
		if len(left) == 0 {
			return freshCaughtUp, ""
		}
		select {
		case <-ctx.Done():
			detail := fmt.Sprintf("behind: %v", left)
			for _, res := range left {
				if t, ok := targets[res]; ok {
					detail += fmt.Sprintf("; %s cache at %q, API server at %q", res, b.caches[res].LastStoreSyncResourceVersion(), t.newest)
				}
			}
			if lastErr != nil {
				detail += "; last error: " + lastErr.Error()
			}
			if ctx.Err() == context.DeadlineExceeded {
				return freshTimeout, detail
			}
			return freshStopped, detail
		case <-time.After(b.interval):
		}
	}
}

// caughtUp reports whether a cache has seen every object the list found:
// its version at or past the newest listed one; or, where versions do not
// compare, every listed object present.
func caughtUp(cache cacheView, t listedVersions) bool {
	if len(t.keys) == 0 {
		return true
	}
	if t.comparable {
		if seen := cache.LastStoreSyncResourceVersion(); seen != "" {
			if cmp, err := resourceversion.CompareResourceVersion(seen, t.newest); err == nil {
				return cmp >= 0
			}
		}
	}
	for _, k := range t.keys {
		if _, ok, err := cache.GetByKey(k); err != nil || !ok {
			return false
		}
	}
	return true
}

// resourceGVRs are the API resources behind the caches.
var resourceGVRs = map[cachedResource]schema.GroupVersionResource{
	jobsCache: {Group: "batch", Version: "v1", Resource: "jobs"},
	podsCache: {Version: "v1", Resource: "pods"},
}

// freshnessPageSize is the page of the barrier's list: a few requests even
// at 100,000 pods, each of object metadata only.
const freshnessPageSize = 5000

// metadataVersions lists a resource's object metadata (in namespace, or all
// namespaces when empty; of the shard's namespaces only, as its informers
// hold them), from a consistent read: resourceVersion "" asks the API server
// for its newest data, and the pages of one list share it.
func metadataVersions(meta metadata.Interface, namespace string, r shard.Range, mode shard.Mode) versionLister {
	return func(ctx context.Context, res cachedResource) (listedVersions, error) {
		gvr, ok := resourceGVRs[res]
		if !ok {
			return listedVersions{}, fmt.Errorf("no API resource for cache %s", res)
		}
		out := listedVersions{comparable: true}
		opts := metav1.ListOptions{Limit: freshnessPageSize}
		if !r.Whole() && mode == shard.ModeServer {
			opts.ShardSelector = r.String()
		}
		for {
			page, err := meta.Resource(gvr).Namespace(namespace).List(ctx, opts)
			if err != nil {
				return listedVersions{}, err
			}
			for i := range page.Items {
				m := &page.Items[i].ObjectMeta
				if !r.HasNamespace(m.Namespace) {
					continue // another shard's: this cache never holds it
				}
				key := m.Name
				if m.Namespace != "" {
					key = m.Namespace + "/" + m.Name
				}
				out.keys = append(out.keys, key)
				rv := m.ResourceVersion
				switch {
				case !out.comparable:
				case out.newest == "":
					out.newest = rv
				default:
					cmp, err := resourceversion.CompareResourceVersion(rv, out.newest)
					if err != nil {
						out.comparable = false
					} else if cmp > 0 {
						out.newest = rv
					}
				}
			}
			if page.Continue == "" {
				return out, nil
			}
			opts.Continue = page.Continue
		}
	}
}

// awaitFreshCaches runs the barrier, when configured, and reports it.
func (c *Controller) awaitFreshCaches(ctx context.Context) {
	if c.cfg.Metadata == nil {
		return
	}
	logger := klog.FromContext(ctx)
	b := &freshnessBarrier{
		list:     metadataVersions(c.cfg.Metadata, c.cfg.Namespace, c.cfg.Shard, c.cfg.ShardMode),
		caches:   c.freshCaches,
		timeout:  c.cfg.FreshnessTimeout,
		interval: 50 * time.Millisecond,
	}
	start := time.Now()
	logger.Info("Waiting for the caches to catch up with the API server before acting", "timeout", b.timeout)
	result, detail := b.wait(ctx)
	took := time.Since(start)
	c.metrics.freshnessWait.WithLabelValues(result).Observe(took.Seconds())
	switch result {
	case freshCaughtUp:
		logger.Info("Caches caught up with the API server", "waited", took)
	case freshTimeout:
		logger.Error(nil, "Caches still behind the API server; acting anyway", "waited", took, "detail", detail)
	default:
		logger.Info("Stopped while waiting for the caches", "waited", took)
	}
}
