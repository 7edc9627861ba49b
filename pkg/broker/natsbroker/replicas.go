package natsbroker

import (
	"net"
	"net/url"

	"github.com/nats-io/nats.go"
	"go.uber.org/zap"
)

// A JetStream stream of one replica lives on one NATS server: while that
// server is down, the shared state (StateBucket) and the retained messages
// (RetainedStream) are unavailable to every node, whichever server the
// nodes are connected to. Three replicas keep them through the loss of a
// server. So a node warns once when the cluster it is connected to has more
// servers than StateReplicas or RetainReplicas, up to three (a fourth and
// fifth replica are not needed for that).
//
// How many servers: the cluster's size is not in what a NATS client
// without the system account can ask, so it is estimated from what the
// connection knows. The servers announce the client URLs of every server
// of their cluster, their own included (INFO connect_urls), which nats.go
// adds to its pool; an announced URL equal to a configured one (NATS_URL)
// is one entry, one that is not is a "discovered" server. A configured
// host name (nats-1:4222) and the address that server announces
// (172.18.0.2:4222) name one server twice, so configured URLs count only
// when they are IP addresses; the estimate is the discovered servers plus
// those, or the configured URLs if they are more (servers that announce
// the host names they are configured by). A server that listens on every
// interface without an advertise address announces one URL per interface
// and is counted that many times.

// clusterServers estimates how many servers the NATS cluster of nc has (see
// above): 1 when nc is not connected or its server is in no cluster.
func clusterServers(nc *nats.Conn) int {
	if nc.ConnectedClusterName() == "" {
		return 1
	}
	found := map[string]bool{}
	for _, u := range nc.DiscoveredServers() {
		found[u] = true
	}
	configured, configuredIPs := 0, 0
	for _, u := range nc.Servers() {
		if found[u] {
			continue
		}
		configured++
		if pu, err := url.Parse(u); err == nil && net.ParseIP(pu.Hostname()) != nil {
			configuredIPs++
		}
	}
	return max(len(found)+configuredIPs, configured, 1)
}

// checkReplicas warns, once per Broker, when the cluster nc is connected
// to has more servers than the JetStream replicas, up to three (see
// above). It runs when the publish connection is first made and when its
// server announces new servers.
func (b *Broker) checkReplicas(nc *nats.Conn) {
	replicas := min(b.cfg.StateReplicas, b.cfg.RetainReplicas)
	servers := clusterServers(nc)
	if replicas >= min(servers, 3) || b.replicasWarned.Swap(true) {
		return
	}
	b.log.Warn("the NATS cluster has more servers than JetStream replicas (NATS_REPLICAS): presence, connection counts and retained messages stop crossing nodes while the server holding them is down; 3 replicas keep them through the loss of a server",
		zap.Int("servers", servers), zap.Int("state_replicas", b.cfg.StateReplicas),
		zap.Int("retained_replicas", b.cfg.RetainReplicas), zap.String("server", nc.ConnectedUrlRedacted()))
}
