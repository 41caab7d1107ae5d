package jobdecider_test

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
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/peer"

	"job-decider.dev/clients/go/jobdecider"
	pb "job-decider.dev/clients/go/jobdecider/v1"
)

// issued is a certificate with its key, in PEM, and the parsed form for signing.
type issued struct {
	certPEM, keyPEM []byte
	cert            *x509.Certificate
	key             *ecdsa.PrivateKey
}

// issue makes a certificate named cn, signed by parent (self-signed when nil).
func issue(t *testing.T, cn string, parent *issued, isCA bool, dnsNames ...string) *issued {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial, err := rand.Int(rand.Reader, big.NewInt(1<<62))
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: cn},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		DNSNames:     dnsNames,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	if isCA {
		tmpl.IsCA, tmpl.BasicConstraintsValid = true, true
		tmpl.KeyUsage |= x509.KeyUsageCertSign
		tmpl.ExtKeyUsage = nil
	}
	signer, signerKey := tmpl, key
	if parent != nil {
		signer, signerKey = parent.cert, parent.key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, signer, &key.PublicKey, signerKey)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return &issued{
		certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		keyPEM:  pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
		cert:    cert,
		key:     key,
	}
}

// secretDir writes files as a mounted cert-manager Secret would hold them.
func secretDir(t *testing.T, files map[string][]byte) string {
	t.Helper()
	dir := t.TempDir()
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// clientCN is the common name of the client certificate the server saw.
type clientCN struct {
	pb.UnimplementedJobDeciderServer
	seen chan string
}

func (c *clientCN) DecideJob(ctx context.Context, _ *pb.DecideJobRequest) (*pb.DecideJobResponse, error) {
	name := ""
	if p, ok := peer.FromContext(ctx); ok {
		if info, ok := p.AuthInfo.(credentials.TLSInfo); ok && len(info.State.PeerCertificates) > 0 {
			name = info.State.PeerCertificates[0].Subject.CommonName
		}
	}
	c.seen <- name
	return &pb.DecideJobResponse{}, nil
}

// tlsServer serves on a loopback port with the server certificate, asking
// for a client certificate signed by ca when mutual.
func tlsServer(t *testing.T, server, ca *issued, mutual bool) (string, *clientCN) {
	t.Helper()
	pair, err := tls.X509KeyPair(server.certPEM, server.keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	config := &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}
	if mutual {
		pool := x509.NewCertPool()
		pool.AddCert(ca.cert)
		config.ClientCAs, config.ClientAuth = pool, tls.RequireAndVerifyClientCert
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer(grpc.Creds(credentials.NewTLS(config)))
	svc := &clientCN{seen: make(chan string, 8)}
	pb.RegisterJobDeciderServer(srv, svc)
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	_, port, _ := net.SplitHostPort(lis.Addr().String())
	return "localhost:" + port, svc
}

func TestTLSFromACertManagerSecretDirectory(t *testing.T) {
	ca := issue(t, "job-decider CA", nil, true)
	server := issue(t, "job-decider", ca, false, "localhost")
	controller := issue(t, "my-controller", ca, false)

	call := func(t *testing.T, target, dir string) error {
		t.Helper()
		creds, err := jobdecider.TLSFromDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, err = newClient(t, target, grpc.WithTransportCredentials(creds)).DecideJob(ctx, &pb.DecideJobRequest{})
		return err
	}

	t.Run("mutual TLS with tls.crt and tls.key", func(t *testing.T) {
		target, svc := tlsServer(t, server, ca, true)
		dir := secretDir(t, map[string][]byte{"ca.crt": ca.certPEM, "tls.crt": controller.certPEM, "tls.key": controller.keyPEM})
		if err := call(t, target, dir); err != nil {
			t.Fatalf("DecideJob over mutual TLS: %v", err)
		}
		if cn := <-svc.seen; cn != "my-controller" {
			t.Errorf("the server saw client certificate %q, want my-controller", cn)
		}
	})
	t.Run("server TLS with ca.crt alone", func(t *testing.T) {
		target, svc := tlsServer(t, server, ca, false)
		if err := call(t, target, secretDir(t, map[string][]byte{"ca.crt": ca.certPEM})); err != nil {
			t.Fatalf("DecideJob over TLS: %v", err)
		}
		if cn := <-svc.seen; cn != "" {
			t.Errorf("the server saw client certificate %q, want none", cn)
		}
	})
	t.Run("a server that wants a client certificate refuses ca.crt alone", func(t *testing.T) {
		target, _ := tlsServer(t, server, ca, true)
		if err := call(t, target, secretDir(t, map[string][]byte{"ca.crt": ca.certPEM})); err == nil {
			t.Error("DecideJob without a client certificate succeeded against a server requiring one")
		}
	})
	t.Run("a server certificate from another CA is refused", func(t *testing.T) {
		target, _ := tlsServer(t, server, ca, false)
		other := issue(t, "another CA", nil, true)
		if err := call(t, target, secretDir(t, map[string][]byte{"ca.crt": other.certPEM})); err == nil {
			t.Error("DecideJob trusted a server certificate its ca.crt did not sign")
		}
	})
	t.Run("the server name comes from the target", func(t *testing.T) {
		target, _ := tlsServer(t, server, ca, false) // the certificate names localhost only
		byIP := strings.Replace(target, "localhost", "127.0.0.1", 1)
		err := call(t, byIP, secretDir(t, map[string][]byte{"ca.crt": ca.certPEM}))
		if err == nil || !strings.Contains(err.Error(), "127.0.0.1") {
			t.Errorf("DecideJob on %s with a certificate for localhost: %v, want a name mismatch", byIP, err)
		}
	})

	for _, c := range []struct {
		name  string
		files map[string][]byte
		want  string
	}{
		{"no ca.crt", map[string][]byte{"tls.crt": controller.certPEM, "tls.key": controller.keyPEM}, "ca.crt"},
		{"ca.crt without a certificate", map[string][]byte{"ca.crt": []byte("not PEM")}, "no PEM certificate"},
		{"tls.crt without tls.key", map[string][]byte{"ca.crt": ca.certPEM, "tls.crt": controller.certPEM}, "tls.key"},
		{"tls.key without tls.crt", map[string][]byte{"ca.crt": ca.certPEM, "tls.key": controller.keyPEM}, "tls.crt"},
		{"a key that is not the certificate's", map[string][]byte{"ca.crt": ca.certPEM, "tls.crt": controller.certPEM, "tls.key": server.keyPEM}, "private key does not match"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := jobdecider.TLSFromDir(secretDir(t, c.files))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("TLSFromDir: %v, want an error naming %q", err, c.want)
			}
		})
	}
}
