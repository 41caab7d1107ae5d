package cluster

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"net"
	"os"
	"path/filepath"
	"time"

	e2epki "job-decider.dev/e2e/pki"
)

// pki is the key material one test cluster uses: a CA, the API server's
// serving certificate, an admin client certificate in system:masters, and the
// service-account token signing key.
type pki struct {
	CAFile, ServingCert, ServingKey  string
	AdminCert, AdminKey              string
	SAPublic, SAPrivate              string
	CAPEM, AdminCertPEM, AdminKeyPEM []byte
}

func writePKI(dir string) (*pki, error) {
	p := &pki{
		CAFile:      filepath.Join(dir, "ca.crt"),
		ServingCert: filepath.Join(dir, "apiserver.crt"),
		ServingKey:  filepath.Join(dir, "apiserver.key"),
		AdminCert:   filepath.Join(dir, "admin.crt"),
		AdminKey:    filepath.Join(dir, "admin.key"),
		SAPublic:    filepath.Join(dir, "sa.pub"),
		SAPrivate:   filepath.Join(dir, "sa.key"),
	}
	ca, err := e2epki.NewCA("job-decider-e2e-ca", 48*time.Hour)
	if err != nil {
		return nil, err
	}
	p.CAPEM = ca.CertPEM
	issue := ca.Issue
	servingCert, servingKey, err := issue(2, pkix.Name{CommonName: "kube-apiserver"}, x509.ExtKeyUsageServerAuth,
		[]net.IP{net.IPv4(127, 0, 0, 1), net.IPv4(10, 0, 0, 1)},
		[]string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"})
	if err != nil {
		return nil, err
	}
	p.AdminCertPEM, p.AdminKeyPEM, err = issue(3, pkix.Name{CommonName: "e2e-admin", Organization: []string{"system:masters"}}, x509.ExtKeyUsageClientAuth, nil, nil)
	if err != nil {
		return nil, err
	}

	saKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	saPriv, err := x509.MarshalPKCS8PrivateKey(saKey)
	if err != nil {
		return nil, err
	}
	saPub, err := x509.MarshalPKIXPublicKey(&saKey.PublicKey)
	if err != nil {
		return nil, err
	}

	files := map[string][]byte{
		p.CAFile:      p.CAPEM,
		p.ServingCert: servingCert,
		p.ServingKey:  servingKey,
		p.AdminCert:   p.AdminCertPEM,
		p.AdminKey:    p.AdminKeyPEM,
		p.SAPrivate:   pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: saPriv}),
		p.SAPublic:    pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: saPub}),
	}
	for path, data := range files {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			return nil, err
		}
	}
	return p, nil
}
