// Command job-decider-shim runs the shim controller: it manages the Jobs whose
// spec.managedBy names it, asking the job-decider service what to do.
package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/keepalive"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	jobdeciderv1 "job-decider.dev/clients/go/jobdecider/v1"
	"job-decider.dev/shim/internal/controller"
	"job-decider.dev/shim/internal/shard"
	"job-decider.dev/shim/internal/shardlease"
)

type options struct {
	nodeHealth     bool
	kubeconfig     string
	kubeQPS        float64
	kubeBurst      int
	controllerName string
	workers        int
	podBatch       time.Duration
	retryBase      time.Duration
	retryMax       time.Duration
	namespace      string

	deciderAddr       string
	deciderTLS        bool
	deciderCA         string
	deciderCert       string
	deciderKey        string
	deciderServerName string
	decideTimeout     time.Duration

	httpAddr      string
	shutdownGrace time.Duration

	leaderElect   bool
	leNamespace   string
	leName        string
	leIdentity    string
	leaseDuration time.Duration
	renewDeadline time.Duration
	retryPeriod   time.Duration
	freshTimeout  time.Duration

	shards    int
	homeShard int
	shardMode shard.Mode

	exitBetweenSteps float64
	writeFaultRate   float64
}

func parseFlags(args []string) (*options, error) {
	o := &options{}
	fs := flag.NewFlagSet("job-decider-shim", flag.ContinueOnError)
	klog.InitFlags(fs)
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "Path to a kubeconfig; in-cluster configuration when empty.")
	fs.Float64Var(&o.kubeQPS, "kube-api-qps", 50, "Queries per second to the Kubernetes API.")
	fs.IntVar(&o.kubeBurst, "kube-api-burst", 100, "Burst of queries to the Kubernetes API.")
	fs.StringVar(&o.controllerName, "controller-name", controller.DefaultControllerName, "The spec.managedBy value of the Jobs this shim manages.")
	fs.IntVar(&o.workers, "workers", 5, "Jobs synced at once.")
	fs.DurationVar(&o.podBatch, "pod-event-batch-period", time.Second, "Delay before a sync caused by pod events, to batch them.")
	fs.DurationVar(&o.retryBase, "retry-base-delay", time.Second, "First delay before retrying a failed sync; doubles on each failure.")
	fs.DurationVar(&o.retryMax, "retry-max-delay", time.Minute, "Longest delay before retrying a failed sync.")
	fs.StringVar(&o.namespace, "namespace", "", "Watch only this namespace; all namespaces when empty.")
	fs.StringVar(&o.deciderAddr, "decider-addr", "127.0.0.1:50051", "Address of the job-decider gRPC service: host:port, a Unix socket (unix:///path, as in the sidecar layout), or any gRPC target.")
	fs.BoolVar(&o.deciderTLS, "decider-tls", false, "Use TLS to the service (implied by --decider-ca and --decider-cert).")
	fs.StringVar(&o.deciderCA, "decider-ca", "", "PEM CA bundle that signs the service's certificate; system roots when empty.")
	fs.StringVar(&o.deciderCert, "decider-cert", "", "PEM client certificate for mTLS (with --decider-key).")
	fs.StringVar(&o.deciderKey, "decider-key", "", "PEM private key of --decider-cert.")
	fs.StringVar(&o.deciderServerName, "decider-server-name", "", "Name to verify in the service's certificate; the address's host when empty.")
	fs.DurationVar(&o.decideTimeout, "decide-timeout", controller.DefaultDecideTimeout, "Deadline of one DecideJob call.")
	fs.StringVar(&o.httpAddr, "http-addr", "127.0.0.1:8080", "Address of /metrics, /healthz and /readyz.")
	fs.DurationVar(&o.shutdownGrace, "shutdown-grace", 30*time.Second, "After SIGTERM, how long running syncs may take to finish.")
	fs.BoolVar(&o.nodeHealth, "node-health", true, "Watch nodes (list and watch on nodes, cluster-wide) so requests carry the nodes of terminating pods, which the failure policy's terminatingTimeout with onNodes: Unhealthy reads; without it such a timeout never applies.")
	fs.BoolVar(&o.leaderElect, "leader-elect", true, "Run only while holding the leader Lease (required with more than one replica).")
	fs.StringVar(&o.leNamespace, "leader-elect-namespace", os.Getenv("POD_NAMESPACE"), "Namespace of the Lease; \"default\" when empty.")
	fs.StringVar(&o.leName, "leader-elect-name", "job-decider-shim", "Name of the Lease.")
	fs.StringVar(&o.leIdentity, "leader-elect-identity", "", "Identity in the Lease; hostname_<random> when empty.")
	fs.DurationVar(&o.leaseDuration, "leader-elect-lease-duration", 15*time.Second, "How long a standby waits after the last renewal before taking over.")
	fs.DurationVar(&o.renewDeadline, "leader-elect-renew-deadline", 10*time.Second, "How long the leader retries renewing before giving up.")
	fs.DurationVar(&o.retryPeriod, "leader-elect-retry-period", 2*time.Second, "Interval between Lease attempts.")
	fs.DurationVar(&o.freshTimeout, "leader-elect-cache-timeout", controller.DefaultFreshnessTimeout, "On becoming leader, how long to wait for the caches to catch up with the API server (a consistent list of Jobs and pods) before acting anyway.")
	fs.IntVar(&o.shards, "shards", 1, "Cut the namespaces into this many shards (KEP-5866 hash ranges of metadata.namespace), each run under a Lease of its own (<leader-elect-name>-shard-<i>) by whichever replica holds it; 1: one Lease for everything.")
	fs.IntVar(&o.homeShard, "home-shard", -1, "The shard this replica takes first; the others only once their Lease has been free for a lease duration. Default: the ordinal ending $POD_NAME (a StatefulSet's pod), modulo --shards.")
	shardMode := fs.String("shard-selector-mode", string(shard.ModeAuto), "Where a shard's range is applied: server (the API server's ShardedListAndWatch, alpha in 1.36), client (list and watch everything, keep the range), or auto (ask the API server).")
	fs.Float64Var(&o.exitBetweenSteps, "testing-exit-between-steps", 0, "Testing only: probability of exiting abruptly before each step of a plan after its first.")
	fs.Float64Var(&o.writeFaultRate, "testing-write-fault-rate", 0, "Testing only: share of pod and Job writes that fail (half before sending, half after a pod patch or Job status write was sent).")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	if o.leNamespace == "" {
		o.leNamespace = "default"
	}
	if o.leIdentity == "" {
		host, _ := os.Hostname()
		o.leIdentity = host + "_" + uuid.NewString()
	}
	if (o.deciderCert == "") != (o.deciderKey == "") {
		return nil, errors.New("--decider-cert and --decider-key go together")
	}
	if err := checkDeciderAddr(o.deciderAddr); err != nil {
		return nil, err
	}
	mode, err := shard.ParseMode(*shardMode)
	if err != nil {
		return nil, err
	}
	o.shardMode = mode
	switch {
	case o.shards < 1:
		return nil, fmt.Errorf("--shards %d: at least 1", o.shards)
	case o.shards > 1 && !o.leaderElect:
		return nil, errors.New("--shards above 1 needs --leader-elect: each shard is run under its own Lease")
	case o.homeShard >= o.shards:
		return nil, fmt.Errorf("--home-shard %d: the shards are 0 to %d", o.homeShard, o.shards-1)
	case o.homeShard < -1:
		return nil, fmt.Errorf("--home-shard %d: a shard number, or -1 for none", o.homeShard)
	}
	if o.homeShard == -1 && o.shards > 1 {
		o.homeShard = homeFromPodName(os.Getenv("POD_NAME"), o.shards)
	}
	return o, nil
}

