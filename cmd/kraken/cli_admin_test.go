package main

import (
	"bytes"
	"encoding/json"
	"encoding/pem"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/NoLagApp/kraken/pkg/admin"
	"github.com/NoLagApp/kraken/pkg/testpeer"
)

// adminCLI runs `kraken admin` in this process against the admin
// listener at addr, with env added to KRAKEN_ADMIN_ADDR.
type adminCLI struct {
	t    *testing.T
	addr string
	env  []string
}

func (a adminCLI) run(args ...string) (code int, stdout, stderr string) {
	a.t.Helper()
	env := append([]string{"KRAKEN_ADMIN_ADDR=" + a.addr}, a.env...)
	return runIn(env, append([]string{"admin"}, args...)...)
}

// ok runs args and fails unless they exit 0.
func (a adminCLI) ok(args ...string) string {
	a.t.Helper()
	code, out, errs := a.run(args...)
	if code != 0 {
		a.t.Fatalf("kraken admin %s: exit %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), code, out, errs)
	}
	return out
}

// connID returns the id of actor's only connection, from list --json.
func (a adminCLI) connID(actor string) uint64 {
	a.t.Helper()
	var page admin.ConnectionsPage
	if err := json.Unmarshal([]byte(a.ok("list", "--json", "--actor", actor)), &page); err != nil {
		a.t.Fatal(err)
	}
	if len(page.Connections) != 1 {
		a.t.Fatalf("%s has %d connections, want 1: %+v", actor, len(page.Connections), page)
	}
	return page.Connections[0].ConnID
}

// TestAdminCLI: `kraken admin` against a broker's admin API: list (a
// table with the total, --actor, --json, pages), topics, info, disconnect
// by connection id (the default close and a chosen one), revoke by actor
// and by a token read from standard input (4001), the API's 401 for a wrong or missing secret, an unreachable
// address and a --node that names none (exit 1), bad arguments (exit 2), and last drain --stay, which
// makes /ready answer 503 while the process stays up.
func TestAdminCLI(t *testing.T) {
	adminAddr := "127.0.0.1:" + freePort(t)
	b := startBroker(t, "", "ADMIN_ADDR="+adminAddr, "ADMIN_SECRET=s3cret", "DRAIN_SECONDS=1")
	b.waitLogs(t, "admin listener", 1)
	cli := adminCLI{t: t, addr: adminAddr, env: []string{"KRAKEN_ADMIN_SECRET=s3cret"}}

	bob := testpeer.Dial(t, b.addr)
	bob.Auth("dev-token-bob")
	bob.Send("type", "subscribe", "topic", "demo/general/messages")
	bob.ExpectFields("type", "subscribed")
	alice := testpeer.Dial(t, b.addr)
	alice.Auth("dev-token-alice")

	t.Run("list", func(t *testing.T) {
		out := cli.ok("list")
		for _, want := range []string{"NODE", "CONN_ID", "ACTOR", "QUEUED", " bob ", " alice ", "demo-project", "websocket", "total 2\n"} {
			if !strings.Contains(out, want) {
				t.Errorf("list lacks %q:\n%s", want, out)
			}
		}
		out = cli.ok("list", "--actor", "bob")
		if !strings.Contains(out, " bob ") || strings.Contains(out, "alice") || !strings.Contains(out, "total 1\n") {
			t.Errorf("list --actor bob:\n%s", out)
		}
		out = cli.ok("list", "--limit", "1")
		if strings.Count(out, "demo-project") != 1 || !strings.Contains(out, "total 2, 1 shown") {
			t.Errorf("list --limit 1:\n%s", out)
		}
		var page admin.ConnectionsPage
		if err := json.Unmarshal([]byte(cli.ok("list", "--limit", "1", "--all", "--json")), &page); err != nil {
			t.Fatal(err)
		}
		if page.Total != 2 || len(page.Connections) != 2 || page.Next != "" ||
			page.Connections[0].ConnID >= page.Connections[1].ConnID {
			t.Errorf("list --limit 1 --all --json: %+v", page)
		}
	})

	t.Run("topics and info", func(t *testing.T) {
		if out := cli.ok("topics"); !strings.Contains(out, "demo/general/messages") || !strings.Contains(out, "total 1\n") {
			t.Errorf("topics:\n%s", out)
		}
		out := cli.ok("info")
		if !strings.Contains(out, "(the node asked): ready") || !strings.Contains(out, "2 websocket") {
			t.Errorf("info:\n%s", out)
		}
	})

	t.Run("secret", func(t *testing.T) {
		for _, c := range []struct {
			env  []string
			want string
		}{
			{[]string{"KRAKEN_ADMIN_SECRET=wrong"}, "HTTP 401 Unauthorized: wrong bearer secret"},
			{[]string{"KRAKEN_ADMIN_SECRET=wrong", "ADMIN_SECRET=s3cret"}, "HTTP 401 Unauthorized: wrong bearer secret"},
			{nil, "HTTP 401 Unauthorized: missing bearer secret"},
		} {
			code, out, errs := adminCLI{t: t, addr: adminAddr, env: c.env}.run("list")
			if code != 1 || out != "" || !strings.Contains(errs, c.want) {
				t.Errorf("env %q: exit %d, stdout %q, stderr %q; want 1 and %q", c.env, code, out, errs, c.want)
			}
		}
		// ADMIN_SECRET, the broker's own variable, serves when
		// KRAKEN_ADMIN_SECRET is unset.
		adminCLI{t: t, addr: adminAddr, env: []string{"ADMIN_SECRET=s3cret"}}.ok("list")
		// A secret read from a file with its newline is named, not sent.
		code, _, errs := adminCLI{t: t, addr: adminAddr, env: []string{"KRAKEN_ADMIN_SECRET=s3cret\n"}}.run("list")
		if code != 2 || !strings.Contains(errs, "KRAKEN_ADMIN_SECRET holds a space, a newline") {
			t.Errorf("a secret with a newline: exit %d, %s; want 2 naming it", code, errs)
		}
	})

	t.Run("usage and unreachable", func(t *testing.T) {
		for _, args := range [][]string{{}, {"nonsense"}, {"list", "--bogus"}, {"list", "extra"},
			{"list", "--transport", "carrier-pigeon"}, {"list", "--limit", "5000"}, {"disconnect"},
			{"disconnect", "--actor", "bob", "--code", "1234"}, {"revoke"}, {"revoke", "--actor", "a", "--token", "t"},
			{"info", "--admin-addr", "ftp://host"}, {"info", "--admin-addr", "nohost"}} {
			if code, _, errs := cli.run(args...); code != 2 || errs == "" {
				t.Errorf("kraken admin %q: exit %d, want 2 (%s)", args, code, errs)
			}
		}
		if code, _, _ := cli.run("list", "-h"); code != 0 {
			t.Errorf("list -h: exit %d, want 0", code)
		}
		closed := "127.0.0.1:" + freePort(t)
		code, _, errs := cli.run("info", "--admin-addr", closed)
		if code != 1 || !strings.Contains(errs, "cannot reach the admin listener at http://"+closed) {
			t.Errorf("unreachable: exit %d, %s", code, errs)
		}
		// A --node that names no node: the API's 404 says so.
		for _, args := range [][]string{{"list", "--node", "nosuch"}, {"disconnect", "--actor", "bob", "--node", "nosuch"}} {
			code, out, errs := cli.run(args...)
			if code != 1 || out != "" || !strings.Contains(errs, `HTTP 404 Not Found: no node "nosuch" is live`) {
				t.Errorf("kraken admin %q: exit %d, stdout %q, stderr %q", args, code, out, errs)
			}
		}
		for _, u := range []string{"http://" + adminAddr + "/", "http://" + adminAddr + "/api/"} {
			if code, _, errs := cli.run("info", "--admin-addr", u); code != 0 {
				t.Errorf("--admin-addr %s: exit %d, %s", u, code, errs)
			}
		}
		if code, _, errs := cli.run("--admin-addr", adminAddr, "info"); code != 2 || !strings.Contains(errs, "flags go after the command") {
			t.Errorf("a flag before the command: exit %d, %s", code, errs)
		}
	})

	t.Run("disconnect and revoke", func(t *testing.T) {
		out := cli.ok("disconnect", "--conn-id", itoa(cli.connID("bob")), "--code", "4000", "--reason", "bye now")
		if !strings.HasPrefix(out, "disconnected 1 connection\n") || !strings.Contains(out, "(the node asked)  1") {
			t.Errorf("disconnect:\n%s", out)
		}
		if code, reason := bob.ExpectClose(); code != 4000 || reason != "bye now" {
			t.Errorf("bob: close %d %q, want 4000 \"bye now\"", code, reason)
		}
		carol := testpeer.Dial(t, b.addr)
		carol.Auth("dev-token-bob")
		cli.ok("disconnect", "--conn-id", itoa(cli.connID("bob")))
		if code, reason := carol.ExpectClose(); code != 1008 || reason != "disconnected_by_operator" {
			t.Errorf("second bob: close %d %q, want 1008 disconnected_by_operator", code, reason)
		}
		out = cli.ok("revoke", "--actor", "alice")
		if !strings.HasPrefix(out, "revoked actor alice: 1 connection closed, ") {
			t.Errorf("revoke:\n%s", out)
		}
		if code, _ := alice.ExpectClose(); code != 4001 {
			t.Errorf("alice: close %d, want 4001", code)
		}
		dave := testpeer.Dial(t, b.addr)
		dave.Auth("dev-token-bob")
		var stdout, stderr bytes.Buffer
		env := lookupIn(append([]string{"KRAKEN_ADMIN_ADDR=" + adminAddr}, cli.env...))
		code := runAdminWithInput([]string{"revoke", "--token", "-"}, env, strings.NewReader("dev-token-bob\n"), &stdout, &stderr)
		if code != 0 || !strings.HasPrefix(stdout.String(), "revoked actor bob: 1 connection closed, ") {
			t.Errorf("revoke --token -: exit %d\nstdout: %s\nstderr: %s", code, &stdout, &stderr)
		}
		if code, _ := dave.ExpectClose(); code != 4001 {
			t.Errorf("bob, revoked by token: close %d, want 4001", code)
		}
		if out := cli.ok("list"); !strings.Contains(out, "no connections (total 0)") {
			t.Errorf("list after disconnect and revoke:\n%s", out)
		}
	})

	t.Run("drain stay", func(t *testing.T) {
		if code, body := get(t, "http://"+adminAddr+"/ready"); code != 200 {
			t.Fatalf("/ready before the drain: %d %s", code, body)
		}
		held := drainClients(t, b, 3)
		began := time.Now()
		out := cli.ok("drain", "--stay", "--wait", "10s")
		if !strings.Contains(out, "draining node ") || !strings.Contains(out, "stays up") ||
			!strings.Contains(out, "holds no client connection") {
			t.Errorf("drain --stay --wait: %s", out)
		}
		if took := time.Since(began); took < 500*time.Millisecond {
			t.Errorf("drain --wait returned %v after it began, before DRAIN_SECONDS=1 could close the clients", took)
		}
		expectDrainCloses(t, held)
		if code, body := get(t, "http://"+adminAddr+"/ready"); code != 503 || !strings.Contains(body, "draining") {
			t.Errorf("/ready after drain: %d %s", code, body)
		}
		// DRAIN_SECONDS=1: the drain has ended well within 2 s; the
		// process must still be there.
		time.Sleep(2 * time.Second)
		b.expectRunning(t)
		if code, body := get(t, "http://"+adminAddr+"/ready"); code != 503 || !strings.Contains(body, "the node is drained") {
			t.Errorf("/ready once drained: %d %s, want 503 saying it is drained", code, body)
		}
		code, _, errs := cli.run("drain")
		if code != 1 || !strings.Contains(errs, "HTTP 409") || strings.Count(errs, "already begun") != 1 {
			t.Errorf("second drain: exit %d, %s; want 1 and HTTP 409, said once", code, errs)
		}
		// With --wait, a drain already under way is waited for (a preStop
		// hook after a SIGUSR2).
		out = cli.ok("drain", "--stay", "--wait", "5s")
		if !strings.Contains(out, "already begun; waiting for it") || !strings.Contains(out, "holds no client connection") {
			t.Errorf("drain --wait while draining: %s", out)
		}
	})
}

func itoa(n uint64) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// TestAdminCLIFakeAPI: against a stand-in for the API, a node that did not
// answer is a warning line on standard error, an answer that is not the
// API's JSON error is shown with its status, and an https:// address is
// verified against --cafile.
func TestAdminCLIFakeAPI(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/api/connections":
			_, _ = io.WriteString(w, `{"connections":[{"node":"n1","conn_id":7,"actor":"bob","project":"p","transport":"websocket",`+
				`"remote_addr":"10.0.0.1:5","connected_at":"2026-01-02T03:04:05Z","authenticated":true,"subscriptions":2,"queued_bytes":9}],`+
				`"total":1,"nodes":[{"node":"n1","self":true,"answered":true,"count":1},{"node":"n2","answered":false,"error":"no answer within 3s"}]}`)
		default:
			http.Error(w, "teapot", http.StatusTeapot)
		}
	})
	srv := httptest.NewUnstartedServer(h)
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the handshake refused below
	srv.StartTLS()
	defer srv.Close()
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	cli := adminCLI{t: t, addr: srv.URL, env: []string{"KRAKEN_CAFILE=" + ca}}
	code, out, errs := cli.run("list")
	if code != 0 || !strings.Contains(out, "n1    7        bob") || !strings.Contains(out, "total 1\n") ||
		errs != "kraken admin list: warning: node n2 did not answer: no answer within 3s\n" {
		t.Errorf("list: exit %d\nstdout: %s\nstderr: %s", code, out, errs)
	}
	code, _, errs = cli.run("info")
	if code != 1 || errs != "kraken admin info: HTTP 418 I'm a teapot: teapot\n" {
		t.Errorf("info: exit %d, stderr %q", code, errs)
	}
	code, _, errs = adminCLI{t: t, addr: srv.URL}.run("list")
	if code != 1 || !strings.Contains(errs, "cannot reach the admin listener at "+srv.URL) || !strings.Contains(errs, "--cafile") {
		t.Errorf("without the CA: exit %d, stderr %q", code, errs)
	}
}
