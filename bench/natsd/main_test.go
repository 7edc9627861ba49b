package main

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
)

// The counts are what a kraken cluster's figures rest on: a client's
// publish is one message in; the server delivers one copy to every
// connection with a matching subscription, the publisher's own included
// unless it connected with NoEcho.
func TestStatsCountsPerConnection(t *testing.T) {
	ns, err := startServer("127.0.0.1", -1, false, "")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { ns.Shutdown(); ns.WaitForShutdown() }()
	web := httptest.NewServer(routes(ns))
	defer web.Close()
	url := "nats://" + ns.Addr().String()
	connect := func(name string, opts ...nats.Option) *nats.Conn {
		nc, err := nats.Connect(url, append(opts, nats.Name(name))...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		return nc
	}
	const subj = "kraken.m.demo.general.bench"
	pub := connect("kraken n1")
	quiet := connect("kraken n4", nats.NoEcho())
	for _, nc := range []*nats.Conn{pub, connect("kraken n2"), connect("kraken n3"), quiet} {
		if _, err := nc.Subscribe(subj, func(*nats.Msg) {}); err != nil {
			t.Fatal(err)
		}
		if err := nc.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	const n = 50
	for i := range n {
		if err := pub.Publish(subj, []byte(fmt.Sprint(i))); err != nil {
			t.Fatal(err)
		}
	}
	if err := quiet.Publish(subj, []byte("x")); err != nil {
		t.Fatal(err)
	}
	_ = pub.Flush()
	_ = quiet.Flush()
	want := map[string][2]int64{ // name: in, out
		"kraken n1": {n, n + 1}, // its own messages come back (echo)
		"kraken n2": {0, n + 1},
		"kraken n3": {0, n + 1},
		"kraken n4": {1, n}, // NoEcho: not its own
	}
	c := http.Client{Timeout: 2 * time.Second}
	var st Stats
	deadline := time.Now().Add(5 * time.Second)
	for {
		st, err = fetch(&c, web.URL+"/stats")
		if err != nil {
			t.Fatal(err)
		}
		ok := len(st.Conns) == len(want)
		for _, cn := range st.Conns {
			w := want[cn.Name]
			ok = ok && cn.InMsgs == w[0] && cn.OutMsgs == w[1]
		}
		if ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("stats %+v, want in/out %v", st.Conns, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
	for _, cn := range st.Conns {
		if len(cn.Subs) != 1 || cn.Subs[0] != subj {
			t.Errorf("%s: subs %v", cn.Name, cn.Subs)
		}
	}
	if st.InMsgs < n+1 || st.OutMsgs < 4*n+3 {
		t.Errorf("server totals in %d out %d", st.InMsgs, st.OutMsgs)
	}
	var text strings.Builder
	if rc := statsMain([]string{"--stats", web.URL + "/stats"}, &text); rc != 0 || !strings.Contains(text.String(), `"kraken n2": in 0 msgs, out 51 msgs`) {
		t.Errorf("natsd stats: %d\n%s", rc, text.String())
	}

	if rc := waitMain([]string{"--stats", web.URL + "/stats", "--conns", "4", "--timeout", "2s"}, io.Discard); rc != 0 {
		t.Errorf("wait for 4 connections: %d", rc)
	}
	if rc := waitMain([]string{"--stats", web.URL + "/stats", "--conns", "5", "--timeout", "100ms"}, io.Discard); rc != 1 {
		t.Errorf("wait for 5 connections: %d, want 1", rc)
	}
}

func TestJetStream(t *testing.T) {
	ns, err := startServer("127.0.0.1", -1, false, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { ns.Shutdown(); ns.WaitForShutdown() }()
	if !ns.JetStreamEnabled() {
		t.Error("JetStream not enabled with a store directory")
	}
}