// homeFromPodName is a StatefulSet pod's ordinal (name-<ordinal>) modulo
// shards, or -1 when the name ends in no ordinal.
func homeFromPodName(name string, shards int) int {
	i := strings.LastIndexByte(name, '-')
	if i < 0 {
		return -1
	}
	n, err := strconv.Atoi(name[i+1:])
	if err != nil || n < 0 {
		return -1
	}
	return n % shards
}

func main() {
	o, err := parseFlags(os.Args[1:])
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if err := run(ctx, o); err != nil {
		klog.ErrorS(err, "job-decider-shim failed")
		klog.Flush()
		os.Exit(1)
	}
	klog.Flush()
}

func kubeConfig(o *options) (*rest.Config, error) {
	var cfg *rest.Config
	var err error
	if o.kubeconfig != "" {
		cfg, err = clientcmd.BuildConfigFromFlags("", o.kubeconfig)
	} else {
		cfg, err = rest.InClusterConfig()
	}
	if err != nil {
		return nil, err
	}
	if rate := o.writeFaultRate; rate > 0 {
		cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return newFaultyTransport(rt, rate, rand.Uint64()) })
	}
	cfg.QPS = float32(o.kubeQPS)
	cfg.Burst = o.kubeBurst
	cfg.UserAgent = "job-decider-shim"
	return cfg, nil
}

