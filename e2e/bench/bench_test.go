package main

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

func TestBadWorkloadNamesTheFieldAndExits2(t *testing.T) {
	for file, want := range map[string]string{
		"testdata/unknown-field.yaml": `unknown field "parallelizm"`,
		"testdata/too-many-pods.yaml": `"jobs" × "completions"`,
	} {
		var out, errOut bytes.Buffer
		code := run([]string{"-workloads", file}, &out, &errOut)
		if code != 2 {
			t.Errorf("%s: exit %d, want 2 (stderr %q)", file, code, errOut.String())
		}
		if !strings.Contains(errOut.String(), want) {
			t.Errorf("%s: stderr %q does not name %s", file, errOut.String(), want)
		}
	}
}

func TestCheckedInWorkloadsLoad(t *testing.T) {
	for _, f := range []string{"w1", "w2", "w3", "w4", "w5-namespaces"} {
		if _, err := LoadWorkload("workloads/" + f + ".yaml"); err != nil {
			t.Error(err)
		}
	}
}

// The failing attempts are a function of the seed alone, and about the
// configured share of attempts fail.
func TestPlanIsSeededAndFailsAboutTheRate(t *testing.T) {
	w, err := LoadWorkload("workloads/w2.yaml")
	if err != nil {
		t.Fatal(err)
	}
	a, b := w.plan(), w.plan()
	fails, attempts := 0, 0
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("Job %d planned twice differently: %+v vs %+v", i, a[i], b[i])
		}
		fails += strings.Count(a[i].failing, "=")
		attempts += a[i].attempts
	}
	rate := float64(fails) / float64(attempts)
	if rate < 0.04 || rate > 0.06 {
		t.Errorf("%d of %d attempts fail (%.3f), want about %.2f", fails, attempts, rate, w.FailureRate)
	}
	// An attempt key names index, failure count and ignored count.
	if !strings.HasPrefix(a[0].failing, ",") || !strings.HasSuffix(a[0].failing, ",") {
		t.Errorf("fail list %q is not comma-delimited", a[0].failing)
	}
}

func TestHistogramQuantile(t *testing.T) {
	text := `# HELP x
x_bucket{a="1",le="0.1"} 10
x_bucket{a="1",le="0.2"} 20
x_bucket{a="1",le="+Inf"} 20
x_bucket{a="2",le="0.1"} 0
x_bucket{a="2",le="0.2"} 20
x_bucket{a="2",le="+Inf"} 20
`
	h, err := parseHistogram(text, "x")
	if err != nil {
		t.Fatal(err)
	}
	if h.count() != 40 {
		t.Fatalf("count %v, want 40", h.count())
	}
	// 10 of 40 at ≤0.1: the median (rank 20) is 1/3 into (0.1, 0.2].
	if got := h.quantile(0.5); math.Abs(got-(0.1+0.1/3)) > 1e-9 {
		t.Errorf("p50 %v", got)
	}
	if _, err := parseHistogram(text, "y"); err == nil {
		t.Error("a missing metric is no error")
	}
}

func TestIndexListWritesTheStatusFormat(t *testing.T) {
	for _, c := range []struct {
		in   []int
		want string
	}{
		{nil, ""},
		{[]int{3}, "3"},
		{[]int{0, 1}, "0,1"},
		{[]int{0, 1, 2, 5, 7, 8, 9, 10}, "0-2,5,7-10"},
	} {
		if got := indexList(c.in); got != c.want {
			t.Errorf("indexList(%v) = %q, want %q", c.in, got, c.want)
		}
	}
}

// The end state the fault run expects follows from the schedule: every
// index either completes or fails, and every failing attempt not ignored
// is counted.
func TestPlanExpectationsFollowTheSchedule(t *testing.T) {
	w, err := LoadWorkload("workloads/w2.yaml")
	if err != nil {
		t.Fatal(err)
	}
	failedJobs := 0
	for _, s := range w.plan() {
		codes := strings.Split(strings.Trim(s.failing, ","), ",")
		counted := 0
		for _, c := range codes {
			if c != "" && !strings.HasSuffix(c, "=137") {
				counted++
			}
		}
		if int(s.want.failed) != counted {
			t.Fatalf("%s: want.failed %d, the schedule counts %d (%s)", s.name, s.want.failed, counted, s.failing)
		}
		nFailed := 0
		if s.want.failedIdx != "" {
			nFailed = len(strings.Split(s.want.failedIdx, ","))
		}
		if s.want.failedJob != (s.want.failedIdx != "") || (nFailed == 0 && int(s.want.succeeded) != w.Completions) {
			t.Fatalf("%s: inconsistent expectation %+v", s.name, s.want)
		}
		if s.want.failedJob {
			failedJobs++
		}
	}
	if failedJobs == 0 {
		t.Error("no W2 Job is expected to fail: the schedule exercises no failed index")
	}
}

