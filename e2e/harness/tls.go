package harness

import (
	"crypto/x509"
	"crypto/x509/pkix"
	"net"
	"os"
	"path/filepath"
	"time"

	"job-decider.dev/e2e/pki"
)

// TLSFiles are PEM files for a TLS or mTLS connection to the service.
type TLSFiles struct {
	CA, ServerCert, ServerKey, ClientCert, ClientKey string
}

// WriteTLSFiles writes a fresh CA, a server certificate for 127.0.0.1 and
// localhost, and a client certificate, all signed by the CA, into dir.
func WriteTLSFiles(dir string) (*TLSFiles, error) {
	ca, err := pki.NewCA("job-decider-test-ca", 24*time.Hour)
	if err != nil {
		return nil, err
	}
	f := &TLSFiles{
		CA:         filepath.Join(dir, "tls-ca.pem"),
		ServerCert: filepath.Join(dir, "tls-server.pem"), ServerKey: filepath.Join(dir, "tls-server-key.pem"),
		ClientCert: filepath.Join(dir, "tls-client.pem"), ClientKey: filepath.Join(dir, "tls-client-key.pem"),
	}
	if err := os.WriteFile(f.CA, ca.CertPEM, 0o600); err != nil {
		return nil, err
	}
	issue := func(serial int64, cn string, usage x509.ExtKeyUsage, certPath, keyPath string) error {
		var ips []net.IP
		var dns []string
		if usage == x509.ExtKeyUsageServerAuth {
			ips, dns = []net.IP{net.IPv4(127, 0, 0, 1)}, []string{"localhost"}
		}
		certPEM, keyPEM, err := ca.Issue(serial, pkix.Name{CommonName: cn}, usage, ips, dns)
		if err != nil {
			return err
		}
		if err := os.WriteFile(certPath, certPEM, 0o600); err != nil {
			return err
		}
		return os.WriteFile(keyPath, keyPEM, 0o600)
	}
	if err := issue(2, "job-decider", x509.ExtKeyUsageServerAuth, f.ServerCert, f.ServerKey); err != nil {
		return nil, err
	}
	if err := issue(3, "job-decider-shim", x509.ExtKeyUsageClientAuth, f.ClientCert, f.ClientKey); err != nil {
		return nil, err
	}
	return f, nil
}
