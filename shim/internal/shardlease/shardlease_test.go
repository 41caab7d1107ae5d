package shardlease

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	"job-decider.dev/shim/internal/shard"
)

// fakeRun is a shard's controller as the test sees it.
type fakeRun struct {
	stopped, aborted atomic.Bool
	once             sync.Once
	done             chan struct{}
}

func (f *fakeRun) Stop()                 { f.stopped.Store(true); f.once.Do(func() { close(f.done) }) }
func (f *fakeRun) Abort()                { f.aborted.Store(true); f.once.Do(func() { close(f.done) }) }
func (f *fakeRun) Done() <-chan struct{} { return f.done }
func (f *fakeRun) Synced() bool          { return true }
func (f *fakeRun) Jobs() int             { return 0 }

// brokenLock fails every write once broken: a replica cut off from the API
// server, whose Lease then expires without being released.
type brokenLock struct {
	resourcelock.Interface
	broken *atomic.Bool
}

func (l brokenLock) Create(ctx context.Context, r resourcelock.LeaderElectionRecord) error {
	if l.broken.Load() {
		return errors.New("cut off")
	}
	return l.Interface.Create(ctx, r)
}

func (l brokenLock) Update(ctx context.Context, r resourcelock.LeaderElectionRecord) error {
	if l.broken.Load() {
		return errors.New("cut off")
	}
	return l.Interface.Update(ctx, r)
}

type replica struct {
	shards *Shards
	starts chan int
	runs   sync.Map // shard index → *fakeRun of the latest term
	broken atomic.Bool
}

