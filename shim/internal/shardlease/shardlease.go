// Package shardlease runs the shards a replica holds: one Lease per shard,
// contended for with client-go's leader election, and, while a Lease is
// held, that shard's controller (its own informers, queue and workers).
//
// A replica contends for its home shard at once and for the others only
// after one lease duration, so that replicas started together each take
// their own; a replica whose peer died takes the peer's shard once its Lease
// expires. Losing a Lease stops that shard's syncs at once (another replica
// may already act on it) and the replica goes back to contending, as a
// follower, without restarting (the KEP-5366 convention); on shutdown each
// held shard drains first and then releases its Lease, so a successor never
// overlaps it.
package shardlease

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/klog/v2"

	"job-decider.dev/shim/internal/shard"
)

// Running is a shard's controller while its Lease is held.
type Running interface {
	// Stop drains the shard: no new sync starts, those in flight finish
	// within the controller's grace.
	Stop()
	// Abort cancels the syncs in flight at once.
	Abort()
	// Done is closed once the controller and its informers have stopped.
	Done() <-chan struct{}
	// Synced reports whether its caches have been filled once.
	Synced() bool
	// Jobs counts the Jobs of ours in its cache.
	Jobs() int
}

// StartFunc starts a shard's controller; ctx is done when the Lease is lost.
type StartFunc func(ctx context.Context, r shard.Range) (Running, error)

// Observer hears which shards this replica holds, and their Jobs.
type Observer interface {
	SetShardOwned(index int, owned bool)
	SetShardJobs(index, jobs int)
}

// Config is what Run needs.
type Config struct {
	// Ranges are every shard's ranges; Home is this replica's own (-1: none).
	Ranges []shard.Range
	Home   int
	// Lock makes the Lease lock of one shard.
	Lock func(index int) (resourcelock.Interface, error)
	// The leader election timings, as for one Lease.
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	// Start starts a held shard's controller.
	Start    StartFunc
	Observer Observer
	// JobsEvery is how often a held shard's Jobs are counted for Observer.
	JobsEvery time.Duration
}

// Shards runs the shards of one replica.
type Shards struct {
	cfg     Config
	mu      sync.Mutex
	running map[int]Running
}

// New checks cfg and returns the runner.
func New(cfg Config) (*Shards, error) {
	if len(cfg.Ranges) == 0 || cfg.Lock == nil || cfg.Start == nil {
		return nil, errors.New("shardlease: ranges, lock and start are required")
	}
	if cfg.JobsEvery <= 0 {
		cfg.JobsEvery = 10 * time.Second
	}
	return &Shards{cfg: cfg, running: map[int]Running{}}, nil
}

// Held lists the shards whose controllers run now.
func (s *Shards) Held() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]int, 0, len(s.running))
	for i := range s.cfg.Ranges {
		if _, ok := s.running[i]; ok {
			out = append(out, i)
		}
	}
	return out
}

// Synced reports whether every held shard's caches have synced (a replica
// holding none is a standby, and ready as such).
func (s *Shards) Synced() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range s.running {
		if !r.Synced() {
			return false
		}
	}
	return true
}

// Run contends for every shard until ctx is done, then drains the held ones
// and releases their Leases. It returns the first error that made a shard
// unable to run at all (a lock or controller that could not be built).
func (s *Shards) Run(ctx context.Context) error {
	errs := make(chan error, len(s.cfg.Ranges))
	var wg sync.WaitGroup
	for _, r := range s.cfg.Ranges {
		wg.Go(func() {
			if err := s.contend(ctx, r); err != nil {
				errs <- fmt.Errorf("shard %d: %w", r.Index, err)
			}
		})
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// contend holds shard r whenever it can, until ctx is done.
func (s *Shards) contend(ctx context.Context, r shard.Range) error {
	logger := klog.FromContext(ctx).WithValues("shard", r.Index)
	if s.cfg.Home >= 0 && r.Index != s.cfg.Home {
		// Let the shard's home replica take it first.
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(s.cfg.LeaseDuration):
		}
	}
	lock, err := s.cfg.Lock(r.Index)
	if err != nil {
		return err
	}
	for ctx.Err() == nil {
		if err := s.term(ctx, logger, lock, r); err != nil {
			return err
		}
		if ctx.Err() == nil {
			select {
			case <-ctx.Done():
			case <-time.After(s.cfg.RetryPeriod):
			}
		}
	}
	return nil
}

// term waits for shard r's Lease, runs the shard while held, and returns
// once the Lease is lost or, after ctx is done, released.
func (s *Shards) term(ctx context.Context, logger klog.Logger, lock resourcelock.Interface, r shard.Range) error {
	leCtx, stopLE := context.WithCancel(context.WithoutCancel(ctx))
	defer stopLE()
	var startErr error
	var mu sync.Mutex
	var held Running
	elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:            lock,
		LeaseDuration:   s.cfg.LeaseDuration,
		RenewDeadline:   s.cfg.RenewDeadline,
		RetryPeriod:     s.cfg.RetryPeriod,
		ReleaseOnCancel: true,
		Name:            lock.Describe(),
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(lctx context.Context) {
				if ctx.Err() != nil {
					return
				}
				logger.Info("Took the shard's Lease", "range", r.String())
				run, err := s.cfg.Start(lctx, r)
				if err != nil {
					mu.Lock()
					startErr = err
					mu.Unlock()
					stopLE()
					return
				}
				mu.Lock()
				held = run
				mu.Unlock()
				s.mu.Lock()
				s.running[r.Index] = run
				s.mu.Unlock()
				s.observeOwned(r.Index, true)
				go s.countJobs(lctx, r.Index, run)
			},
			OnStoppedLeading: func() {
				mu.Lock()
				run := held
				mu.Unlock()
				if run == nil {
					return
				}
				if ctx.Err() == nil {
					// Lost, not handed back: another replica may act already.
					logger.Error(nil, "Lost the shard's Lease; stopping its syncs at once")
					run.Abort()
				}
				<-run.Done()
				s.mu.Lock()
				delete(s.running, r.Index)
				s.mu.Unlock()
				s.observeOwned(r.Index, false)
			},
		},
	})
	if err != nil {
		return err
	}
	// On shutdown: drain a held shard, then release its Lease (stopLE).
	go func() {
		select {
		case <-leCtx.Done():
			return
		case <-ctx.Done():
		}
		mu.Lock()
		run := held
		mu.Unlock()
		if run != nil {
			run.Stop()
			<-run.Done()
		}
		stopLE()
	}()
	elector.Run(leCtx)
	mu.Lock()
	defer mu.Unlock()
	return startErr
}

func (s *Shards) observeOwned(index int, owned bool) {
	if s.cfg.Observer != nil {
		s.cfg.Observer.SetShardOwned(index, owned)
	}
}

// countJobs reports a held shard's Jobs until its Lease is gone.
func (s *Shards) countJobs(ctx context.Context, index int, run Running) {
	if s.cfg.Observer == nil {
		return
	}
	t := time.NewTicker(s.cfg.JobsEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-run.Done():
			return
		case <-t.C:
			if run.Synced() {
				s.cfg.Observer.SetShardJobs(index, run.Jobs())
			}
		}
	}
}