// The fault run's check finds a lost count, a wrong terminal condition and
// a second pod for one attempt, and passes an exact Job.
func TestFaultCheckFindsLostCountsAndDuplicates(t *testing.T) {
	w := &Workload{Name: "W", Indexed: true, Completions: 2}
	specs := []jobSpec{
		{name: "ok", attempts: 2, want: expectation{succeeded: 2, completedIdx: "0,1"}},
		{name: "lost", attempts: 3, want: expectation{succeeded: 1, failed: 2, completedIdx: "0", failedIdx: "1", failedJob: true}},
	}
	end := map[string]jobEnd{
		"ok":   {Succeeded: 2, Conditions: "Complete=True/CompletionsReached,SuccessCriteriaMet=True/CompletionsReached", CompletedIndexes: "0,1"},
		"lost": {Succeeded: 1, Failed: 1, Conditions: "Complete=True/CompletionsReached", CompletedIndexes: "0", FailedIndexes: "1"},
	}
	pods := &podTracker{
		attempts: map[string]map[types.UID]bool{"ok/0//": {"a": true, "b": true}, "ok/1//": {"c": true}},
		perJob:   map[string]map[types.UID]bool{"ok": {"a": true, "b": true, "c": true}},
	}
	f := &faultResult{}
	f.check(w, specs, end, pods)
	if f.ExactJobs != 1 || f.LostCounts != 1 || len(f.Mismatches) != 1 || !strings.HasPrefix(f.Mismatches[0], "lost:") {
		t.Errorf("exact %d, lost %d, mismatches %q; want 1, 1, one for Job lost", f.ExactJobs, f.LostCounts, f.Mismatches)
	}
	if f.Duplicates != 1 || f.PodsSeen != 3 {
		t.Errorf("duplicates %d, pods seen %d; want 1 and 3", f.Duplicates, f.PodsSeen)
	}
	r := &Result{Jobs: 2, Fault: f}
	if faultsLoseNothing(r) {
		t.Error("a run with a lost count and a duplicate lost nothing")
	}
}

func TestBadFaultFlagsExit2(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-faults", "-fault-scenarios", "kcm,shim-service-paused"}, `unknown scenario "shim-service-paused"`},
		{[]string{"-faults", "-shrink", "50by20"}, `flag -shrink`},
		{[]string{"-faults", "-fault-write-rate", "1.5"}, `flag -fault-write-rate`},
	} {
		var out, errOut bytes.Buffer
		if code := run(append(c.args, "-workloads", "workloads/w2.yaml"), &out, &errOut); code != 2 {
			t.Errorf("%v: exit %d, want 2 (stderr %q)", c.args, code, errOut.String())
		}
		if !strings.Contains(errOut.String(), c.want) {
			t.Errorf("%v: stderr %q does not say %s", c.args, errOut.String(), c.want)
		}
	}
}

