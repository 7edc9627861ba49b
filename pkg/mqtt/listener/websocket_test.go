package listener_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"slices"
	"testing"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"
	"github.com/gobwas/ws"

	sdk "github.com/NoLagApp/kraken/pkg/client"
	"github.com/NoLagApp/kraken/pkg/mqtt/listener"
	knode "github.com/NoLagApp/kraken/pkg/node"
)

// wsClient is a raw MQTT-over-WebSocket client (gobwas/ws), for
// transcripts: it writes masked binary frames of its own making and reads
// the server's frames.
type wsClient struct {
	t        testing.TB
	c        net.Conn
	br       *bufio.Reader
	protocol string // the subprotocol the server answered
}

func dialWS(t testing.TB, addr string, protocols ...string) *wsClient {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, br, hs, err := ws.Dialer{Protocols: protocols}.Dial(ctx, "ws://"+addr+"/mqtt")
	if err != nil {
		t.Fatalf("dial ws://%s/mqtt: %v", addr, err)
	}
	t.Cleanup(func() { _ = c.Close() })
	if br == nil {
		br = bufio.NewReader(c)
	}
	return &wsClient{t: t, c: c, br: br, protocol: hs.Protocol}
}

// frame sends one masked frame.
func (w *wsClient) frame(fin bool, op ws.OpCode, payload []byte) {
	w.t.Helper()
	f := ws.NewFrame(op, fin, append([]byte(nil), payload...))
	if err := ws.WriteFrame(w.c, ws.MaskFrameInPlace(f)); err != nil {
		w.t.Fatalf("write frame: %v", err)
	}
}

// send sends payload in one binary message.
func (w *wsClient) send(payload []byte) { w.t.Helper(); w.frame(true, ws.OpBinary, payload) }

// next reads the server's next frame.
func (w *wsClient) next(wait time.Duration) (ws.Frame, error) {
	_ = w.c.SetReadDeadline(time.Now().Add(wait))
	return ws.ReadFrame(w.br)
}

// expect reads the next frame, a binary one carrying exactly one MQTT
// packet of first byte first, and returns the packet's body.
func (w *wsClient) expect(first byte) []byte {
	w.t.Helper()
	f, err := w.next(3 * time.Second)
	if err != nil {
		w.t.Fatalf("expecting packet 0x%02x: %v", first, err)
	}
	if f.Header.OpCode != ws.OpBinary || !f.Header.Fin || f.Header.Masked {
		w.t.Fatalf("frame %+v, want one unmasked final binary frame", f.Header)
	}
	p := f.Payload
	if len(p) < 2 || p[0] != first {
		w.t.Fatalf("packet % x, want first byte 0x%02x", p, first)
	}
	n, mul, i := 0, 1, 1
	for ; i < len(p); i++ {
		n += int(p[i]&0x7f) * mul
		mul <<= 7
		if p[i]&0x80 == 0 {
			break
		}
	}
	body := p[i+1:]
	if len(body) != n {
		w.t.Fatalf("packet % x: remaining length %d, body %d bytes: not one whole packet per frame", p, n, len(body))
	}
	return body
}

// expectClose reads frames up to the server's close frame and returns its
// code.
func (w *wsClient) expectClose() ws.StatusCode {
	w.t.Helper()
	for {
		f, err := w.next(3 * time.Second)
		if err != nil {
			w.t.Fatalf("expecting a close frame: %v", err)
		}
		if f.Header.OpCode == ws.OpClose {
			code, _ := ws.ParseCloseFrameData(f.Payload)
			return code
		}
	}
}

// The subprotocol answered: "mqtt" whenever it is offered, whatever the
// order of the offer; "mqttv3.1" when only it is; none when none is.
func TestMQTTOverWebSocketSubprotocol(t *testing.T) {
	n := startNode(t, nil)
	for _, tc := range []struct {
		offer []string
		want  string
	}{
		{[]string{"mqtt"}, "mqtt"},
		{[]string{"mqttv3.1", "mqtt"}, "mqtt"},
		{[]string{"mqttv3.1"}, "mqttv3.1"},
		{nil, ""},
		{[]string{"other"}, ""},
	} {
		w := dialWS(t, n.wsAddr(), tc.offer...)
		if w.protocol != tc.want {
			t.Errorf("offered %q: answered %q, want %q", tc.offer, w.protocol, tc.want)
		}
		w.send(connectPkt(30, "any", "dev-token-bob"))
		if body := w.expect(0x20); body[1] != 0 {
			t.Fatalf("CONNACK code %d", body[1])
		}
	}
}

