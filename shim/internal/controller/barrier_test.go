package controller

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	metadatafake "k8s.io/client-go/metadata/fake"

	"job-decider.dev/shim/internal/shard"
)

// fakeCache is a store whose version and contents the test moves.
type fakeCache struct {
	mu   sync.Mutex
	rv   string
	keys map[string]bool
}

func (f *fakeCache) LastStoreSyncResourceVersion() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.rv
}

func (f *fakeCache) GetByKey(key string) (any, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return nil, f.keys[key], nil
}

func (f *fakeCache) set(rv string, keys ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rv = rv
	for _, k := range keys {
		if f.keys == nil {
			f.keys = map[string]bool{}
		}
		f.keys[k] = true
	}
}

func fixedLister(m map[cachedResource]listedVersions) versionLister {
	return func(_ context.Context, res cachedResource) (listedVersions, error) { return m[res], nil }
}

func TestFreshnessBarrierWaitsUntilEveryCacheReachesTheNewestObject(t *testing.T) {
	jobs, pods := &fakeCache{rv: "90"}, &fakeCache{rv: "95"}
	b := &freshnessBarrier{
		list: fixedLister(map[cachedResource]listedVersions{
			jobsCache: {newest: "100", comparable: true, keys: []string{"ns/j"}},
			podsCache: {newest: "120", comparable: true, keys: []string{"ns/p"}},
		}),
		caches:   map[cachedResource]cacheView{jobsCache: jobs, podsCache: pods},
		timeout:  5 * time.Second,
		interval: 5 * time.Millisecond,
	}
	go func() {
		time.Sleep(50 * time.Millisecond)
		jobs.set("100")
		time.Sleep(50 * time.Millisecond)
		pods.set("119")
		time.Sleep(50 * time.Millisecond)
		pods.set("130")
	}()
	start := time.Now()
	if res, detail := b.wait(context.Background()); res != freshCaughtUp {
		t.Fatalf("result %s (%s)", res, detail)
	}
	// Caught up only once pods passed 120, after about 150 ms; not at 119.
	if took := time.Since(start); took < 140*time.Millisecond {
		t.Errorf("returned after %s, before the pod cache reached the newest pod", took)
	}
}

func TestFreshnessBarrierTimesOutAndSaysWhatIsBehind(t *testing.T) {
	b := &freshnessBarrier{
		list:     fixedLister(map[cachedResource]listedVersions{podsCache: {newest: "120", comparable: true, keys: []string{"ns/p"}}}),
		caches:   map[cachedResource]cacheView{podsCache: &fakeCache{rv: "7"}},
		timeout:  100 * time.Millisecond,
		interval: 5 * time.Millisecond,
	}
	res, detail := b.wait(context.Background())
	if res != freshTimeout {
		t.Fatalf("result %s, want %s", res, freshTimeout)
	}
	if want := `pods cache at "7", API server at "120"`; !strings.Contains(detail, want) {
		t.Errorf("detail %q does not say %q", detail, want)
	}
}

func TestFreshnessBarrierStopsWithItsContext(t *testing.T) {
	b := &freshnessBarrier{
		list:     fixedLister(map[cachedResource]listedVersions{podsCache: {newest: "120", comparable: true, keys: []string{"ns/p"}}}),
		caches:   map[cachedResource]cacheView{podsCache: &fakeCache{rv: "7"}},
		timeout:  time.Minute,
		interval: 5 * time.Millisecond,
	}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(30*time.Millisecond, cancel)
	if res, _ := b.wait(ctx); res != freshStopped {
		t.Fatalf("result %s, want %s", res, freshStopped)
	}
}

func TestFreshnessBarrierRetriesAFailedList(t *testing.T) {
	var mu sync.Mutex
	calls := 0
	b := &freshnessBarrier{
		list: func(context.Context, cachedResource) (listedVersions, error) {
			mu.Lock()
			defer mu.Unlock()
			calls++
			if calls < 3 {
				return listedVersions{}, errors.New("the API server is busy")
			}
			return listedVersions{newest: "5", comparable: true, keys: []string{"ns/p"}}, nil
		},
		caches:   map[cachedResource]cacheView{podsCache: &fakeCache{rv: "5"}},
		timeout:  5 * time.Second,
		interval: 5 * time.Millisecond,
	}
	if res, detail := b.wait(context.Background()); res != freshCaughtUp || calls != 3 {
		t.Fatalf("result %s after %d lists (%s)", res, calls, detail)
	}
}

func TestCaughtUp(t *testing.T) {
	for _, tc := range []struct {
		name  string
		cache *fakeCache
		list  listedVersions
		want  bool
	}{
		{"nothing listed", &fakeCache{}, listedVersions{comparable: true}, true},
		{"cache past the newest", &fakeCache{rv: "12"}, listedVersions{newest: "11", comparable: true, keys: []string{"a/x"}}, true},
		{"cache at the newest", &fakeCache{rv: "11"}, listedVersions{newest: "11", comparable: true, keys: []string{"a/x"}}, true},
		{"cache behind", &fakeCache{rv: "10", keys: map[string]bool{"a/x": true}}, listedVersions{newest: "11", comparable: true, keys: []string{"a/x"}}, false},
		// Versions that do not compare: every listed object must be there.
		{"opaque versions, all present", &fakeCache{rv: "x", keys: map[string]bool{"a/x": true, "a/y": true}}, listedVersions{newest: "y", comparable: false, keys: []string{"a/x", "a/y"}}, true},
		{"opaque versions, one missing", &fakeCache{rv: "x", keys: map[string]bool{"a/x": true}}, listedVersions{newest: "y", comparable: false, keys: []string{"a/x", "a/y"}}, false},
		{"cache reports no version", &fakeCache{keys: map[string]bool{"a/x": true}}, listedVersions{newest: "11", comparable: true, keys: []string{"a/x"}}, true},
		{"cache reports no version, object missing", &fakeCache{}, listedVersions{newest: "11", comparable: true, keys: []string{"a/x"}}, false},
	} {
		if got := caughtUp(tc.cache, tc.list); got != tc.want {
			t.Errorf("%s: caughtUp = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func podMeta(ns, name, rv string) runtime.Object {
	return &metav1.PartialObjectMetadata{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, ResourceVersion: rv},
	}
}

func TestMetadataVersionsFindsTheNewestObject(t *testing.T) {
	scheme := metadatafake.NewTestScheme()
	if err := metav1.AddMetaToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	client := metadatafake.NewSimpleMetadataClient(scheme, podMeta("a", "p1", "9"), podMeta("a", "p2", "100"), podMeta("b", "p3", "21"))
	got, err := metadataVersions(client, "", shard.Range{}, "")(context.Background(), podsCache)
	if err != nil {
		t.Fatal(err)
	}
	// Numerically newest, not by string order ("9" > "100" as strings).
	if got.newest != "100" || !got.comparable || len(got.keys) != 3 {
		t.Errorf("listed %+v, want newest 100 of 3, comparable", got)
	}
	client = metadatafake.NewSimpleMetadataClient(scheme, podMeta("a", "p1", "9"), podMeta("a", "p2", "opaque"))
	got, err = metadataVersions(client, "a", shard.Range{}, "")(context.Background(), podsCache)
	if err != nil {
		t.Fatal(err)
	}
	if got.comparable || len(got.keys) != 2 {
		t.Errorf("with an opaque version, listed %+v; want not comparable, 2 keys", got)
	}
	if _, err := metadataVersions(client, "", shard.Range{}, "")(context.Background(), cachedResource("widgets")); err == nil {
		t.Error("no error for a cache without an API resource")
	}
}
