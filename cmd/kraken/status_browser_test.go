package main

import (
	"context"
	"encoding/json"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"github.com/gobwas/ws"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/NoLagApp/kraken/pkg/testpeer"
)

// chromium returns the path of a Chromium (or Chrome) to drive, or skips
// the test without one; KRAKEN_REQUIRE_BROWSER=1 (CI: .ci/run) makes a
// missing one a failure.
func chromium(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("runs the binary and a browser")
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "headless-shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("KRAKEN_REQUIRE_BROWSER") == "1" {
		t.Fatal("no chromium on PATH and KRAKEN_REQUIRE_BROWSER=1: install it (Debian: apt-get install chromium)")
	}
	t.Skip("no chromium on PATH (Debian: apt-get install chromium); set KRAKEN_REQUIRE_BROWSER=1 to fail instead")
	return ""
}

// statusFigures is what the status page shows, read from its elements.
type statusFigures struct {
	Polls         int     `json:"polls"`
	WebSocket     int     `json:"websocket"`
	MQTT          int     `json:"mqtt"`
	Authenticated int     `json:"authenticated"`
	Subscriptions int     `json:"subscriptions"`
	PubRate       float64 `json:"pub_rate"`
	DelRate       float64 `json:"del_rate"`
	Topics        []struct {
		Topic       string `json:"topic"`
		Subscribers int    `json:"subscribers"`
	} `json:"topics"`
	Nodes     []string `json:"nodes"`
	Ready     string   `json:"ready"`
	AuthShown bool     `json:"auth_shown"`
}

const readStatusFigures = `(() => {
  const num = (id) => { const t = document.getElementById(id).textContent; return t === "–" ? -1 : Number(t); };
  return {
    polls: num("polls"), websocket: num("conn-websocket"), mqtt: num("conn-mqtt"),
    authenticated: num("conn-authenticated"), subscriptions: num("subscriptions"),
    pub_rate: num("pub-rate"), del_rate: num("del-rate"),
    topics: [...document.querySelectorAll("#topics tr[data-topic]")].map((tr) =>
      ({topic: tr.dataset.topic, subscribers: Number(tr.dataset.subscribers)})),
    nodes: [...document.querySelectorAll("#nodes tr[data-node]")].map((tr) => tr.dataset.node),
    ready: (document.querySelector("#nodes tr[data-node] td:nth-child(4)") || {}).textContent || "",
    auth_shown: !document.getElementById("auth").hidden,
  };
})()`

