package controller

import (
	"testing"
	"time"
)

func TestExpectations(t *testing.T) {
	now := time.Unix(1000, 0)
	e := newExpectations(func() time.Time { return now })
	if e.podChangesPending("a") {
		t.Fatal("pending with nothing expected")
	}
	e.expectCreations("a", 2)
	e.expectDeletions("a", []string{"u1"})
	e.creationObserved("a")
	e.creationObserved("a")
	if !e.podChangesPending("a") {
		t.Fatal("met before the deletion was seen")
	}
	// A terminating pod is seen several times; it counts once.
	e.deletionObserved("a", "u1")
	e.deletionObserved("a", "u1")
	if e.podChangesPending("a") {
		t.Fatal("still pending after everything was seen")
	}
	// Extra observations do not shorten a later wait.
	e.creationObserved("a")
	e.expectCreations("a", 1)
	if !e.podChangesPending("a") {
		t.Fatal("a stray observation satisfied a new expectation")
	}
	// Expectations expire.
	now = now.Add(expectationTTL + time.Second)
	if e.podChangesPending("a") {
		t.Fatal("did not expire")
	}

	e.expectFinalizerRemovals("a", []string{"z", "y"})
	if got := e.pendingFinalizerRemovals("a"); len(got) != 2 || got[0] != "y" {
		t.Fatalf("pending %v", got)
	}
	e.finalizerRemovalObserved("a", "y")
	if got := e.pendingFinalizerRemovals("a"); len(got) != 1 || got[0] != "z" {
		t.Fatalf("pending %v", got)
	}
	e.forget("a")
	if e.pendingFinalizerRemovals("a") != nil {
		t.Fatal("not forgotten")
	}
}
