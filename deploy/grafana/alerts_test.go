package grafana

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"
	"go.yaml.in/yaml/v3"
)

// The PrometheusRule every overlay ships; the Helm chart renders the same
// rules from it (e2e/deploycheck compares them).
const rulePath = "../components/monitoring/prometheusrule.yaml"

// Severities Alertmanager routes on in kube-prometheus's conventions.
var severities = map[string]bool{"critical": true, "warning": true, "info": true}

// Series Prometheus itself writes for every target, with only scrape labels.
var synthetic = map[string]family{"up": {}}

// loadRuleGroups reads a PrometheusRule object and returns its spec as the
// rule-file YAML Prometheus loads (the Operator writes spec.groups as one).
func loadRuleGroups(t *testing.T, raw []byte) []byte {
	t.Helper()
	var obj struct {
		APIVersion string    `yaml:"apiVersion"`
		Kind       string    `yaml:"kind"`
		Spec       yaml.Node `yaml:"spec"`
	}
	if err := yaml.Unmarshal(raw, &obj); err != nil {
		t.Fatalf("%s: %v", rulePath, err)
	}
	if obj.APIVersion != "monitoring.coreos.com/v1" || obj.Kind != "PrometheusRule" {
		t.Fatalf("%s: %s %s, want a monitoring.coreos.com/v1 PrometheusRule", rulePath, obj.APIVersion, obj.Kind)
	}
	spec, err := yaml.Marshal(&obj.Spec)
	if err != nil {
		t.Fatal(err)
	}
	return spec
}

