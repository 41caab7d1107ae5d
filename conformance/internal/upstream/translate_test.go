package upstream

import (
	"testing"
)

func TestPairFinalizerPatches(t *testing.T) {
	// deleteJobPods runs patch-then-delete per pod in parallel goroutines;
	// a later finalizer removal of the same pod stays a removal.
	ops := []op{
		{kind: opRemoveFinalizer, pod: "a"},
		{kind: opRemoveFinalizer, pod: "b"},
		{kind: opDelete, pod: "b"},
		{kind: opDelete, pod: "c"},
		{kind: opDelete, pod: "a"},
		{kind: opRemoveFinalizer, pod: "a"},
		{kind: opUpdateStatus},
		{kind: opRemoveFinalizer, pod: "d"},
		{kind: opUpdateStatus},
		{kind: opDelete, pod: "d"},
	}
	got := pairFinalizerPatches(ops)
	wantPaired := []bool{true, true, false, false, false, false, false, false, false, false}
	wantFirst := map[int]bool{2: true, 4: true}
	for i, o := range got {
		if o.paired != wantPaired[i] {
			t.Errorf("op %d paired = %v", i, o.paired)
		}
		if o.kind == opDelete && o.removeFinalizerFirst != wantFirst[i] {
			t.Errorf("op %d removeFinalizerFirst = %v", i, o.removeFinalizerFirst)
		}
	}
}
