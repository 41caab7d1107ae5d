package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"

	jobdeciderv1 "job-decider.dev/clients/go/jobdecider/v1"
)

// echoDecider answers DecideJob with the Job's name in the explanation's
// summary, so the test sees its own request come back.
type echoDecider struct {
	jobdeciderv1.UnimplementedJobDeciderServer
	authority chan string
}

func (d *echoDecider) DecideJob(ctx context.Context, req *jobdeciderv1.DecideJobRequest) (*jobdeciderv1.DecideJobResponse, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	if a := md.Get(":authority"); len(a) > 0 {
		select {
		case d.authority <- a[0]:
		default:
		}
	}
	summary := "decided " + req.GetJob().GetMetadata().GetName()
	return &jobdeciderv1.DecideJobResponse{Explanation: &jobdeciderv1.JobExplanation{Summary: summary}}, nil
}

// serveOnSocket serves d on a Unix socket in a temporary directory.
func serveOnSocket(t *testing.T, d *echoDecider, opts ...grpc.ServerOption) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "decider.sock")
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer(opts...)
	jobdeciderv1.RegisterJobDeciderServer(srv, d)
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(srv.Stop)
	return path
}

func decideOnce(t *testing.T, args ...string) (string, error) {
	t.Helper()
	o, err := parseFlags(args)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := dialDecider(o)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req := &jobdeciderv1.DecideJobRequest{Job: &jobdeciderv1.Job{Metadata: &jobdeciderv1.ObjectMeta{Name: "over-the-socket"}}}
	resp, err := jobdeciderv1.NewJobDeciderClient(conn).DecideJob(ctx, req)
	if err != nil {
		return "", err
	}
	return resp.GetExplanation().GetSummary(), nil
}

// The shim's client reaches a decider on a Unix socket, in each spelling gRPC
// gives a socket, with "localhost" as the authority.
func TestDialDeciderOverUnixSocket(t *testing.T) {
	d := &echoDecider{authority: make(chan string, 1)}
	path := serveOnSocket(t, d)
	for _, addr := range []string{"unix://" + path, "unix:" + path} {
		got, err := decideOnce(t, "--decider-addr="+addr)
		if err != nil {
			t.Fatalf("%s: %v", addr, err)
		}
		if got != "decided over-the-socket" {
			t.Errorf("%s: answer %q", addr, got)
		}
		if a := <-d.authority; a != "localhost" {
			t.Errorf("%s: authority %q", addr, a)
		}
	}
}

// TLS over a socket verifies the certificate against "localhost" (the
// socket's authority) unless --decider-server-name names another.
func TestDialDeciderOverUnixSocketWithTLS(t *testing.T) {
	dir := t.TempDir()
	ca, cert := selfSigned(t, "localhost")
	caPath := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(caPath, ca, 0o600); err != nil {
		t.Fatal(err)
	}
	d := &echoDecider{authority: make(chan string, 1)}
	path := serveOnSocket(t, d, grpc.Creds(credentials.NewServerTLSFromCert(&cert)))
	got, err := decideOnce(t, "--decider-addr=unix://"+path, "--decider-ca="+caPath)
	if err != nil {
		t.Fatal(err)
	}
	if got != "decided over-the-socket" {
		t.Errorf("answer %q", got)
	}
	if _, err := decideOnce(t, "--decider-addr=unix://"+path, "--decider-ca="+caPath, "--decider-server-name=other.example"); err == nil {
		t.Error("a certificate for localhost passed as other.example")
	}
}

func TestParseFlagsRefusesUnixTargetsGRPCCannotDial(t *testing.T) {
	for _, addr := range []string{"unix:", "unix://", "unix://host/run/d.sock"} {
		if _, err := parseFlags([]string{"--decider-addr=" + addr}); err == nil {
			t.Errorf("%q accepted", addr)
		}
	}
	for _, addr := range []string{"unix:///run/d.sock", "unix:/run/d.sock", "unix:d.sock", "127.0.0.1:50051", "dns:///decider:50051"} {
		if _, err := parseFlags([]string{"--decider-addr=" + addr}); err != nil {
			t.Errorf("%q: %v", addr, err)
		}
	}
}

// selfSigned returns a self-signed certificate for name: its PEM (the CA a
// client trusts) and the server's key pair.
func selfSigned(t *testing.T, name string) ([]byte, tls.Certificate) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: name},
		DNSNames:              []string{name},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}
