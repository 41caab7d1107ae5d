package cluster

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"job-decider.dev/e2e/proc"
)

// ControllerManagerOptions configure one kube-controller-manager.
type ControllerManagerOptions struct {
	// Controllers is kube-controller-manager's --controllers, for
	// instance {"job"} or {"garbagecollector"}; required.
	Controllers []string
	// QPS and Burst are its client's rate limit (--kube-api-qps and
	// --kube-api-burst); kube-controller-manager's defaults when zero.
	QPS   float64
	Burst int
	// ConcurrentJobSyncs is --concurrent-job-syncs (the Job controller's
	// workers); the default when zero.
	ConcurrentJobSyncs int
	// LogPath receives its output; <cluster dir>/kube-controller-manager.log
	// when empty.
	LogPath string
	// Kubeconfig is what its controllers reach the API server with (for
	// instance a fault proxy's); the cluster's admin kubeconfig when empty.
	// Its own authentication and authorization checks always go direct.
	Kubeconfig string
	// ExtraArgs are appended to the command line.
	ExtraArgs []string
}

// ControllerManager is a running kube-controller-manager.
type ControllerManager struct {
	*proc.Process
	// MetricsURL is its /metrics endpoint (https, self-signed; read it
	// with Scrape).
	MetricsURL string
	client     *http.Client
}

// StartControllerManager builds (once) and starts kube-controller-manager
// against the cluster, without leader election, and waits until it reports
// healthy. Its /metrics needs no credentials.
func (c *Cluster) StartControllerManager(opts ControllerManagerOptions, logf func(string, ...any)) (*ControllerManager, error) {
	if logf == nil {
		logf = func(string, ...any) {}
	}
	if len(opts.Controllers) == 0 {
		return nil, fmt.Errorf("kube-controller-manager: no controllers named")
	}
	bin, err := EnsureControllerManager(logf)
	if err != nil {
		return nil, err
	}
	port, err := FreePort()
	if err != nil {
		return nil, err
	}
	certDir := filepath.Join(c.Dir, "kcm-certs-"+strconv.Itoa(port))
	if err := os.MkdirAll(certDir, 0o755); err != nil {
		return nil, err
	}
	kubeconfig := opts.Kubeconfig
	if kubeconfig == "" {
		kubeconfig = c.Kubeconfig
	}
	args := []string{
		"--kubeconfig=" + kubeconfig,
		"--authentication-kubeconfig=" + c.Kubeconfig,
		"--authorization-kubeconfig=" + c.Kubeconfig,
		"--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics",
		"--controllers=" + strings.Join(opts.Controllers, ","),
		"--leader-elect=false",
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(port),
		"--cert-dir=" + certDir,
		"--v=1",
	}
	if opts.QPS > 0 {
		args = append(args, "--kube-api-qps="+strconv.FormatFloat(opts.QPS, 'f', -1, 64))
	}
	if opts.Burst > 0 {
		args = append(args, "--kube-api-burst="+strconv.Itoa(opts.Burst))
	}
	if opts.ConcurrentJobSyncs > 0 {
		args = append(args, "--concurrent-job-syncs="+strconv.Itoa(opts.ConcurrentJobSyncs))
	}
	args = append(args, opts.ExtraArgs...)
	logPath := opts.LogPath
	if logPath == "" {
		logPath = filepath.Join(c.Dir, "kube-controller-manager.log")
	}
	p, err := proc.Start("kube-controller-manager", logPath, bin, args...)
	if err != nil {
		return nil, err
	}
	m := &ControllerManager{
		Process:    p,
		MetricsURL: "https://127.0.0.1:" + strconv.Itoa(port) + "/metrics",
		// Its serving certificate is self-signed at start; loopback only.
		client: &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}},
	}
	if err := waitHTTP(m.client, "https://127.0.0.1:"+strconv.Itoa(port)+"/healthz", p, time.Minute); err != nil {
		p.Kill()
		return nil, fmt.Errorf("kube-controller-manager did not become healthy: %v\n%s", err, p.Tail(30))
	}
	return m, nil
}

// Scrape returns the text of its /metrics.
func (m *ControllerManager) Scrape(ctx context.Context) (string, error) {
	return get(ctx, m.client, m.MetricsURL)
}

// KWOKOptions configure one kwok (fake kubelets).
type KWOKOptions struct {
	// Config is a kwok configuration file: KwokConfiguration and the
	// Stages that drive nodes and pods; required.
	Config string
	// NodeSelector is the annotation selector of the nodes kwok plays
	// (--manage-nodes-with-annotation-selector); required.
	NodeSelector string
	// LogPath receives its output; <cluster dir>/kwok.log when empty.
	LogPath string
	// ExtraArgs are appended to the command line.
	ExtraArgs []string
}

// KWOK is a running kwok.
type KWOK struct {
	*proc.Process
	// MetricsURL is its /metrics endpoint.
	MetricsURL string
}

// StartKWOK builds (once) and starts kwok against the cluster and waits until
// it answers on its server address.
func (c *Cluster) StartKWOK(opts KWOKOptions, logf func(string, ...any)) (*KWOK, error) {
	if logf == nil {
		logf = func(string, ...any) {}
	}
	if opts.Config == "" || opts.NodeSelector == "" {
		return nil, fmt.Errorf("kwok: Config and NodeSelector are required")
	}
	bin, err := EnsureKWOK(logf)
	if err != nil {
		return nil, err
	}
	port, err := FreePort()
	if err != nil {
		return nil, err
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	args := []string{
		"--config=" + opts.Config,
		"--kubeconfig=" + c.Kubeconfig,
		"--manage-all-nodes=false",
		"--manage-nodes-with-annotation-selector=" + opts.NodeSelector,
		"--server-address=" + addr,
		"--node-ip=127.0.0.1",
	}
	args = append(args, opts.ExtraArgs...)
	logPath := opts.LogPath
	if logPath == "" {
		logPath = filepath.Join(c.Dir, "kwok.log")
	}
	p, err := proc.Start("kwok", logPath, bin, args...)
	if err != nil {
		return nil, err
	}
	k := &KWOK{Process: p, MetricsURL: "http://" + addr + "/metrics"}
	if err := waitHTTP(http.DefaultClient, "http://"+addr+"/healthz", p, time.Minute); err != nil {
		p.Kill()
		return nil, fmt.Errorf("kwok did not become healthy: %v\n%s", err, p.Tail(30))
	}
	return k, nil
}

func waitHTTP(client *http.Client, url string, p *proc.Process, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	var last error
	for time.Now().Before(deadline) {
		if p.Exited() {
			return fmt.Errorf("exited: %v", p.Err())
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_, last = get(ctx, client, url)
		cancel()
		if last == nil {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("%s not ok after %s: %v", url, timeout, last)
}

func get(ctx context.Context, client *http.Client, url string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	resp, err := client.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("%s: %s: %s", url, resp.Status, strings.TrimSpace(string(body)))
	}
	return string(body), nil
}