// One packet split across two messages (its fixed header itself split), a
// message carrying two packets, a message ending one packet and starting
// the next, and a fragmented WebSocket message: each packet handled once,
// in order; every reply and delivery is one whole packet in one binary
// frame, a QoS 1 delivery with its Packet Identifier, a retained one with
// its RETAIN flag.
func TestMQTTOverWebSocketFraming(t *testing.T) {
	n := startNode(t, nil)
	pub := connected(t, n.mqttAddr(), "dev-token-alice")
	pub.send(publishPkt("demo/general/kept", 1, true, 7, "retained one"))
	pub.expect(0x40)

	w := dialWS(t, n.wsAddr(), "mqtt")
	conn := connectPkt(30, "any", "dev-token-bob")
	w.send(conn[:1])
	w.send(conn[1:])
	if body := w.expect(0x20); body[1] != 0 {
		t.Fatalf("CONNACK code %d", body[1])
	}
	sub := subscribePkt(1, "demo/general/#")
	ping := []byte{0xc0, 0}
	w.send(append(append([]byte(nil), sub...), ping...))
	// The SUBACK, then the PINGRESP (replies leave in request order); the
	// subscription's retained message before, between or after them.
	var order []string
	for len(order) < 3 {
		f, err := w.next(3 * time.Second)
		if err != nil {
			t.Fatalf("after SUBSCRIBE and PINGREQ, got %v: %v", order, err)
		}
		switch p := f.Payload; {
		case p[0] == 0x90:
			if binary.BigEndian.Uint16(p[2:]) != 1 || p[4] != 1 {
				t.Fatalf("SUBACK % x, want id 1 granted 1", p)
			}
			order = append(order, "SUBACK")
		case len(p) == 2 && p[0] == 0xd0:
			order = append(order, "PINGRESP")
		case p[0] == 0x33: // PUBLISH, QoS 1, RETAIN
			if !bytes.HasSuffix(p, []byte("retained one")) {
				t.Fatalf("retained % x", p)
			}
			order = append(order, "retained")
			w.send([]byte{0x40, 2, p[len(p)-len("retained one")-2], p[len(p)-len("retained one")-1]})
		default:
			t.Fatalf("frame % x after %v", p, order)
		}
	}
	if i, j := slices.Index(order, "SUBACK"), slices.Index(order, "PINGRESP"); i < 0 || j < i {
		t.Fatalf("frames %v, want the SUBACK before the PINGRESP", order)
	}

	// Two packets, the second split across messages, then one message
	// fragmented over two WebSocket frames.
	p1 := publishPkt("demo/general/a", 1, false, 10, "one")
	p2 := publishPkt("demo/general/b", 1, false, 11, "two")
	p3 := publishPkt("demo/general/c", 1, false, 12, "three")
	w.send(append(append([]byte(nil), p1...), p2[:4]...))
	w.send(p2[4:])
	w.frame(false, ws.OpBinary, p3[:3])
	w.frame(true, ws.OpContinuation, p3[3:])
	// The PUBACKs in order, and the echoes to the subscription (QoS 1)
	// in order; the two sequences interleave as the reader and the worker
	// write them.
	var acks []uint16
	var echoes []string
	for len(acks) < 3 || len(echoes) < 3 {
		f, err := w.next(3 * time.Second)
		if err != nil {
			t.Fatalf("PUBACKs %v, echoes %q: %v", acks, echoes, err)
		}
		p := f.Payload
		switch p[0] {
		case 0x40:
			acks = append(acks, binary.BigEndian.Uint16(p[2:]))
		case 0x32:
			tl := int(binary.BigEndian.Uint16(p[2:]))
			topic, rest := string(p[4:4+tl]), p[4+tl:]
			echoes = append(echoes, topic+" "+string(rest[2:]))
			w.send([]byte{0x40, 2, rest[0], rest[1]})
		default:
			t.Fatalf("frame % x", p)
		}
	}
	if fmt.Sprint(acks) != "[10 11 12]" || fmt.Sprint(echoes) != "[demo/general/a one demo/general/b two demo/general/c three]" {
		t.Fatalf("PUBACKs %v, echoes %q", acks, echoes)
	}
	// The plain MQTT client's publish reaches the WebSocket one (QoS 0:
	// delivered at QoS 0).
	pub.send(publishPkt("demo/general/x", 0, false, 0, "from tcp"))
	body := w.expect(0x30)
	tl := int(binary.BigEndian.Uint16(body))
	if topic, payload := string(body[2:2+tl]), body[2+tl:]; topic != "demo/general/x" || string(payload) != "from tcp" {
		t.Fatalf("delivery %q %q", topic, payload)
	}
}

