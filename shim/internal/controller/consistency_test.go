package controller

import (
	"testing"
	"time"
)

// A Job whose cached resourceVersion is older than this shim's own status
// write is not decided on (it would count moved pods again), until the cache
// catches up or the wait runs out.
func TestCacheBehindOwnWrite(t *testing.T) {
	now := time.Unix(1000, 0)
	c := &Controller{written: map[string]writtenStatus{}, now: func() time.Time { return now }}
	if c.cacheBehindOwnWrite("ns/job", "5") {
		t.Fatal("nothing written yet: not behind")
	}
	c.wroteStatus("ns/job", "10")
	if !c.cacheBehindOwnWrite("ns/job", "9") {
		t.Fatal("cache at 9 is behind the write at 10")
	}
	if c.cacheBehindOwnWrite("ns/job", "10") {
		t.Fatal("cache at 10 shows the write")
	}
	if c.cacheBehindOwnWrite("ns/job", "9") {
		t.Fatal("once seen, the write is forgotten")
	}
	c.wroteStatus("ns/job", "20")
	now = now.Add(writtenStatusWait + time.Second)
	if c.cacheBehindOwnWrite("ns/job", "19") {
		t.Fatal("past the wait, the shim decides anyway")
	}
	c.wroteStatus("ns/job", "30")
	if c.cacheBehindOwnWrite("ns/job", "not-a-number") {
		t.Fatal("an unparseable version does not block")
	}
}
