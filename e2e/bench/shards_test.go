package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"job-decider.dev/e2e/cluster"
	"job-decider.dev/e2e/harness"
)

// The namespaces are drawn from the seed (the same names every time, each
// once), every Job lands in one of them, and the shard workload's Jobs fall
// evenly enough over 2 and 3 shards for the per-shard figures to mean
// something. A workload without namespaces keeps its one namespace and its
// fingerprint (saved runs stay reusable).
func TestNamespacesAreSeededAndSpreadOverTheShards(t *testing.T) {
	w, err := LoadWorkload("workloads/w5-namespaces.yaml")
	if err != nil {
		t.Fatal(err)
	}
	a, b := w.namespaceNames(), w.namespaceNames()
	if len(a) != w.Namespaces || strings.Join(a, ",") != strings.Join(b, ",") {
		t.Fatalf("namespaces %v then %v; want the same %d twice", a, b, w.Namespaces)
	}
	names := map[string]bool{}
	for _, n := range a {
		names[n] = true
	}
	if len(names) != len(a) {
		t.Fatalf("a namespace twice: %v", a)
	}
	specs := w.plan()
	for _, n := range []int{2, 3} {
		jobs := make([]int, n)
		for _, s := range specs {
			if !names[s.ns] {
				t.Fatalf("Job %s in namespace %q, not one of the workload's", s.name, s.ns)
			}
			jobs[harness.ShardOf(s.ns, n)]++
		}
		for i, j := range jobs {
			// Even would be 1/n of the Jobs; at most a third less.
			if j*n*3 < len(specs)*2 {
				t.Errorf("%d shards: shard %d has %d of %d Jobs (%v)", n, i, j, len(specs), jobs)
			}
		}
	}

	w1, err := LoadWorkload("workloads/w1.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range w1.plan() {
		if s.ns != namespace {
			t.Fatalf("W1's Job %s in %q, want %q", s.name, s.ns, namespace)
		}
	}
	data, err := json.Marshal(w1)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), "namespaces") {
		t.Errorf("W1's fingerprint input names namespaces: %s", data)
	}
}

// harness.ShardOf cuts the 64-bit FNV-1a hash of the namespace into equal ranges:
// shard i holds [i·2^64/n, (i+1)·2^64/n), as KEP-5866's shardRange does.
func TestShardOfCutsTheHashIntoEqualRanges(t *testing.T) {
	two64 := new(big.Int).Lsh(big.NewInt(1), 64)
	for i := range 200 {
		ns := fmt.Sprintf("ns-%d", i)
		h := fnv.New64a()
		h.Write([]byte(ns))
		sum := new(big.Int).SetUint64(h.Sum64())
		for _, n := range []int{1, 2, 3, 7} {
			got := harness.ShardOf(ns, n)
			lo := new(big.Int).Div(new(big.Int).Mul(big.NewInt(int64(got)), two64), big.NewInt(int64(n)))
			hi := new(big.Int).Div(new(big.Int).Mul(big.NewInt(int64(got+1)), two64), big.NewInt(int64(n)))
			if got < 0 || got >= n || sum.Cmp(lo) < 0 || sum.Cmp(hi) >= 0 {
				t.Fatalf("ShardOf(%q, %d) = %d: hash %x not in [%x, %x)", ns, n, got, sum, lo, hi)
			}
		}
	}
	if shardLease(0, 1) != "job-decider-shim" || shardLease(2, 3) != "job-decider-shim-shard-2" {
		t.Errorf("Lease names %q, %q", shardLease(0, 1), shardLease(2, 3))
	}
}

func TestBadShardFlagsExit2(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-shards", "1,0"}, "flag -shards"},
		{[]string{"-shards", "two"}, "flag -shards"},
		{[]string{"-shards", "1,2", "-shard-failover", "1"}, "flag -shard-failover"},
	} {
		var out, errOut bytes.Buffer
		if code := run(append(c.args, "-workloads", "workloads/w5-namespaces.yaml"), &out, &errOut); code != 2 {
			t.Errorf("%v: exit %d, want 2 (stderr %q)", c.args, code, errOut.String())
		}
		if !strings.Contains(errOut.String(), c.want) {
			t.Errorf("%v: stderr %q does not name %s", c.args, errOut.String(), c.want)
		}
	}
}

