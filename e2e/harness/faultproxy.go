package harness

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"mime"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"job-decider.dev/e2e/pki"
)

// FaultProxy stands between one controller and the kube-apiserver and
// misbehaves on demand, as a busy control plane does: it delays watch events
// (each one held, in order), drops watch connections, and answers a share of
// writes with 409, 429 or 500 without forwarding them. It terminates TLS with
// a CA of its own and re-originates every request with the upstream
// configuration's credentials. Every fault is drawn from one seeded generator
// and counted.
type FaultProxy struct {
	// URL is the proxy's https address on loopback.
	URL string
	// Kubeconfig is a kubeconfig file that points at the proxy.
	Kubeconfig string

	srv *http.Server
	rp  *httputil.ReverseProxy

	mu             sync.Mutex
	rng            *rand.Rand
	delayMin       time.Duration
	delayMax       time.Duration
	writeFaultRate float64
	faultResources map[string]bool
	watches        map[*proxiedWatch]struct{}
	stopDropping   chan struct{}

	stats faultCounters
}

// FaultStats counts what the proxy did.
type FaultStats struct {
	// Requests is every request received.
	Requests int64
	// Watches is every watch forwarded; UnframedWatches those whose
	// content type the proxy cannot split into events (passed on as is).
	Watches, UnframedWatches int64
	// WatchEvents is every event passed on; DelayedEvents those of them
	// for which a delay above zero was drawn.
	WatchEvents, DelayedEvents int64
	// DroppedWatches is every watch connection the proxy cut.
	DroppedWatches int64
	// ForwardedWrites is every write passed on to the API server.
	ForwardedWrites int64
	// Conflicts, TooManyRequests and InternalErrors count the writes
	// answered by the proxy itself with 409, 429 and 500.
	Conflicts, TooManyRequests, InternalErrors int64
}

type faultCounters struct {
	requests, watches, unframed, events, delayed, dropped, forwarded, c409, c429, c500 atomic.Int64
}

// StartFaultProxy starts a proxy on loopback in front of the API server that
// upstream describes, with its faults off, and writes its kubeconfig (with
// upstream's kubeconfig's user, served by the proxy) into dir. seed fixes
// every random choice the proxy makes.
func StartFaultProxy(dir string, upstream *rest.Config, upstreamKubeconfig string, seed uint64) (*FaultProxy, error) {
	target, err := url.Parse(upstream.Host)
	if err != nil {
		return nil, fmt.Errorf("upstream host %q: %w", upstream.Host, err)
	}
	transport, err := rest.TransportFor(rest.CopyConfig(upstream))
	if err != nil {
		return nil, fmt.Errorf("upstream transport: %w", err)
	}
	ca, err := pki.NewCA("job-decider-fault-proxy-ca", 24*time.Hour)
	if err != nil {
		return nil, err
	}
	certPEM, keyPEM, err := ca.Issue(2, pkix.Name{CommonName: "fault-proxy"}, x509.ExtKeyUsageServerAuth, []net.IP{net.IPv4(127, 0, 0, 1)}, []string{"localhost"})
	if err != nil {
		return nil, err
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &FaultProxy{
		URL:     "https://" + l.Addr().String(),
		rng:     rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		watches: map[*proxiedWatch]struct{}{},
	}
	p.rp = &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(target)
			if isWatch(r.In) {
				// JSON events are the ones the proxy splits most surely;
				// client-go decodes whatever type the answer names.
				r.Out.Header.Set("Accept", "application/json")
			}
		},
		Transport:      transport,
		FlushInterval:  -1,
		ModifyResponse: p.modifyResponse,
		// A dropped watch is an aborted copy: expected, not worth a line.
		ErrorLog: log.New(io.Discard, "", 0),
	}
	p.Kubeconfig = filepath.Join(dir, fmt.Sprintf("fault-proxy-%d.kubeconfig", l.Addr().(*net.TCPAddr).Port))
	if err := writeProxyKubeconfig(upstreamKubeconfig, p.Kubeconfig, p.URL, ca.CertPEM); err != nil {
		l.Close()
		return nil, err
	}
	p.srv = &http.Server{
		Handler:           http.HandlerFunc(p.serve),
		ReadHeaderTimeout: 10 * time.Second,
		TLSConfig:         &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{cert}, NextProtos: []string{"h2", "http/1.1"}},
		ErrorLog:          log.New(io.Discard, "", 0),
	}
	go func() { _ = p.srv.ServeTLS(l, "", "") }()
	return p, nil
}

