package controller

import (
	"runtime"
	"runtime/debug"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"google.golang.org/grpc/status"
	"k8s.io/client-go/util/workqueue"
)

// The shim's metric names all start with this: the project's prefix
// (job_decider_, the server's) and the component, so one selector finds both.
const metricPrefix = "job_decider_shim_"

// Version and Revision name the build in job_decider_shim_build_info. A
// release sets them with -ldflags "-X job-decider.dev/shim/internal/controller.Version=…";
// left empty, they come from the module and VCS stamps Go records, else "unknown".
var (
	Version  string
	Revision string
)

// Metrics are the shim's Prometheus metrics.
type Metrics struct {
	syncs        *prometheus.CounterVec
	syncDuration prometheus.Histogram
	applyErrors  *prometheus.CounterVec
	plansRefused *prometheus.CounterVec
	decide       *prometheus.HistogramVec
	// freshnessWait is the freshness barrier's wait on becoming leader.
	freshnessWait *prometheus.HistogramVec
	// Shards: how many are configured, which this replica holds, the Jobs
	// of ours in each held shard's cache, and the syncs done per shard.
	shards     prometheus.Gauge
	shardOwned *prometheus.GaugeVec
	shardJobs  *prometheus.GaugeVec
	shardSyncs *prometheus.CounterVec
}

// NewMetrics creates the metrics and registers them with reg (when not nil).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		syncs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: metricPrefix + "syncs_total",
			Help: "Job syncs, by result (success, error, gone, skipped, invalid_key, cache_behind).",
		}, []string{"result"}),
		syncDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    metricPrefix + "sync_duration_seconds",
			Help:    "Duration of one Job sync: snapshot, decision and applying the plan.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 16),
		}),
		applyErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: metricPrefix + "apply_errors_total",
			Help: "Plan actions that failed to apply, by action.",
		}, []string{"action"}),
		plansRefused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: metricPrefix + "plans_refused_total",
			Help: "Plans refused whole before their first write, by reason (unknown_action: a kind from a newer decider; invalid_action: one this shim cannot apply).",
		}, []string{"reason"}),
		decide: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    metricPrefix + "decide_duration_seconds",
			Help:    "Latency of DecideJob calls, by gRPC status code.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
		}, []string{"code"}),
		freshnessWait: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    metricPrefix + "leader_cache_wait_seconds",
			Help:    "Wait, on becoming leader, until the caches caught up with a consistent list of the API server, by result (caught_up, timeout, stopped).",
			Buckets: prometheus.ExponentialBuckets(0.01, 2, 14),
		}, []string{"result"}),
		shards: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: metricPrefix + "shards",
			Help: "Shards the namespaces are cut into (--shards); 1 when the shim is not sharded.",
		}),
		shardOwned: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: metricPrefix + "shard_owned",
			Help: "1 while this replica holds the shard's Lease and acts on it, else 0.",
		}, []string{"shard"}),
		shardJobs: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: metricPrefix + "shard_jobs",
			Help: "Jobs managed by this shim in a held shard's cache.",
		}, []string{"shard"}),
		shardSyncs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: metricPrefix + "shard_syncs_total",
			Help: "Job syncs done for a shard by this replica.",
		}, []string{"shard"}),
	}
	m.shards.Set(1)
	if reg != nil {
		reg.MustRegister(m.syncs, m.syncDuration, m.applyErrors, m.plansRefused, m.decide, m.freshnessWait,
			m.shards, m.shardOwned, m.shardJobs, m.shardSyncs)
	}
	return m
}

// NewRegistry is the registry the shim serves on /metrics: its own metrics,
// build_info, the work queues' (through the provider returned, which
// workqueue.SetProvider or a queue's config takes), and client_golang's Go
// runtime and process collectors.
func NewRegistry() (*prometheus.Registry, *Metrics, workqueue.MetricsProvider) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	version, revision := buildStamp()
	info := prometheus.NewGauge(prometheus.GaugeOpts{
		Name:        metricPrefix + "build_info",
		Help:        "1, labelled with the version, VCS revision and Go version of the build.",
		ConstLabels: prometheus.Labels{"version": version, "revision": revision, "goversion": runtime.Version()},
	})
	info.Set(1)
	reg.MustRegister(info)
	return reg, NewMetrics(reg), newQueueMetrics(reg)
}

// buildStamp is the build's version and revision: those set at link time,
// else what Go stamped into the binary, else "unknown".
func buildStamp() (version, revision string) {
	version, revision = Version, Revision
	if bi, ok := debug.ReadBuildInfo(); ok {
		if version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && revision == "" {
				revision = s.Value
			}
		}
	}
	if version == "" {
		version = "unknown"
	}
	if revision == "" {
		revision = "unknown"
	}
	return version, revision
}

