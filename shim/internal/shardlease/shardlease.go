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
//
// A replica back from a restart finds its home shard held by a peer: it
// marks the Lease with spec.preferredHolder (KEP-4355's "end of term" field),
// and the peer, which holds the shard only as a stand-in, drains it and
// releases the Lease to it. A replica never hands away its own home shard.
package shardlease

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	coordinationclient "k8s.io/client-go/kubernetes/typed/coordination/v1"
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
	// Leases, with LeaseName, lets a replica claim its home shard back
	// from a stand-in (spec.preferredHolder); no claims when nil.
	Leases    coordinationclient.LeaseInterface
	LeaseName func(index int) string
	// Identity is this replica's identity in the Leases.
	Identity string
	// Base is --leader-elect-name: with Leases, a held shard starts only
	// once no replica of another shard count holds a Lease of this shim
	// (OtherLayoutHeld).
	Base string
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
	// A shard that cannot run at all stops the others (drained, released):
	// the process exits rather than serving part of its shards.
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	errs := make(chan error, len(s.cfg.Ranges))
	var wg sync.WaitGroup
	for _, r := range s.cfg.Ranges {
		wg.Go(func() {
			if err := s.contend(ctx, r); err != nil {
				errs <- fmt.Errorf("shard %d: %w", r.Index, err)
				stop()
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
	inner, err := s.cfg.Lock(r.Index)
	if err != nil {
		return err
	}
	lock := &watchedLock{Interface: inner, handBack: make(chan struct{}, 1)}
	if r.Index == s.cfg.Home && s.cfg.Leases != nil {
		go s.claimHome(ctx, logger, r.Index)
	}
	for ctx.Err() == nil {
		handedBack, err := s.term(ctx, logger, lock, r)
		if err != nil {
			return err
		}
		wait := s.cfg.RetryPeriod
		if handedBack {
			// Leave the home replica the Lease it asked for.
			wait = s.cfg.LeaseDuration
		}
		select {
		case <-ctx.Done():
		case <-time.After(wait):
		}
	}
	return nil
}

// watchedLock is a shard's Lease lock that tells, on handBack, when the
// Lease it holds names another replica as its preferred holder. The renew
// that follows such a mark reads the Lease (the mark changed it), so the
// mark is seen within a retry period, though that renew then clears it.
type watchedLock struct {
	resourcelock.Interface
	handBack chan struct{}
}

func (l *watchedLock) Get(ctx context.Context) (*resourcelock.LeaderElectionRecord, []byte, error) {
	rec, raw, err := l.Interface.Get(ctx)
	if err == nil && rec.HolderIdentity == l.Identity() && rec.PreferredHolder != "" && rec.PreferredHolder != l.Identity() {
		select {
		case l.handBack <- struct{}{}:
		default:
		}
	}
	return rec, raw, err
}

// claimHome marks the home shard's Lease for this replica while a peer
// holds it, at most once a lease duration, until ctx is done.
func (s *Shards) claimHome(ctx context.Context, logger klog.Logger, index int) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(s.cfg.LeaseDuration):
		}
		claimed, err := s.claim(ctx, index)
		if err != nil {
			logger.V(2).Info("Could not claim the home shard's Lease", "err", err)
		} else if claimed {
			logger.Info("Asked the stand-in holding the home shard to hand it back")
		}
	}
}

// claim sets spec.preferredHolder to this replica on the shard's Lease when
// another replica holds it and it is not marked so yet.
func (s *Shards) claim(ctx context.Context, index int) (bool, error) {
	lease, err := s.cfg.Leases.Get(ctx, s.cfg.LeaseName(index), metav1.GetOptions{})
	if err != nil {
		return false, err
	}
	if !heldByAnother(lease, s.cfg.Identity, time.Now()) || ptrValue(lease.Spec.PreferredHolder) == s.cfg.Identity {
		return false, nil
	}
	lease.Spec.PreferredHolder = &s.cfg.Identity
	if _, err := s.cfg.Leases.Update(ctx, lease, metav1.UpdateOptions{}); err != nil {
		return false, err
	}
	return true, nil
}

// heldByAnother reports whether a replica other than identity holds the
// Lease and has renewed it within its duration.
func heldByAnother(lease *coordinationv1.Lease, identity string, now time.Time) bool {
	holder := ptrValue(lease.Spec.HolderIdentity)
	if holder == "" || holder == identity || lease.Spec.RenewTime == nil || lease.Spec.LeaseDurationSeconds == nil {
		return false
	}
	return now.Before(lease.Spec.RenewTime.Add(time.Duration(*lease.Spec.LeaseDurationSeconds) * time.Second))
}

func ptrValue(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// term waits for shard r's Lease, runs the shard while held, and returns
// once the Lease is lost, handed back to the shard's home replica (then
// handedBack), or, after ctx is done, released.
func (s *Shards) term(ctx context.Context, logger klog.Logger, lock *watchedLock, r shard.Range) (handedBack bool, _ error) {
	leCtx, stopLE := context.WithCancel(context.WithoutCancel(ctx))
	defer stopLE()
	var startErr error
	var mu sync.Mutex
	var held Running
	var handing bool
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
				if s.cfg.Leases != nil && s.cfg.Base != "" {
					if err := WaitForOtherLayouts(lctx, s.cfg.Leases, s.cfg.Base, len(s.cfg.Ranges), s.cfg.Identity, s.cfg.RetryPeriod, func(held string) {
						logger.Info("Waiting: a replica of another shard count still holds a Lease", "lease", held)
					}); err != nil {
						return // the Lease went meanwhile
					}
				}
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
				run, handed := held, handing
				mu.Unlock()
				if run == nil {
					return
				}
				if ctx.Err() == nil && !handed {
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
		return false, err
	}
	// On shutdown, or when the shard's home replica asks for it: drain a
	// held shard, then release its Lease (stopLE).
	standIn := s.cfg.Home != r.Index
	go func() {
		for {
			select {
			case <-leCtx.Done():
				return
			case <-ctx.Done():
			case <-lock.handBack:
				mu.Lock()
				ok := standIn && held != nil
				handing = ok
				mu.Unlock()
				if !ok {
					continue // its home shard, or not held yet: keep it
				}
				logger.Info("Handing the shard back to its home replica")
			}
			break
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
	return handing, startErr
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
