package grafana

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/promql/promqltest"
	"github.com/prometheus/prometheus/rules"
)

// Series of healthy installs, one sample a minute for 40 minutes, in
// promqltest's load notation: a service-layout decider (10.0.0.1) and shim
// (10.0.0.2, --shards=1) in namespace jd; a sharded shim in namespace js,
// three replicas (s-0, s-1, s-2) each holding the shard of its ordinal
// (shardedHealthy); and, to show the rules select only job-decider's,
// another gRPC service shedding half its calls and another process using
// 2 GB.
var healthy = merge(map[string]string{
	`up{job="job-decider-metrics", endpoint="metrics", namespace="jd", pod="d", instance="10.0.0.1:9090"}`:                                                 "1x40",
	`up{job="job-decider-shim-metrics", endpoint="shim-metrics", namespace="jd", pod="s", instance="10.0.0.2:8080"}`:                                       "1x40",
	`job_decider_build_info{job="job-decider-metrics", namespace="jd", instance="10.0.0.1:9090", version="v0.1.0", revision="r", rustc="1"}`:               "1x40",
	`job_decider_shim_build_info{job="job-decider-shim-metrics", namespace="jd", instance="10.0.0.2:8080", version="v0.1.0", revision="r", goversion="1"}`: "1x40",
	`grpc_server_handled_total{grpc_service="jobdecider.v1.JobDecider", grpc_method="DecideJob", grpc_type="unary", grpc_code="OK", namespace="jd"}`:       "0+100x40",
	// 1% shed: under the 5% threshold.
	`grpc_server_handled_total{grpc_service="jobdecider.v1.JobDecider", grpc_method="DecideJob", grpc_type="unary", grpc_code="RESOURCE_EXHAUSTED", namespace="jd"}`: "0+1x40",
	`grpc_server_handled_total{grpc_service="other.v1.Other", grpc_method="Call", grpc_type="unary", grpc_code="UNAVAILABLE", namespace="other"}`:                    "0+100x40",
	`grpc_server_handled_total{grpc_service="other.v1.Other", grpc_method="Call", grpc_type="unary", grpc_code="INTERNAL", namespace="other"}`:                       "0+100x40",
	// Small calls under 10 ms, 100,000-pod calls under 500 ms: each under its range's threshold.
	`job_decider_decision_duration_seconds_bucket{pods="11-100", le="0.01", namespace="jd"}`:                  "0+100x40",
	`job_decider_decision_duration_seconds_bucket{pods="11-100", le="0.25", namespace="jd"}`:                  "0+100x40",
	`job_decider_decision_duration_seconds_bucket{pods="11-100", le="0.5", namespace="jd"}`:                   "0+100x40",
	`job_decider_decision_duration_seconds_bucket{pods="11-100", le="+Inf", namespace="jd"}`:                  "0+100x40",
	`job_decider_decision_duration_seconds_bucket{pods="10001-100000", le="0.25", namespace="jd"}`:            "0+0x40",
	`job_decider_decision_duration_seconds_bucket{pods="10001-100000", le="0.5", namespace="jd"}`:             "0+10x40",
	`job_decider_decision_duration_seconds_bucket{pods="10001-100000", le="+Inf", namespace="jd"}`:            "0+10x40",
	`process_resident_memory_bytes{job="job-decider-metrics", namespace="jd", instance="10.0.0.1:9090"}`:      "300000000x40",
	`process_resident_memory_bytes{job="job-decider-shim-metrics", namespace="jd", instance="10.0.0.2:8080"}`: "100000000x40",
	`process_resident_memory_bytes{job="other", namespace="other", instance="10.0.0.9:9100"}`:                 "2000000000x40",
	`job_decider_shim_workqueue_depth{name="job", namespace="jd", instance="10.0.0.2:8080"}`:                  "3x40",
	`job_decider_shim_syncs_total{result="success", namespace="jd"}`:                                          "0+50x40",
	`job_decider_shim_syncs_total{result="error", namespace="jd"}`:                                            "0+1x40",
	`job_decider_shim_apply_errors_total{action="createPod", namespace="jd"}`:                                 "0+0x40",
	// One shard, as every shim without --shards reports.
	`job_decider_shim_shards{job="job-decider-shim-metrics", namespace="jd", instance="10.0.0.2:8080"}`: "1x40",
}, shardedHealthy())

// shardedHealthy is the sharded shim of namespace js: every replica reports
// --shards=3 and whether it holds each shard; replica i holds shard i.
func shardedHealthy() map[string]string {
	out := map[string]string{}
	for r := 0; r < 3; r++ {
		out[shimSeries("job_decider_shim_build_info", r, `version="v0.1.0", revision="r", goversion="1"`)] = "1x40"
		out[shimSeries("job_decider_shim_shards", r, "")] = "3x40"
		for s := 0; s < 3; s++ {
			v := "0x40"
			if s == r {
				v = "1x40"
			}
			out[owned(r, s)] = v
		}
	}
	out[shimSeries("job_decider_shim_workqueue_depth", 0, `name="job-shard-0"`)] = "2x40"
	return out
}