// TestStatusPageInBrowser: a real broker with ADMIN_SECRET, WebSocket
// subscribers on two topics and a steady publisher; headless Chromium
// opens /status, is asked for the secret, is given a wrong one and asked
// again with the reason, is given the right one, and then shows
// the connections by transport and the busiest topics as /metrics counts
// them, and publish and delivery rates above zero. Every request the page
// makes goes to the admin listener. A full-page screenshot is kept in
// KRAKEN_TEST_ARTIFACTS (else the test's temporary directory).
func TestStatusPageInBrowser(t *testing.T) {
	chrome := chromium(t)
	const secret = "status-page-secret"
	admin := "127.0.0.1:" + freePort(t)
	b := startBroker(t, "", "ADMIN_ADDR="+admin, "ADMIN_SECRET="+secret)
	b.waitLogs(t, "admin listener", 1)

	// The traffic: 5 subscribers on one topic, 2 on another, one
	// publisher (unsubscribed) on the first, 10 publishes a second.
	const busy, quiet = "demo/general/busy", "demo/general/quiet"
	var peers []*testpeer.Peer
	for i := 0; i < 7; i++ {
		p := testpeer.Dial(t, b.addr)
		p.Auth("dev-token-bob")
		topic := busy
		if i >= 5 {
			topic = quiet
		}
		if err := subscribeTo(p, topic); err != nil {
			t.Fatal(err)
		}
		peers = append(peers, p)
	}
	publisher := testpeer.Dial(t, b.addr)
	publisher.Auth("dev-token-bob")
	peers = append(peers, publisher)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for _, p := range peers { // drain what the broker sends: the subscribers stay fast
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _ = io.Copy(io.Discard, p.Conn)
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			frame := ws.NewBinaryFrame(testpeer.Map("type", "publish", "topic", busy, "data", i))
			_ = publisher.Conn.SetWriteDeadline(time.Now().Add(5 * time.Second))
			if err := ws.WriteFrame(publisher.Conn, ws.MaskFrameInPlace(frame)); err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() { // before the peers' own cleanups close them: ends the drains
		close(stop)
		for _, p := range peers {
			_ = p.Conn.Close()
		}
		wg.Wait()
	})

	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chrome), chromedp.NoSandbox,
		chromedp.Headless, chromedp.DisableGPU, chromedp.WindowSize(1280, 900), chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("disable-dev-shm-usage", true))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	// Every request of the tab, from its first: the listener is in place
	// before the tab's first command.
	var mu sync.Mutex
	var requests []string
	ctx, cancelBrowser := chromedp.NewContext(actx, chromedp.WithLogf(t.Logf),
		chromedp.WithListener(func(ev any) {
			if e, ok := ev.(*network.EventRequestWillBeSent); ok {
				mu.Lock()
				requests = append(requests, e.Request.Method+" "+e.Request.URL)
				mu.Unlock()
			}
		}))
	defer cancelBrowser()
	start := time.Now()
	if err := chromedp.Do(ctx); err != nil { // starts the browser, untimed (chromedp.Run's rule)
		t.Fatalf("start %s: %v", chrome, err)
	}
	if _, err := chromedp.Call(ctx, network.Enable, network.EnableParams{}); err != nil {
		t.Fatalf("Network.enable: %v", err)
	}
	ctx, cancelTimeout := context.WithTimeout(ctx, 90*time.Second)
	defer cancelTimeout()

	page := "http://" + admin + "/status"
	if err := chromedp.Do(ctx, chromedp.Navigate(page), chromedp.WaitVisible(chromedp.ID("secret"))); err != nil {
		t.Fatalf("open %s: %v\n%s", page, err, b.stderr)
	}
	t.Logf("browser up and asking for the secret after %v", time.Since(start).Round(time.Millisecond))
	// A wrong secret first: the field stays, with the listener's reason.
	if err := chromedp.Do(ctx, chromedp.SendKeys(chromedp.ID("secret"), "not-the-secret"),
		chromedp.Click(chromedp.ID("secret-save"))); err != nil {
		t.Fatalf("enter a wrong secret: %v", err)
	}
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](
		`document.getElementById("auth-reason").textContent.includes("wrong bearer secret") && !document.getElementById("auth").hidden`)); err != nil {
		t.Fatalf("a wrong secret: the page did not ask again with the reason: %v", err)
	}
	if err := chromedp.Do(ctx, chromedp.SendKeys(chromedp.ID("secret"), secret),
		chromedp.Click(chromedp.ID("secret-save"))); err != nil {
		t.Fatalf("enter the secret: %v", err)
	}

	// Rates need two polls after the secret; wait for three.
	var fig statusFigures
	deadline := time.Now().Add(45 * time.Second)
	for {
		fig = statusFigures{}
		raw, err := chromedp.Run(ctx, chromedp.Evaluate[string]("JSON.stringify("+readStatusFigures+")"))
		if err == nil {
			err = json.Unmarshal([]byte(raw), &fig)
		}
		if err != nil {
			t.Fatalf("read the page: %v", err)
		}
		if fig.Polls >= 3 && fig.PubRate > 0 && fig.WebSocket == len(peers) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the page did not show the figures within 45 s: %+v", fig)
		}
		time.Sleep(250 * time.Millisecond)
	}
	t.Logf("page after %v: %+v", time.Since(start).Round(time.Millisecond), fig)

	// /metrics, read now: the clients are steady, so the counts agree.
	code, body := get(t, "http://"+admin+"/metrics")
	if code != 200 {
		t.Fatalf("/metrics: %d", code)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("/metrics does not parse: %v", err)
	}
	metric := func(name, label, value string) int {
		t.Helper()
		f := fams[name]
		if f == nil {
			t.Fatalf("/metrics has no %s", name)
		}
		for _, m := range f.GetMetric() {
			if label == "" {
				return int(m.GetGauge().GetValue())
			}
			for _, l := range m.GetLabel() {
				if l.GetName() == label && l.GetValue() == value {
					return int(m.GetGauge().GetValue())
				}
			}
		}
		t.Fatalf("/metrics has no %s{%s=%q}", name, label, value)
		return 0
	}
	for _, c := range []struct {
		what       string
		page, want int
	}{
		{"websocket connections", fig.WebSocket, metric("kraken_connections", "transport", "websocket")},
		{"mqtt connections", fig.MQTT, metric("kraken_connections", "transport", "mqtt")},
		{"authenticated connections", fig.Authenticated, metric("kraken_connections_authenticated", "", "")},
		{"subscriptions", fig.Subscriptions, metric("kraken_subscriptions", "", "")},
	} {
		if c.page != c.want {
			t.Errorf("the page shows %d %s, /metrics %d", c.page, c.what, c.want)
		}
	}
	if fig.WebSocket != len(peers) || fig.Authenticated != len(peers) || fig.MQTT != 0 {
		t.Errorf("the page shows %d websocket (%d authenticated), %d mqtt connections; the test holds %d websocket ones",
			fig.WebSocket, fig.Authenticated, fig.MQTT, len(peers))
	}
	// Topics are routing keys: the grant's app_id (examples/auth.json), then the topic.
	if len(fig.Topics) != 2 || fig.Topics[0].Topic != "demo-app/"+busy || fig.Topics[0].Subscribers != 5 ||
		fig.Topics[1].Topic != "demo-app/"+quiet || fig.Topics[1].Subscribers != 2 {
		t.Errorf("busiest topics on the page: %+v, want demo-app/%s 5 then demo-app/%s 2", fig.Topics, busy, quiet)
	}
	sum := 0
	for _, tp := range fig.Topics {
		sum += tp.Subscribers
	}
	if want := metric("kraken_subscriptions", "", ""); sum != want {
		t.Errorf("the page's topics hold %d subscribers, /metrics counts %d subscriptions", sum, want)
	}
	if fig.DelRate <= 0 || fig.PubRate > 50 {
		t.Errorf("rates on the page: %v publishes/s, %v deliveries/s; the test publishes 10 a second to 5 subscribers",
			fig.PubRate, fig.DelRate)
	}
	if len(fig.Nodes) != 1 || fig.Ready != "ready" || fig.AuthShown {
		t.Errorf("page: nodes %q, ready %q, secret field shown %v", fig.Nodes, fig.Ready, fig.AuthShown)
	}
	if kept, err := chromedp.Run(ctx, chromedp.Evaluate[string](`sessionStorage.getItem("kraken-admin-secret")`)); err != nil || kept != secret {
		t.Errorf("the secret in session storage: %q (%v)", kept, err)
	}

	// The screenshot, then every request the page made.
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	dir := os.Getenv("KRAKEN_TEST_ARTIFACTS")
	if dir == "" {
		dir = t.TempDir()
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	shot := filepath.Join(dir, "status-page.png")
	if err := os.WriteFile(shot, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s (%d bytes)", shot, len(png))

	mu.Lock()
	defer mu.Unlock()
	seen := map[string]int{}
	for _, r := range requests {
		method, raw, _ := strings.Cut(r, " ")
		u, err := url.Parse(raw)
		if err != nil || u.Scheme != "http" || u.Host != admin {
			t.Errorf("the page requested %s, not on the admin listener %s", r, admin)
			continue
		}
		seen[method+" "+u.Path]++
		switch u.Path {
		case "/status", "/api/info", "/api/topics", "/favicon.ico":
		default:
			t.Errorf("the page requested %s", r)
		}
	}
	if seen["GET /status"] != 1 || seen["GET /api/info"] < 3 || seen["GET /api/topics"] < 3 {
		t.Errorf("requests by path: %v", seen)
	}
	t.Logf("requests by path: %v", seen)
}
