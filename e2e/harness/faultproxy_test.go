package harness

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// fakeAPIServer serves watches of n events, each 10 ms after the last, in
// JSON or (with ?framing=proto) length-prefixed frames, then holds the
// stream open until the client leaves; it answers every other request 200
// and counts the writes that reach it.
type fakeAPIServer struct {
	*httptest.Server
	writes atomic.Int64
	accept atomic.Value
}

const fakeEvents = 20

func startFakeAPIServer(t *testing.T) *fakeAPIServer {
	t.Helper()
	f := &fakeAPIServer{}
	f.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("watch") != "true" {
			if isWrite(r.Method) {
				f.writes.Add(1)
			}
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"kind":"Status","apiVersion":"v1","status":"Success"}`)
			return
		}
		f.accept.Store(r.Header.Get("Accept"))
		proto := r.URL.Query().Get("framing") == "proto"
		if r.URL.Query().Get("framing") == "opaque" {
			w.Header().Set("Content-Type", "application/octet-stream")
			w.WriteHeader(http.StatusOK)
			_, _ = io.WriteString(w, "x")
			w.(http.Flusher).Flush()
			<-r.Context().Done()
			return
		}
		if proto {
			w.Header().Set("Content-Type", "application/vnd.kubernetes.protobuf;stream=watch")
		} else {
			w.Header().Set("Content-Type", "application/json")
		}
		w.WriteHeader(http.StatusOK)
		fl := w.(http.Flusher)
		fl.Flush()
		for i := range fakeEvents {
			ev := fmt.Sprintf(`{"type":"ADDED","object":{"kind":"Pod","metadata":{"name":"p%d","resourceVersion":"%d"}}}`, i, i+1)
			if proto {
				var hdr [4]byte
				binary.BigEndian.PutUint32(hdr[:], uint32(len(ev)))
				_, _ = w.Write(hdr[:])
				_, _ = io.WriteString(w, ev)
			} else {
				// No newline after some events: the proxy must split by
				// JSON values, not by lines.
				sep := "\n"
				if i%3 == 0 {
					sep = " "
				}
				_, _ = io.WriteString(w, ev+sep)
			}
			fl.Flush()
			time.Sleep(10 * time.Millisecond)
		}
		<-r.Context().Done()
	}))
	f.EnableHTTP2 = true
	f.StartTLS()
	t.Cleanup(f.Close)
	return f
}

// startProxy puts a proxy in front of f and returns it with an HTTP client
// built from the proxy's kubeconfig.
func startProxy(t *testing.T, f *fakeAPIServer, seed uint64) (*FaultProxy, *http.Client) {
	t.Helper()
	dir := t.TempDir()
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: f.Certificate().Raw})
	kc := clientcmdapi.NewConfig()
	kc.Clusters["c"] = &clientcmdapi.Cluster{Server: f.URL, CertificateAuthorityData: caPEM}
	kc.AuthInfos["u"] = &clientcmdapi.AuthInfo{Token: "unused"}
	kc.Contexts["x"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u"}
	kc.CurrentContext = "x"
	upstreamKC := filepath.Join(dir, "upstream.kubeconfig")
	if err := clientcmd.WriteToFile(*kc, upstreamKC); err != nil {
		t.Fatal(err)
	}
	p, err := StartFaultProxy(dir, &rest.Config{Host: f.URL, TLSClientConfig: rest.TLSClientConfig{CAData: caPEM}}, upstreamKC, seed)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	cfg, err := clientcmd.BuildConfigFromFlags("", p.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Host != p.URL {
		t.Fatalf("the proxy's kubeconfig points at %s, want %s", cfg.Host, p.URL)
	}
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p, hc
}

type seenEvent struct {
	name string
	at   time.Time
}

// readEvents reads n events from a watch through the proxy and when each came.
func readEvents(t *testing.T, hc *http.Client, url string, n int) ([]seenEvent, *http.Response) {
	t.Helper()
	resp, err := hc.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("watch: %s", resp.Status)
	}
	next := frameReader(resp.Body, framingOf(resp.Header.Get("Content-Type")))
	var out []seenEvent
	for len(out) < n {
		data, err := next()
		if err != nil {
			t.Fatalf("after %d events: %v", len(out), err)
		}
		if framingOf(resp.Header.Get("Content-Type")) == framingLengthPrefixed {
			data = data[4:]
		}
		var ev struct {
			Object struct {
				Metadata struct{ Name string } `json:"metadata"`
			} `json:"object"`
		}
		if err := json.Unmarshal(data, &ev); err != nil {
			t.Fatalf("event %q: %v", data, err)
		}
		out = append(out, seenEvent{ev.Object.Metadata.Name, time.Now()})
	}
	return out, resp
}

// settled returns the proxy's counters once ok holds of them, or after two
// seconds: the proxy counts an event after the client may have read it.
func settled(p *FaultProxy, ok func(FaultStats) bool) FaultStats {
	deadline := time.Now().Add(2 * time.Second)
	for {
		s := p.Stats()
		if ok(s) || time.Now().After(deadline) {
			return s
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func checkOrder(t *testing.T, evs []seenEvent) {
	t.Helper()
	for i, ev := range evs {
		if want := fmt.Sprintf("p%d", i); ev.name != want {
			t.Fatalf("event %d is %s, want %s (order lost)", i, ev.name, want)
		}
	}
}

func TestFaultProxyPassesWatchesThroughUndelayedByDefault(t *testing.T) {
	f := startFakeAPIServer(t)
	p, hc := startProxy(t, f, 1)
	start := time.Now()
	evs, _ := readEvents(t, hc, p.URL+"/api/v1/pods?watch=true", fakeEvents)
	checkOrder(t, evs)
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("undelayed watch took %s", took)
	}
	if got := f.accept.Load(); got != "application/json" {
		t.Errorf("the API server saw Accept %q, want application/json", got)
	}
	if s := settled(p, func(s FaultStats) bool { return s.WatchEvents == fakeEvents }); s.Watches != 1 || s.WatchEvents != fakeEvents || s.DelayedEvents != 0 {
		t.Errorf("stats %s", s)
	}
}

func TestFaultProxyDelaysEachWatchEventByAFixedTimeInOrder(t *testing.T) {
	for _, framing := range []string{"json", "proto"} {
		t.Run(framing, func(t *testing.T) {
			f := startFakeAPIServer(t)
			p, hc := startProxy(t, f, 1)
			const delay = 400 * time.Millisecond
			p.SetWatchDelay(delay, delay)
			start := time.Now()
			evs, resp := readEvents(t, hc, p.URL+"/api/v1/pods?watch=true&framing="+framing, fakeEvents)
			checkOrder(t, evs)
			if framing == "proto" && framingOf(resp.Header.Get("Content-Type")) != framingLengthPrefixed {
				t.Fatalf("content type %q", resp.Header.Get("Content-Type"))
			}
			// The server sends event i at about 10ms*i; each must come no
			// earlier than delay after it was sent.
			if first := evs[0].at.Sub(start); first < delay {
				t.Errorf("first event after %s, want at least %s", first, delay)
			}
			if last := evs[fakeEvents-1].at.Sub(start); last < delay+time.Duration(fakeEvents-1)*10*time.Millisecond {
				t.Errorf("last event after %s: not held by %s", last, delay)
			}
			if s := settled(p, func(s FaultStats) bool { return s.WatchEvents == fakeEvents }); s.DelayedEvents != fakeEvents || s.WatchEvents != fakeEvents {
				t.Errorf("stats %s", s)
			}
		})
	}
}

func TestFaultProxyRandomDelaysKeepOrder(t *testing.T) {
	f := startFakeAPIServer(t)
	p, hc := startProxy(t, f, 7)
	p.SetWatchDelay(0, 300*time.Millisecond)
	evs, _ := readEvents(t, hc, p.URL+"/api/v1/pods?watch=true", fakeEvents)
	checkOrder(t, evs)
	for i := 1; i < len(evs); i++ {
		if evs[i].at.Before(evs[i-1].at) {
			t.Fatalf("event %d came before event %d", i, i-1)
		}
	}
	if s := p.Stats(); s.DelayedEvents == 0 {
		t.Errorf("no event was delayed: %s", s)
	}
}

func TestFaultProxyDropsWatches(t *testing.T) {
	f := startFakeAPIServer(t)
	p, hc := startProxy(t, f, 1)
	evs, resp := readEvents(t, hc, p.URL+"/api/v1/pods?watch=true", fakeEvents)
	checkOrder(t, evs)
	if n := p.DropWatches(); n != 1 {
		t.Fatalf("dropped %d watches, want 1", n)
	}
	done := make(chan error, 1)
	go func() {
		_, err := io.Copy(io.Discard, bufio.NewReader(resp.Body))
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil {
			t.Errorf("the dropped watch ended cleanly; want a broken stream")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the watch is still open after being dropped")
	}
	if s := settled(p, func(s FaultStats) bool { return s.DroppedWatches == 1 }); s.DroppedWatches != 1 {
		t.Errorf("stats %s", s)
	}

	// Every period: a second watch is cut without being asked.
	p.DropWatchesEvery(200 * time.Millisecond)
	_, resp2 := readEvents(t, hc, p.URL+"/api/v1/pods?watch=true", 1)
	go func() {
		_, err := io.Copy(io.Discard, resp2.Body)
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil {
			t.Errorf("the periodically dropped watch ended cleanly")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("DropWatchesEvery did not cut the watch")
	}
	p.DropWatchesEvery(0)

	// A stream the proxy cannot split is passed on as is, and dropped all the same.
	resp3, err := hc.Get(p.URL + "/api/v1/pods?watch=true&framing=opaque")
	if err != nil {
		t.Fatal(err)
	}
	defer resp3.Body.Close()
	if b := make([]byte, 1); func() bool { _, err := io.ReadFull(resp3.Body, b); return err != nil || b[0] != 'x' }() {
		t.Fatal("the opaque stream's first byte did not pass")
	}
	go func() {
		_, err := io.Copy(io.Discard, resp3.Body)
		done <- err
	}()
	p.DropWatches()
	select {
	case err := <-done:
		if err == nil {
			t.Errorf("the dropped opaque watch ended cleanly")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the opaque watch is still open after being dropped")
	}
	if s := p.Stats(); s.UnframedWatches != 1 {
		t.Errorf("stats %s, want one unframed watch", s)
	}
}

// writeCodes sends n writes through the proxy and returns the status codes.
func writeCodes(t *testing.T, hc *http.Client, url string, n int) []int {
	t.Helper()
	var codes []int
	methods := []string{http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete}
	for i := range n {
		req, err := http.NewRequest(methods[i%len(methods)], url, strings.NewReader("{}"))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode == http.StatusTooManyRequests && resp.Header.Get("Retry-After") == "" {
			t.Errorf("a 429 without Retry-After")
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK && !strings.Contains(string(body), `"kind":"Status"`) {
			t.Errorf("fault %d answered without a Status: %s", resp.StatusCode, body)
		}
		codes = append(codes, resp.StatusCode)
	}
	return codes
}

func TestFaultProxyAnswersAShareOfWritesWithoutForwardingThem(t *testing.T) {
	f := startFakeAPIServer(t)
	p, hc := startProxy(t, f, 42)
	podsURL := p.URL + "/api/v1/namespaces/ns/pods"
	if codes := writeCodes(t, hc, podsURL, 8); strings.Count(fmt.Sprint(codes), "200") != 8 {
		t.Fatalf("with faults off: %v", codes)
	}
	p.SetWriteFaults(1)
	seen := map[int]int{}
	for _, c := range writeCodes(t, hc, podsURL, 60) {
		seen[c]++
	}
	if seen[200] != 0 || seen[409] == 0 || seen[429] == 0 || seen[500] == 0 {
		t.Errorf("with every write failed, codes %v", seen)
	}
	if got := f.writes.Load(); got != 8 {
		t.Errorf("the API server saw %d writes, want only the 8 sent before the faults", got)
	}
	s := p.Stats()
	if s.Conflicts != int64(seen[409]) || s.TooManyRequests != int64(seen[429]) || s.InternalErrors != int64(seen[500]) || s.ForwardedWrites != 8 {
		t.Errorf("stats %s, codes %v", s, seen)
	}
	// Reads pass; writes to resources not named pass.
	p.SetWriteFaults(1, "jobs")
	if codes := writeCodes(t, hc, p.URL+"/api/v1/namespaces/ns/pods/p/status", 4); strings.Count(fmt.Sprint(codes), "200") != 4 {
		t.Errorf("pod writes with faults on jobs only: %v", codes)
	}
	if codes := writeCodes(t, hc, p.URL+"/apis/batch/v1/namespaces/ns/jobs/j/status", 4); strings.Contains(fmt.Sprint(codes), "200") {
		t.Errorf("job writes with every job write failed: %v", codes)
	}
}

func TestFaultProxyFaultsAreSeeded(t *testing.T) {
	run := func(seed uint64) string {
		f := startFakeAPIServer(t)
		p, hc := startProxy(t, f, seed)
		p.SetWriteFaults(0.5)
		return fmt.Sprint(writeCodes(t, hc, p.URL+"/api/v1/namespaces/ns/pods", 40))
	}
	a, b, c := run(3), run(3), run(4)
	if a != b {
		t.Errorf("same seed, different faults:\n%s\n%s", a, b)
	}
	if a == c {
		t.Errorf("different seeds, same faults: %s", a)
	}
	if n := strings.Count(a, "200"); n < 10 || n > 30 {
		t.Errorf("at a rate of 0.5, %d of 40 writes passed", n)
	}
}

func TestResourceOf(t *testing.T) {
	for path, want := range map[string]string{
		"/api/v1/namespaces/ns/pods":                         "pods",
		"/api/v1/namespaces/ns/pods/p/status":                "pods",
		"/api/v1/pods":                                       "pods",
		"/api/v1/namespaces/ns":                              "namespaces",
		"/apis/batch/v1/namespaces/ns/jobs/j/status":         "jobs",
		"/apis/batch/v1/watch/namespaces/ns/jobs":            "jobs",
		"/apis/coordination.k8s.io/v1/namespaces/d/leases/x": "leases",
		"/healthz": "",
		"/api":     "",
	} {
		if got := resourceOf(path); got != want {
			t.Errorf("resourceOf(%s) = %q, want %q", path, got, want)
		}
	}
}
