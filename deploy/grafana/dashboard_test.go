// Package grafana checks the job-decider dashboard: its JSON has the shape
// Grafana loads, every panel query parses as PromQL, and every metric and
// label a query reads is one the server or the shim serves (the lists
// metrics-server.txt and metrics-shim.txt, which the server's and the shim's
// own tests check against what they serve).
package grafana

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
)

type target struct {
	Expr         string `json:"expr"`
	RefID        string `json:"refId"`
	LegendFormat string `json:"legendFormat"`
}

type panel struct {
	ID          int             `json:"id"`
	Type        string          `json:"type"`
	Title       string          `json:"title"`
	Description string          `json:"description"`
	Datasource  *datasourceRef  `json:"datasource"`
	GridPos     *gridPos        `json:"gridPos"`
	Targets     []target        `json:"targets"`
	Panels      json.RawMessage `json:"panels"`
}

type datasourceRef struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

type gridPos struct {
	H, W, X, Y *int
}

type variable struct {
	Name       string          `json:"name"`
	Type       string          `json:"type"`
	Query      json.RawMessage `json:"query"`
	Definition string          `json:"definition"`
	AllValue   string          `json:"allValue"`
}

type dashboard struct {
	Title         string  `json:"title"`
	UID           string  `json:"uid"`
	SchemaVersion int     `json:"schemaVersion"`
	Panels        []panel `json:"panels"`
	Templating    struct {
		List []variable `json:"list"`
	} `json:"templating"`
}

// family is a listed metric family and its labels.
type family map[string]bool

// Labels every series has from the scrape or the histogram, never listed.
var scrapeLabels = map[string]bool{"le": true, "quantile": true, "namespace": true, "pod": true, "container": true, "job": true, "instance": true, "service": true, "endpoint": true}

