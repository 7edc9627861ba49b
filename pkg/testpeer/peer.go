// Package testpeer is a WebSocket test client for protocol transcripts: it
// sends msgpack maps and expects frames, so a test reads like the exchange
// it checks (send frame / expect frame).
//
// A Peer is used by one test goroutine.
package testpeer

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	"github.com/gobwas/ws"
	"github.com/tinylib/msgp/msgp"
)

// DefaultWait is how long Expect waits for a frame.
const DefaultWait = 5 * time.Second

// Frame is one frame received from the server.
type Frame struct {
	OpCode  ws.OpCode
	Payload []byte
	// Map is the decoded msgpack map of a non-empty binary frame.
	Map map[string]any
}

// Type returns Map["type"] or "".
func (f Frame) Type() string { s, _ := f.Map["type"].(string); return s }

// String renders the frame for failure messages.
func (f Frame) String() string {
	if f.Map != nil {
		b, _ := json.Marshal(f.Map)
		return string(b)
	}
	return fmt.Sprintf("opcode=%d payload=%q", f.OpCode, f.Payload)
}

// Peer is a client connection.
type Peer struct {
	t    testing.TB
	Conn net.Conn
	br   *bufio.Reader
}

// Dial connects and upgrades to ws://addr/ws.
func Dial(t testing.TB, addr string) *Peer {
	t.Helper()
	return dial(t, "ws://"+addr, ws.Dialer{})
}

// DialTLS connects to addr with TLS (cfg: the test CA in RootCAs, the
// ServerName) and upgrades to wss://addr/ws.
func DialTLS(t testing.TB, addr string, cfg *tls.Config) *Peer {
	t.Helper()
	return dial(t, "wss://"+addr, ws.Dialer{TLSConfig: cfg})
}

// dial upgrades a connection of d to base's /ws; base is a ws:// or
// wss:// URL without a path.
func dial(t testing.TB, base string, d ws.Dialer) *Peer {
	t.Helper()
	conn, br, _, err := d.Dial(context.Background(), base+"/ws")
	if err != nil {
		t.Fatalf("dial %s: %v", base, err)
	}
	if br == nil {
		br = bufio.NewReader(conn)
	}
	p := &Peer{t: t, Conn: conn, br: br}
	t.Cleanup(func() { _ = conn.Close() })
	return p
}

// DialFrom is Dial from the local address local, e.g. "127.0.0.2": another
// client address on the loopback interface.
func DialFrom(t testing.TB, addr, local string) *Peer {
	t.Helper()
	return dial(t, "ws://"+addr, ws.Dialer{NetDial: func(ctx context.Context, network, a string) (net.Conn, error) {
		nd := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}}
		return nd.DialContext(ctx, network, a)
	}})
}

// Auth sends {type:"auth", token, ...extra} and expects a successful reply,
// which it returns.
func (p *Peer) Auth(token string, extra ...any) Frame {
	p.t.Helper()
	p.Send(append([]any{"type", "auth", "token", token}, extra...)...)
	f := p.ExpectType("auth")
	if f.Map["success"] != true {
		p.t.Fatalf("auth %q failed: %s", token, f)
	}
	return f
}

// Send sends a msgpack map built from alternating keys and values. A value
// of type Raw is inserted as raw msgpack bytes.
func (p *Peer) Send(kv ...any) {
	p.t.Helper()
	p.SendBinary(Map(kv...))
}

// Raw is pre-encoded msgpack, inserted verbatim by Map.
type Raw []byte

// Map encodes alternating keys and values as one msgpack map.
func Map(kv ...any) []byte {
	b := msgp.AppendMapHeader(nil, uint32(len(kv)/2))
	for i := 0; i+1 < len(kv); i += 2 {
		b = msgp.AppendString(b, kv[i].(string))
		if r, ok := kv[i+1].(Raw); ok {
			b = append(b, r...)
			continue
		}
		var err error
		b, err = msgp.AppendIntf(b, kv[i+1])
		if err != nil {
			panic(err)
		}
	}
	return b
}

