package main

import (
	"errors"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"

	"k8s.io/klog/v2"
)

// errInjected is the error a faulty transport returns.
var errInjected = errors.New("testing: injected API write fault")

// faultyTransport fails a share of the shim's writes to the API server, for
// crash tests only. A faulty write fails before it is sent, except that half
// of the faulty pod patches and Job status writes are sent and then reported
// failed, as a timeout whose write landed is. Lease and Event writes are
// left alone: they are not what the test is about.
type faultyTransport struct {
	next http.RoundTripper
	rate float64
	mu   sync.Mutex
	rng  *rand.Rand
}

func newFaultyTransport(next http.RoundTripper, rate float64, seed uint64) *faultyTransport {
	return &faultyTransport{next: next, rate: rate, rng: rand.New(rand.NewPCG(seed, 3))}
}

func (f *faultyTransport) roll() float64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.rng.Float64()
}

func (f *faultyTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method == http.MethodGet || !faultable(req) {
		return f.next.RoundTrip(req)
	}
	roll := f.roll()
	if roll >= f.rate {
		return f.next.RoundTrip(req)
	}
	if roll < f.rate/2 || !landsAnyway(req) {
		klog.InfoS("Testing: failing an API write before sending it", "method", req.Method, "path", req.URL.Path)
		if req.Body != nil {
			_ = req.Body.Close()
		}
		return nil, errInjected
	}
	resp, err := f.next.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	klog.InfoS("Testing: an API write was sent but reported failed", "method", req.Method, "path", req.URL.Path, "code", resp.StatusCode)
	return nil, errInjected
}

// faultable reports whether a request is a write to pods or Jobs.
func faultable(req *http.Request) bool {
	p := req.URL.Path
	return strings.Contains(p, "/pods") || strings.Contains(p, "/jobs")
}

// landsAnyway reports whether a write may be sent and still reported failed
// without making a correct controller create or delete a pod too many: pod
// patches (finalizers, ownership) and Job status writes, whose retries are
// guarded by UIDs and resourceVersions.
func landsAnyway(req *http.Request) bool {
	p := req.URL.Path
	return (req.Method == http.MethodPatch && strings.Contains(p, "/pods/")) ||
		(req.Method == http.MethodPut && strings.HasSuffix(p, "/status") && strings.Contains(p, "/jobs/"))
}