// A full run spans sittings: runs saved with -results are reused by -resume
// (same workload and limits only), and the report is built from them without
// starting a cluster.
func TestResumeBuildsTheReportFromSavedRuns(t *testing.T) {
	dir := t.TempDir()
	w, err := LoadWorkload("workloads/w1.yaml")
	if err != nil {
		t.Fatal(err)
	}
	w = w.smaller(20, 10)
	w.Name += "-smoke"
	lim := limitSets["equal"]
	end := map[string]jobEnd{"job-0": {Succeeded: 1, Conditions: "Complete"}}
	for _, ctl := range []string{"kcm", "shim"} {
		r := &Result{Workload: w.Name, Controller: ctl, Limits: lim, Jobs: 1, PodsCreated: 1, Wall: 10 * time.Second,
			Requests: map[string]int{"create pods": 1, "update jobs/status": 2}, CPU: 1, End: end, WorkloadSum: w.sum(),
			Profile: map[string]float64{"kube-apiserver": 4, "etcd": 1}, Commit: "abc1234", Started: time.Now()}
		if err := saveRun(dir, w, r); err != nil {
			t.Fatal(err)
		}
	}
	var out, errOut bytes.Buffer
	code := run([]string{"-smoke", "-limits", "equal", "-workloads", "workloads/w1.yaml", "-results", dir, "-resume", "-out", filepath.Join(dir, "report")}, &out, &errOut)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	if n := strings.Count(errOut.String(), "reusing the run saved"); n != 2 {
		t.Errorf("reused %d runs, want 2: %s", n, errOut.String())
	}
	for _, want := range []string{"equal (1 Jobs)", "Where the time went", "waiting (no process above 0.40 cores; most: kube-apiserver)", "commit abc1234"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "report.svg")); err != nil {
		t.Error(err)
	}

	// A run saved for another workload (here: other limits) is not reused.
	if r, err := loadRun(dir, w, "kcm", limitSets["raised"]); err != nil || r != nil {
		t.Errorf("loadRun for other limits = %v, %v; want nothing", r, err)
	}
	w.Seed++
	if r, err := loadRun(dir, w, "kcm", lim); err != nil || r != nil {
		t.Errorf("loadRun for a changed workload = %v, %v; want nothing", r, err)
	}
}

func TestResumeWithoutResultsExits2(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run([]string{"-resume"}, &out, &errOut); code != 2 || !strings.Contains(errOut.String(), "-resume") {
		t.Errorf("exit %d, stderr %q; want 2 naming -resume", code, errOut.String())
	}
}

func TestBottleneckFollowsTheStatedRule(t *testing.T) {
	lim := Limits{Name: "equal", QPS: 50, Burst: 100, Workers: 5}
	for _, tc := range []struct {
		requests int
		profile  map[string]float64
		want     string
	}{
		{requests: 450, profile: map[string]float64{"etcd": 1}, want: "client rate limit (45 of 50 requests/s)"},
		{requests: 100, profile: map[string]float64{"kube-apiserver": 12, "etcd": 6}, want: "the machine's CPU (1.80 of 2 cores; most: kube-apiserver, 1.20)"},
		{requests: 100, profile: map[string]float64{"kube-apiserver": 3, "service": 1}, want: "waiting (no process above 0.30 cores; most: kube-apiserver)"},
	} {
		r := &Result{Limits: lim, Wall: 10 * time.Second, Requests: map[string]int{"create pods": tc.requests}, Profile: tc.profile}
		if got := bottleneck(r, 2); got != tc.want {
			t.Errorf("bottleneck(%d requests, %v) = %q, want %q", tc.requests, tc.profile, got, tc.want)
		}
	}
}

// The audit log's response codes tell conflicts and throttles apart from
// requests that did their work.
func TestCountRequestsSplitsRefusedByCode(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.log")
	log := `{"stage":"ResponseComplete","verb":"update","userAgent":"job-decider-shim/v0","objectRef":{"resource":"jobs","subresource":"status"},"responseStatus":{"code":200}}
{"stage":"ResponseComplete","verb":"update","userAgent":"job-decider-shim/v0","objectRef":{"resource":"jobs","subresource":"status"},"responseStatus":{"code":409}}
{"stage":"RequestReceived","verb":"update","userAgent":"job-decider-shim/v0","objectRef":{"resource":"jobs","subresource":"status"}}
{"stage":"ResponseComplete","verb":"create","userAgent":"kube-controller-manager/v1.37.2","objectRef":{"resource":"pods"},"responseStatus":{"code":201}}
`
	if err := os.WriteFile(path, []byte(log), 0o644); err != nil {
		t.Fatal(err)
	}
	all, refused, err := countRequests(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := all["shim"]["update jobs/status"]; got != 2 {
		t.Errorf("shim status updates = %d, want 2", got)
	}
	if got := refused["shim"]; len(got) != 1 || got["update jobs/status 409"] != 1 {
		t.Errorf("shim refused = %v, want one 409", got)
	}
	if got := refused["kcm"]; len(got) != 0 {
		t.Errorf("kcm refused = %v, want none", got)
	}
}