// shimSeries is a series of replica r of the sharded shim in js, with extra
// labels.
func shimSeries(metric string, r int, extra string) string {
	l := fmt.Sprintf(`job="job-decider-shim-metrics", namespace="js", pod="s-%d", instance="10.0.1.%d:8080"`, r, r)
	if extra != "" {
		l += ", " + extra
	}
	return metric + "{" + l + "}"
}

// owned is replica r's job_decider_shim_shard_owned series for shard s.
func owned(r, s int) string {
	return shimSeries("job_decider_shim_shard_owned", r, fmt.Sprintf(`shard="%d"`, s))
}

// merge is the union of series maps, later ones winning.
func merge(ms ...map[string]string) map[string]string {
	out := map[string]string{}
	for _, m := range ms {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}

// noShimScraped drops every shim's build_info.
func noShimScraped() map[string]string {
	out := map[string]string{
		`job_decider_shim_build_info{job="job-decider-shim-metrics", namespace="jd", instance="10.0.0.2:8080", version="v0.1.0", revision="r", goversion="1"}`: "",
	}
	for r := 0; r < 3; r++ {
		out[shimSeries("job_decider_shim_build_info", r, `version="v0.1.0", revision="r", goversion="1"`)] = ""
	}
	return out
}

// noShardHeld: every replica of js reports holding no shard.
func noShardHeld() map[string]string {
	out := map[string]string{}
	for r := 0; r < 3; r++ {
		for s := 0; s < 3; s++ {
			out[owned(r, s)] = "0x40"
		}
	}
	return out
}

// replicaGone drops every series of replica r of js (its target gone).
func replicaGone(r int) map[string]string {
	out := map[string]string{}
	for k := range shardedHealthy() {
		if strings.Contains(k, fmt.Sprintf(`pod="s-%d"`, r)) {
			out[k] = ""
		}
	}
	return out
}

// Changes to the healthy series that fire nothing: what a sharded shim
// does as it should.
var quiet = []struct {
	name   string
	change map[string]string
}{
	{"replica 2 gone, replica 0 holds its shard", merge(replicaGone(2), map[string]string{owned(0, 2): "1x40"})},
	// At the end of the 40 minutes, where firing looks: unowned at minutes
	// 39 and 40, a minute, as a Lease takeover seen through scrapes is.
	{"a takeover under way: shard 2 unowned for a minute", map[string]string{owned(2, 2): "1x38 0x2"}},
	{"shard 1 held by two replicas for a minute", map[string]string{owned(0, 1): "0x38 1x2"}},
}

// Each symptom: series changed from the healthy ones ("" drops a series), and
// the one alert that must fire, alone, after 40 minutes.
var symptoms = []struct {
	name, alert string
	change      map[string]string
}{
	{"decider target down", "JobDeciderDown", map[string]string{
		`up{job="job-decider-metrics", endpoint="metrics", namespace="jd", pod="d", instance="10.0.0.1:9090"}`: "0x40",
	}},
	{"sidecar decider target down", "JobDeciderDown", map[string]string{
		`up{job="job-decider-shim-metrics", endpoint="decider-metrics", namespace="jd", pod="s", instance="10.0.0.2:9090"}`: "0x40",
	}},
	{"no decider scraped", "JobDeciderAbsent", map[string]string{
		`job_decider_build_info{job="job-decider-metrics", namespace="jd", instance="10.0.0.1:9090", version="v0.1.0", revision="r", rustc="1"}`: "",
	}},
	{"9% of calls shed", "JobDeciderShedding", map[string]string{
		`grpc_server_handled_total{grpc_service="jobdecider.v1.JobDecider", grpc_method="DecideJob", grpc_type="unary", grpc_code="RESOURCE_EXHAUSTED", namespace="jd"}`: "0+10x40",
	}},
	{"internal errors", "JobDeciderServerFaults", map[string]string{
		`grpc_server_handled_total{grpc_service="jobdecider.v1.JobDecider", grpc_method="DecideJob", grpc_type="unary", grpc_code="INTERNAL", namespace="jd"}`: "0+1x40",
	}},
	{"small calls take 250-500 ms", "JobDeciderDecisionLatencyHigh", map[string]string{
		`job_decider_decision_duration_seconds_bucket{pods="11-100", le="0.01", namespace="jd"}`: "0+0x40",
		`job_decider_decision_duration_seconds_bucket{pods="11-100", le="0.25", namespace="jd"}`: "0+0x40",
	}},
	{"calls over 100,000 pods take 5-10 s", "JobDeciderDecisionLatencyHigh", map[string]string{
		`job_decider_decision_duration_seconds_bucket{pods="100001+", le="5", namespace="jd"}`:    "0+0x40",
		`job_decider_decision_duration_seconds_bucket{pods="100001+", le="10", namespace="jd"}`:   "0+10x40",
		`job_decider_decision_duration_seconds_bucket{pods="100001+", le="+Inf", namespace="jd"}`: "0+10x40",
	}},
	{"decider at 1 GB", "JobDeciderMemoryNearLimit", map[string]string{
		`process_resident_memory_bytes{job="job-decider-metrics", namespace="jd", instance="10.0.0.1:9090"}`: "1000000000x40",
	}},
	{"shim target down", "JobDeciderShimDown", map[string]string{
		`up{job="job-decider-shim-metrics", endpoint="shim-metrics", namespace="jd", pod="s", instance="10.0.0.2:8080"}`: "0x40",
	}},
	{"500 Jobs queued", "JobDeciderShimBacklog", map[string]string{
		`job_decider_shim_workqueue_depth{name="job", namespace="jd", instance="10.0.0.2:8080"}`: "500x40",
	}},
	{"500 Jobs queued in shard 0", "JobDeciderShimBacklog", map[string]string{
		shimSeries("job_decider_shim_workqueue_depth", 0, `name="job-shard-0"`): "500x40",
	}},
	{"no shim scraped", "JobDeciderShimAbsent", noShimScraped()},
	{"shard 2 unowned since minute 30", "JobDeciderShimShardUnowned", map[string]string{
		owned(2, 2): "1x30 0x10",
	}},
	{"replica 2 gone, nobody takes its shard", "JobDeciderShimShardUnowned", replicaGone(2)},
	{"no replica holds a shard", "JobDeciderShimShardUnowned", noShardHeld()},
	{"28% of syncs fail", "JobDeciderShimSyncErrors", map[string]string{
		`job_decider_shim_syncs_total{result="error", namespace="jd"}`: "0+20x40",
	}},
	{"2 failed pod creates a minute", "JobDeciderShimApplyErrors", map[string]string{
		`job_decider_shim_apply_errors_total{action="createPod", namespace="jd"}`: "0+2x40",
	}},
}

// firing loads the series, evaluates every shipped alert once a minute for
// 40 minutes as Prometheus's rule manager does (for durations included) and
// returns the alerts firing at the end.
func firing(t *testing.T, groups *rulefmt.RuleGroups, series map[string]string) []string {
	t.Helper()
	var load strings.Builder
	load.WriteString("load 1m\n")
	for s, v := range series {
		if v != "" {
			fmt.Fprintf(&load, "  %s %s\n", s, v)
		}
	}
	st := promqltest.LoadedStorage(t, load.String())
	t.Cleanup(func() { st.Close() })
	query := rules.EngineQueryFunc(promqltest.NewTestEngine(t, false, 0, promqltest.DefaultMaxSamplesPerQuery), st)
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	p := parser.NewParser(parser.Options{})
	var out []string
	for _, g := range groups.Groups {
		for _, r := range g.Rules {
			expr, err := p.ParseExpr(r.Expr)
			if err != nil {
				t.Fatalf("%s: %v", r.Alert, err)
			}
			rule := rules.NewAlertingRule(r.Alert, expr, time.Duration(r.For), time.Duration(r.KeepFiringFor),
				labels.FromMap(r.Labels), labels.FromMap(r.Annotations), labels.EmptyLabels(), "", true, logger)
			for m := 0; m <= 40; m++ {
				if _, err := rule.Eval(context.Background(), 0, time.Unix(0, 0).Add(time.Duration(m)*time.Minute), query, nil, 0); err != nil {
					t.Fatalf("%s at minute %d: %v", r.Alert, m, err)
				}
			}
			for _, a := range rule.ActiveAlerts() {
				if a.State == rules.StateFiring {
					out = append(out, r.Alert)
					break
				}
			}
		}
	}
	sort.Strings(out)
	return out
}

// Every alert fires on the symptom it is for and on nothing else: none on a
// healthy install (nor on another gRPC service's errors or another process's
// memory), each alone on its symptom after its for duration.
func TestAlertsFireOnTheirSymptomsAlone(t *testing.T) {
	raw, err := os.ReadFile(rulePath)
	if err != nil {
		t.Fatal(err)
	}
	groups, errs := rulefmt.Parse(loadRuleGroups(t, raw), false, model.UTF8Validation, parser.NewParser(parser.Options{}), slog.New(slog.NewTextHandler(io.Discard, nil)))
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	if got := firing(t, groups, healthy); len(got) != 0 {
		t.Errorf("a healthy install fires %v", got)
	}
	for _, q := range quiet {
		t.Run(q.name, func(t *testing.T) {
			if got := firing(t, groups, merge(healthy, q.change)); len(got) != 0 {
				t.Errorf("fires %v", got)
			}
		})
	}
	covered := map[string]bool{}
	for _, s := range symptoms {
		t.Run(s.name, func(t *testing.T) {
			if got := firing(t, groups, merge(healthy, s.change)); len(got) != 1 || got[0] != s.alert {
				t.Errorf("firing %v, want [%s]", got, s.alert)
			}
		})
		covered[s.alert] = true
	}
	for _, g := range groups.Groups {
		for _, r := range g.Rules {
			if !covered[r.Alert] {
				t.Errorf("%s: no symptom here shows it firing", r.Alert)
			}
		}
	}
}
