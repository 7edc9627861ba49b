// Package certs holds the TLS certificate of a node's listeners (the
// WebSocket listener's wss:// port, MQTT over TLS, the admin listener):
// it loads the certificate and key files (TLS_CERT_FILE, TLS_KEY_FILE) and
// the optional client CA of mutual TLS (TLS_CLIENT_CA_FILE), reloads them
// without a restart (Reload: on SIGHUP, and when the files change, Changed),
// and builds the tls.Config of each listener (Config). A reload that fails
// keeps the certificate in force and says why (Err: the node's /ready,
// the log, kraken_tls_reloads_total{result="error"}); connections already
// open keep the certificate they were made with.
package certs

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/NoLagApp/kraken/pkg/metrics"
)

// Files names the PEM files of a Store.
type Files struct {
	// Cert is the certificate chain, leaf first (TLS_CERT_FILE).
	Cert string
	// Key is the leaf's private key (TLS_KEY_FILE).
	Key string
	// ClientCA, when not "", is the CA certificates a client certificate
	// must chain to on the listeners that ask for one (TLS_CLIENT_CA_FILE).
	ClientCA string
}

// loaded is one successful load of the files.
type loaded struct {
	cert     *tls.Certificate
	clientCA *x509.CertPool // nil without Files.ClientCA
	notAfter time.Time      // the leaf's expiry
}

// fileStamp is what Watch compares to see a file changed.
type fileStamp struct {
	size    int64
	modTime time.Time
}

// Store is the certificate in force and its reloads. Safe for concurrent
// use: handshakes read the certificate with one atomic load.
type Store struct {
	files Files
	cur   atomic.Pointer[loaded]

	mu      sync.Mutex   // serialises Reload
	tried   [3]fileStamp // the files as the last Reload found them, under mu
	lastErr atomic.Pointer[error]
	reloads [2]atomic.Uint64 // ok, failed
}

// Load reads files and returns their Store; the error says which file is
// missing, unreadable, not PEM, why the key does not match the
// certificate, or that the certificate has expired or is not valid yet (a
// certificate no client would accept is never served: a reload that finds
// one keeps the certificate in force).
func Load(files Files) (*Store, error) {
	s := &Store{files: files}
	s.tried = s.stamps()
	l, err := load(files)
	if err != nil {
		return nil, err
	}
	s.cur.Store(l)
	return s, nil
}

func load(f Files) (*loaded, error) {
	if f.Cert == "" || f.Key == "" {
		return nil, errors.New("certs: TLS_CERT_FILE and TLS_KEY_FILE are both required")
	}
	cert, err := tls.LoadX509KeyPair(f.Cert, f.Key)
	if err != nil {
		return nil, fmt.Errorf("certs: %s, %s: %w", f.Cert, f.Key, err)
	}
	now := time.Now()
	switch {
	case now.After(cert.Leaf.NotAfter):
		return nil, fmt.Errorf("certs: %s expired on %s", f.Cert, cert.Leaf.NotAfter.UTC().Format(time.RFC3339))
	case now.Before(cert.Leaf.NotBefore):
		return nil, fmt.Errorf("certs: %s is not valid before %s", f.Cert, cert.Leaf.NotBefore.UTC().Format(time.RFC3339))
	}
	l := &loaded{cert: &cert, notAfter: cert.Leaf.NotAfter}
	if f.ClientCA != "" {
		pem, err := os.ReadFile(f.ClientCA)
		if err != nil {
			return nil, fmt.Errorf("certs: client CA: %w", err)
		}
		l.clientCA = x509.NewCertPool()
		if !l.clientCA.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("certs: client CA %s holds no PEM certificate", f.ClientCA)
		}
	}
	return l, nil
}

func stampOf(name string) fileStamp {
	if name == "" {
		return fileStamp{}
	}
	fi, err := os.Stat(name)
	if err != nil {
		return fileStamp{size: -1}
	}
	return fileStamp{fi.Size(), fi.ModTime()}
}

// Reload reads the files again. On success new handshakes get the new
// certificate (and client CA); on failure the one in force stays, and the
// error is kept for Err until a reload succeeds.
func (s *Store) Reload() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tried = s.stamps()
	l, err := load(s.files)
	if err != nil {
		s.reloads[1].Add(1)
		s.lastErr.Store(&err)
		return err
	}
	s.cur.Store(l)
	s.reloads[0].Add(1)
	s.lastErr.Store(nil)
	return nil
}

// Changed reports whether a file differs, by size or modification time,
// from when Load or Reload last read it: a file that failed to load is
// not tried again until it changes once more.
func (s *Store) Changed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stamps() != s.tried
}

func (s *Store) stamps() (out [3]fileStamp) {
	for i, name := range []string{s.files.Cert, s.files.Key, s.files.ClientCA} {
		out[i] = stampOf(name)
	}
	return out
}

// Err is the error of the last reload when it failed (the certificate in
// force is then the one before it), nil otherwise.
func (s *Store) Err() error {
	if e := s.lastErr.Load(); e != nil {
		return *e
	}
	return nil
}

// Reloads returns the reloads that succeeded and that failed.
func (s *Store) Reloads() (ok, failed uint64) {
	return s.reloads[0].Load(), s.reloads[1].Load()
}

// NotAfter is the expiry of the certificate in force.
func (s *Store) NotAfter() time.Time { return s.cur.Load().notAfter }

// Certificate returns the certificate in force (tls.Config.GetCertificate).
func (s *Store) Certificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	return s.cur.Load().cert, nil
}

// Config returns a listener's tls.Config: TLS 1.2 and 1.3, the certificate
// in force at each handshake, session resumption (tickets, keys rotated by
// crypto/tls), and, when clientAuth is true and a client CA is configured,
// mutual TLS: a client certificate chaining to it is required. protos is
// the ALPN protocols offered, nil for none.
func (s *Store) Config(clientAuth bool, protos ...string) *tls.Config {
	cfg := &tls.Config{
		MinVersion:     tls.VersionTLS12,
		GetCertificate: s.Certificate,
		NextProtos:     protos,
	}
	if clientAuth && s.files.ClientCA != "" {
		cfg.ClientAuth = tls.RequireAndVerifyClientCert
		cfg.ClientCAs = s.cur.Load().clientCA
		base := cfg
		cfg.GetConfigForClient = func(*tls.ClientHelloInfo) (*tls.Config, error) {
			c := base.Clone()
			c.GetConfigForClient = nil
			c.ClientCAs = s.cur.Load().clientCA // a reloaded CA applies to new handshakes
			return c, nil
		}
	}
	return cfg
}

// MutualTLS reports whether a client CA is configured.
func (s *Store) MutualTLS() bool { return s.files.ClientCA != "" }

// Collect implements metrics.Component: the reloads by result and the
// expiry of the certificate in force.
func (s *Store) Collect(_ context.Context, d *metrics.Descs, ch chan<- prometheus.Metric) {
	ok, failed := s.Reloads()
	metrics.Counter(ch, d.TLSReloads, ok, "ok")
	metrics.Counter(ch, d.TLSReloads, failed, "error")
	metrics.Gauge(ch, d.TLSExpiry, float64(s.NotAfter().Unix()))
}
