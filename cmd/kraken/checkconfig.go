package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/NoLagApp/kraken/pkg/auth/static"
	"github.com/NoLagApp/kraken/pkg/certs"
	"github.com/NoLagApp/kraken/pkg/config"
	"github.com/NoLagApp/kraken/pkg/server"
)

// testFlag reports whether args (the broker's flags) hold -t, as
// nats-server users type it, and returns them without it.
func testFlag(args []string) ([]string, bool) {
	for i, a := range args {
		switch a {
		case "--":
			return args, false
		case "-t", "--t":
			return append(append([]string{}, args[:i]...), args[i+1:]...), true
		}
	}
	return args, false
}

// runCheckConfig is `kraken check-config [flags]` (and `kraken -t
// [flags]`): it reads the environment and the flags exactly as the broker
// does (config.Load), validates every setting and, with the token file,
// the file itself strictly (static.Check, the validator of the broker's
// reloads: unknown permissions, grant patterns the topic rules refuse,
// ignored fields and refused entries are errors, with path, line and
// column), and
// files named by other settings. It prints a report on stdout and exits 0
// when nothing is an error (warnings allowed), 2 otherwise. It starts
// nothing and listens on nothing.
func runCheckConfig(args []string, lookup func(string) (string, bool), stdout, stderr io.Writer) int {
	if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "-help") {
		fmt.Fprint(stderr, "usage: kraken check-config [flags]   (or: kraken -t [flags])\n\n"+
			"Checks the settings from the environment and the flags, as the broker would read them,\n"+
			"and the token file. Prints every problem; exits 0 when there is no error, else 2.\n\n")
	}
	cfg, err := config.Load(args, lookup, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	r := &checkReport{w: stdout}
	if err != nil {
		for _, p := range problems(err) {
			r.errorf("%s", p)
		}
	} else {
		r.linef("settings: ok (all %d settings valid, environment and flags applied)", len(config.Vars()))
	}
	r.settingWarnings(cfg)
	switch {
	case cfg.AuthAllowAll:
		r.linef("token file: not used (AUTH_ALLOW_ALL=true)")
	case cfg.AuthBackend == "http":
		r.linef("token file: not used (AUTH_BACKEND=http)")
	case cfg.AuthFile != "":
		r.tokenFile(cfg.AuthFile)
	}
	for _, f := range []struct{ env, path string }{{"NATS_CREDS", cfg.NATSCreds}, {"NATS_TLS_CA", cfg.NATSTLSCA}} {
		if f.path == "" {
			continue
		}
		if fh, err := os.Open(f.path); err != nil {
			r.errorf("%s=%s: %v", f.env, f.path, unwrapPath(err))
		} else {
			_ = fh.Close()
		}
	}
	r.tlsCertificate(cfg, time.Now())
	if r.errors > 0 {
		fmt.Fprintf(stdout, "kraken check-config: %s, %s\n", plural(r.errors, "error"), plural(r.warnings, "warning"))
		return exitConfig
	}
	fmt.Fprintf(stdout, "kraken check-config: OK (%s)\n", plural(r.warnings, "warning"))
	return exitOK
}

// checkReport writes the lines of check-config and counts them.
type checkReport struct {
	w                io.Writer
	errors, warnings int
}

func (r *checkReport) linef(format string, args ...any) { fmt.Fprintf(r.w, format+"\n", args...) }

func (r *checkReport) errorf(format string, args ...any) {
	r.errors++
	r.linef("error: "+format, args...)
}

func (r *checkReport) warnf(format string, args ...any) {
	r.warnings++
	r.linef("warning: "+format, args...)
}

// settingWarnings reports valid settings an operator should know about.
func (r *checkReport) settingWarnings(cfg config.Config) {
	if cfg.AuthAllowAll {
		r.warnf("AUTH_ALLOW_ALL=true: every token is accepted with full access to every topic; development only")
	}
	if cfg.AuthHTTPInsecureSkipVerify {
		r.warnf("AUTH_HTTP_INSECURE_SKIP_VERIFY=true: the auth and control services' TLS certificates are not verified; development only")
	}
	if cfg.InternalSecret == server.DefaultInternalSecret {
		r.warnf("INTERNAL_SECRET is the placeholder %q: POST /internal/publish stays disabled", server.DefaultInternalSecret)
	}
	if cfg.AdminAddr != config.AddrOff {
		if !cfg.AdminOnLoopback() {
			r.warnf("ADMIN_ADDR=%s listens beyond loopback: /metrics, /ready and /health are not authenticated (the admin API and /debug/pprof take ADMIN_SECRET, required there); keep it on a private network", cfg.AdminAddr)
		}
	}
	if cfg.AuthBackend == "http" && cfg.AuthFile != config.Defaults().AuthFile {
		r.warnf("AUTH_BACKEND=http: AUTH_FILE=%s is ignored", cfg.AuthFile)
	}
	if cfg.DurableGroups && cfg.StoreBackend != "jetstream" {
		r.warnf("DURABLE_GROUPS=true has no effect without STORE_BACKEND=jetstream (STORE_BACKEND=%s): no group is durable", cfg.StoreBackend)
	}
}

