// Package js_test runs the quickstart's JavaScript programs
// (testdata/quickstart, the public Quick Start's text) and the ones of this
// folder with node, against the official @nolag/js-sdk builds and a kraken
// built from this tree:
//
//   - 1.14.0, what `npm install @nolag/js-sdk` gives users, on plain node;
//   - 1.3.0, the version the quickstart was first written against, which
//     reads the global WebSocket (node --experimental-websocket on Node 20).
//
// The builds are not on the npm registry: they are read from KRAKEN_SDK_DIR
// (default ../shared/sdk beside the repository), one unpacked package per
// folder js-sdk-<version>. Their two dependencies (ws@8, @msgpack/msgpack@3)
// are installed with npm once, into the user's cache folder. Without node,
// npm or the builds the tests skip, saying what is missing; with
// KRAKEN_REQUIRE_SDK=1 (as CI runs them) they fail instead.
package js_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/NoLagApp/kraken/pkg/certs/certstest"
)

// TestMain fails the package if a test leaves a goroutine behind.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var sdkVersions = []string{"1.14.0", "1.3.0"}

// What the quickstart's programs print.
const (
	subscribed = "bob is subscribed"
	published  = "alice published"
	got        = "bob got: { text: 'hello from alice' }"
)

// quickstartURL is the broker address the quickstart's programs are written
// with; the tests put their broker's there.
const quickstartURL = "ws://localhost:8080/ws"

// refusedTopic is outside the demo tokens' grants (demo/general/#).
const refusedTopic = "other/x/y"

// refused is what the quickstart's subscriber prints, per version, when its
// topic is refusedTopic: on stdout (the subscribe callback) and on stderr
// (the error event). 1.3.0 calls the subscribe callback at once without an
// error, whatever the broker answers.
var refused = map[string]struct{ stdout, stderr string }{
	"1.14.0": {
		"subscribe failed: unknown_topic (42940) on 'other/x/y' — topic is outside this token's grants",
		"error: unknown_topic (42940) on 'other/x/y' — topic is outside this token's grants",
	},
	"1.3.0": {subscribed, "error: not_authorized"},
}

// TestOfficialSDK runs, for each SDK version against its own broker: this
// folder's programs; the quickstart's subscriber on a topic outside its
// grants; the quickstart's subscriber and publisher, then a broker restart
// on the same port, after which the subscriber (which subscribes in its
// connect handler) is subscribed again and receives the next publish.
func TestOfficialSDK(t *testing.T) {
	e := needEnv(t)
	for _, version := range sdkVersions {
		t.Run(version, func(t *testing.T) {
			t.Parallel()
			js := e.sdk(t, version)
			b := startBroker(t, e.bin, filepath.Join(e.root, "examples", "auth.json"))
			quickstart := func(name string) []byte {
				src := read(t, filepath.Join("testdata", "quickstart", name))
				if n := strings.Count(string(src), quickstartURL); n != 1 {
					t.Fatalf("testdata/quickstart/%s names %s %d times, want once", name, quickstartURL, n)
				}
				return []byte(strings.Replace(string(src), quickstartURL, b.url(), 1))
			}

			t.Run("examples", func(t *testing.T) {
				for _, name := range []string{"subscriber.mjs", "publisher.mjs"} {
					js.write(t, "example-"+name, read(t, name))
				}
				env := "KRAKEN_URL=" + b.url()
				sub := js.start(t, "example-subscriber.mjs", env)
				sub.expect(t, b, []string{subscribed}, nil)
				js.run(t, b, "example-publisher.mjs", env).expect(t, b, []string{published}, nil)
				sub.expect(t, b, []string{subscribed, got}, nil)
			})

			t.Run("refused", func(t *testing.T) {
				src := strings.ReplaceAll(string(quickstart("subscriber.mjs")), "demo/general/messages", refusedTopic)
				js.write(t, "refused.mjs", []byte(src))
				want := refused[version]
				js.start(t, "refused.mjs").expect(t, b, []string{want.stdout}, []string{want.stderr})
			})

			t.Run("quickstart", func(t *testing.T) {
				js.write(t, "subscriber.mjs", quickstart("subscriber.mjs"))
				js.write(t, "publisher.mjs", quickstart("publisher.mjs"))
				sub := js.start(t, "subscriber.mjs")
				sub.expect(t, b, []string{subscribed}, nil)
				js.run(t, b, "publisher.mjs").expect(t, b, []string{published}, nil)
				sub.expect(t, b, []string{subscribed, got}, nil)

				b.stop(t)
				b.start(t)
				// The SDK reconnects about 5 s after the drop; what it logs on
				// stderr meanwhile is not part of the quickstart's promise.
				sub.expectStdout(t, b, []string{subscribed, got, subscribed}, 20*time.Second)
				js.run(t, b, "publisher.mjs").expect(t, b, []string{published}, nil)
				sub.expectStdout(t, b, []string{subscribed, got, subscribed, got}, 5*time.Second)
			})
		})
	}
}