// writeProxyKubeconfig copies the kubeconfig at from, with every cluster
// pointed at the proxy and trusting the proxy's CA.
func writeProxyKubeconfig(from, to, server string, caPEM []byte) error {
	cfg, err := clientcmd.LoadFromFile(from)
	if err != nil {
		return fmt.Errorf("reading %s: %w", from, err)
	}
	if len(cfg.Clusters) == 0 {
		return fmt.Errorf("%s names no cluster", from)
	}
	for _, c := range cfg.Clusters {
		c.Server = server
		c.CertificateAuthority = ""
		c.CertificateAuthorityData = caPEM
		c.TLSServerName = ""
	}
	return clientcmd.WriteToFile(*cfg, to)
}

// Close stops the proxy and cuts every connection through it.
func (p *FaultProxy) Close() {
	p.DropWatchesEvery(0)
	p.DropWatches()
	_ = p.srv.Close()
}

// SetWatchDelay holds every watch event that arrives from now on for a
// random time in [min, max] (a fixed time when they are equal; none when
// both are zero). Events keep their order: one is never passed on before an
// earlier one.
func (p *FaultProxy) SetWatchDelay(min, max time.Duration) {
	if max < min {
		max = min
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.delayMin, p.delayMax = min, max
}

// SetWriteFaults answers the given share (0–1) of writes (POST, PUT, PATCH,
// DELETE) to the named resources ("pods", "jobs"; every resource when none
// is named) with 409, 429 (with Retry-After) or 500, in equal parts, without
// forwarding them.
func (p *FaultProxy) SetWriteFaults(rate float64, resources ...string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.writeFaultRate = rate
	p.faultResources = nil
	if len(resources) > 0 {
		p.faultResources = map[string]bool{}
		for _, r := range resources {
			p.faultResources[r] = true
		}
	}
}

// DropWatches cuts every open watch connection now and returns how many.
func (p *FaultProxy) DropWatches() int {
	p.mu.Lock()
	ws := make([]*proxiedWatch, 0, len(p.watches))
	for w := range p.watches {
		ws = append(ws, w)
	}
	p.mu.Unlock()
	for _, w := range ws {
		w.drop()
	}
	return len(ws)
}

// DropWatchesEvery cuts every open watch connection each period until
// called again; a period of zero stops it.
func (p *FaultProxy) DropWatchesEvery(period time.Duration) {
	p.mu.Lock()
	if p.stopDropping != nil {
		close(p.stopDropping)
		p.stopDropping = nil
	}
	if period <= 0 {
		p.mu.Unlock()
		return
	}
	stop := make(chan struct{})
	p.stopDropping = stop
	p.mu.Unlock()
	go func() {
		t := time.NewTicker(period)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				p.DropWatches()
			}
		}
	}()
}

// Stats returns the counters so far.
func (p *FaultProxy) Stats() FaultStats {
	s := &p.stats
	return FaultStats{
		Requests: s.requests.Load(), Watches: s.watches.Load(), UnframedWatches: s.unframed.Load(),
		WatchEvents: s.events.Load(), DelayedEvents: s.delayed.Load(), DroppedWatches: s.dropped.Load(),
		ForwardedWrites: s.forwarded.Load(), Conflicts: s.c409.Load(), TooManyRequests: s.c429.Load(), InternalErrors: s.c500.Load(),
	}
}

// String is a one-line summary for test logs.
func (s FaultStats) String() string {
	return fmt.Sprintf("requests=%d watches=%d (unframed %d) events=%d (delayed %d) droppedWatches=%d forwardedWrites=%d faults 409=%d 429=%d 500=%d",
		s.Requests, s.Watches, s.UnframedWatches, s.WatchEvents, s.DelayedEvents, s.DroppedWatches, s.ForwardedWrites, s.Conflicts, s.TooManyRequests, s.InternalErrors)
}

func (p *FaultProxy) serve(w http.ResponseWriter, r *http.Request) {
	p.stats.requests.Add(1)
	if isWrite(r.Method) {
		if code := p.writeFault(r); code != 0 {
			writeStatus(w, code)
			return
		}
		p.stats.forwarded.Add(1)
	}
	p.rp.ServeHTTP(w, r)
}

