package server

import (
	"context"
	"errors"
	"net"
	"sync"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/NoLagApp/kraken/pkg/broker/natsbroker"
	"github.com/NoLagApp/kraken/pkg/broker/natsbroker/natstest"
)

// severableDialer dials NATS and can cut every connection it made and
// refuse new ones: to the rest of the cluster, the node stops without a
// goodbye, as if its process were killed.
type severableDialer struct {
	mu     sync.Mutex
	conns  []net.Conn
	cut    bool
	dialer net.Dialer
}

func (d *severableDialer) Dial(network, address string) (net.Conn, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.cut {
		return nil, errors.New("severed")
	}
	c, err := d.dialer.DialContext(context.Background(), network, address)
	if err == nil {
		d.conns = append(d.conns, c)
	}
	return c, err
}

func (d *severableDialer) sever() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.cut = true
	for _, c := range d.conns {
		_ = c.Close()
	}
}

// Presence joined on node 0 is listed on node 2 and seen live on node 1
// and by a lobby watcher on node 2; when node 0 is cut off without a
// goodbye, its members' leaves reach node 1 and node 2 once its liveness
// expires.
func TestNATSClusterPresenceAndLobbies(t *testing.T) {
	servers := natstest.Cluster(t, 3)
	cut := &severableDialer{}
	a, _ := natsNodeWith(t, servers, 0, func(c *Config) { c.Auth = presenceTokens() },
		func(bc *natsbroker.Config) { bc.Options = []nats.Option{nats.SetCustomDialer(cut)} })
	b, _ := natsNode(t, servers, 1, func(c *Config) { c.Auth = presenceTokens() })
	c, _ := natsNode(t, servers, 2, func(c *Config) { c.Auth = presenceTokens() })
	presenceAcrossNodes(t, []*Server{a, b, c}, func(int) { cut.sever() })
}

// An organisation limit of 3 connections holds across three nodes on NATS.
func TestNATSClusterConnectionLimit(t *testing.T) {
	servers := natstest.Cluster(t, 3)
	nodes, _ := natsNodes(t, servers, func(c *Config) { c.Auth = limitedPresenceTokens(3) })
	connectionLimitAcrossNodes(t, nodes)
}
