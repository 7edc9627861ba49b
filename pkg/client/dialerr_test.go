package client_test

import (
	"context"
	"errors"
	"io"
	"log"
	"net"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/NoLagApp/kraken/pkg/client"
)

// connectErr connects a client to url and returns the error.
func connectErr(t *testing.T, url string) error {
	t.Helper()
	c := client.New("dev-token-alice", client.Options{URL: url, DisableReconnect: true})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := c.Connect(ctx)
	if err == nil {
		t.Fatalf("connect %s succeeded", url)
	}
	return err
}

// A path other than /ws gets the broker's 404 with the reason it sent.
func TestConnectWrongPathReportsTheBrokersAnswer(t *testing.T) {
	b := startBroker(t, "127.0.0.1:0")
	err := connectErr(t, "ws://"+b.addr+"/")
	var he *client.HandshakeError
	if !errors.As(err, &he) || he.Status != 404 || he.Body != "not found: the WebSocket endpoint is /ws" {
		t.Fatalf("err = %v, want a HandshakeError with the broker's 404 and reason", err)
	}
}

// wss:// against the broker's plain port fails at once with a
// TLSMismatchError saying to use ws://.
func TestConnectWSSToAPlainBrokerIsATLSMismatch(t *testing.T) {
	b := startBroker(t, "127.0.0.1:0")
	began := time.Now()
	err := connectErr(t, "wss://"+b.addr+"/ws")
	var te *client.TLSMismatchError
	if !errors.As(err, &te) || te.ServerTLS || te.Addr != b.addr {
		t.Fatalf("err = %v, want a TLSMismatchError for a plain server at %s", err, b.addr)
	}
	if !strings.Contains(err.Error(), "does not speak TLS; use ws://") {
		t.Fatalf("err = %q", err)
	}
	if d := time.Since(began); d > 2*time.Second {
		t.Fatalf("took %v", d)
	}
}

// ws:// against a TLS server: Go's net/http answers a plain request on a
// TLS port with a 400 saying so, and a bare TLS server with an alert
// record; both are a TLSMismatchError saying to use wss://.
func TestConnectWSToATLSServerIsATLSMismatch(t *testing.T) {
	ts := httptest.NewUnstartedServer(nil)
	ts.Config.ErrorLog = log.New(io.Discard, "", 0) // its "TLS handshake error" line
	ts.StartTLS()
	defer ts.Close()
	addr := ts.Listener.Addr().String()
	err := connectErr(t, "ws://"+addr+"/ws")
	var te *client.TLSMismatchError
	if !errors.As(err, &te) || !te.ServerTLS || !strings.Contains(te.Answer, "HTTPS") {
		t.Fatalf("err = %v, want a TLSMismatchError for a TLS server", err)
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		buf := make([]byte, 4096)
		_, _ = c.Read(buf)
		// A fatal alert, protocol_version (70), in a TLS 1.2 record.
		_, _ = c.Write([]byte{0x15, 0x03, 0x03, 0x00, 0x02, 0x02, 0x46})
	}()
	err = connectErr(t, "ws://"+ln.Addr().String()+"/ws")
	if !errors.As(err, &te) || !te.ServerTLS || te.Addr != ln.Addr().String() {
		t.Fatalf("err = %v, want a TLSMismatchError for a TLS server", err)
	}
	if !strings.Contains(err.Error(), "speaks TLS; use wss://") {
		t.Fatalf("err = %q", err)
	}
}

// A publish larger than the broker's frame limit gets the 1009 close: the
// error is ErrDisconnected and carries the close frame.
func TestPublishTooLargeReportsTheClose(t *testing.T) {
	b := startBroker(t, "127.0.0.1:0")
	var lost = make(chan error, 1)
	alice := b.dial(t, "dev-token-alice", client.Options{DisableReconnect: true,
		OnDisconnect: func(err error) { lost <- err }})
	err := alice.Publish(ctxT(t), topic, strings.Repeat("x", 2<<20))
	var ce *client.CloseError
	if !errors.Is(err, client.ErrDisconnected) || !errors.As(err, &ce) || ce.Code != 1009 || ce.Reason != "frame too large" {
		t.Fatalf("err = %v, want ErrDisconnected carrying the 1009 close", err)
	}
	if !errors.As(recv(t, lost), &ce) || ce.Code != 1009 {
		t.Fatalf("OnDisconnect: %v", ce)
	}
}

// A hydration frame goes to OnHydration with the subscribed topic, its
// last level and the webhook's answer.
func TestHydrationReachesOnHydration(t *testing.T) {
	s := newFakeServer(t)
	got := make(chan client.Hydration, 1)
	_, fc := fakeClient(t, s, client.Options{HeartbeatInterval: -1,
		OnHydration: func(h client.Hydration) { got <- h }})
	fc.send("type", "hydration", "topic", "history", "pattern", "demo/general/history",
		"data", map[string]any{"welcome": "hello bob"})
	h := recv(t, got)
	js, err := h.Data.MarshalJSON()
	if h.Pattern != "demo/general/history" || h.Topic != "history" || err != nil || string(js) != `{"welcome":"hello bob"}` {
		t.Fatalf("hydration %+v (%s, %v)", h, js, err)
	}
}