// checkDeciderAddr refuses, at startup and naming the flag, a unix: target
// grpc-go would only refuse at the first call: one with a host or no path.
func checkDeciderAddr(addr string) error {
	rest, ok := strings.CutPrefix(addr, "unix:")
	if !ok {
		return nil
	}
	if after, ok := strings.CutPrefix(rest, "//"); ok {
		rest = after
		if rest != "" && !strings.HasPrefix(rest, "/") {
			return fmt.Errorf("--decider-addr %s: a Unix socket has no host; write unix:///absolute/path or unix:relative/path", addr)
		}
	}
	if rest == "" {
		return fmt.Errorf("--decider-addr %s: no socket path after unix:", addr)
	}
	return nil
}

// dialDecider opens the (lazy) connection to the service: plaintext, TLS, or mTLS;
// over TCP or a Unix socket (grpc-go dials unix: targets itself, with the
// authority "localhost", the name TLS verifies unless --decider-server-name says).
func dialDecider(o *options) (*grpc.ClientConn, error) {
	creds := insecure.NewCredentials()
	if o.deciderTLS || o.deciderCA != "" || o.deciderCert != "" {
		tc := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: o.deciderServerName}
		if o.deciderCA != "" {
			pem, err := os.ReadFile(o.deciderCA)
			if err != nil {
				return nil, err
			}
			tc.RootCAs = x509.NewCertPool()
			if !tc.RootCAs.AppendCertsFromPEM(pem) {
				return nil, fmt.Errorf("%s: no certificates", o.deciderCA)
			}
		}
		if o.deciderCert != "" {
			cert, err := tls.LoadX509KeyPair(o.deciderCert, o.deciderKey)
			if err != nil {
				return nil, err
			}
			tc.Certificates = []tls.Certificate{cert}
		}
		creds = credentials.NewTLS(tc)
	}
	const maxMessage = 256 << 20
	return grpc.NewClient(o.deciderAddr,
		grpc.WithTransportCredentials(creds),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(maxMessage), grpc.MaxCallSendMsgSize(maxMessage)),
		// With a dns:/// target naming a headless Service, spread calls
		// over every replica rather than pinning them to the first.
		grpc.WithDefaultServiceConfig(`{"loadBalancingConfig":[{"round_robin":{}}]}`),
		// A connection to a replica that stopped answering (a dead node,
		// a half-open TCP connection) is dropped after deciderKeepalive
		// plus its timeout, not after TCP gives up minutes later.
		grpc.WithKeepaliveParams(keepalive.ClientParameters{Time: deciderKeepalive, Timeout: deciderKeepaliveTimeout}),
	)
}

