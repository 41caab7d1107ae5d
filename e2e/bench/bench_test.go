package main

import (
	"bytes"
	"math"
	"strings"
	"testing"
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
	for _, f := range []string{"w1", "w2", "w3", "w4"} {
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
