package main

import (
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/eclipse/paho.mqtt.golang/packets"
)

// MQTT subscribers (--transport mqtt, idle only): each connection is an
// MQTT 3.1.1 client of the broker's MQTT listener (--mqtt-addr). It sends
// CONNECT with Clean Session 1, keep-alive 0 (the broker then never times
// it out, so nothing is sent while it idles), the client identifier
// clientID(g) and the connection's token as both user name and password
// (kraken takes the password as the token, docs/mqtt.md), then one
// SUBSCRIBE with the topics at QoS 0, and waits for CONNACK 0 and a SUBACK
// granting every topic. The publisher stays a WebSocket connection (--url):
// what it publishes reaches the MQTT subscribers of the same topics, the
// payload being the publish's data (the stamp).
//
// The packets are paho's (github.com/eclipse/paho.mqtt.golang/packets).
// An MQTT connection is read without a buffer (packets.ReadPacket reads
// exactly one packet), so it never holds bytes past the last packet read;
// a read deadline that passes in the middle of a packet leaves the rest of
// it unread, so the connection's later reads fail (counted as missed or
// closed), as an idle connection that misses its deadline is reported
// anyway.

// mqttOpen dials addr from the dialer's source address and opens the MQTT
// session of the connection with global index g, subscribed to topics.
func (d *dialer) mqttOpen(g int, topics []string) (*conn, int64, error) {
	nc, err := d.netDialer.Dial("tcp", d.mqttAddr)
	if err != nil {
		return nil, 0, err
	}
	fail := func(err error) (*conn, int64, error) {
		_ = nc.Close()
		return nil, 0, err
	}
	deadline := time.Now().Add(d.timeout)
	_ = nc.SetDeadline(deadline)
	tok := tokenFor(d.token, d.tokens, g)
	cp := packets.NewControlPacket(packets.Connect).(*packets.ConnectPacket)
	cp.ProtocolName, cp.ProtocolVersion = "MQTT", 4
	cp.CleanSession, cp.Keepalive = true, 0
	cp.ClientIdentifier = clientID(g)
	cp.UsernameFlag, cp.Username = true, tok
	cp.PasswordFlag, cp.Password = true, []byte(tok)
	tAuth := time.Now()
	if err := cp.Write(nc); err != nil {
		return fail(err)
	}
	p, err := packets.ReadPacket(nc)
	if err != nil {
		return fail(fmt.Errorf("connack: %w", err))
	}
	ack, ok := p.(*packets.ConnackPacket)
	if !ok {
		return fail(fmt.Errorf("connack: got %s", p))
	}
	authNs := time.Since(tAuth).Nanoseconds()
	if ack.ReturnCode != packets.Accepted {
		return fail(fmt.Errorf("%w: CONNACK %d (%s)", errAuth, ack.ReturnCode, packets.ConnackReturnCodes[ack.ReturnCode]))
	}
	c := &conn{nc: nc, mqtt: true}
	if len(topics) > 0 {
		sp := packets.NewControlPacket(packets.Subscribe).(*packets.SubscribePacket)
		sp.MessageID, sp.Topics, sp.Qoss = 1, topics, make([]byte, len(topics))
		if err := sp.Write(nc); err != nil {
			return fail(err)
		}
		p, err := packets.ReadPacket(nc)
		if err != nil {
			return fail(fmt.Errorf("suback: %w", err))
		}
		sa, ok := p.(*packets.SubackPacket)
		if !ok || len(sa.ReturnCodes) != len(topics) {
			return fail(fmt.Errorf("suback: got %s", p))
		}
		for i, code := range sa.ReturnCodes {
			if code == 0x80 {
				return fail(fmt.Errorf("subscribe refused: %s", topics[i]))
			}
		}
	}
	_ = nc.SetDeadline(time.Time{})
	return c, authNs, nil
}

// readPublishes reads MQTT packets from c until stop returns true for a
// PUBLISH's payload or the deadline passes; other packets are skipped.
// Closed by the broker (EOF, a reset) it marks c closed and returns
// errClosed.
func (c *conn) readPublishes(deadline time.Time, stop func(payload []byte) bool) error {
	_ = c.nc.SetReadDeadline(deadline)
	defer func() { _ = c.nc.SetReadDeadline(time.Time{}) }()
	for {
		p, err := packets.ReadPacket(c.nc)
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				return err
			}
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) {
				c.closed.Store(true)
				return errClosed
			}
			c.closed.Store(true)
			return err
		}
		if pub, ok := p.(*packets.PublishPacket); ok && stop(pub.Payload) {
			return nil
		}
	}
}