// The keepalive pings on the decider connection, sent only while calls are
// in flight (servers refuse idle pings more often than every 5 minutes).
const (
	deciderKeepalive        = 20 * time.Second
	deciderKeepaliveTimeout = 5 * time.Second
)

func run(ctx context.Context, o *options) error {
	logger := klog.FromContext(ctx)
	cfg, err := kubeConfig(o)
	if err != nil {
		return fmt.Errorf("kubernetes client configuration: %w", err)
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	conn, err := dialDecider(o)
	if err != nil {
		return fmt.Errorf("job-decider client: %w", err)
	}
	defer conn.Close()

	reg, metrics, queueMetrics := controller.NewRegistry()
	// Before the controller makes its queues: the provider applies to queues made after it.
	workqueue.SetProvider(queueMetrics)

	// Events, informers and the controller outlive the signal: they stop in
	// order once the workers have drained.
	broadcaster := record.NewBroadcaster(record.WithContext(context.WithoutCancel(ctx)))
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: kube.CoreV1().Events("")})
	defer broadcaster.Shutdown()
	recorder := broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "job-decider-shim"})

	factory := informers.NewSharedInformerFactoryWithOptions(kube, 0, informers.WithNamespace(o.namespace))
	ccfg := controller.Config{
		ControllerName:      o.controllerName,
		Workers:             o.workers,
		PodEventBatchPeriod: o.podBatch,
		DecideTimeout:       o.decideTimeout,
		RetryBaseDelay:      o.retryBase,
		RetryMaxDelay:       o.retryMax,
		ShutdownGrace:       o.shutdownGrace,
		Namespace:           o.namespace,
		FreshnessTimeout:    o.freshTimeout,
	}
	if o.leaderElect {
		// A standby's caches may lag the previous leader's last writes:
		// on winning, wait until they have caught up (controller/barrier.go).
		if ccfg.Metadata, err = metadata.NewForConfig(cfg); err != nil {
			return err
		}
	}
	if p := o.exitBetweenSteps; p > 0 {
		ccfg.BeforeStep = func(key string) {
			if rand.Float64() < p {
				klog.InfoS("Testing: exiting between steps of a plan", "job", key)
				klog.Flush()
				os.Exit(3)
			}
		}
	}
	if o.shards > 1 {
		return runSharded(ctx, o, cfg, kube, ccfg, jobdeciderv1.NewJobDeciderClient(conn), recorder, reg, metrics)
	}
	ctrl, err := controller.New(ccfg, kube, factory, jobdeciderv1.NewJobDeciderClient(conn), recorder, metrics)
	if err != nil {
		return err
	}
	var nodeFactory informers.SharedInformerFactory
	if o.nodeHealth {
		nodeFactory = controller.NewNodeFactory(kube)
		if err := ctrl.WatchNodes(nodeFactory); err != nil {
			return err
		}
	}

	var leading atomic.Bool
	var watchdog *leaderelection.HealthzAdaptor
	if o.leaderElect {
		watchdog = leaderelection.NewLeaderHealthzAdaptor(o.renewDeadline / 2)
	}
	stopHTTP, err := serveHTTP(logger, o.httpAddr, reg, func() error {
		if o.leaderElect && !leading.Load() {
			return nil // a standby is ready: it is waiting, as it should
		}
		if !ctrl.Synced() {
			return errors.New("caches not synced")
		}
		return nil
	}, func(r *http.Request) error {
		if watchdog != nil {
			return watchdog.Check(r)
		}
		return nil
	})
	if err != nil {
		return err
	}
	defer stopHTTP()

	informerCtx, stopInformers := context.WithCancel(context.WithoutCancel(ctx))
	factory.Start(informerCtx.Done())
	if nodeFactory != nil {
		nodeFactory.Start(informerCtx.Done())
	}
	defer func() {
		stopInformers()
		factory.Shutdown()
		if nodeFactory != nil {
			nodeFactory.Shutdown()
		}
	}()

	// The controller gets its own context so that, on shutdown, it drains
	// before the Lease is released: a successor never overlaps with it.
	runCtx, stopRun := context.WithCancel(context.WithoutCancel(ctx))
	defer stopRun()
	runDone := make(chan error, 1)
	runController := func() { runDone <- ctrl.Run(runCtx) }

	if !o.leaderElect {
		go runController()
		return waitShutdown(ctx, stopRun, runDone, o.shutdownGrace)
	}

	// The Lease gets a client of its own: its own rate limiter, so that a
	// backlog of pod writes never delays a renewal past the deadline, and a
	// request timeout of half the deadline, so that one hung request cannot
	// cost the Lease (as kube-controller-manager builds its lock).
	lock, err := resourcelock.NewFromKubeconfig(resourcelock.LeasesResourceLock, o.leNamespace, o.leName,
		resourcelock.ResourceLockConfig{Identity: o.leIdentity, EventRecorder: recorder}, cfg, o.renewDeadline)
	if err != nil {
		return fmt.Errorf("leader election client: %w", err)
	}
	leCtx, stopLE := context.WithCancel(context.WithoutCancel(ctx))
	defer stopLE()
	var shuttingDown atomic.Bool
	elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:            lock,
		LeaseDuration:   o.leaseDuration,
		RenewDeadline:   o.renewDeadline,
		RetryPeriod:     o.retryPeriod,
		ReleaseOnCancel: true,
		Name:            o.leName,
		WatchDog:        watchdog,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(lctx context.Context) {
				logger.Info("Became the leader", "identity", o.leIdentity)
				// A sharded layout's replicas may still hold shards (a move
				// between layouts): act once they are gone.
				if err := shardlease.WaitForOtherLayouts(lctx, kube.CoordinationV1().Leases(o.leNamespace), o.leName, 1, o.leIdentity, o.retryPeriod, func(held string) {
					logger.Info("Waiting: a sharded replica still holds a Lease", "lease", held)
				}); err != nil {
					return
				}
				leading.Store(true)
				runController()
			},
			OnStoppedLeading: func() {
				if shuttingDown.Load() {
					return
				}
				// Another replica may already be acting: stop at once.
				logger.Error(nil, "Lost the leader Lease; exiting")
				klog.FlushAndExit(klog.ExitFlushTimeout, 1)
			},
		},
	})
	if err != nil {
		return err
	}
	leDone := make(chan struct{})
	go func() {
		elector.Run(leCtx)
		close(leDone)
	}()

	<-ctx.Done()
	shuttingDown.Store(true)
	var runErr error
	if leading.Load() {
		runErr = waitShutdown(ctx, stopRun, runDone, o.shutdownGrace)
	}
	stopLE()
	<-leDone
	return runErr
}

