package shardlease

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
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

func TestEachReplicaTakesItsHomeShardAndAPeersOnceItsLeaseExpires(t *testing.T) {
	ranges, _ := shard.Ranges(2)
	client := fake.NewClientset()
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

	// a shuts down: each held shard drains (Stop, not Abort), then its
	// Lease is released.
	stopA()
	if err := <-doneA; err != nil {
		t.Fatal(err)
	}
	for _, i := range []int{0, 1} {
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
