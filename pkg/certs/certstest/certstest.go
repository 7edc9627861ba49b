// Package certstest makes a throwaway certificate authority for tests: PEM
// files of server certificates for 127.0.0.1 and localhost, client
// certificates for mutual TLS, and the pool a client trusts.
package certstest

import (
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
)

// CA is a test certificate authority.
type CA struct {
	t    testing.TB
	dir  string
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	// File is the CA certificate's PEM file (a client's --cafile, or
	// TLS_CLIENT_CA_FILE).
	File   string
	serial int64
}

// New makes a CA named name whose files live in a temporary directory of
// t.
func New(t testing.TB, name string) *CA {
	t.Helper()
	key := newKey(t)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	ca := &CA{t: t, dir: t.TempDir(), cert: cert, key: key, serial: 1}
	ca.File = ca.write(name+"-ca.pem", "CERTIFICATE", der)
	return ca
}

// Pool is a pool holding the CA, a client's RootCAs.
func (ca *CA) Pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.cert)
	return p
}

// ClientConfig is a client's tls.Config trusting the CA, for the server
// name 127.0.0.1.
func (ca *CA) ClientConfig() *tls.Config {
	return &tls.Config{RootCAs: ca.Pool(), ServerName: "127.0.0.1"}
}

// Server issues a server certificate for 127.0.0.1, ::1 and localhost
// with common name name, valid for validFor, and returns its certificate
// and key files.
func (ca *CA) Server(name string, validFor time.Duration) (certFile, keyFile string) {
	der, key := ca.issue(name, validFor, x509.ExtKeyUsageServerAuth)
	return ca.write(name+".pem", "CERTIFICATE", der), ca.writeKey(name+"-key.pem", key)
}

// Client issues a client certificate with common name name, for mutual
// TLS, as a tls.Certificate and as files.
func (ca *CA) Client(name string) (cert tls.Certificate, certFile, keyFile string) {
	der, key := ca.issue(name, time.Hour, x509.ExtKeyUsageClientAuth)
	certFile, keyFile = ca.write(name+".pem", "CERTIFICATE", der), ca.writeKey(name+"-key.pem", key)
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		ca.t.Fatal(err)
	}
	return cert, certFile, keyFile
}

func (ca *CA) issue(name string, validFor time.Duration, usage x509.ExtKeyUsage) ([]byte, *ecdsa.PrivateKey) {
	ca.t.Helper()
	key := newKey(ca.t)
	ca.serial++
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(ca.serial), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(validFor),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage},
		DNSNames:    []string{"localhost"},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1"), net.IPv6loopback},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		ca.t.Fatal(err)
	}
	return der, key
}

func (ca *CA) writeKey(name string, key *ecdsa.PrivateKey) string {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		ca.t.Fatal(err)
	}
	return ca.write(name, "PRIVATE KEY", der)
}

func (ca *CA) write(name, typ string, der []byte) string {
	ca.t.Helper()
	p := filepath.Join(ca.dir, name)
	if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		ca.t.Fatal(err)
	}
	return p
}

func newKey(t testing.TB) *ecdsa.PrivateKey {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return key
}