// writeFault draws whether to fail this write, and with which code (0: forward it).
func (p *FaultProxy) writeFault(r *http.Request) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.writeFaultRate <= 0 {
		return 0
	}
	if p.faultResources != nil && !p.faultResources[resourceOf(r.URL.Path)] {
		return 0
	}
	if p.rng.Float64() >= p.writeFaultRate {
		return 0
	}
	switch p.rng.IntN(3) {
	case 0:
		p.stats.c409.Add(1)
		return http.StatusConflict
	case 1:
		p.stats.c429.Add(1)
		return http.StatusTooManyRequests
	default:
		p.stats.c500.Add(1)
		return http.StatusInternalServerError
	}
}

// writeStatus answers as the API server would, with a Status the client
// turns into the matching error.
func writeStatus(w http.ResponseWriter, code int) {
	st := metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status:   metav1.StatusFailure,
		Code:     int32(code),
	}
	switch code {
	case http.StatusConflict:
		st.Reason = metav1.StatusReasonConflict
		st.Message = "fault proxy: the object has been modified; please apply your changes to the latest version and try again"
	case http.StatusTooManyRequests:
		st.Reason = metav1.StatusReasonTooManyRequests
		st.Message = "fault proxy: too many requests, please try again later"
		st.Details = &metav1.StatusDetails{RetryAfterSeconds: 1}
		w.Header().Set("Retry-After", "1")
	default:
		st.Reason = metav1.StatusReasonInternalError
		st.Message = "fault proxy: internal error"
	}
	body, _ := json.Marshal(st)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = w.Write(body)
}

func isWrite(method string) bool {
	switch method {
	case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
		return true
	}
	return false
}

func isWatch(r *http.Request) bool {
	switch r.URL.Query().Get("watch") {
	case "true", "1":
		return true
	}
	return strings.Contains(r.URL.Path, "/watch/")
}

// resourceOf is the resource a request path names: "pods" for
// /api/v1/namespaces/ns/pods/name/status, "jobs" for
// /apis/batch/v1/jobs, "" when the path names none.
func resourceOf(path string) string {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	var rest []string
	switch {
	case len(parts) >= 2 && parts[0] == "api":
		rest = parts[2:] // api, version
	case len(parts) >= 3 && parts[0] == "apis":
		rest = parts[3:] // apis, group, version
	default:
		return ""
	}
	if len(rest) > 0 && rest[0] == "watch" {
		rest = rest[1:]
	}
	if len(rest) >= 2 && rest[0] == "namespaces" {
		if len(rest) == 2 {
			return "namespaces"
		}
		rest = rest[2:]
	}
	if len(rest) == 0 {
		return ""
	}
	return rest[0]
}

// The framings the proxy splits a watch stream by.
type framing int

const (
	framingNone framing = iota
	framingJSON
	framingLengthPrefixed
)

func framingOf(contentType string) framing {
	mt, params, err := mime.ParseMediaType(contentType)
	if err != nil {
		return framingNone
	}
	switch {
	case mt == "application/json":
		return framingJSON
	case mt == "application/vnd.kubernetes.protobuf" && params["stream"] == "watch":
		return framingLengthPrefixed
	}
	return framingNone
}

func (p *FaultProxy) modifyResponse(resp *http.Response) error {
	if !isWatch(resp.Request) || resp.StatusCode != http.StatusOK {
		return nil
	}
	p.stats.watches.Add(1)
	fr := framingOf(resp.Header.Get("Content-Type"))
	if fr == framingNone {
		p.stats.unframed.Add(1)
	}
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	upstream := resp.Body
	// Dropping also closes the upstream body: a relay blocked reading it
	// (an unframed stream is copied as is) returns at once.
	w := &proxiedWatch{cancel: func() { cancel(); _ = upstream.Close() }, pw: pw}
	p.mu.Lock()
	p.watches[w] = struct{}{}
	p.mu.Unlock()
	resp.Body = &watchBody{PipeReader: pr, onClose: func() {
		cancel()
		_ = upstream.Close()
	}}
	go func() {
		defer func() {
			p.mu.Lock()
			delete(p.watches, w)
			p.mu.Unlock()
			cancel()
			_ = upstream.Close()
		}()
		pw.CloseWithError(p.relay(ctx, upstream, pw, fr, w))
	}()
	return nil
}