// TestOfficialSDKOverTLS runs the folder's examples with each SDK build
// against the broker's wss:// listener (WSS_PORT), its certificate issued
// by a test CA that node trusts through NODE_EXTRA_CA_CERTS, as a user
// with a private CA would run them.
func TestOfficialSDKOverTLS(t *testing.T) {
	e := needEnv(t)
	ca := certstest.New(t, "sdk")
	certFile, keyFile := ca.Server("kraken", time.Hour)
	for _, version := range sdkVersions {
		t.Run(version, func(t *testing.T) {
			t.Parallel()
			js := e.sdk(t, version)
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			_, port, _ := net.SplitHostPort(ln.Addr().String())
			ln.Close()
			b := startBroker(t, e.bin, filepath.Join(e.root, "examples", "auth.json"),
				"WSS_PORT="+port, "TLS_CERT_FILE="+certFile, "TLS_KEY_FILE="+keyFile)
			for _, name := range []string{"subscriber.mjs", "publisher.mjs"} {
				js.write(t, "example-"+name, read(t, name))
			}
			env := []string{"KRAKEN_URL=wss://localhost:" + port + "/ws", "NODE_EXTRA_CA_CERTS=" + ca.File}
			sub := js.start(t, "example-subscriber.mjs", env...)
			sub.expect(t, b, []string{subscribed}, nil)
			js.run(t, b, "example-publisher.mjs", env...).expect(t, b, []string{published}, nil)
			sub.expect(t, b, []string{subscribed, got}, nil)
		})
	}
}

