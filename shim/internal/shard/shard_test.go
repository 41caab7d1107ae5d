package shard

import (
	"fmt"
	"math/rand/v2"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// The boundaries are KEP-5866's own examples (ListOptions.shardSelector's doc).
func TestRangesAreTheKEPsSplits(t *testing.T) {
	for _, tc := range []struct {
		count int
		want  []string
	}{
		{1, []string{"0x0000000000000000", "0x10000000000000000"}},
		{2, []string{"0x0000000000000000", "0x8000000000000000", "0x10000000000000000"}},
		{4, []string{"0x0000000000000000", "0x4000000000000000", "0x8000000000000000", "0xc000000000000000", "0x10000000000000000"}},
		{3, []string{"0x0000000000000000", "0x5555555555555555", "0xaaaaaaaaaaaaaaaa", "0x10000000000000000"}},
	} {
		ranges, err := Ranges(tc.count)
		if err != nil {
			t.Fatal(err)
		}
		for i, r := range ranges {
			if r.Start != tc.want[i] || r.End != tc.want[i+1] || r.Index != i || r.Count != tc.count {
				t.Errorf("Ranges(%d)[%d] = %+v, want [%s, %s)", tc.count, i, r, tc.want[i], tc.want[i+1])
			}
		}
	}
	if _, err := Ranges(0); err == nil {
		t.Error("Ranges(0) gave no error")
	}
}

func TestTheSelectorIsTheKEPsWireForm(t *testing.T) {
	ranges, _ := Ranges(2)
	want := "shardRange(object.metadata.namespace, '0x8000000000000000', '0x10000000000000000')"
	if got := ranges[1].String(); got != want {
		t.Errorf("selector %q, want %q", got, want)
	}
	whole, _ := Ranges(1)
	if got := whole[0].String(); got != "" {
		t.Errorf("one shard sends selector %q, want none", got)
	}
}

// Every namespace is on exactly one shard, the one apimachinery's own
// selector (what the API server applies) matches. The names are random:
// FNV-1a's high bits spread names that differ only in trailing digits
// (team-1, team-2, …) unevenly, which docs/operations.md tells operators.
func TestEveryNamespaceIsOnExactlyOneShard(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for count := 1; count <= 7; count++ {
		ranges, _ := Ranges(count)
		seen := make([]int, count)
		for n := range 2000 {
			ns := fmt.Sprintf("team-%d-%08x", n, rng.Uint32())
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "p"}}
			on := -1
			for _, r := range ranges {
				matches, err := r.Selector().Matches(pod)
				if err != nil {
					t.Fatal(err)
				}
				if matches != r.HasNamespace(ns) {
					t.Fatalf("%d shards: %s: HasNamespace %v, apimachinery's selector %v", count, ns, r.HasNamespace(ns), matches)
				}
				if matches {
					if on >= 0 {
						t.Fatalf("%d shards: %s on shards %d and %d", count, ns, on, r.Index)
					}
					on = r.Index
				}
			}
			if on < 0 {
				t.Fatalf("%d shards: %s on no shard", count, ns)
			}
			if Of(ns, count) != on {
				t.Fatalf("Of(%s, %d) = %d, selector says %d", ns, count, Of(ns, count), on)
			}
			seen[on]++
		}
		for i, n := range seen {
			// Equal ranges of a good hash: each near 2000/count.
			if want := 2000 / count; n < want/2 {
				t.Errorf("%d shards: shard %d holds %d of 2000 namespaces", count, i, n)
			}
		}
	}
}

func TestClientSideFilteringKeepsTheRange(t *testing.T) {
	ranges, _ := Ranges(2)
	r := ranges[0]
	var mine, theirs string
	for n := 0; mine == "" || theirs == ""; n++ {
		ns := fmt.Sprintf("ns-%d", n)
		if r.HasNamespace(ns) {
			mine = ns
		} else {
			theirs = ns
		}
	}
	list := &corev1.PodList{Items: []corev1.Pod{
		{ObjectMeta: metav1.ObjectMeta{Namespace: theirs, Name: "a"}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: mine, Name: "b"}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: theirs, Name: "c"}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: mine, Name: "d"}},
	}}
	if err := KeepList(list, r.HasNamespace); err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 2 || list.Items[0].Name != "b" || list.Items[1].Name != "d" {
		t.Errorf("kept %v, want b and d", list.Items)
	}
	for _, tc := range []struct {
		e    watch.Event
		keep bool
	}{
		{watch.Event{Type: watch.Added, Object: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: mine}}}, true},
		{watch.Event{Type: watch.Deleted, Object: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: theirs}}}, false},
		{watch.Event{Type: watch.Bookmark, Object: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "9"}}}, true},
		{watch.Event{Type: watch.Error, Object: &metav1.Status{}}, true},
	} {
		if got := KeepEvent(tc.e, r.HasNamespace); got != tc.keep {
			t.Errorf("%s event in %q: kept %v, want %v", tc.e.Type, tc.e.Object.(interface{ GetNamespace() string }).GetNamespace(), got, tc.keep)
		}
	}
}
