package main

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

func TestFaultyTransportFailsOnlyWritesToPodsAndJobs(t *testing.T) {
	var arrived atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		arrived.Add(1)
	}))
	defer srv.Close()
	ft := newFaultyTransport(http.DefaultTransport, 1, 1) // every faultable write fails
	do := func(method, path string) error {
		req, err := http.NewRequest(method, srv.URL+path, strings.NewReader("{}"))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := ft.RoundTrip(req)
		if err == nil {
			resp.Body.Close()
		}
		return err
	}
	for _, ok := range [][2]string{
		{http.MethodGet, "/api/v1/namespaces/ns/pods"},
		{http.MethodPut, "/apis/coordination.k8s.io/v1/namespaces/ns/leases/shim"},
		{http.MethodPost, "/api/v1/namespaces/ns/events"},
	} {
		if err := do(ok[0], ok[1]); err != nil {
			t.Errorf("%s %s failed: %v", ok[0], ok[1], err)
		}
	}
	var landed, notSent int
	for range 200 {
		before := arrived.Load()
		err := do(http.MethodPatch, "/api/v1/namespaces/ns/pods/p")
		if !errors.Is(err, errInjected) {
			t.Fatalf("pod patch: err %v, want the injected fault", err)
		}
		if arrived.Load() > before {
			landed++
		} else {
			notSent++
		}
	}
	if landed == 0 || notSent == 0 {
		t.Errorf("pod patches: %d landed, %d not sent; want both kinds of fault", landed, notSent)
	}
	// A pod creation is never sent and reported failed: a correct
	// controller would then create one pod too many.
	for range 50 {
		before := arrived.Load()
		if err := do(http.MethodPost, "/api/v1/namespaces/ns/pods"); !errors.Is(err, errInjected) {
			t.Fatalf("pod create: err %v", err)
		}
		if arrived.Load() != before {
			t.Fatal("a failed pod creation reached the server")
		}
	}
}
