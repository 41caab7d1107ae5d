// Package cluster starts a real kube-apiserver backed by a real etcd on
// loopback for tests, both built from Go modules (see ../controlplane).
//
// There is no controller manager, scheduler or kubelet: objects are stored
// and validated exactly as in a cluster, but nothing acts on them unless the
// test (or the controller under test) does.
package cluster

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"job-decider.dev/e2e/proc"
)

// Options tune a cluster; the zero value is fine.
type Options struct {
	// Dir holds data, keys and logs; a fresh temporary directory when empty.
	Dir string
	// StartTimeout bounds the wait for the API server to become ready.
	StartTimeout time.Duration
	// ExtraAPIServerArgs are appended to the kube-apiserver command line.
	ExtraAPIServerArgs []string
	// Logf reports progress; silent when nil.
	Logf func(format string, args ...any)
}

// Cluster is a running etcd and kube-apiserver.
type Cluster struct {
	// Config is an admin (system:masters) client configuration.
	Config *rest.Config
	// Kubeconfig is a kubeconfig file with the same credentials.
	Kubeconfig string
	// URL is the API server's https address.
	URL string
	// Dir holds the cluster's files.
	Dir string
	// PKI paths, for tests that need to mint more credentials.
	CAFile string

	ownDir    bool
	apiserver *proc.Process
	etcd      *proc.Process
	stopOnce  sync.Once
}

// StartCluster starts a cluster for one test and stops it at cleanup. It
// returns an admin client config and the stop function (also safe to call
// early, for instance to test behaviour when the API server goes away).
func StartCluster(t testing.TB) (*rest.Config, func()) {
	t.Helper()
	c, err := Start(Options{Logf: t.Logf})
	if err != nil {
		t.Fatalf("starting the test cluster: %v", err)
	}
	t.Cleanup(c.Stop)
	return c.Config, c.Stop
}

// Start builds (once) and starts etcd and kube-apiserver and waits until the
// API server reports ready.
func Start(opts Options) (_ *Cluster, err error) {
	logf := opts.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	if opts.StartTimeout == 0 {
		opts.StartTimeout = 90 * time.Second
	}
	bins, err := EnsureBinaries(logf)
	if err != nil {
		return nil, err
	}
	c := &Cluster{Dir: opts.Dir}
	if c.Dir == "" {
		if c.Dir, err = os.MkdirTemp("", "job-decider-cluster-"); err != nil {
			return nil, err
		}
		c.ownDir = true
	} else if err := os.MkdirAll(c.Dir, 0o755); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			c.dumpLogs(logf)
			c.Stop()
		}
	}()
	p, err := writePKI(c.Dir)
	if err != nil {
		return nil, fmt.Errorf("writing keys: %w", err)
	}
	c.CAFile = p.CAFile

	ports, err := freePorts(3)
	if err != nil {
		return nil, err
	}
	etcdClient := "http://127.0.0.1:" + strconv.Itoa(ports[0])
	etcdPeer := "http://127.0.0.1:" + strconv.Itoa(ports[1])
	securePort := ports[2]
	c.URL = "https://127.0.0.1:" + strconv.Itoa(securePort)

	c.etcd, err = proc.Start("etcd", filepath.Join(c.Dir, "etcd.log"), bins.Etcd,
		"--name=e2e",
		"--data-dir="+filepath.Join(c.Dir, "etcd-data"),
		"--listen-client-urls="+etcdClient,
		"--advertise-client-urls="+etcdClient,
		"--listen-peer-urls="+etcdPeer,
		"--initial-advertise-peer-urls="+etcdPeer,
		"--initial-cluster=e2e="+etcdPeer,
		"--unsafe-no-fsync",
		"--log-level=warn",
	)
	if err != nil {
		return nil, fmt.Errorf("starting etcd: %w", err)
	}

	args := []string{
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		// The kubernetes Service's endpoints may not point at loopback.
		"--endpoint-reconciler-type=none",
		"--secure-port=" + strconv.Itoa(securePort),
		"--etcd-servers=" + etcdClient,
		"--tls-cert-file=" + p.ServingCert,
		"--tls-private-key-file=" + p.ServingKey,
		"--client-ca-file=" + p.CAFile,
		"--authorization-mode=RBAC",
		"--service-cluster-ip-range=10.0.0.0/24",
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + p.SAPublic,
		"--service-account-signing-key-file=" + p.SAPrivate,
		// No controller manager creates the "default" ServiceAccount, so
		// the ServiceAccount admission plugin would reject every pod.
		"--disable-admission-plugins=ServiceAccount",
		// As OpenShift runs it: setting blockOwnerDeletion on an owner
		// reference needs update on the owner's finalizers subresource, so a
		// shim whose role lacks jobs/finalizers cannot create or adopt pods.
		"--enable-admission-plugins=OwnerReferencesPermissionEnforcement",
		// Tests create hundreds of objects quickly; fairness queuing only
		// slows them down on one loopback client.
		"--enable-priority-and-fairness=false",
		"--profiling=false",
		"--cert-dir=" + filepath.Join(c.Dir, "apiserver-certs"),
		"--v=0",
	}
	args = append(args, opts.ExtraAPIServerArgs...)
	c.apiserver, err = proc.Start("kube-apiserver", filepath.Join(c.Dir, "kube-apiserver.log"), bins.APIServer, args...)
	if err != nil {
		return nil, fmt.Errorf("starting kube-apiserver: %w", err)
	}

	c.Config = &rest.Config{
		Host: c.URL,
		TLSClientConfig: rest.TLSClientConfig{
			CAData:   p.CAPEM,
			CertData: p.AdminCertPEM,
			KeyData:  p.AdminKeyPEM,
		},
		QPS:   500,
		Burst: 1000,
	}
	if err := c.waitReady(opts.StartTimeout); err != nil {
		return nil, err
	}
	c.Kubeconfig = filepath.Join(c.Dir, "kubeconfig")
	if err := writeKubeconfig(c.Kubeconfig, c.URL, p); err != nil {
		return nil, err
	}
	logf("cluster ready at %s (files in %s)", c.URL, c.Dir)
	return c, nil
}

