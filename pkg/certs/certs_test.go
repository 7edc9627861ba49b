package certs_test

import (
	"crypto/tls"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/NoLagApp/kraken/pkg/certs"
	"github.com/NoLagApp/kraken/pkg/certs/certstest"
)

func TestLoadRefusesWhatCannotServe(t *testing.T) {
	ca := certstest.New(t, "load")
	certFile, keyFile := ca.Server("a", time.Hour)
	_, otherKey := ca.Server("b", time.Hour)
	expired, expiredKey := ca.Server("expired", -time.Minute)
	garbage := t.TempDir() + "/garbage.pem"
	if err := os.WriteFile(garbage, []byte("junk"), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		files certs.Files
		want  string
	}{
		"no key":           {certs.Files{Cert: certFile}, "both required"},
		"missing file":     {certs.Files{Cert: certFile + ".gone", Key: keyFile}, "no such file"},
		"key of another":   {certs.Files{Cert: certFile, Key: otherKey}, "does not match"},
		"not PEM":          {certs.Files{Cert: garbage, Key: keyFile}, "failed to find any PEM data"},
		"client CA junk":   {certs.Files{Cert: certFile, Key: keyFile, ClientCA: garbage}, "holds no PEM certificate"},
		"client CA absent": {certs.Files{Cert: certFile, Key: keyFile, ClientCA: garbage + ".gone"}, "no such file"},
		"expired":          {certs.Files{Cert: expired, Key: expiredKey}, "expired on"},
	} {
		if _, err := certs.Load(tc.files); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Load error %v, want one containing %q", name, err, tc.want)
		}
	}
}

// TestReloadKeepsTheCertificateInForceOnFailure: a reload of a broken file
// keeps the certificate and reports why until a reload succeeds; a file
// that failed is not tried again until it changes.
func TestReloadKeepsTheCertificateInForceOnFailure(t *testing.T) {
	ca := certstest.New(t, "reload")
	certFile, keyFile := ca.Server("a", time.Hour)
	st, err := certs.Load(certs.Files{Cert: certFile, Key: keyFile})
	if err != nil {
		t.Fatal(err)
	}
	first, _ := st.Certificate(&tls.ClientHelloInfo{})
	if st.Changed() {
		t.Fatal("Changed right after Load")
	}
	if err := os.WriteFile(certFile, []byte("broken"), 0o600); err != nil {
		t.Fatal(err)
	}
	if !st.Changed() {
		t.Fatal("a rewritten file is not Changed")
	}
	if err := st.Reload(); err == nil {
		t.Fatal("Reload of a broken file succeeded")
	}
	if now, _ := st.Certificate(&tls.ClientHelloInfo{}); now != first || st.Err() == nil {
		t.Fatalf("after a failed reload: certificate replaced %v, Err %v", now != first, st.Err())
	}
	if st.Changed() {
		t.Fatal("a file that failed is Changed again before it changes")
	}
	renewed, renewedKey := ca.Server("b", time.Hour)
	for src, dst := range map[string]string{renewed: certFile, renewedKey: keyFile} {
		b, _ := os.ReadFile(src)
		if err := os.WriteFile(dst, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Reload(); err != nil {
		t.Fatal(err)
	}
	if now, _ := st.Certificate(&tls.ClientHelloInfo{}); now == first || st.Err() != nil {
		t.Fatalf("after a good reload: certificate replaced %v, Err %v", now != first, st.Err())
	}
	if ok, failed := st.Reloads(); ok != 1 || failed != 1 {
		t.Fatalf("reloads ok %d, failed %d; want 1, 1", ok, failed)
	}
}

// TestConfigAsksForAClientCertificateOnlyWhenAsked: mutual TLS needs both
// a client CA and a listener that asks for it.
func TestConfigAsksForAClientCertificateOnlyWhenAsked(t *testing.T) {
	ca := certstest.New(t, "mtls")
	certFile, keyFile := ca.Server("a", time.Hour)
	plain, _ := certs.Load(certs.Files{Cert: certFile, Key: keyFile})
	mutual, _ := certs.Load(certs.Files{Cert: certFile, Key: keyFile, ClientCA: ca.File})
	if c := plain.Config(true); c.ClientAuth != tls.NoClientCert || c.MinVersion != tls.VersionTLS12 {
		t.Fatalf("without a CA: ClientAuth %v, MinVersion %x", c.ClientAuth, c.MinVersion)
	}
	if c := mutual.Config(false); c.ClientAuth != tls.NoClientCert {
		t.Fatalf("a listener that does not ask: ClientAuth %v", c.ClientAuth)
	}
	if c := mutual.Config(true); c.ClientAuth != tls.RequireAndVerifyClientCert || c.ClientCAs == nil {
		t.Fatalf("mutual: ClientAuth %v", c.ClientAuth)
	}
}