// savedShardRun is a finished run as the shard benchmark saves it: wall
// seconds, Jobs per shard, and the pods each Job's schedule planned, all seen.
func savedShardRun(w *Workload, tag string, shards int, wall float64, end map[string]jobEnd) *Result {
	lim := limitSets["equal"]
	r := &Result{Workload: w.Name, Controller: tag, Limits: lim, Jobs: len(end), PodsCreated: 4 * len(end),
		Wall: time.Duration(wall * float64(time.Second)), End: end, WorkloadSum: w.sum(), Commit: "abc1234", Started: time.Now(),
		Requests: map[string]int{"create pods": 4 * len(end), "update jobs/status": 3 * len(end)},
		Profile:  map[string]float64{"kube-apiserver": wall / 2, "etcd": wall / 10},
		Fault:    &faultResult{Scenario: tag, ExactJobs: len(end), PodsSeen: 4 * len(end), PodsPlanned: 4 * len(end)},
	}
	if shards == 0 {
		r.Profile["kube-controller-manager"] = 3
		return r
	}
	r.Profile["service"] = 0.5
	r.Shard = &shardResult{Shards: shards, DecideCalls: 1000, SelectorMode: "server"}
	for i := range shards {
		r.Profile[identity(i)] = 2
		r.Shard.Namespaces = append(r.Shard.Namespaces, 1)
		r.Shard.Jobs = append(r.Shard.Jobs, len(end)/shards)
		r.Shard.Pods = append(r.Shard.Pods, 4*len(end)/shards)
		r.Shard.ReplicaSyncs = append(r.Shard.ReplicaSyncs, 10)
	}
	return r
}