func loadLists(t *testing.T) map[string]family {
	t.Helper()
	out := map[string]family{}
	for _, path := range []string{"metrics-server.txt", "metrics-shim.txt"} {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			fields := strings.Fields(sc.Text())
			if len(fields) == 0 || strings.HasPrefix(fields[0], "#") {
				continue
			}
			labels := family{}
			for _, l := range fields[1:] {
				labels[l] = true
			}
			out[fields[0]] = labels
		}
		f.Close()
		if err := sc.Err(); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

func loadDashboard(t *testing.T) dashboard {
	t.Helper()
	raw, err := os.ReadFile("job-decider.json")
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	var d dashboard
	if err := dec.Decode(&d); err != nil {
		t.Fatalf("job-decider.json: %v", err)
	}
	return d
}

// The values Grafana puts in place of its variables before a query runs.
var grafanaVariables = strings.NewReplacer(
	"$__rate_interval", "5m",
	"$__interval", "1m",
	"$__range", "1h",
	"$namespace", ".*",
)

// resolve finds the listed family of a selector's name: itself, or a
// histogram's or summary's _bucket, _sum or _count series.
func resolve(name string, lists map[string]family) (string, bool) {
	if _, ok := lists[name]; ok {
		return name, true
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if base, ok := strings.CutSuffix(name, suffix); ok {
			if _, ok := lists[base]; ok {
				return base, true
			}
		}
	}
	return "", false
}

// checkExpr parses expr and checks its metric names, matcher labels and
// grouping labels against the lists; it returns the families read.
func checkExpr(expr string, lists map[string]family) ([]string, error) {
	p := parser.NewParser(parser.Options{})
	ast, err := p.ParseExpr(grafanaVariables.Replace(expr))
	if err != nil {
		return nil, fmt.Errorf("does not parse: %w", err)
	}
	var read []string
	var problems []string
	// Labels each subtree's selectors have, for checking `by (...)`.
	labelsUnder := func(n parser.Node) family {
		all := family{}
		parser.Inspect(n, func(n parser.Node, _ []parser.Node) error {
			if vs, ok := n.(*parser.VectorSelector); ok {
				if fam, ok := resolve(vs.Name, lists); ok {
					for l := range lists[fam] {
						all[l] = true
					}
				}
			}
			return nil
		})
		return all
	}
	parser.Inspect(ast, func(n parser.Node, _ []parser.Node) error {
		switch n := n.(type) {
		case *parser.VectorSelector:
			fam, ok := resolve(n.Name, lists)
			if !ok {
				problems = append(problems, fmt.Sprintf("metric %q is served by neither the server nor the shim", n.Name))
				return nil
			}
			read = append(read, fam)
			for _, m := range n.LabelMatchers {
				if m.Name == labels.MetricName || scrapeLabels[m.Name] {
					continue
				}
				if !lists[fam][m.Name] {
					problems = append(problems, fmt.Sprintf("%s has no label %q", fam, m.Name))
				}
			}
		case *parser.AggregateExpr:
			have := labelsUnder(n.Expr)
			for _, l := range n.Grouping {
				if !scrapeLabels[l] && !have[l] {
					problems = append(problems, fmt.Sprintf("grouping by %q, which no metric under it has", l))
				}
			}
		case *parser.BinaryExpr:
			// on (...) matches series by labels both sides must have.
			if vm := n.VectorMatching; vm != nil && vm.On {
				for _, side := range []parser.Node{n.LHS, n.RHS} {
					have := labelsUnder(side)
					for _, l := range vm.MatchingLabels {
						if !scrapeLabels[l] && !have[l] {
							problems = append(problems, fmt.Sprintf("matching on %q, which a side (%s) lacks", l, side))
						}
					}
				}
			}
		}
		return nil
	})
	if len(problems) > 0 {
		return read, fmt.Errorf("%s", strings.Join(problems, "; "))
	}
	return read, nil
}

func TestDashboardLoadsWithGrafanasShape(t *testing.T) {
	d := loadDashboard(t)
	if d.Title == "" || d.UID == "" || len(d.UID) > 40 {
		t.Errorf("title %q and uid %q: both needed, uid at most 40 characters", d.Title, d.UID)
	}
	if d.SchemaVersion < 30 {
		t.Errorf("schemaVersion %d: a current Grafana's dashboards are 30 or later", d.SchemaVersion)
	}
	vars := map[string]variable{}
	for _, v := range d.Templating.List {
		vars[v.Name] = v
	}
	if vars["datasource"].Type != "datasource" {
		t.Errorf("no datasource variable: %+v", d.Templating.List)
	}
	ids := map[int]bool{}
	refs := map[string]bool{}
	if len(d.Panels) == 0 {
		t.Fatal("no panels")
	}
	for _, p := range d.Panels {
		name := fmt.Sprintf("panel %d %q", p.ID, p.Title)
		if p.ID <= 0 || ids[p.ID] {
			t.Errorf("%s: ids must be positive and unique", name)
		}
		ids[p.ID] = true
		if p.Title == "" {
			t.Errorf("%s: no title", name)
		}
		g := p.GridPos
		if g == nil || g.H == nil || g.W == nil || g.X == nil || g.Y == nil {
			t.Errorf("%s: gridPos needs h, w, x and y", name)
			continue
		}
		if *g.W < 1 || *g.X < 0 || *g.X+*g.W > 24 || *g.H < 1 {
			t.Errorf("%s: gridPos %d,%d %dx%d outside Grafana's 24 columns", name, *g.X, *g.Y, *g.W, *g.H)
		}
		switch p.Type {
		case "row":
			continue
		case "timeseries", "table", "stat", "gauge", "bargauge":
		default:
			t.Errorf("%s: panel type %q is not one this dashboard uses", name, p.Type)
		}
		if p.Datasource == nil || p.Datasource.Type != "prometheus" || p.Datasource.UID != "${datasource}" {
			t.Errorf("%s: datasource must be the prometheus ${datasource} variable, got %+v", name, p.Datasource)
		}
		if p.Description == "" {
			t.Errorf("%s: no description", name)
		}
		if len(p.Targets) == 0 {
			t.Errorf("%s: no queries", name)
		}
		for k := range refs {
			delete(refs, k)
		}
		for _, tg := range p.Targets {
			if tg.RefID == "" || refs[tg.RefID] {
				t.Errorf("%s: refIds must be set and unique in a panel", name)
			}
			refs[tg.RefID] = true
			if strings.TrimSpace(tg.Expr) == "" {
				t.Errorf("%s: empty query", name)
			}
		}
	}
}

func TestEveryQueryParsesAndReadsServedMetrics(t *testing.T) {
	d := loadDashboard(t)
	lists := loadLists(t)
	read := map[string]bool{}
	for _, p := range d.Panels {
		for _, tg := range p.Targets {
			fams, err := checkExpr(tg.Expr, lists)
			if err != nil {
				t.Errorf("panel %q query %s: %v\n%s", p.Title, tg.RefID, err, tg.Expr)
			}
			for _, f := range fams {
				read[f] = true
			}
		}
	}
	// Variables' label_values(metric, label) read served metrics and labels too.
	labelValues := regexp.MustCompile(`^label_values\(\s*([a-zA-Z_:][a-zA-Z0-9_:]*)\s*,\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\)$`)
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		m := labelValues.FindStringSubmatch(v.Definition)
		if m == nil {
			t.Errorf("variable %s: %q is not label_values(metric, label)", v.Name, v.Definition)
			continue
		}
		if _, ok := lists[m[1]]; !ok {
			t.Errorf("variable %s reads %s, which is not served", v.Name, m[1])
		}
		if !scrapeLabels[m[2]] && !lists[m[1]][m[2]] {
			t.Errorf("variable %s reads label %s, which %s lacks", v.Name, m[2], m[1])
		}
		if v.AllValue != ".*" {
			t.Errorf("variable %s: All must match series without the label too (allValue \".*\")", v.Name)
		}
	}
	// The panels the issue asks for are there.
	for _, want := range []string{
		"grpc_server_handled_total",             // decisions per second by result, shed calls
		"job_decider_decision_duration_seconds", // latency by pods per request
		"job_decider_shim_workqueue_depth",      // shim queue depth
		"job_decider_shim_syncs_total",          // shim sync results
		"job_decider_shim_shard_owned",          // shards owned (sharded shim)
		"job_decider_shim_shard_jobs",           // Jobs per shard
		"job_decider_shim_shard_syncs_total",    // syncs per shard
	} {
		if !read[want] {
			t.Errorf("no panel reads %s", want)
		}
	}
	var names []string
	for n := range read {
		names = append(names, n)
	}
	sort.Strings(names)
	t.Logf("the dashboard reads %d families: %s", len(names), strings.Join(names, ", "))
}

// The checks themselves can fail: an unknown metric, an unknown label, a
// grouping label the metric lacks and PromQL that does not parse are refused.
func TestQueryChecksRefuseWhatIsNotServed(t *testing.T) {
	lists := loadLists(t)
	for _, bad := range []string{
		`rate(jobdecider_grpc_requests_total[5m])`,
		`sum by (grpc_code) (rate(grpc_server_handled_total{grpc_status="OK"}[5m]))`,
		`sum by (pod_count) (rate(job_decider_decision_duration_seconds_count[5m]))`,
		`sum(rate(grpc_server_handled_total[5m])`,
		`job_decider_shim_workqueue_depth{queue="job"}`,
	} {
		if _, err := checkExpr(bad, lists); err == nil {
			t.Errorf("accepted %s", bad)
		}
	}
	good := `histogram_quantile(0.99, sum by (le, pods) (rate(job_decider_decision_duration_seconds_bucket{namespace=~"$namespace"}[$__rate_interval])))`
	if _, err := checkExpr(good, lists); err != nil {
		t.Errorf("refused %s: %v", good, err)
	}
}
