package hub

import (
	"sync"
	"testing"
	"time"

	"github.com/NoLagApp/kraken/pkg/disconnect"
)

// A connection handed over in its handshake (Hub.Rebind) is written
// through its new transport, in its encoding, with its QoS 1 capability;
// what was queued before stays queued; once past the handshake, closing or
// closed, its transport no longer changes.
func TestRebindInTheHandshake(t *testing.T) {
	h := startHub(t, Config{Workers: 1, Tick: 10 * time.Millisecond, CloseTimeout: 10 * time.Millisecond})
	first := newTestTransport(&textEncoding{id: 0})
	c := h.Register(first)
	enc := &ackEncoding{textEncoding{id: 2}}
	second := &ackTransport{testTransport: newTestTransport(enc), n: 8}
	if !h.Rebind(c, second) {
		t.Fatal("Rebind refused a connection in its handshake")
	}
	if c.EncodingID() != 2 || c.Transport() != Transport(second) {
		t.Fatalf("after Rebind: encoding %d, transport %T", c.EncodingID(), c.Transport())
	}
	if c.Write([]byte("<101>")) {
		c.Flush()
	}
	c.SetSession(&Session{Version: 2})
	c.SetPhase(PhaseAuthed)
	if h.Rebind(c, first) {
		t.Fatal("Rebind changed the transport of an authenticated connection")
	}
	if got := second.written(); got != "<101>" {
		t.Fatalf("the new transport wrote %q", got)
	}
	subscribeAndWait(t, h, c, second.testTransport, SubSpec{Pattern: "a/b", Key: "app/a/b", QoS: 1})
	h.Publish(publication("a/b"))
	eventually(t, "the QoS 1 delivery", func() bool { return second.size() > 0 })
	if got := second.written(); got != "<2 qos1 a/b id 1>" {
		t.Fatalf("delivery %q, want the new encoding's QoS 1 form", got)
	}
	c.CloseNow(disconnect.New(disconnect.IdleTimeout))
	eventually(t, "the close frame", func() bool { return second.size() > 0 })
	if got := second.written(); got != "<2 close 4000 idle_timeout>" {
		t.Fatalf("close %q", got)
	}
	if got := first.written(); got != "" {
		t.Fatalf("the first transport wrote %q", got)
	}

	closing := h.Register(newTestTransport(&textEncoding{id: 0}))
	closing.CloseNow(disconnect.New(disconnect.HTTPDone))
	if h.Rebind(closing, newTestTransport(&textEncoding{id: 2})) {
		t.Fatal("Rebind changed the transport of a closing connection")
	}
	closed := h.Register(newTestTransport(&textEncoding{id: 0}))
	h.Closed(closed)
	if h.Rebind(closed, newTestTransport(&textEncoding{id: 2})) {
		t.Fatal("Rebind changed the transport of a closed connection")
	}
}

// Rebind races with nothing: connections handed over while their worker's
// sweep times handshakes out (reading the transport's encoding) and
// writes to them (run with -race).
func TestRaceOnRebindAndHandshakeTimeout(t *testing.T) {
	h := startHub(t, Config{Workers: 2, Tick: time.Millisecond, HandshakeTimeout: time.Millisecond,
		CloseTimeout: time.Millisecond})
	enc0, enc2 := &textEncoding{id: 0}, &textEncoding{id: 2}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				c := h.Register(newTestTransport(enc0))
				if (g+i)%2 == 0 {
					time.Sleep(time.Duration(i%3) * time.Millisecond)
				}
				if h.Rebind(c, newTestTransport(enc2)) && c.Write([]byte("<101>")) {
					c.Flush()
				}
				_ = c.RemoteAddr()
				h.Closed(c)
			}
		}()
	}
	wg.Wait()
}