// waitShutdown waits for ctx, then stops the controller and waits for it to drain.
func waitShutdown(ctx context.Context, stopRun func(), runDone <-chan error, grace time.Duration) error {
	select {
	case err := <-runDone:
		return err
	case <-ctx.Done():
	}
	stopRun()
	// The controller cancels its syncs at grace; a little more lets it
	// return on its own.
	select {
	case err := <-runDone:
		return err
	case <-time.After(grace + 5*time.Second):
		return fmt.Errorf("syncs still running %s after shutdown began", grace)
	}
}

// serveHTTP serves /metrics, /healthz and /readyz on addr until the
// returned stop is called (which gives requests in flight 5 s).
func serveHTTP(logger klog.Logger, addr string, reg *prometheus.Registry, ready func() error, healthy func(*http.Request) error) (stop func(), _ error) {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	check := func(f func(*http.Request) error) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			if err := f(r); err != nil {
				http.Error(w, err.Error(), http.StatusServiceUnavailable)
				return
			}
			_, _ = w.Write([]byte("ok"))
		}
	}
	mux.Handle("/healthz", check(healthy))
	mux.Handle("/readyz", check(func(*http.Request) error { return ready() }))
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(l) }()
	logger.Info("Serving metrics and health", "addr", l.Addr().String())
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	}, nil
}