// What is not MQTT over WebSocket closes with the close frame of its
// reason: a text frame 1003 [MQTT-6.0.0-1], a malformed packet 1002, a
// packet other than CONNECT first 1002, a packet over MaxPacketSize 1009
// (also when split across messages: its declared length is checked at its
// fixed header); a refused CONNECT 4004 after its CONNACK, a DISCONNECT
// 1000. The node serves on.
func TestMQTTOverWebSocketBadInputCloses(t *testing.T) {
	n := startNodeWith(t, nil, func(c *listener.Config) { c.MaxPacketSize = 1024 })
	connect := func() *wsClient {
		w := dialWS(t, n.wsAddr(), "mqtt")
		w.send(connectPkt(30, "any", "dev-token-bob"))
		w.expect(0x20)
		return w
	}
	for _, tc := range []struct {
		name string
		send func(w *wsClient)
		want ws.StatusCode
	}{
		{"text frame", func(w *wsClient) { w.frame(true, ws.OpText, []byte{0xc0, 0}) }, 1003},
		{"reserved packet type", func(w *wsClient) { w.send([]byte{0x00, 0}) }, 1002},
		{"malformed SUBSCRIBE", func(w *wsClient) { w.send([]byte{0x82, 2, 0, 1}) }, 1002},
		{"too large", func(w *wsClient) { w.send(publishPkt("demo/general/x", 0, false, 0, string(make([]byte, 2000)))) }, 1009},
		{"too large, header alone", func(w *wsClient) { w.send([]byte{0x30, 0xd0}); w.send([]byte{0x0f}) }, 1009},
	} {
		w := connect()
		tc.send(w)
		if code := w.expectClose(); code != tc.want {
			t.Errorf("%s: close %d, want %d", tc.name, code, tc.want)
		}
	}
	w := dialWS(t, n.wsAddr(), "mqtt")
	w.send([]byte{0xc0, 0}) // PINGREQ before CONNECT
	if code := w.expectClose(); code != 1002 {
		t.Errorf("PINGREQ first: close %d, want 1002", code)
	}
	// A refused CONNECT: its CONNACK, then 4004; a DISCONNECT: 1000.
	w = dialWS(t, n.wsAddr(), "mqtt")
	w.send(connectPkt(30, "any", "wrong-token"))
	if body := w.expect(0x20); body[1] != 5 {
		t.Fatalf("CONNACK code %d, want 5", body[1])
	}
	if code := w.expectClose(); code != 4004 {
		t.Errorf("refused CONNECT: close %d, want 4004", code)
	}
	w = connect()
	w.send([]byte{0xe0, 0})
	if code := w.expectClose(); code != 1000 {
		t.Errorf("DISCONNECT: close %d, want 1000", code)
	}
}

