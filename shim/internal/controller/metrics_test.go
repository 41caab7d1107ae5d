package controller

import (
	"bufio"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"k8s.io/client-go/util/workqueue"
)

// listedShimFamilies reads deploy/grafana/metrics-shim.txt, the list the
// dashboard's test checks panel queries against: each family and its labels.
func listedShimFamilies(t *testing.T) map[string][]string {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "..", "..", "deploy", "grafana", "metrics-shim.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	names := map[string][]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) > 0 && !strings.HasPrefix(fields[0], "#") {
			labels := fields[1:]
			sort.Strings(labels)
			names[fields[0]] = labels
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return names
}

func gathered(t *testing.T, gather func() ([]*dto.MetricFamily, error)) map[string]*dto.MetricFamily {
	t.Helper()
	fams, err := gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*dto.MetricFamily{}
	for _, f := range fams {
		out[f.GetName()] = f
	}
	return out
}

// value is the sample of family name whose labels include want.
func value(fams map[string]*dto.MetricFamily, name string, want map[string]string) (float64, bool) {
	f := fams[name]
	if f == nil {
		return 0, false
	}
next:
	for _, m := range f.GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		for k, v := range want {
			if labels[k] != v {
				continue next
			}
		}
		switch {
		case m.Gauge != nil:
			return m.GetGauge().GetValue(), true
		case m.Counter != nil:
			return m.GetCounter().GetValue(), true
		case m.Histogram != nil:
			return float64(m.GetHistogram().GetSampleCount()), true
		}
	}
	return 0, false
}

// The registry the shim serves holds exactly the listed job_decider_shim_*
// families, the listed Go and process ones, build_info, and queue and sync
// series that move.
func TestShimRegistryServesTheListedFamiliesAndTheyMove(t *testing.T) {
	reg, m, provider := NewRegistry()
	q := workqueue.NewTypedRateLimitingQueueWithConfig(
		workqueue.DefaultTypedControllerRateLimiter[string](),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: "job", MetricsProvider: provider})
	defer q.ShutDown()
	q.Add("ns/a")
	q.Add("ns/b")
	q.Add("ns/c")
	key, _ := q.Get()
	q.Done(key)
	q.AddRateLimited("ns/d")
	m.observeSync("success", 3*time.Millisecond)
	m.observeSync("error", time.Millisecond)
	m.observeDecide(nil, time.Millisecond)
	m.observeDecide(status.Error(codes.ResourceExhausted, "shed"), time.Millisecond)
	m.applyError("createPods")
	m.planRefused("unknown_action")
	m.freshnessWait.WithLabelValues(freshCaughtUp).Observe(0.2)
	m.SetShards(3)
	m.SetShardOwned(1, true)
	m.SetShardJobs(1, 7)
	m.shardSync(1)

	fams := gathered(t, reg.Gather)
	listed := listedShimFamilies(t)
	var missing, unlisted []string
	for name := range listed {
		if _, ok := fams[name]; !ok {
			missing = append(missing, name)
		}
	}
	for name, fam := range fams {
		labels, ok := listed[name]
		if strings.HasPrefix(name, "job_decider_") && !ok {
			unlisted = append(unlisted, name)
		}
		if ok && strings.HasPrefix(name, metricPrefix) {
			var served []string
			for _, l := range fam.GetMetric()[0].GetLabel() {
				served = append(served, l.GetName())
			}
			sort.Strings(served)
			if strings.Join(served, ",") != strings.Join(labels, ",") {
				t.Errorf("%s: labels %v served, %v listed", name, served, labels)
			}
		}
		if strings.HasPrefix(name, "job_decider_") && !strings.HasPrefix(name, metricPrefix) {
			t.Errorf("%s: the shim's names start with %s", name, metricPrefix)
		}
	}
	sort.Strings(missing)
	sort.Strings(unlisted)
	if len(missing) > 0 || len(unlisted) > 0 {
		t.Errorf("listed but not served: %v; served but not listed: %v", missing, unlisted)
	}

	for _, c := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"job_decider_shim_workqueue_depth", map[string]string{"name": "job"}, 2},
		{"job_decider_shim_workqueue_adds_total", map[string]string{"name": "job"}, 3},
		{"job_decider_shim_workqueue_retries_total", map[string]string{"name": "job"}, 1},
		{"job_decider_shim_workqueue_work_duration_seconds", map[string]string{"name": "job"}, 1},
		{"job_decider_shim_syncs_total", map[string]string{"result": "success"}, 1},
		{"job_decider_shim_syncs_total", map[string]string{"result": "error"}, 1},
		{"job_decider_shim_sync_duration_seconds", nil, 2},
		{"job_decider_shim_decide_duration_seconds", map[string]string{"code": "ResourceExhausted"}, 1},
		{"job_decider_shim_apply_errors_total", map[string]string{"action": "createPods"}, 1},
		{"job_decider_shim_plans_refused_total", map[string]string{"reason": "unknown_action"}, 1},
		{"job_decider_shim_leader_cache_wait_seconds", map[string]string{"result": "caught_up"}, 1},
		{"job_decider_shim_build_info", map[string]string{"goversion": runtime.Version()}, 1},
	} {
		got, ok := value(fams, c.name, c.labels)
		if !ok || got != c.want {
			t.Errorf("%s%v = %v (found %v), want %v", c.name, c.labels, got, ok, c.want)
		}
	}
	for _, l := range fams["job_decider_shim_build_info"].GetMetric()[0].GetLabel() {
		if l.GetValue() == "" {
			t.Errorf("build_info label %s is empty", l.GetName())
		}
	}
}

func TestBuildStampPrefersLinkTimeValues(t *testing.T) {
	Version, Revision = "v1.2.3", "abc123"
	defer func() { Version, Revision = "", "" }()
	if v, r := buildStamp(); v != "v1.2.3" || r != "abc123" {
		t.Fatalf("buildStamp() = %q, %q", v, r)
	}
	Version, Revision = "", ""
	if v, r := buildStamp(); v == "" || r == "" {
		t.Fatalf("empty stamp: %q, %q", v, r)
	}
}