// queueMetrics gives client-go's work queues metrics under the shim's
// prefix, labelled by the queue's name (job, orphan_pod).
type queueMetrics struct {
	depth          *prometheus.GaugeVec
	adds           *prometheus.CounterVec
	latency        *prometheus.HistogramVec
	workDuration   *prometheus.HistogramVec
	unfinished     *prometheus.GaugeVec
	longestRunning *prometheus.GaugeVec
	retries        *prometheus.CounterVec
}

func newQueueMetrics(reg prometheus.Registerer) *queueMetrics {
	buckets := prometheus.ExponentialBuckets(0.001, 4, 10)
	q := &queueMetrics{
		depth: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: metricPrefix + "workqueue_depth",
			Help: "Keys waiting in the work queue, by queue.",
		}, []string{"name"}),
		adds: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: metricPrefix + "workqueue_adds_total",
			Help: "Keys added to the work queue, by queue.",
		}, []string{"name"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    metricPrefix + "workqueue_queue_duration_seconds",
			Help:    "Time a key waits in the work queue before a worker takes it, by queue.",
			Buckets: buckets,
		}, []string{"name"}),
		workDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    metricPrefix + "workqueue_work_duration_seconds",
			Help:    "Time a worker holds a key, by queue.",
			Buckets: buckets,
		}, []string{"name"}),
		unfinished: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: metricPrefix + "workqueue_unfinished_work_seconds",
			Help: "Seconds of work in progress not yet observed by work_duration, by queue.",
		}, []string{"name"}),
		longestRunning: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: metricPrefix + "workqueue_longest_running_processor_seconds",
			Help: "How long the longest-running worker has held its key, by queue.",
		}, []string{"name"}),
		retries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: metricPrefix + "workqueue_retries_total",
			Help: "Keys requeued with a rate-limited delay, by queue.",
		}, []string{"name"}),
	}
	reg.MustRegister(q.depth, q.adds, q.latency, q.workDuration, q.unfinished, q.longestRunning, q.retries)
	return q
}

func (q *queueMetrics) NewDepthMetric(name string) workqueue.GaugeMetric {
	return q.depth.WithLabelValues(name)
}

func (q *queueMetrics) NewAddsMetric(name string) workqueue.CounterMetric {
	return q.adds.WithLabelValues(name)
}

func (q *queueMetrics) NewLatencyMetric(name string) workqueue.HistogramMetric {
	return q.latency.WithLabelValues(name)
}

func (q *queueMetrics) NewWorkDurationMetric(name string) workqueue.HistogramMetric {
	return q.workDuration.WithLabelValues(name)
}

func (q *queueMetrics) NewUnfinishedWorkSecondsMetric(name string) workqueue.SettableGaugeMetric {
	return q.unfinished.WithLabelValues(name)
}

func (q *queueMetrics) NewLongestRunningProcessorSecondsMetric(name string) workqueue.SettableGaugeMetric {
	return q.longestRunning.WithLabelValues(name)
}

func (q *queueMetrics) NewRetriesMetric(name string) workqueue.CounterMetric {
	return q.retries.WithLabelValues(name)
}

func (m *Metrics) observeSync(result string, d time.Duration) {
	m.syncs.WithLabelValues(result).Inc()
	m.syncDuration.Observe(d.Seconds())
}

func (m *Metrics) shardSync(index int) {
	m.shardSyncs.WithLabelValues(strconv.Itoa(index)).Inc()
}

// SetShards exports the configured shard count, each shard unowned.
func (m *Metrics) SetShards(count int) {
	m.shards.Set(float64(count))
	if count <= 1 {
		return
	}
	for i := range count {
		m.shardOwned.WithLabelValues(strconv.Itoa(i)).Set(0)
		m.shardSyncs.WithLabelValues(strconv.Itoa(i))
	}
}

// SetShardOwned says whether this replica holds and acts on shard index.
func (m *Metrics) SetShardOwned(index int, owned bool) {
	v := 0.0
	if owned {
		v = 1
	}
	m.shardOwned.WithLabelValues(strconv.Itoa(index)).Set(v)
	if !owned {
		m.shardJobs.DeleteLabelValues(strconv.Itoa(index))
	}
}

// SetShardJobs records the Jobs of ours in a held shard's cache.
func (m *Metrics) SetShardJobs(index, jobs int) {
	m.shardJobs.WithLabelValues(strconv.Itoa(index)).Set(float64(jobs))
}

func (m *Metrics) applyError(action string) {
	m.applyErrors.WithLabelValues(action).Inc()
}

func (m *Metrics) planRefused(reason string) {
	m.plansRefused.WithLabelValues(reason).Inc()
}

func (m *Metrics) observeDecide(err error, d time.Duration) {
	m.decide.WithLabelValues(status.Code(err).String()).Observe(d.Seconds())
}