// waitReady polls /readyz until the API server answers ok, then waits for the
// default namespace, which the API server creates itself.
func (c *Cluster) waitReady(timeout time.Duration) error {
	client, err := kubernetes.NewForConfig(c.Config)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var last error
	for {
		if c.apiserver.Exited() {
			return fmt.Errorf("kube-apiserver exited early: %v", c.apiserver.Err())
		}
		if c.etcd.Exited() {
			return fmt.Errorf("etcd exited early: %v", c.etcd.Err())
		}
		body, err := client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		if err == nil && strings.TrimSpace(string(body)) == "ok" {
			_, err = client.CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{})
			if err == nil {
				return nil
			}
		}
		last = err
		select {
		case <-ctx.Done():
			return fmt.Errorf("kube-apiserver not ready after %s: %v", timeout, last)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// Pids are the API server's and etcd's process ids, for readers of their
// CPU time (the cluster benchmark's profile).
func (c *Cluster) Pids() (apiserver, etcd int) {
	return c.apiserver.Pid(), c.etcd.Pid()
}

// Stop stops kube-apiserver, then etcd, and removes the files it created.
func (c *Cluster) Stop() {
	c.stopOnce.Do(func() {
		if c.apiserver != nil {
			c.apiserver.Stop(15 * time.Second)
		}
		if c.etcd != nil {
			c.etcd.Stop(10 * time.Second)
		}
		if c.ownDir && os.Getenv("E2E_KEEP_CLUSTER_DIR") == "" {
			_ = os.RemoveAll(c.Dir)
		}
	})
}

func (c *Cluster) dumpLogs(logf func(string, ...any)) {
	for _, name := range []string{"etcd.log", "kube-apiserver.log"} {
		if tail := c.LogTail(name, 40); tail != "" {
			logf("last lines of %s:\n%s", name, tail)
		}
	}
}

func writeKubeconfig(path, url string, p *pki) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["e2e"] = &clientcmdapi.Cluster{Server: url, CertificateAuthorityData: p.CAPEM}
	cfg.AuthInfos["admin"] = &clientcmdapi.AuthInfo{ClientCertificateData: p.AdminCertPEM, ClientKeyData: p.AdminKeyPEM}
	cfg.Contexts["e2e"] = &clientcmdapi.Context{Cluster: "e2e", AuthInfo: "admin"}
	cfg.CurrentContext = "e2e"
	return clientcmd.WriteToFile(*cfg, path)
}

// freePorts asks the kernel for n distinct free loopback ports.
func freePorts(n int) ([]int, error) {
	var ports []int
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// FreePort returns one free loopback port.
func FreePort() (int, error) {
	ports, err := freePorts(1)
	if err != nil {
		return 0, err
	}
	return ports[0], nil
}

// LogTail returns the last n lines of a log file in the cluster directory.
func (c *Cluster) LogTail(name string, n int) string {
	f, err := os.Open(filepath.Join(c.Dir, name))
	if err != nil {
		return ""
	}
	defer f.Close()
	var lines []string
	s := bufio.NewScanner(f)
	s.Buffer(make([]byte, 64*1024), 1024*1024)
	for s.Scan() {
		lines = append(lines, s.Text())
		if len(lines) > n {
			lines = lines[1:]
		}
	}
	return strings.Join(lines, "\n")
}