// TestTokenRefresh runs testdata/reauth.mjs on @nolag/js-sdk 1.14.0: bob
// with a token provider minting unsigned JWT-shaped tokens that expire 10 s
// after they are minted, against a broker whose HTTP auth service gives each
// token its exp as auth_expires_at (docs/backends.md), as nolag-core does.
// The SDK refreshes its token 30 s before exp, and at the earliest 5 s after
// it connected: here 5 s after each connect or refresh, each time with a
// token from its provider in {type:"reauth", token} on the live connection.
//
//   - accepted: kraken answers {type:"reauth", success:true}; the SDK keeps
//     its connection (no second connect, no close), past the first token's
//     expiry (which an accepted reauth replaces; without it kraken would
//     close with 4003), and a message published then arrives on it.
//   - refused: the provider's second token is carol's; kraken answers
//     {type:"reauth", success:false, error:"actor_mismatch", code:40300},
//     and the SDK closes with 1000 token_refresh and reconnects at once
//     with the provider's next token (bob's again), subscribes again in its
//     connect handler and receives.
func TestTokenRefresh(t *testing.T) {
	e := needEnv(t)
	js := e.sdk(t, "1.14.0")
	js.write(t, "reauth.mjs", read(t, filepath.Join("testdata", "reauth.mjs")))
	const arrived = "bob got: { text: 'after the refresh' }"

	t.Run("accepted", func(t *testing.T) {
		t.Parallel()
		svc, b := startJWTBroker(t, e.bin, "bob")
		p := js.start(t, "reauth.mjs", "KRAKEN_URL="+b.url(), "ACTORS=bob", "TOKEN_SECONDS=10")
		refreshed := []string{`sdk received: {"type":"reauth","success":true}`, "sdk: Client token refreshed in-band"}
		start := append([]string{"token 1: bob", "connect", "subscribed", "token 2: bob"}, refreshed...)
		p.expectStart(t, b, start, 15*time.Second)
		tokens := svc.tokens()
		if len(tokens) < 2 || tokens[0] != (jwtClaims{"bob", tokens[0].Exp, 1}) || tokens[1] != (jwtClaims{"bob", tokens[1].Exp, 2}) {
			t.Fatalf("the auth service validated %+v, want bob's tokens 1 and 2 first", tokens)
		}
		// kraken closes a connection within a second of its token's expiry.
		time.Sleep(time.Until(time.Unix(tokens[0].Exp, 0).Add(1500 * time.Millisecond)))
		b.publish(t, "demo/general/messages", `{"text":"after the refresh"}`)
		p.waitFor(func(lines []string) bool { return slices.Contains(lines, arrived) }, 5*time.Second)
		// After the start: the message, and further refreshes only.
		lines := p.stdout.lines()
		for i, line := range lines {
			minted := strings.HasPrefix(line, "token ") && strings.HasSuffix(line, ": bob")
			if i < len(start) && line != start[i] || i >= len(start) && line != arrived && !minted && !slices.Contains(refreshed, line) {
				t.Fatalf("node reauth.mjs printed\n%s\nwant %q, then %q once and further refreshes only\nbroker:\n%s",
					p, start, arrived, b.log.text())
			}
		}
		n := 0
		for _, line := range lines {
			if line == arrived {
				n++
			}
		}
		if n != 1 || len(p.stderr.lines()) != 0 {
			t.Fatalf("node reauth.mjs printed\n%s\nwant %q once and nothing on stderr\nbroker:\n%s", p, arrived, b.log.text())
		}
	})

	t.Run("refused", func(t *testing.T) {
		t.Parallel()
		svc, b := startJWTBroker(t, e.bin, "bob", "carol")
		p := js.start(t, "reauth.mjs", "KRAKEN_URL="+b.url(), "ACTORS=bob,carol,bob", "TOKEN_SECONDS=10")
		want := []string{"token 1: bob", "connect", "subscribed", "token 2: carol",
			`sdk received: {"type":"reauth","success":false,"error":"actor_mismatch","code":40300}`,
			"sdk: Reauth rejected: actor_mismatch",
			"sdk: In-band reauth unavailable, refreshing via reconnect",
			"sdk: Reconnecting with refreshed client token",
			"token 3: bob", "connect", "subscribed"}
		p.expectStart(t, b, want, 15*time.Second)
		b.publish(t, "demo/general/messages", `{"text":"after the refresh"}`)
		p.expect(t, b, append(want, arrived), nil)
		var subs []string
		for _, c := range svc.tokens() {
			subs = append(subs, c.Sub)
		}
		if !slices.Equal(subs, []string{"bob", "carol", "bob"}) {
			t.Fatalf("the auth service validated the tokens of %q, want bob, carol, bob", subs)
		}
	})
}

// TestReadmeMatchesQuickstart: the README's two programs are the
// quickstart's without its comments, and the README and this folder's
// README quote what the SDKs print.
func TestReadmeMatchesQuickstart(t *testing.T) {
	readme := string(read(t, filepath.Join("..", "..", "README.md")))
	for _, name := range []string{"subscriber.mjs", "publisher.mjs"} {
		block, ok := codeBlock(readme, "// "+name)
		if !ok {
			t.Errorf("README.md has no ```js block starting with // %s", name)
			continue
		}
		if have, want := code(block), code(string(read(t, filepath.Join("testdata", "quickstart", name)))); have != want {
			t.Errorf("README.md's %s is not testdata/quickstart/%s without its comments:\n%s\nwant:\n%s", name, name, have, want)
		}
	}
	quotes := map[string][]string{
		filepath.Join("..", "..", "README.md"): {got, refused["1.14.0"].stdout, refused["1.3.0"].stderr},
		"README.md":                            {subscribed, published, got},
	}
	for file, want := range quotes {
		text := strings.Join(strings.Fields(string(read(t, file))), " ")
		for _, q := range want {
			if !strings.Contains(text, q) {
				t.Errorf("%s does not quote %q", file, q)
			}
		}
	}
}

// codeBlock returns the body of the ```js block of md whose first line is
// first.
func codeBlock(md, first string) (string, bool) {
	_, rest, ok := strings.Cut(md, "```js\n"+first+"\n")
	if !ok {
		return "", false
	}
	body, _, ok := strings.Cut(rest, "\n```")
	return body, ok
}