// tokenFile checks the token file strictly and reports each problem as
// path:line:column. The heading says what the file amounts to: "ok (<n>
// tokens)", the tokens a broker serves from it (entries with an
// actorTokenId), when nothing is an error; otherwise the count of errors
// and that a running broker refuses to reload the file, since a reload
// uses the same validator (static.Check) and keeps the tokens in force.
func (r *checkReport) tokenFile(path string) {
	tokens, probs := static.Check(path)
	errs, warns := 0, 0
	for _, p := range probs {
		if p.Warning {
			warns++
		} else {
			errs++
		}
	}
	switch {
	case errs > 0:
		counts := plural(errs, "error")
		if warns > 0 {
			counts += ", " + plural(warns, "warning")
		}
		r.linef("token file %s: %s: a running broker refuses to reload this file and keeps the tokens in force", path, counts)
	case warns > 0:
		r.linef("token file %s: ok (%s), %s:", path, plural(tokens, "token"), plural(warns, "warning"))
	default:
		r.linef("token file %s: ok (%s)", path, plural(tokens, "token"))
	}
	r.errors += errs
	r.warnings += warns
	for _, p := range probs {
		if p.Line == 0 {
			r.linef("%s", p)
			continue
		}
		r.linef("%s:%s", path, p)
	}
}

func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// runPrintEnv is `kraken print-env [flags]`: every setting as NAME=value,
// in the order of -h, with the values the broker would run with (defaults,
// then the environment, then the flags); secrets (BACKEND_SECRET,
// INTERNAL_SECRET) print as ******** when set. Invalid settings are
// reported on stderr with exit status 2, as the broker reports them.
func runPrintEnv(args []string, lookup func(string) (string, bool), stdout, stderr io.Writer) int {
	cfg, err := config.Load(args, lookup, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil {
		fmt.Fprintf(stderr, "kraken print-env: invalid configuration:\n%v\n", err)
		return exitConfig
	}
	for _, v := range cfg.Values() {
		fmt.Fprintf(stdout, "%s=%s\n", v.Env, v.Shown())
	}
	return exitOK
}

// certExpiryWarning is how close to its expiry a certificate draws a
// warning from check-config.
const certExpiryWarning = 30 * 24 * time.Hour

// tlsCertificate checks the TLS certificate files as the broker loads them
// (pkg/certs: readable, PEM, the key matching the certificate, the client
// CA), and the certificate's validity at now: an error once expired or not
// yet valid, a warning within certExpiryWarning of its expiry.
func (r *checkReport) tlsCertificate(cfg config.Config, now time.Time) {
	if !cfg.TLSWanted() {
		if cfg.TLSCertFile != "" || cfg.TLSKeyFile != "" || cfg.TLSClientCAFile != "" {
			r.warnf("TLS_CERT_FILE, TLS_KEY_FILE or TLS_CLIENT_CA_FILE is set but no listener serves TLS (WSS_PORT, MQTTS_PORT, ADMIN_TLS): the files are not used")
		}
		return
	}
	if cfg.TLSCertFile == "" || cfg.TLSKeyFile == "" {
		return // reported with the settings
	}
	st, err := certs.Load(certs.Files{Cert: cfg.TLSCertFile, Key: cfg.TLSKeyFile, ClientCA: cfg.TLSClientCAFile})
	if err != nil {
		r.errorf("TLS certificate: %s", strings.TrimPrefix(err.Error(), "certs: "))
		return
	}
	notAfter := st.NotAfter()
	switch {
	case notAfter.Sub(now) < certExpiryWarning:
		r.warnf("TLS certificate %s expires in %d days (%s)", cfg.TLSCertFile, int(notAfter.Sub(now).Hours()/24), notAfter.UTC().Format(time.RFC3339))
	default:
		r.linef("TLS certificate: ok (%s, key matches, expires %s)", cfg.TLSCertFile, notAfter.UTC().Format("2006-01-02"))
	}
	switch {
	case cfg.TLSClientCAFile == "":
	case !cfg.MQTTEnabled || cfg.MQTTSPort == config.PortOff:
		if !cfg.AdminTLS || cfg.AdminAddr == config.AddrOff {
			r.warnf("TLS_CLIENT_CA_FILE=%s is not used: mutual TLS applies to MQTTS_PORT and the admin listener over TLS (ADMIN_TLS), neither of which is on", cfg.TLSClientCAFile)
			return
		}
		fallthrough
	default:
		r.linef("TLS client CA: ok (%s: mutual TLS on MQTTS_PORT and the admin listener over TLS, those that are on)", cfg.TLSClientCAFile)
	}
}
