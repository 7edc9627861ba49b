package listener_test

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/NoLagApp/kraken/pkg/acl"
	"github.com/NoLagApp/kraken/pkg/auth"
	"github.com/NoLagApp/kraken/pkg/edge"
	"github.com/NoLagApp/kraken/pkg/hub"
	"github.com/NoLagApp/kraken/pkg/metrics"
	"github.com/NoLagApp/kraken/pkg/mqtt/listener"
	knode "github.com/NoLagApp/kraken/pkg/node"
	"github.com/NoLagApp/kraken/pkg/node/nodetest"
	"github.com/NoLagApp/kraken/pkg/resume"
	"github.com/NoLagApp/kraken/pkg/server"
	"github.com/NoLagApp/kraken/pkg/session"
)

// tokens is an in-memory Authenticator with the demo grants of
// examples/auth.json, and one token whose check fails as if the auth
// service were down.
type tokens map[string]*auth.Grant

const tokenUnavailable = "token-auth-down"

func (t tokens) Validate(_ context.Context, token string) (*auth.Grant, error) {
	if token == tokenUnavailable {
		return nil, auth.ErrUnavailable
	}
	if g, ok := t[token]; ok {
		return g, nil
	}
	return nil, auth.ErrDenied
}

func (t tokens) Revalidate(_ context.Context, actor string) (*auth.Grant, error) {
	for _, g := range t {
		if g.ActorTokenID == actor {
			return g, nil
		}
	}
	return nil, auth.ErrDenied
}

func demoGrant(actor string) *auth.Grant {
	return &auth.Grant{
		ActorTokenID: actor, ProjectID: "demo-project", OrganizationID: "demo-org", ActorType: "user",
		Rules: acl.Rules{{Pattern: "demo/general/#", Topic: "demo-general", Permission: acl.PermPubSub,
			RoomID: "room-general", RoomSlug: "general", AppID: "demo-app", AppName: "demo"}},
	}
}

// node is a WebSocket server and an MQTT listener on one session protocol.
type node struct {
	node *knode.Node
	ws   *server.Server
	mqtt *listener.Listener
}

func (n *node) wsAddr() string   { return n.ws.Addr().String() }
func (n *node) mqttAddr() string { return n.mqtt.Addr().String() }

func startNode(t testing.TB, mutate func(*testConfig)) *node {
	t.Helper()
	return startNodeWith(t, mutate, nil)
}

// testConfig is the node's session and hub settings in one flat struct,
// for the tests' mutate functions; its Logger goes to both transports too.
type testConfig struct {
	session.Config
	Hub    hub.Config
	Limits edge.Limits
	// Sessions is the node's session store (node.Config.Sessions), nil
	// for none.
	Sessions resume.Store
}

// startNodeWith is startNode with lmutate applied to the listener's Config.
func startNodeWith(t testing.TB, mutate func(*testConfig), lmutate func(*listener.Config)) *node {
	t.Helper()
	cfg := testConfig{Hub: hub.Config{Workers: 2, Tick: 20 * time.Millisecond}}
	cfg.Auth = tokens{"dev-token-alice": demoGrant("alice"), "dev-token-bob": demoGrant("bob")}
	if mutate != nil {
		mutate(&cfg)
	}
	n, err := knode.New(knode.Config{Hub: cfg.Hub, Session: cfg.Config, Limits: cfg.Limits, Sessions: cfg.Sessions,
		NodeID: cfg.NodeID})
	if err != nil {
		t.Fatal(err)
	}
	lcfg := listener.Config{Addr: "127.0.0.1:0", Logger: cfg.Logger}
	if lmutate != nil {
		lmutate(&lcfg)
	}
	l, err := listener.New(n, lcfg)
	if err != nil {
		t.Fatal(err)
	}
	s, err := server.New(n, server.Config{Addr: "127.0.0.1:0", Logger: cfg.Logger,
		Carried: map[string]server.Carried{server.MQTTPath: l.WebSocket()}})
	if err != nil {
		t.Fatal(err)
	}
	nodetest.Start(t, n, s, l)
	return &node{node: n, ws: s, mqtt: l}
}