// code is src without its comment lines and blank lines.
func code(src string) string {
	var keep []string
	for line := range strings.SplitSeq(src, "\n") {
		if s := strings.TrimSpace(line); s != "" && !strings.HasPrefix(s, "//") {
			keep = append(keep, line)
		}
	}
	return strings.Join(keep, "\n")
}

func read(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// env is what the SDK tests need: the repository, the SDK builds, their
// dependencies and a broker binary.
type env struct {
	root   string // the repository
	sdkDir string // js-sdk-<version> folders
	deps   string // a node_modules holding ws and @msgpack/msgpack
	bin    string // kraken
}

// missing skips the test with msg, or fails it under KRAKEN_REQUIRE_SDK=1.
func missing(t *testing.T, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if os.Getenv("KRAKEN_REQUIRE_SDK") == "1" {
		t.Fatalf("%s (KRAKEN_REQUIRE_SDK=1: the official JavaScript SDK tests must run)", msg)
	}
	t.Skipf("SKIPPED: %s; the quickstart and examples/js are NOT tested against the official JavaScript SDK", msg)
}

func needEnv(t *testing.T) *env {
	t.Helper()
	if testing.Short() {
		t.Skip("runs node against the official JavaScript SDK builds")
	}
	for _, cmd := range []string{"node", "npm"} {
		if _, err := exec.LookPath(cmd); err != nil {
			missing(t, "%s not found: install Node.js 20 or later with npm", cmd)
		}
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	e := &env{root: root, sdkDir: os.Getenv("KRAKEN_SDK_DIR")}
	if e.sdkDir == "" {
		e.sdkDir = filepath.Join(root, "..", "shared", "sdk")
	}
	for _, v := range sdkVersions {
		if _, err := os.Stat(filepath.Join(e.sdkDir, "js-sdk-"+v, "package.json")); err != nil {
			missing(t, "the @nolag/js-sdk %s build is not at %s (KRAKEN_SDK_DIR names the folder holding js-sdk-%s/)",
				v, filepath.Join(e.sdkDir, "js-sdk-"+v), v)
		}
	}
	e.deps = installDeps(t)
	e.bin = buildBroker(t)
	return e
}

// sdkDeps are the SDK's dependencies from npm, as its builds need them.
var sdkDeps = []string{"ws@8", "@msgpack/msgpack@3"}

// installDeps returns a node_modules holding sdkDeps, installed once into
// the user's cache folder: into a fresh folder, then renamed into place, so
// concurrent runs never see half an install.
func installDeps(t *testing.T) string {
	t.Helper()
	base, err := os.UserCacheDir()
	if err != nil {
		base = os.TempDir()
	}
	dir := filepath.Join(base, "kraken", "js-sdk-deps-ws8-msgpack3")
	present := func() bool {
		for _, p := range []string{"ws", "@msgpack/msgpack"} {
			if _, err := os.Stat(filepath.Join(dir, "node_modules", p, "package.json")); err != nil {
				return false
			}
		}
		return true
	}
	if present() {
		return filepath.Join(dir, "node_modules")
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		t.Fatal(err)
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), "js-sdk-deps-installing-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(tmp) // gone already once renamed
	// A package.json of its own, so npm installs here and not into a parent.
	if err := os.WriteFile(filepath.Join(tmp, "package.json"), []byte(`{"private": true}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "npm", append([]string{"install", "--no-save", "--no-audit", "--no-fund", "--no-update-notifier", "--loglevel=error"}, sdkDeps...)...)
	cmd.Dir = tmp
	if out, err := cmd.CombinedOutput(); err != nil {
		missing(t, "npm install %s failed: %v\n%s", strings.Join(sdkDeps, " "), err, out)
	}
	if err := os.Rename(tmp, dir); err != nil && !present() {
		t.Fatalf("installing the SDK's dependencies into %s: %v (remove that folder and run again)", dir, err)
	}
	return filepath.Join(dir, "node_modules")
}

// buildBroker builds cmd/kraken, with the race detector when the tests run
// with it.
func buildBroker(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "kraken")
	args := []string{"build", "-o", bin}
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, s := range info.Settings {
			if s.Key == "-race" && s.Value == "true" {
				args = append(args, "-race")
			}
		}
	}
	out, err := exec.Command("go", append(args, "github.com/NoLagApp/kraken/cmd/kraken")...).CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// sdk is one SDK version in a folder of its own, where node finds it as
// @nolag/js-sdk for the programs written there.
type sdk struct {
	dir   string
	flags []string // node's
}

func (e *env) sdk(t *testing.T, version string) *sdk {
	t.Helper()
	s := &sdk{dir: t.TempDir()}
	modules := filepath.Join(s.dir, "node_modules")
	if err := os.CopyFS(filepath.Join(modules, "@nolag", "js-sdk"), os.DirFS(filepath.Join(e.sdkDir, "js-sdk-"+version))); err != nil {
		t.Fatal(err)
	}
	// node resolves the SDK's imports from its real path: the copy above.
	for _, dep := range []string{"ws", "@msgpack"} {
		if err := os.Symlink(filepath.Join(e.deps, dep), filepath.Join(modules, dep)); err != nil {
			t.Fatal(err)
		}
	}
	if version == "1.3.0" {
		// 1.3.0 sends through the global WebSocket: Node 22 has one, Node
		// 20 behind a flag.
		for _, flags := range [][]string{nil, {"--experimental-websocket"}} {
			check := exec.Command("node", append(slices.Clone(flags), "-e", "process.exit(typeof WebSocket === 'function' ? 0 : 1)")...)
			if check.Run() == nil {
				s.flags = flags
				return s
			}
		}
		out, _ := exec.Command("node", "--version").Output()
		missing(t, "node %s has no global WebSocket, even with --experimental-websocket: @nolag/js-sdk 1.3.0 needs Node 20.10 or later",
			strings.TrimSpace(string(out)))
	}
	return s
}

// write puts the program src into the SDK's folder as name.
func (s *sdk) write(t *testing.T, name string, src []byte) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(s.dir, name), src, 0o644); err != nil {
		t.Fatal(err)
	}
}

// start runs node on the program name, with env added to the environment,
// until it exits or the test ends.
func (s *sdk) start(t *testing.T, name string, env ...string) *proc {
	t.Helper()
	cmd := exec.Command("node", append(slices.Clone(s.flags), name)...)
	cmd.Dir = s.dir
	cmd.Env = append(os.Environ(), env...)
	p := &proc{name: name, stdout: &output{}, stderr: &output{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = p.stdout, p.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-p.done
	})
	return p
}

// run runs node on the program name and waits, at most 15 s, for it to exit
// with status 0.
func (s *sdk) run(t *testing.T, b *broker, name string, env ...string) *proc {
	t.Helper()
	p := s.start(t, name, env...)
	select {
	case <-p.done:
	case <-time.After(15 * time.Second):
		t.Fatalf("node %s did not exit within 15 s\n%s\nbroker:\n%s", name, p, b.log.text())
	}
	if p.err != nil {
		t.Fatalf("node %s: %v\n%s\nbroker:\n%s", name, p.err, p, b.log.text())
	}
	return p
}

// proc is a running node program.
type proc struct {
	name           string
	stdout, stderr *output
	done           chan struct{}
	err            error // once done is closed
}

func (p *proc) String() string {
	return fmt.Sprintf("stdout: %q\nstderr: %q", p.stdout.lines(), p.stderr.lines())
}

// expect waits, at most 10 s, until the program has printed as many lines
// as wanted, then fails the test unless they are the ones wanted. A nil
// stderr wants none.
func (p *proc) expect(t *testing.T, b *broker, stdout, stderr []string) {
	t.Helper()
	p.wait(len(stdout), len(stderr), 10*time.Second)
	if !slices.Equal(p.stdout.lines(), stdout) || !slices.Equal(p.stderr.lines(), stderr) {
		t.Fatalf("node %s printed\n%s\nwant\nstdout: %q\nstderr: %q\nbroker:\n%s", p.name, p, stdout, stderr, b.log.text())
	}
}

// expectStdout is expect for stdout alone, waiting at most wait.
func (p *proc) expectStdout(t *testing.T, b *broker, stdout []string, wait time.Duration) {
	t.Helper()
	p.wait(len(stdout), 0, wait)
	if !slices.Equal(p.stdout.lines(), stdout) {
		t.Fatalf("node %s printed\n%s\nwant\nstdout: %q\nbroker:\n%s", p.name, p, stdout, b.log.text())
	}
}

// expectStart is expectStdout for the first lines printed: it waits, at
// most wait, until the program has printed as many lines as wanted, then
// fails the test unless the first ones are those wanted.
func (p *proc) expectStart(t *testing.T, b *broker, stdout []string, wait time.Duration) {
	t.Helper()
	p.wait(len(stdout), 0, wait)
	if lines := p.stdout.lines(); len(lines) < len(stdout) || !slices.Equal(lines[:len(stdout)], stdout) {
		t.Fatalf("node %s printed\n%s\nwant first\nstdout: %q\nbroker:\n%s", p.name, p, stdout, b.log.text())
	}
}

// waitFor waits, at most wait, until the program's stdout lines satisfy
// ok or it exits.
func (p *proc) waitFor(ok func(lines []string) bool, wait time.Duration) {
	deadline := time.Now().Add(wait)
	for time.Now().Before(deadline) && !ok(p.stdout.lines()) {
		select {
		case <-p.done:
			return
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func (p *proc) wait(stdout, stderr int, wait time.Duration) {
	deadline := time.Now().Add(wait)
	for time.Now().Before(deadline) {
		if len(p.stdout.lines()) >= stdout && len(p.stderr.lines()) >= stderr {
			return
		}
		select {
		case <-p.done:
			return
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// output collects what a process writes.
type output struct {
	mu sync.Mutex
	b  strings.Builder
}

func (o *output) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.b.Write(p)
}

func (o *output) text() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.b.String()
}

// lines returns the complete lines written, without node's own warnings
// (such as the one --experimental-websocket prints).
func (o *output) lines() []string {
	text := o.text()
	text = text[:strings.LastIndexByte(text, '\n')+1]
	var out []string
	for line := range strings.Lines(text) {
		line = strings.TrimSuffix(line, "\n")
		if strings.HasPrefix(line, "(node:") || strings.HasPrefix(line, "(Use `node --trace-warnings") {
			continue
		}
		out = append(out, line)
	}
	return out
}

// broker is a kraken process on a fixed loopback port, with the demo
// tokens or the settings env.
type broker struct {
	bin, addr, authFile string
	env                 []string
	log                 *output
	cmd                 *exec.Cmd
	done                chan struct{}
	err                 error // once done is closed
}

func (b *broker) url() string { return "ws://" + b.addr + "/ws" }

// startBroker starts a broker with the token file authFile (none when
// empty) and the settings env (NAME=value) added.
func startBroker(t *testing.T, bin, authFile string, env ...string) *broker {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b := &broker{bin: bin, addr: ln.Addr().String(), authFile: authFile, env: env, log: &output{}}
	ln.Close()
	b.start(t)
	t.Cleanup(func() {
		if b.cmd != nil {
			_ = b.cmd.Process.Kill()
			<-b.done
		}
		if strings.Contains(b.log.text(), "WARNING: DATA RACE") {
			t.Errorf("the broker reported a data race:\n%s", b.log.text())
		}
	})
	return b
}

// healthClient asks a broker's /health and keeps no connection open.
var healthClient = &http.Client{Timeout: time.Second, Transport: &http.Transport{DisableKeepAlives: true}}

// start starts the broker and waits, at most 10 s, until /health answers.
// Its environment is only what is set here and b.env, whatever the test's.
func (b *broker) start(t *testing.T) {
	t.Helper()
	_, port, _ := net.SplitHostPort(b.addr)
	cmd := exec.Command(b.bin)
	cmd.Env = []string{"WS_HOST=127.0.0.1", "WS_PORT=" + port, "ADMIN_ADDR=off", "LOG_FORMAT=console"}
	if b.authFile != "" {
		cmd.Env = append(cmd.Env, "AUTH_FILE="+b.authFile)
	}
	cmd.Env = append(cmd.Env, b.env...)
	cmd.Stdout, cmd.Stderr = b.log, b.log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	b.cmd, b.done = cmd, make(chan struct{})
	go func(done chan struct{}) {
		b.err = cmd.Wait()
		close(done)
	}(b.done)
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if resp, err := healthClient.Get("http://" + b.addr + "/health"); err == nil {
			resp.Body.Close()
			return
		}
		select {
		case <-b.done:
			t.Fatalf("the broker exited: %v\n%s", b.err, b.log.text())
		case <-time.After(20 * time.Millisecond):
		}
	}
	t.Fatalf("the broker did not answer /health within 10 s:\n%s", b.log.text())
}

// stop stops the broker as docker compose restart does (SIGTERM) and waits,
// at most 10 s, for it to exit with status 0.
func (b *broker) stop(t *testing.T) {
	t.Helper()
	if err := b.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-b.done:
	case <-time.After(10 * time.Second):
		t.Fatalf("the broker did not stop within 10 s of SIGTERM:\n%s", b.log.text())
	}
	b.cmd = nil
	if err := b.err; err != nil {
		t.Fatalf("the broker stopped with %v:\n%s", err, b.log.text())
	}
}

