package controller

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc/status"
)

// Metrics are the shim's Prometheus metrics.
type Metrics struct {
	syncs        *prometheus.CounterVec
	syncDuration prometheus.Histogram
	applyErrors  *prometheus.CounterVec
	decide       *prometheus.HistogramVec
}

// NewMetrics creates the metrics and registers them with reg (when not nil).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		syncs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "job_decider_shim_syncs_total",
			Help: "Job syncs, by result (success, error, gone, skipped, invalid_key, cache_behind).",
		}, []string{"result"}),
		syncDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "job_decider_shim_sync_duration_seconds",
			Help:    "Duration of one Job sync: snapshot, decision and applying the plan.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 16),
		}),
		applyErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "job_decider_shim_apply_errors_total",
			Help: "Plan actions that failed to apply, by action.",
		}, []string{"action"}),
		decide: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "job_decider_shim_decide_duration_seconds",
			Help:    "Latency of DecideJob calls, by gRPC status code.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
		}, []string{"code"}),
	}
	if reg != nil {
		reg.MustRegister(m.syncs, m.syncDuration, m.applyErrors, m.decide)
	}
	return m
}

func (m *Metrics) observeSync(result string, d time.Duration) {
	m.syncs.WithLabelValues(result).Inc()
	m.syncDuration.Observe(d.Seconds())
}

func (m *Metrics) applyError(action string) {
	m.applyErrors.WithLabelValues(action).Inc()
}

func (m *Metrics) observeDecide(err error, d time.Duration) {
	m.decide.WithLabelValues(status.Code(err).String()).Observe(d.Seconds())
}