// The shard report is built from saved runs without a cluster: capacity
// against one shard and against kube-controller-manager, the service's CPU
// per call and the replicas it implies, the failover's figures; and the
// benchmark fails on a duplicate pod or an end state unlike upstream's.
func TestShardReportFromSavedRuns(t *testing.T) {
	dir := t.TempDir()
	w, err := LoadWorkload("workloads/w5-namespaces.yaml")
	if err != nil {
		t.Fatal(err)
	}
	w = w.smaller(6, 4)
	w.Name += "-6x4"
	end := map[string]jobEnd{}
	for i := range 6 {
		end[fmt.Sprintf("w5-%05d", i)] = jobEnd{Succeeded: 4, Conditions: "Complete=True/CompletionsReached"}
	}
	save := func(r *Result) {
		t.Helper()
		if err := saveRun(dir, w, r); err != nil {
			t.Fatal(err)
		}
	}
	save(savedShardRun(w, "kcm", 0, 12, end))
	save(savedShardRun(w, "shim-1shards", 1, 12, end))
	save(savedShardRun(w, "shim-2shards", 2, 6, end))
	save(savedShardRun(w, "shim-3shards", 3, 4.8, end))
	fo := savedShardRun(w, "shim-2shards-failover", 2, 30, end)
	fo.Shard.Failover = &failoverResult{Shard: 1, Victim: "shim-1", KilledAfter: 20 * time.Second, JobsLeft: 3, NewHolder: "shim-0",
		LeaseTaken: 16 * time.Second, FirstPod: 17 * time.Second, FirstWrite: 16500 * time.Millisecond}
	save(fo)

	args := []string{"-shards", "1,2,3", "-shard-failover", "2", "-shrink", "6x4", "-limits", "equal", "-workloads", "workloads/w5-namespaces.yaml",
		"-results", dir, "-resume", "-out", filepath.Join(dir, "shards")}
	var out, errOut bytes.Buffer
	if code := run(args, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	if n := strings.Count(errOut.String(), "reusing the run saved"); n != 5 {
		t.Errorf("reused %d runs, want 5: %s", n, errOut.String())
	}
	for _, want := range []string{
		// 6 Jobs in 4.8 s: 1.25 Jobs/s, 2.5× one shard's 12 s and kcm's.
		"| shim, 3 shards | 6 | 24 | 4.8 | 1.25 | 5.0 | 2.50× | 2.50× | shim-0 2.0, shim-1 2.0, shim-2 2.0 | 0.5 |",
		// 0.5 CPU s over 1000 calls in 4.8 s.
		"| shim, 3 shards | 1000 | 208.3 | 166.7 | 0.5 | 0.500 | 0.104 | 1 |",
		"| 2 | shim-1 (shard 1) | 3 | shim-0 | 16.0 | 17.0 | 16.5 | ✓ | 0 | 0 | 6/6 | equal (6 Jobs) | 30.0 |",
		"shard ranges applied: server",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}
	if data, err := os.ReadFile(filepath.Join(dir, "shards.md")); err != nil || string(data) != out.String() {
		t.Errorf("shards.md is not the printed report (%v)", err)
	}
	// Notes below the marker survive a rewrite.
	notes := shardNotesMarker + "\n## Notes\n\nkept\n"
	if err := os.WriteFile(filepath.Join(dir, "shards.md"), []byte("old table\n\n"+notes), 0o644); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	errOut.Reset()
	if code := run(args, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	if data, err := os.ReadFile(filepath.Join(dir, "shards.md")); err != nil || string(data) != out.String()+"\n"+notes {
		t.Errorf("the rewritten report lost its notes or kept the old table:\n%s", data)
	}

	// A duplicate pod or an end state unlike upstream's fails the run.
	bad := savedShardRun(w, "shim-2shards", 2, 6, map[string]jobEnd{})
	for k, v := range end {
		bad.End[k] = v
	}
	bad.End["w5-00000"] = jobEnd{Succeeded: 3, Failed: 1, Conditions: "Complete=True/CompletionsReached"}
	bad.Jobs = len(bad.End)
	bad.Fault.Duplicates = 1
	save(bad)
	out.Reset()
	errOut.Reset()
	if code := run(args, &out, &errOut); code != 1 {
		t.Fatalf("exit %d with a duplicate and a differing Job, want 1", code)
	}
	for _, want := range []string{"shim-2shards: lost, duplicated or left something", "shim-2shards: end states differ", "w5-00000"} {
		if !strings.Contains(errOut.String(), want) {
			t.Errorf("log lacks %q: %s", want, errOut.String())
		}
	}
}

// The shard benchmark end to end at a size that takes seconds: W5 shrunk to
// 8 Jobs of 2 pods, the shim at 2 shards (two processes) on an API server
// with ShardedListAndWatch; every Job's end state is its schedule's, no pod
// twice, and the API server served the ranges. kube-controller-manager runs
// beside it, and the end states are compared, only when one is built.
// KWOK is built only by the benchmark's make targets, so the smoke runs
// where one is at hand: TEST_ASSET_KWOK, or BENCH_SMOKE=1 to build it.
func TestShardSmokeTwoShardsEndAsScheduled(t *testing.T) {
	if os.Getenv("TEST_ASSET_KWOK") == "" && os.Getenv("BENCH_SMOKE") != "1" {
		t.Skip("no KWOK: set TEST_ASSET_KWOK, or BENCH_SMOKE=1 to build it")
	}
	if _, err := harness.DeciderBinary(); err != nil {
		t.Skip(err)
	}
	ctls := "shim"
	if _, ok := cluster.FindControllerManager(); ok {
		ctls = "kcm,shim"
	}
	var out, errOut bytes.Buffer
	code := run([]string{"-shards", "2", "-controllers", ctls, "-shrink", "8x2", "-limits", "equal", "-workloads", "workloads/w5-namespaces.yaml"}, &out, &errOut)
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, errOut.String())
	}
	for _, want := range []string{"| shim, 2 shards | 8 | ", "| 8/8 |", "shard ranges applied: server"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}
	t.Logf("controllers %s:\n%s", ctls, out.String())
}