// internalSecret is the INTERNAL_SECRET of the brokers startJWTBroker
// starts, for their POST /internal/publish.
const internalSecret = "sdk-test-internal-secret"

// startJWTBroker starts a jwtAuthService allowing the tokens of actors, and
// a broker using it (AUTH_BACKEND=http) with POST /internal/publish on.
func startJWTBroker(t *testing.T, bin string, actors ...string) (*jwtAuthService, *broker) {
	t.Helper()
	svc := &jwtAuthService{actors: actors}
	srv := httptest.NewServer(svc)
	t.Cleanup(srv.Close) // after the broker's cleanup: it is registered first
	b := startBroker(t, bin, "", "AUTH_BACKEND=http", "AUTH_HTTP_URL="+srv.URL+"/v1/kraken",
		"INTERNAL_SECRET="+internalSecret)
	return svc, b
}

// jwtAuthService is an HTTP auth service (docs/backends.md) for unsigned
// JWT-shaped tokens (header.payload.sig, base64url): /validate allows a
// token whose payload's sub is one of actors, as that actor of demo-org,
// demo-project and demo-app with pubSub on demo/general/#, and gives its
// exp as auth_expires_at; it denies any other token and every other
// request.
type jwtAuthService struct {
	actors    []string
	mu        sync.Mutex
	validated []jwtClaims // the tokens allowed, in the order asked
}

