package main

import (
	"context"
	"time"

	"go.uber.org/zap"

	"github.com/NoLagApp/kraken/pkg/certs"
	"github.com/NoLagApp/kraken/pkg/config"
	"github.com/NoLagApp/kraken/pkg/node"
)

// certWatchEvery is how often the certificate files are looked at for a
// change (size or modification time): a renewed certificate written by
// cert-manager or certbot is served within this, without a SIGHUP.
const certWatchEvery = 10 * time.Second

// tlsCerts is the certificate of the TLS listeners (pkg/certs), nil when
// none serves TLS.
type tlsCerts struct {
	store *certs.Store
	log   *zap.Logger
}

// newTLSCerts loads TLS_CERT_FILE, TLS_KEY_FILE and TLS_CLIENT_CA_FILE
// when a listener serves TLS (config.Config.TLSWanted); nil when none
// does. The error says which file is wrong.
func newTLSCerts(cfg config.Config, log *zap.Logger) (*tlsCerts, error) {
	if !cfg.TLSWanted() {
		return nil, nil
	}
	st, err := certs.Load(certs.Files{Cert: cfg.TLSCertFile, Key: cfg.TLSKeyFile, ClientCA: cfg.TLSClientCAFile})
	if err != nil {
		return nil, err
	}
	tc := &tlsCerts{store: st, log: log.Named("tls")}
	tc.log.Info("TLS certificate loaded", zap.String("cert_file", cfg.TLSCertFile),
		zap.Time("not_after", st.NotAfter()), zap.Bool("mutual_tls", st.MutualTLS()))
	if left := time.Until(st.NotAfter()); left < certExpiryWarning {
		tc.log.Warn("TLS certificate expires soon: renew it (it is reloaded without a restart)",
			zap.String("cert_file", cfg.TLSCertFile), zap.Int("days_left", int(left.Hours()/24)))
	}
	return tc, nil
}

// reload reads the files again (trigger: "sighup" or "file_changed") and
// logs the result; a failure keeps the certificate in force.
func (tc *tlsCerts) reload(trigger string) {
	if tc == nil {
		return
	}
	if err := tc.store.Reload(); err != nil {
		tc.log.Error("TLS certificate reload failed: the certificate in force stays", zap.String("trigger", trigger), zap.Error(err))
		return
	}
	tc.log.Info("Reloaded TLS certificate", zap.String("trigger", trigger), zap.Time("not_after", tc.store.NotAfter()))
}

// watch reloads the files when they change, every certWatchEvery, until
// ctx ends; done is closed when it returns. One goroutine per process.
func (tc *tlsCerts) watch(ctx context.Context) (done <-chan struct{}) {
	d := make(chan struct{})
	if tc == nil {
		close(d)
		return d
	}
	// Owned by serve, which waits on done.
	go func() {
		defer close(d)
		t := time.NewTicker(certWatchEvery)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if tc.store.Changed() {
					tc.reload("file_changed")
				}
			}
		}
	}()
	return d
}

// addReadyWarning makes a failed reload a warning of the admin /ready: the
// node stays ready, serving the certificate in force.
func (tc *tlsCerts) addReadyWarning(n *node.Node) {
	if tc != nil {
		n.AddReadyWarning("tls_certificate", tc.store.Err)
	}
}