// checkRules validates rule-file YAML the way Prometheus does when it loads
// it (rulefmt: unknown fields, PromQL, annotation templates), then holds
// every rule to ours: an alert, uniquely named, with a for duration, a
// severity, a summary, a description and a runbook_url into
// deploy/README.md, reading only metrics and labels that are served.
func checkRules(spec []byte, lists map[string]family) []error {
	p := parser.NewParser(parser.Options{})
	groups, errs := rulefmt.Parse(spec, false, model.UTF8Validation, p, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if len(errs) > 0 {
		return errs
	}
	known := map[string]family{}
	for k, v := range lists {
		known[k] = v
	}
	for k, v := range synthetic {
		known[k] = v
	}
	seen := map[string]bool{}
	n := 0
	for _, g := range groups.Groups {
		for _, r := range g.Rules {
			n++
			name := r.Alert
			if name == "" {
				errs = append(errs, fmt.Errorf("group %s: recording rule %q: only alerts here", g.Name, r.Record))
				continue
			}
			if seen[name] {
				errs = append(errs, fmt.Errorf("alert %s: the name is used twice", name))
			}
			seen[name] = true
			if r.For == 0 {
				errs = append(errs, fmt.Errorf("alert %s: no for duration (it would fire on one evaluation)", name))
			}
			if !severities[r.Labels["severity"]] {
				errs = append(errs, fmt.Errorf("alert %s: severity %q, want critical, warning or info", name, r.Labels["severity"]))
			}
			for _, a := range []string{"summary", "description", "runbook_url"} {
				if strings.TrimSpace(r.Annotations[a]) == "" {
					errs = append(errs, fmt.Errorf("alert %s: no %s annotation", name, a))
				}
			}
			if u := r.Annotations["runbook_url"]; u != "" && !strings.HasPrefix(u, "deploy/README.md#") {
				errs = append(errs, fmt.Errorf("alert %s: runbook_url %q does not point into deploy/README.md", name, u))
			}
			if _, err := checkExpr(r.Expr, known); err != nil {
				errs = append(errs, fmt.Errorf("alert %s: %w", name, err))
			}
		}
	}
	if n == 0 {
		errs = append(errs, fmt.Errorf("no rules"))
	}
	return errs
}

func TestAlertRulesParseAndReadServedMetrics(t *testing.T) {
	raw, err := os.ReadFile(rulePath)
	if err != nil {
		t.Fatal(err)
	}
	spec := loadRuleGroups(t, raw)
	for _, err := range checkRules(spec, loadLists(t)) {
		t.Error(err)
	}
	// The alerts the issue asks for, and each documented in deploy/README.md's
	// Alerts section, where runbook_url points.
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(readme), "\n## Alerts\n")
	if !ok {
		t.Fatal("deploy/README.md has no \"## Alerts\" section (runbook_url points there)")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	var groups struct {
		Groups []struct {
			Rules []struct {
				Alert string `yaml:"alert"`
				Expr  string `yaml:"expr"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	if err := yaml.Unmarshal(spec, &groups); err != nil {
		t.Fatal(err)
	}
	reads := map[string]bool{}
	for _, g := range groups.Groups {
		for _, r := range g.Rules {
			if !strings.Contains(section, "`"+r.Alert+"`") {
				t.Errorf("deploy/README.md's Alerts section does not name `%s`", r.Alert)
			}
			for _, m := range regexp.MustCompile(`[a-z_]+`).FindAllString(r.Expr, -1) {
				reads[m] = true
			}
		}
	}
	for _, want := range []string{
		"grpc_server_handled_total",                    // shedding, faults
		"job_decider_decision_duration_seconds_bucket", // latency by pods
		"up", "job_decider_build_info", // decider down
		"job_decider_shim_workqueue_depth",    // shim backlog
		"job_decider_shim_syncs_total",        // sync errors
		"job_decider_shim_apply_errors_total", // apply errors
		"process_resident_memory_bytes",       // memory
		"job_decider_shim_build_info",         // no shim
		"job_decider_shim_shards",             // an unowned shard
		"job_decider_shim_shard_owned",        // an unowned shard
	} {
		if !reads[want] {
			t.Errorf("no alert reads %s", want)
		}
	}
}

// The rule checks can fail: each change below, made to the shipped rules,
// is refused.
func TestAlertChecksRefuseBadRules(t *testing.T) {
	raw, err := os.ReadFile(rulePath)
	if err != nil {
		t.Fatal(err)
	}
	lists := loadLists(t)
	if errs := checkRules(loadRuleGroups(t, raw), lists); len(errs) > 0 {
		t.Fatalf("the shipped rules are refused: %v", errs)
	}
	for _, c := range []struct{ name, from, to string }{
		{"expression that does not parse", `absent(job_decider_build_info)`, `absent(job_decider_build_info`},
		{"metric nobody serves", `absent(job_decider_build_info)`, `absent(jobdecider_build_info)`},
		{"label the metric lacks", `job_decider_shim_workqueue_depth{name=~"job|job-shard-[0-9]+"}`, `job_decider_shim_workqueue_depth{queue=~"job|job-shard-[0-9]+"}`},
		{"grouping by a label the shard metric lacks", `max by (namespace, shard) (job_decider_shim_shard_owned)`, `max by (namespace, lease) (job_decider_shim_shard_owned)`},
		{"grouping by a label no metric has", `sum by (namespace, action)`, `sum by (namespace, verb)`},
		{"matching on a label a side lacks", `and on (job, instance)`, `and on (job, version)`},
		{"no severity", `severity: warning`, `priority: warning`},
		{"unknown severity", `severity: critical`, `severity: page`},
		{"no summary", `summary: No job-decider server is scraped.`, `title: No job-decider server is scraped.`},
		{"no for", `for: 10m`, `keep_firing_for: 10m`},
		{"duplicate name", `alert: JobDeciderShimDown`, `alert: JobDeciderDown`},
		{"template that does not parse", `{{ $labels.action }}`, `{{ $labels.action }`},
		{"unknown field", "          for: 10m\n", "          for: 10m\n          severity: warning\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if !bytes.Contains(raw, []byte(c.from)) {
				t.Fatalf("the rules no longer contain %q", c.from)
			}
			bad := bytes.Replace(raw, []byte(c.from), []byte(c.to), 1)
			errs := checkRules(loadRuleGroups(t, bad), lists)
			if len(errs) == 0 {
				t.Fatalf("accepted the rules with %q in place of %q", c.to, c.from)
			}
			t.Logf("refused: %v", errs[0])
		})
	}
}