// jwtClaims is what testdata/reauth.mjs puts in a token: its actor, its
// expiry (unix seconds) and its number among the tokens it minted.
type jwtClaims struct {
	Sub string `json:"sub"`
	Exp int64  `json:"exp"`
	N   int    `json:"n"`
}

func (a *jwtAuthService) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req struct {
		AccessToken string `json:"accessToken"`
	}
	_ = json.NewDecoder(r.Body).Decode(&req)
	w.Header().Set("Content-Type", "application/json")
	var c jwtClaims
	parts := strings.Split(req.AccessToken, ".")
	if len(parts) == 3 {
		if payload, err := base64.RawURLEncoding.DecodeString(parts[1]); err == nil {
			_ = json.Unmarshal(payload, &c)
		}
	}
	if r.URL.Path != "/v1/kraken/validate" || !slices.Contains(a.actors, c.Sub) || c.Exp == 0 {
		_, _ = w.Write([]byte(`{"result":"deny"}`))
		return
	}
	a.mu.Lock()
	a.validated = append(a.validated, c)
	a.mu.Unlock()
	fmt.Fprintf(w, `{"result":"allow","client_attrs":{"actor_token_id":%q,"organization_id":"demo-org",
		"project_id":"demo-project","auth_expires_at":%d,"apps":[{"app_id":"demo-app","app_name":"demo",
		"allowed_topics":[{"pattern":"demo/general/#","permission":"pubSub"}]}]}}`, c.Sub, c.Exp)
}

// tokens returns the tokens the service allowed, in the order asked.
func (a *jwtAuthService) tokens() []jwtClaims {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.validated)
}

// publish publishes the JSON payload to the subscribers of the demo-app
// pattern topic through POST /internal/publish.
func (b *broker) publish(t *testing.T, topic, payload string) {
	t.Helper()
	body := fmt.Sprintf(`{"pattern":%q,"appId":"demo-app","payload":%s}`, topic, payload)
	req, err := http.NewRequest(http.MethodPost, "http://"+b.addr+"/internal/publish", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+internalSecret)
	req.Header.Set("Content-Type", "application/json")
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("POST /internal/publish: %v\nbroker:\n%s", err, b.log.text())
	}
	answer, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST /internal/publish: %s %s\nbroker:\n%s", resp.Status, answer, b.log.text())
	}
}