// client is a raw MQTT 3.1.1 client over TCP, for transcripts.
type client struct {
	t  testing.TB
	c  net.Conn
	br *bufio.Reader
}

func dial(t testing.TB, addr string) *client {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return &client{t: t, c: c, br: bufio.NewReader(c)}
}

func (c *client) send(b []byte) {
	c.t.Helper()
	if _, err := c.c.Write(b); err != nil {
		c.t.Fatalf("write: %v", err)
	}
}

// read returns the next packet's first byte and body.
func (c *client) read(wait time.Duration) (first byte, body []byte, err error) {
	_ = c.c.SetReadDeadline(time.Now().Add(wait))
	first, err = c.br.ReadByte()
	if err != nil {
		return 0, nil, err
	}
	n, mul := 0, 1
	for i := 0; i < 4; i++ {
		b, err := c.br.ReadByte()
		if err != nil {
			return 0, nil, err
		}
		n += int(b&0x7f) * mul
		mul <<= 7
		if b&0x80 == 0 {
			break
		}
	}
	body = make([]byte, n)
	_, err = io.ReadFull(c.br, body)
	return first, body, err
}

func (c *client) expect(first byte) []byte {
	c.t.Helper()
	f, body, err := c.read(3 * time.Second)
	if err != nil {
		c.t.Fatalf("expecting packet 0x%02x: %v", first, err)
	}
	if f != first {
		c.t.Fatalf("packet 0x%02x % x, want 0x%02x", f, body, first)
	}
	return body
}

// expectPublish reads a PUBLISH and returns its topic and payload; a QoS 1
// one is acknowledged.
func (c *client) expectPublish() (topic string, payload []byte) {
	c.t.Helper()
	topic, payload, qos, id := c.expectPublishNoAck()
	if qos == 1 {
		c.send([]byte{0x40, 2, byte(id >> 8), byte(id)})
	}
	return topic, payload
}

// expectPublishNoAck reads a PUBLISH: its topic, payload, QoS and Packet
// Identifier (0 for QoS 0).
func (c *client) expectPublishNoAck() (topic string, payload []byte, qos byte, id uint16) {
	c.t.Helper()
	f, body, err := c.read(3 * time.Second)
	if err != nil {
		c.t.Fatalf("expecting PUBLISH: %v", err)
	}
	if f>>4 != 3 {
		c.t.Fatalf("packet 0x%02x % x, want a PUBLISH", f, body)
	}
	n := int(binary.BigEndian.Uint16(body))
	topic, rest := string(body[2:2+n]), body[2+n:]
	if qos = (f >> 1) & 3; qos > 0 {
		id, rest = binary.BigEndian.Uint16(rest), rest[2:]
	}
	return topic, rest, qos, id
}

func (c *client) expectNothing(wait time.Duration) {
	c.t.Helper()
	if f, body, err := c.read(wait); err == nil {
		c.t.Fatalf("unexpected packet 0x%02x % x", f, body)
	}
}

// expectClosed waits for the server to close the connection.
func (c *client) expectClosed() {
	c.t.Helper()
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		f, body, err := c.read(3 * time.Second)
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				c.t.Fatal("connection still open")
			}
			return
		}
		c.t.Fatalf("packet 0x%02x % x before the close", f, body)
	}
}

// Client-side encoders (the packet package encodes the server's side).

func str(s string) []byte { return append([]byte{byte(len(s) >> 8), byte(len(s))}, s...) }

func pkt(first byte, body ...[]byte) []byte {
	var b []byte
	for _, p := range body {
		b = append(b, p...)
	}
	out := []byte{first}
	n := len(b)
	for {
		d := byte(n & 0x7f)
		n >>= 7
		if n > 0 {
			out = append(out, d|0x80)
			continue
		}
		out = append(out, d)
		break
	}
	return append(out, b...)
}

// connectPkt is a CONNECT, clean session, with user name and password
// when not "".
// clientSeq numbers the client identifiers of connectPkt: each raw client
// is a client of its own (the same identifier would take the first over).
var clientSeq atomic.Int64