// pahoWS connects a paho client over WebSocket (ws://…/mqtt, gorilla/websocket).
func pahoWS(t *testing.T, addr, id, token string) paho.Client {
	t.Helper()
	opts := paho.NewClientOptions().AddBroker("ws://" + addr + "/mqtt").SetClientID(id).
		SetUsername("device").SetPassword(token).SetCleanSession(true).
		SetAutoReconnect(false).SetConnectRetry(false).SetKeepAlive(2 * time.Second).
		SetConnectTimeout(3 * time.Second).SetProtocolVersion(4)
	c := paho.NewClient(opts)
	wait(t, "connect over WebSocket", c.Connect())
	t.Cleanup(func() { c.Disconnect(100) })
	return c
}

// Three clients on the same topics: paho over WebSocket (/mqtt, QoS 1),
// paho over plain MQTT (the listener's port) and the Go SDK (pkg/client,
// /ws); each one's publish reaches the other two.
func TestMQTTOverWebSocketMeetsMQTTAndTheSDK(t *testing.T) {
	n := startNode(t, nil)
	const topic = "demo/general/chat"
	overWS := pahoWS(t, n.wsAddr(), "browser", "dev-token-bob")
	wsGot := make(chan paho.Message, 8)
	wait(t, "subscribe over WebSocket", overWS.Subscribe(topic, 1, func(_ paho.Client, m paho.Message) { wsGot <- m }))

	tcp, err := pahoClient(t, n.mqttAddr(), "device", "dev-token-alice")
	if err != nil {
		t.Fatal(err)
	}
	tcpGot := make(chan paho.Message, 8)
	wait(t, "subscribe over MQTT", tcp.Subscribe(topic, 0, func(_ paho.Client, m paho.Message) { tcpGot <- m }))

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	kc := sdk.New("dev-token-alice", sdk.Options{URL: "ws://" + n.wsAddr() + "/ws", DisableReconnect: true})
	t.Cleanup(func() { _ = kc.Close() })
	if err := kc.Connect(ctx); err != nil {
		t.Fatal(err)
	}
	sdkGot := make(chan []byte, 8)
	err = kc.Subscribe(ctx, topic, func(d sdk.Data, _ sdk.Meta) {
		v, err := d.Value()
		switch b := v.(type) {
		case []byte:
			sdkGot <- b
		case string:
			sdkGot <- []byte(b)
		default:
			t.Errorf("the SDK got %v (%v)", v, err)
		}
	})
	if err != nil {
		t.Fatal(err)
	}

	expectPaho := func(who string, ch chan paho.Message, payload string) {
		t.Helper()
		select {
		case m := <-ch:
			if m.Topic() != topic || string(m.Payload()) != payload {
				t.Fatalf("%s got %q %q, want %q", who, m.Topic(), m.Payload(), payload)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s got nothing, want %q", who, payload)
		}
	}
	expectSDK := func(payload string) {
		t.Helper()
		select {
		case b := <-sdkGot:
			if string(b) != payload {
				t.Fatalf("the SDK got %q, want %q", b, payload)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("the SDK got nothing, want %q", payload)
		}
	}

	wait(t, "publish over WebSocket", overWS.Publish(topic, 1, false, []byte("from the browser")))
	expectPaho("plain MQTT", tcpGot, "from the browser")
	expectSDK("from the browser")
	expectPaho("MQTT over WebSocket (its echo)", wsGot, "from the browser")

	wait(t, "publish over MQTT", tcp.Publish(topic, 1, false, []byte("from the device")))
	expectPaho("MQTT over WebSocket", wsGot, "from the device")
	expectSDK("from the device")
	expectPaho("plain MQTT (its echo)", tcpGot, "from the device")

	if err := kc.Publish(ctx, topic, "from the SDK", sdk.NoEcho()); err != nil {
		t.Fatal(err)
	}
	expectPaho("MQTT over WebSocket", wsGot, "from the SDK")
	expectPaho("plain MQTT", tcpGot, "from the SDK")

	if !overWS.IsConnectionOpen() || !tcp.IsConnectionOpen() {
		t.Fatal("a paho client lost its connection")
	}
	if open := n.node.Stats().Open; open[knode.KindMQTT] != 2 || open[knode.KindWebSocket] != 1 {
		t.Fatalf("open connections: %d MQTT, %d WebSocket; want 2 (one over WebSocket), 1", open[knode.KindMQTT],
			open[knode.KindWebSocket])
	}
}