// SendBinary sends one masked binary frame.
func (p *Peer) SendBinary(payload []byte) { p.SendFrame(ws.NewBinaryFrame(payload)) }

// SendFrame sends f, masked as a client must (RFC 6455 §5.3).
func (p *Peer) SendFrame(f ws.Frame) {
	p.t.Helper()
	if err := ws.WriteFrame(p.Conn, ws.MaskFrameInPlace(f)); err != nil {
		p.t.Fatalf("write frame: %v", err)
	}
}

// SendRaw writes bytes as they are.
func (p *Peer) SendRaw(b []byte) {
	p.t.Helper()
	if _, err := p.Conn.Write(b); err != nil {
		p.t.Fatalf("write: %v", err)
	}
}

// Read returns the next frame, or an error after wait.
func (p *Peer) Read(wait time.Duration) (Frame, error) {
	_ = p.Conn.SetReadDeadline(time.Now().Add(wait))
	f, err := ws.ReadFrame(p.br)
	if err != nil {
		return Frame{}, err
	}
	out := Frame{OpCode: f.Header.OpCode, Payload: f.Payload}
	if f.Header.OpCode == ws.OpBinary && len(f.Payload) > 0 {
		v, _, err := msgp.ReadMapStrIntfBytes(f.Payload, nil)
		if err != nil {
			return out, fmt.Errorf("decode %x: %w", f.Payload, err)
		}
		out.Map = v
	}
	return out, nil
}

// Expect returns the next frame or fails the test.
func (p *Peer) Expect() Frame {
	p.t.Helper()
	f, err := p.Read(DefaultWait)
	if err != nil {
		p.t.Fatalf("expected a frame: %v", err)
	}
	return f
}

// ExpectType returns the next frame and fails unless it is a msgpack map of
// the given type.
func (p *Peer) ExpectType(typ string) Frame {
	p.t.Helper()
	f := p.Expect()
	if f.Type() != typ {
		p.t.Fatalf("expected a %q frame, got %s", typ, f)
	}
	return f
}

// ExpectFields returns the next frame and fails unless each given key has
// the given value (compared after JSON rendering, so 1 == int64(1)).
func (p *Peer) ExpectFields(kv ...any) Frame {
	p.t.Helper()
	f := p.Expect()
	if f.Map == nil {
		p.t.Fatalf("expected a map frame, got %s", f)
	}
	for i := 0; i+1 < len(kv); i += 2 {
		k := kv[i].(string)
		if !sameJSON(f.Map[k], kv[i+1]) {
			p.t.Fatalf("field %q = %v, want %v in %s", k, f.Map[k], kv[i+1], f)
		}
	}
	return f
}

// ExpectClose reads frames until a close frame and returns its code and
// reason; it fails if the connection ends without one.
func (p *Peer) ExpectClose() (ws.StatusCode, string) {
	p.t.Helper()
	for {
		f, err := p.Read(DefaultWait)
		if err != nil {
			p.t.Fatalf("expected a close frame: %v", err)
		}
		if f.OpCode == ws.OpClose {
			return ws.ParseCloseFrameData(f.Payload)
		}
	}
}

// ExpectNothing fails if a frame arrives within wait.
func (p *Peer) ExpectNothing(wait time.Duration) {
	p.t.Helper()
	if f, err := p.Read(wait); err == nil {
		p.t.Fatalf("expected nothing, got %s", f)
	}
}

// ExpectEOF fails unless the server closes the TCP connection within wait.
func (p *Peer) ExpectEOF(wait time.Duration) {
	p.t.Helper()
	_ = p.Conn.SetReadDeadline(time.Now().Add(wait))
	_, err := io.Copy(io.Discard, p.br)
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		p.t.Fatalf("connection still open after %v", wait)
	}
}

func sameJSON(a, b any) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return bytes.Equal(ja, jb)
}