// proxiedWatch is one watch connection passing through the proxy.
type proxiedWatch struct {
	cancel  context.CancelFunc
	pw      *io.PipeWriter
	dropped atomic.Bool
}

// errWatchDropped ends a watch the proxy cut; the reverse proxy then aborts
// the response, and the client sees the connection fail mid-stream.
var errWatchDropped = errors.New("fault proxy: watch dropped")

func (w *proxiedWatch) drop() {
	if w.dropped.CompareAndSwap(false, true) {
		w.pw.CloseWithError(errWatchDropped)
		w.cancel()
	}
}

type watchBody struct {
	*io.PipeReader
	onClose func()
}

func (b *watchBody) Close() error {
	b.onClose()
	return b.PipeReader.Close()
}

type heldEvent struct {
	data []byte
	due  time.Time
	// held is whether a delay above zero was drawn for the event.
	held bool
}

// relay reads events from upstream as they come, stamps each with the time
// it may leave, and writes them to out in order, each no earlier than its
// own time nor than the event before it.
func (p *FaultProxy) relay(ctx context.Context, upstream io.Reader, out io.Writer, fr framing, w *proxiedWatch) error {
	if fr == framingNone {
		_, err := io.Copy(out, upstream)
		return err
	}
	events := make(chan heldEvent, 1<<16)
	readErr := make(chan error, 1)
	go func() {
		defer close(events)
		next := frameReader(upstream, fr)
		for {
			data, err := next()
			if err != nil {
				readErr <- err
				return
			}
			d := p.drawDelay()
			ev := heldEvent{data: data, due: time.Now().Add(d), held: d > 0}
			select {
			case events <- ev:
			case <-ctx.Done():
				readErr <- ctx.Err()
				return
			}
		}
	}()
	var last time.Time
	for ev := range events {
		due := ev.due
		if due.Before(last) {
			due = last
		}
		last = due
		if wait := time.Until(due); wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return p.endErr(w, ctx.Err())
			}
		}
		if _, err := out.Write(ev.data); err != nil {
			return p.endErr(w, err)
		}
		// Delayed first: a reader who sees an event counted sees its delay counted.
		if ev.held {
			p.stats.delayed.Add(1)
		}
		p.stats.events.Add(1)
	}
	return p.endErr(w, <-readErr)
}

// endErr counts a dropped watch and passes on why the relay ended.
func (p *FaultProxy) endErr(w *proxiedWatch, err error) error {
	if w.dropped.Load() {
		p.stats.dropped.Add(1)
		return errWatchDropped
	}
	if errors.Is(err, io.EOF) {
		return nil
	}
	return err
}

func (p *FaultProxy) drawDelay() time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.delayMax <= 0 {
		return 0
	}
	if p.delayMax == p.delayMin {
		return p.delayMin
	}
	return p.delayMin + time.Duration(p.rng.Int64N(int64(p.delayMax-p.delayMin)+1))
}

// maxFrame bounds one length-prefixed frame, as a guard against a stream
// the proxy misreads.
const maxFrame = 256 << 20

// frameReader returns a function that reads the next whole event, with its
// framing, from a watch stream.
func frameReader(r io.Reader, fr framing) func() ([]byte, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	if fr == framingLengthPrefixed {
		return func() ([]byte, error) {
			var hdr [4]byte
			if _, err := io.ReadFull(br, hdr[:]); err != nil {
				return nil, err
			}
			n := binary.BigEndian.Uint32(hdr[:])
			if n > maxFrame {
				return nil, fmt.Errorf("fault proxy: watch frame of %d bytes", n)
			}
			buf := make([]byte, 4+int(n))
			copy(buf, hdr[:])
			if _, err := io.ReadFull(br, buf[4:]); err != nil {
				return nil, noEOF(err)
			}
			return buf, nil
		}
	}
	dec := json.NewDecoder(br)
	return func() ([]byte, error) {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, err
		}
		return append(raw, '\n'), nil
	}
}

// noEOF turns an end of stream inside a frame into the error it is.
func noEOF(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}