func connectPkt(keepAlive uint16, user, pass string) []byte {
	flags := byte(0x02)
	payload := str(fmt.Sprintf("test-client-%d", clientSeq.Add(1)))
	if user != "" {
		flags |= 0x80
		payload = append(payload, str(user)...)
	}
	if pass == "\x00empty" { // a password flag with an empty password
		flags |= 0x40
		payload = append(payload, str("")...)
	} else if pass != "" {
		flags |= 0x40
		payload = append(payload, str(pass)...)
	}
	return pkt(0x10, str("MQTT"), []byte{4, flags, byte(keepAlive >> 8), byte(keepAlive)}, payload)
}

// connectWill is a clean-session CONNECT with token as the password and a
// QoS 1 will of payload on topic.
func connectWill(keepAlive uint16, token, topic, payload string) []byte {
	flags := byte(0x02 | 0x04 | 1<<3 | 0x80 | 0x40)
	body := str(fmt.Sprintf("test-client-%d", clientSeq.Add(1)))
	body = append(append(append(append(body, str(topic)...), str(payload)...), str("device")...), str(token)...)
	return pkt(0x10, str("MQTT"), []byte{4, flags, byte(keepAlive >> 8), byte(keepAlive)}, body)
}

// connectWillID is a Clean Session 1 CONNECT with client identifier id,
// token as the password, and a QoS 0 will on demo/general/status.
func connectWillID(id, token string) []byte {
	body := append(append(append(append(str(id), str("demo/general/status")...), str("gone")...), str("device")...), str(token)...)
	return pkt(0x10, str("MQTT"), []byte{4, 0x02 | 0x04 | 0x80 | 0x40, 0, 30}, body)
}

func subscribePkt(id uint16, filters ...string) []byte { return subscribeQoS(id, 1, filters...) }

func subscribeQoS(id uint16, qos byte, filters ...string) []byte {
	body := []byte{byte(id >> 8), byte(id)}
	for _, f := range filters {
		body = append(append(body, str(f)...), qos)
	}
	return pkt(0x82, body)
}

func unsubscribePkt(id uint16, filters ...string) []byte {
	body := []byte{byte(id >> 8), byte(id)}
	for _, f := range filters {
		body = append(body, str(f)...)
	}
	return pkt(0xa2, body)
}

// publishPkt is a PUBLISH of QoS qos (id ignored for 0), retained or not.
func publishPkt(topic string, qos byte, retain bool, id uint16, payload string) []byte {
	first := 0x30 | qos<<1
	if retain {
		first |= 1
	}
	body := str(topic)
	if qos > 0 {
		body = append(body, byte(id>>8), byte(id))
	}
	return pkt(first, body, []byte(payload))
}

// connected dials and CONNECTs with token as the password.
func connected(t testing.TB, addr, token string) *client {
	t.Helper()
	c := dial(t, addr)
	c.send(connectPkt(30, "any", token))
	if body := c.expect(0x20); body[1] != 0 {
		t.Fatalf("CONNACK code %d", body[1])
	}
	return c
}

var fqName = regexp.MustCompile(`fqName: "([a-z_]+)"`)

// samples collects c's metrics: each sample's value by its name and, for a
// labelled one, its labels, e.g. "kraken_connections{transport=mqtt}".
func samples(t *testing.T, c metrics.Component) map[string]float64 {
	t.Helper()
	ch := make(chan prometheus.Metric, 256)
	d := metrics.NewDescs()
	c.Collect(t.Context(), &d, ch)
	close(ch)
	out := map[string]float64{}
	for m := range ch {
		var pb dto.Metric
		if err := m.Write(&pb); err != nil {
			t.Fatal(err)
		}
		key := fqName.FindStringSubmatch(m.Desc().String())[1]
		if ls := pb.GetLabel(); len(ls) > 0 {
			parts := make([]string, len(ls))
			for i, l := range ls {
				parts[i] = l.GetName() + "=" + l.GetValue()
			}
			key += "{" + strings.Join(parts, ",") + "}"
		}
		out[key] = pb.GetCounter().GetValue() + pb.GetGauge().GetValue()
	}
	return out
}
