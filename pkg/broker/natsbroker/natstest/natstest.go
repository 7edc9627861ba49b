// Package natstest runs embedded NATS servers (the nats-server module,
// in process, on loopback) for tests: one server, or a cluster of three
// joined by routes.
package natstest

import (
	"fmt"
	"testing"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"
)

// RunServer starts an embedded NATS server with opts (nil for defaults) on
// a random loopback port; it is shut down when t ends.
func RunServer(t testing.TB, opts *natsserver.Options) *natsserver.Server {
	t.Helper()
	if opts == nil {
		opts = &natsserver.Options{}
	}
	opts.Host, opts.NoLog, opts.NoSigs = "127.0.0.1", true, true
	if opts.Port == 0 {
		opts.Port = -1
	}
	s, err := natsserver.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		t.Fatal("natstest: NATS server not ready")
	}
	t.Cleanup(func() { s.Shutdown(); s.WaitForShutdown() })
	return s
}

// Cluster starts n NATS servers joined as one cluster by routes and waits
// until every server has a route to every other.
func Cluster(t testing.TB, n int) []*natsserver.Server {
	t.Helper()
	seed := RunServer(t, &natsserver.Options{ServerName: "s0",
		Cluster: natsserver.ClusterOpts{Name: "kraken-test", Host: "127.0.0.1", Port: -1}})
	route := fmt.Sprintf("nats://127.0.0.1:%d", seed.ClusterAddr().Port)
	servers := []*natsserver.Server{seed}
	for i := 1; i < n; i++ {
		servers = append(servers, RunServer(t, &natsserver.Options{ServerName: fmt.Sprintf("s%d", i),
			Cluster: natsserver.ClusterOpts{Name: "kraken-test", Host: "127.0.0.1", Port: -1},
			Routes:  natsserver.RoutesFromStr(route)}))
	}
	deadline := time.Now().Add(10 * time.Second)
	for _, s := range servers {
		for s.NumRoutes() < n-1 {
			if time.Now().After(deadline) {
				t.Fatalf("natstest: server %s has %d routes, want %d", s.Name(), s.NumRoutes(), n-1)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	return servers
}
