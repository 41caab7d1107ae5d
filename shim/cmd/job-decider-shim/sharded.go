package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	jobdeciderv1 "job-decider.dev/clients/go/jobdecider/v1"
	"job-decider.dev/shim/internal/controller"
	"job-decider.dev/shim/internal/shard"
	"job-decider.dev/shim/internal/shardlease"
)

// runSharded runs the shards this replica holds (--shards above 1): each
// under its own Lease, with its own informers, queue and workers.
func runSharded(ctx context.Context, o *options, cfg *rest.Config, kube kubernetes.Interface, ccfg controller.Config,
	decider jobdeciderv1.JobDeciderClient, recorder record.EventRecorder, reg *prometheus.Registry, metrics *controller.Metrics) error {
	logger := klog.FromContext(ctx)
	ranges, err := shard.Ranges(o.shards)
	if err != nil {
		return err
	}
	metrics.SetShards(o.shards)
	// Asked once: every shard's informers then list and watch the same way.
	askCtx, cancelAsk := context.WithTimeout(ctx, 30*time.Second)
	mode, err := shard.Resolve(askCtx, kube, ranges[0], o.shardMode)
	cancelAsk()
	if err != nil {
		return err
	}
	logger.Info("Sharded", "shards", o.shards, "homeShard", o.homeShard, "selectorMode", mode)

	// One node cache for every shard: nodes are not cut by namespace.
	var nodeFactory informers.SharedInformerFactory
	if o.nodeHealth {
		nodeFactory = controller.NewNodeFactory(kube)
		defer nodeFactory.Shutdown()
	}
	nodesCtx, stopNodes := context.WithCancel(context.WithoutCancel(ctx))
	defer stopNodes()
	start := func(lctx context.Context, r shard.Range) (shardlease.Running, error) {
		sc := ccfg
		sc.Shard, sc.ShardMode = r, mode
		factory := shard.NewInformerFactory(kube, o.namespace, r, mode)
		ctrl, err := controller.New(sc, kube, factory, decider, recorder, metrics)
		if err != nil {
			return nil, err
		}
		if nodeFactory != nil {
			if err := ctrl.WatchNodes(nodeFactory); err != nil {
				return nil, err
			}
			nodeFactory.Start(nodesCtx.Done())
		}
		run := &shardRun{ctrl: ctrl, done: make(chan struct{})}
		var runCtx context.Context
		runCtx, run.cancel = context.WithCancel(lctx)
		// The informers outlive the Lease's context until the controller
		// has drained, so a draining sync still reads a live cache.
		infCtx, stopInformers := context.WithCancel(context.WithoutCancel(lctx))
		factory.Start(infCtx.Done())
		go func() {
			defer close(run.done)
			if err := ctrl.Run(klog.NewContext(runCtx, logger.WithValues("shard", r.Index))); err != nil {
				logger.Error(err, "Shard controller stopped", "shard", r.Index)
			}
			stopInformers()
			factory.Shutdown()
		}()
		return run, nil
	}
	shards, err := shardlease.New(shardlease.Config{
		Ranges: ranges,
		Home:   o.homeShard,
		Lock: func(i int) (resourcelock.Interface, error) {
			// A client per Lease, with its own rate limiter and a request
			// timeout of half the renew deadline, as for the one Lease; the
			// Lease says the shard count it was cut by.
			client, err := leaseClient(cfg, o.renewDeadline)
			if err != nil {
				return nil, err
			}
			return resourcelock.NewWithLabels(resourcelock.LeasesResourceLock, o.leNamespace, shardLeaseName(o.leName, i),
				client.CoreV1(), client.CoordinationV1(),
				resourcelock.ResourceLockConfig{Identity: o.leIdentity, EventRecorder: recorder},
				map[string]string{shardlease.ShardsLabel: strconv.Itoa(o.shards)})
		},
		Leases:        kube.CoordinationV1().Leases(o.leNamespace),
		LeaseName:     func(i int) string { return shardLeaseName(o.leName, i) },
		Identity:      o.leIdentity,
		Base:          o.leName,
		LeaseDuration: o.leaseDuration,
		RenewDeadline: o.renewDeadline,
		RetryPeriod:   o.retryPeriod,
		Start:         start,
		Observer:      metrics,
	})
	if err != nil {
		return err
	}
	stopHTTP, err := serveHTTP(logger, o.httpAddr, reg, func() error {
		if !shards.Synced() {
			return errors.New("caches of a held shard not synced")
		}
		return nil
	}, func(*http.Request) error { return nil })
	if err != nil {
		return err
	}
	defer stopHTTP()
	return shards.Run(ctx)
}

// shardLeaseName is the name of shard i's Lease.
func shardLeaseName(base string, i int) string {
	return fmt.Sprintf("%s-shard-%d", base, i)
}

// leaseClient is a client for Lease writes alone: its own rate limiter, and
// a request timeout of half the renew deadline (at least a second), so one
// hung request cannot cost a Lease (as kube-controller-manager builds its lock).
func leaseClient(cfg *rest.Config, renewDeadline time.Duration) (kubernetes.Interface, error) {
	c := rest.CopyConfig(cfg)
	c.Timeout = max(renewDeadline/2, time.Second)
	return kubernetes.NewForConfig(rest.AddUserAgent(c, "leader-election"))
}

// shardRun is one held shard's controller and informers.
type shardRun struct {
	ctrl   *controller.Controller
	cancel context.CancelFunc
	done   chan struct{}
}

func (r *shardRun) Stop()                 { r.cancel() }
func (r *shardRun) Abort()                { r.ctrl.Abort(); r.cancel() }
func (r *shardRun) Done() <-chan struct{} { return r.done }
func (r *shardRun) Synced() bool          { return r.ctrl.Synced() }
func (r *shardRun) Jobs() int             { return r.ctrl.JobsManaged() }