func newReplica(t *testing.T, client *fake.Clientset, identity string, home int, ranges []shard.Range) *replica {
	t.Helper()
	r := &replica{starts: make(chan int, 16)}
	s, err := New(Config{
		Ranges: ranges,
		Home:   home,
		Lock: func(i int) (resourcelock.Interface, error) {
			l, err := resourcelock.New(resourcelock.LeasesResourceLock, "default", "shim-shard-"+string(rune('0'+i)),
				client.CoreV1(), client.CoordinationV1(), resourcelock.ResourceLockConfig{Identity: identity})
			return brokenLock{Interface: l, broken: &r.broken}, err
		},
		LeaseDuration: 2 * time.Second, // whole seconds: a Lease keeps seconds
		RenewDeadline: 1500 * time.Millisecond,
		RetryPeriod:   200 * time.Millisecond,
		Leases:        client.CoordinationV1().Leases("default"),
		LeaseName:     func(i int) string { return "shim-shard-" + string(rune('0'+i)) },
		Identity:      identity,
		Start: func(_ context.Context, sr shard.Range) (Running, error) {
			run := &fakeRun{done: make(chan struct{})}
			r.runs.Store(sr.Index, run)
			r.starts <- sr.Index
			return run, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	r.shards = s
	return r
}

func waitHeld(t *testing.T, r *replica, want []int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !slices.Equal(r.shards.Held(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("holds %v, want %v", r.shards.Held(), want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// leaseClient is a fake API server for Leases with the real one's optimistic
// concurrency: an update must carry the stored resourceVersion, and each
// write moves it (the fake's tracker alone accepts any update).
func leaseClient() *fake.Clientset {
	client := fake.NewClientset()
	var mu sync.Mutex
	versions := map[string]int{}
	client.PrependReactor("*", "leases", func(action k8stesting.Action) (bool, runtime.Object, error) {
		mu.Lock()
		defer mu.Unlock()
		gvr := coordinationv1.SchemeGroupVersion.WithResource("leases")
		a, ok := action.(interface{ GetObject() runtime.Object })
		if !ok {
			return false, nil, nil
		}
		switch action.GetVerb() {
		case "create":
			lease := a.GetObject().(*coordinationv1.Lease).DeepCopy()
			if _, exists := versions[lease.Name]; exists {
				return true, nil, apierrors.NewAlreadyExists(gvr.GroupResource(), lease.Name)
			}
			versions[lease.Name] = 1
			lease.ResourceVersion = "1"
			return true, lease, client.Tracker().Create(gvr, lease, lease.Namespace)
		case "update":
			lease := a.GetObject().(*coordinationv1.Lease).DeepCopy()
			if lease.ResourceVersion != strconv.Itoa(versions[lease.Name]) {
				return true, nil, apierrors.NewConflict(gvr.GroupResource(), lease.Name, errors.New("the object has been modified"))
			}
			versions[lease.Name]++
			lease.ResourceVersion = strconv.Itoa(versions[lease.Name])
			return true, lease, client.Tracker().Update(gvr, lease, lease.Namespace)
		}
		return false, nil, nil
	})
	return client
}

func TestEachReplicaTakesItsHomeShardAPeersOnceItsLeaseExpiresAndHandsItBack(t *testing.T) {
	ranges, _ := shard.Ranges(2)
	client := leaseClient()
	a := newReplica(t, client, "a", 0, ranges)
	b := newReplica(t, client, "b", 1, ranges)
	ctxA, stopA := context.WithCancel(context.Background())
	defer stopA()
	ctxB, stopB := context.WithCancel(context.Background())
	defer stopB()
	doneA := make(chan error, 1)
	go func() { doneA <- a.shards.Run(ctxA) }()
	go func() { _ = b.shards.Run(ctxB) }()
	waitHeld(t, a, []int{0})
	waitHeld(t, b, []int{1})
	// Past one lease duration, neither took the other's shard.
	time.Sleep(3 * time.Second)
	waitHeld(t, a, []int{0})
	waitHeld(t, b, []int{1})

	// b is cut off: it stops renewing, aborts its shard at once, and a
	// takes shard 1 when the Lease expires.
	b.broken.Store(true)
	cut := time.Now()
	waitHeld(t, b, nil)
	if run, _ := b.runs.Load(1); !run.(*fakeRun).aborted.Load() {
		t.Error("b lost shard 1's Lease but did not abort its syncs")
	}
	waitHeld(t, a, []int{0, 1})
	if took := time.Since(cut); took > 6*time.Second {
		t.Errorf("a took shard 1 %s after b was cut off", took)
	}
	lease, err := client.CoordinationV1().Leases("default").Get(context.Background(), "shim-shard-1", metav1.GetOptions{})
	if err != nil || *lease.Spec.HolderIdentity != "a" {
		t.Errorf("shard 1's Lease: %v, %v; want held by a", leaseHolder(lease), err)
	}

	// b comes back (a new process, a new identity): it marks its home
	// shard's Lease, and a, only a stand-in there, drains shard 1 and
	// releases it; a keeps its own shard 0.
	standIn, _ := a.runs.Load(1)
	b2 := newReplica(t, client, "b2", 1, ranges)
	ctxB2, stopB2 := context.WithCancel(context.Background())
	defer stopB2()
	go func() { _ = b2.shards.Run(ctxB2) }()
	waitHeld(t, b2, []int{1})
	waitHeld(t, a, []int{0})
	if f := standIn.(*fakeRun); !f.stopped.Load() || f.aborted.Load() {
		t.Errorf("a handed shard 1 back with stopped %v, aborted %v; want drained", f.stopped.Load(), f.aborted.Load())
	}
	// Past a lease duration, a has not taken shard 1 again.
	time.Sleep(3 * time.Second)
	waitHeld(t, a, []int{0})
	waitHeld(t, b2, []int{1})
	stopB2()

	// a shuts down: each held shard drains (Stop, not Abort), then its
	// Lease is released.
	stopA()
	if err := <-doneA; err != nil {
		t.Fatal(err)
	}
	for _, i := range []int{0} {
		run, _ := a.runs.Load(i)
		if f := run.(*fakeRun); !f.stopped.Load() || f.aborted.Load() {
			t.Errorf("shard %d on shutdown: stopped %v, aborted %v; want drained", i, f.stopped.Load(), f.aborted.Load())
		}
		lease, err := client.CoordinationV1().Leases("default").Get(context.Background(), "shim-shard-"+string(rune('0'+i)), metav1.GetOptions{})
		if err != nil || (lease.Spec.HolderIdentity != nil && *lease.Spec.HolderIdentity != "") {
			t.Errorf("shard %d's Lease after shutdown: holder %v, %v; want released", i, leaseHolder(lease), err)
		}
	}
}

func leaseHolder(l *coordinationv1.Lease) string {
	if l == nil || l.Spec.HolderIdentity == nil {
		return "(none)"
	}
	return *l.Spec.HolderIdentity
}

// A shard's Lease labelled with another count, or the unsharded shim's one
// Lease, held by another replica, blocks a layout; released, expired, or of
// the same count, it does not.
func TestOtherLayoutsHeldAreFound(t *testing.T) {
	now := time.Now()
	held := func(name, holder string, shards string, renewed time.Duration) *coordinationv1.Lease {
		l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}}
		if shards != "" {
			l.Labels = map[string]string{ShardsLabel: shards}
		}
		l.Spec.HolderIdentity = &holder
		l.Spec.LeaseDurationSeconds = ptrTo(int32(15))
		l.Spec.RenewTime = &metav1.MicroTime{Time: now.Add(-renewed)}
		return l
	}
	for _, tc := range []struct {
		name   string
		leases []*coordinationv1.Lease
		count  int
		want   string
	}{
		{"same count", []*coordinationv1.Lease{held("shim-shard-0", "x", "3", 0)}, 3, ""},
		{"another count", []*coordinationv1.Lease{held("shim-shard-0", "x", "2", 0)}, 3, "shim-shard-0 (held by x, 2 shards)"},
		{"unsharded leader", []*coordinationv1.Lease{held("shim", "x", "", 0)}, 3, "shim (held by x, 1 shards)"},
		{"sharded seen by the unsharded", []*coordinationv1.Lease{held("shim-shard-1", "x", "2", 0)}, 1, "shim-shard-1 (held by x, 2 shards)"},
		{"expired", []*coordinationv1.Lease{held("shim-shard-0", "x", "2", time.Minute)}, 3, ""},
		{"released", []*coordinationv1.Lease{held("shim-shard-0", "", "2", 0)}, 3, ""},
		{"mine", []*coordinationv1.Lease{held("shim-shard-0", "me", "2", 0)}, 3, ""},
		{"another shim", []*coordinationv1.Lease{held("other-shard-0", "x", "2", 0)}, 3, ""},
	} {
		client := fake.NewClientset()
		for _, l := range tc.leases {
			if _, err := client.CoordinationV1().Leases("default").Create(context.Background(), l, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		got, err := OtherLayoutHeld(context.Background(), client.CoordinationV1().Leases("default"), "shim", tc.count, "me", now)
		if err != nil || got != tc.want {
			t.Errorf("%s: %q, %v; want %q", tc.name, got, err, tc.want)
		}
	}
}

func ptrTo[T any](v T) *T { return &v }

// A shard whose controller cannot be built stops the replica's other shards
// (drained) and Run reports it: no replica serves part of its shards.
func TestAShardThatCannotStartStopsTheOthers(t *testing.T) {
	ranges, _ := shard.Ranges(2)
	client := leaseClient()
	var zero *fakeRun
	var mu sync.Mutex
	s, err := New(Config{
		Ranges: ranges,
		Home:   -1,
		Lock: func(i int) (resourcelock.Interface, error) {
			return resourcelock.New(resourcelock.LeasesResourceLock, "default", "broken-shard-"+strconv.Itoa(i),
				client.CoreV1(), client.CoordinationV1(), resourcelock.ResourceLockConfig{Identity: "a"})
		},
		LeaseDuration: 2 * time.Second,
		RenewDeadline: 1500 * time.Millisecond,
		RetryPeriod:   200 * time.Millisecond,
		Start: func(_ context.Context, sr shard.Range) (Running, error) {
			if sr.Index == 1 {
				return nil, errors.New("no informers")
			}
			run := &fakeRun{done: make(chan struct{})}
			mu.Lock()
			zero = run
			mu.Unlock()
			return run, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Run(context.Background()) }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "shard 1: no informers") {
			t.Errorf("Run: %v, want shard 1's error", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Run still running 20 s after shard 1 failed to start")
	}
	mu.Lock()
	defer mu.Unlock()
	if zero != nil && (!zero.stopped.Load() || zero.aborted.Load()) {
		t.Errorf("shard 0 after shard 1 failed: stopped %v, aborted %v; want drained", zero.stopped.Load(), zero.aborted.Load())
	}
}
