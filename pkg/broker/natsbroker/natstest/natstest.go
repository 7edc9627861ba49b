// Package natstest runs embedded NATS servers (the nats-server module,
// in process, on loopback) for tests: one server, or a cluster of three
// joined by routes.
package natstest

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// RunServer starts an embedded NATS server with opts (nil for defaults) on
// a random loopback port; it is shut down when t ends.
func RunServer(t testing.TB, opts *natsserver.Options) *natsserver.Server {
	t.Helper()
	s := newServer(t, opts)
	waitReady(t, s)
	return s
}

func newServer(t testing.TB, opts *natsserver.Options) *natsserver.Server {
	t.Helper()
	if opts == nil {
		opts = &natsserver.Options{}
	}
	opts.Host, opts.NoLog, opts.NoSigs = "127.0.0.1", true, true
	if opts.Port == 0 {
		opts.Port = -1
	}
	given := opts.Clone()
	s, err := natsserver.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	started.Store(s, given)
	s.Start()
	t.Cleanup(func() { s.Shutdown(); s.WaitForShutdown(); started.Delete(s) })
	return s
}

func waitReady(t testing.TB, s *natsserver.Server) {
	t.Helper()
	if !s.ReadyForConnections(20 * time.Second) {
		t.Fatalf("natstest: NATS server %s not ready", s.Name())
	}
}

// started holds the options each server was started with, for Restart.
var started sync.Map // *natsserver.Server → *natsserver.Options

// Restart starts again a server that RunServer or Cluster started and that
// has been shut down: the same options (name, JetStream store, cluster port
// and routes) on the same client port, so a cluster member gets its
// JetStream streams back and rejoins its cluster. It returns the new
// server once it accepts clients (shut down when t ends); it does not wait
// for its routes or for JetStream to catch up.
func Restart(t testing.TB, s *natsserver.Server) *natsserver.Server {
	t.Helper()
	v, ok := started.Load(s)
	if !ok {
		t.Fatalf("natstest: server %s was not started by natstest", s.Name())
	}
	u, err := url.Parse(s.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	opts := v.(*natsserver.Options).Clone()
	if opts.Port, err = strconv.Atoi(u.Port()); err != nil {
		t.Fatal(err)
	}
	return RunServer(t, opts)
}

// RunJetStream starts one embedded server with JetStream on, its store in
// a temporary directory.
func RunJetStream(t testing.TB) *natsserver.Server {
	t.Helper()
	return RunServer(t, &natsserver.Options{ServerName: "js0", JetStream: true, StoreDir: t.TempDir()})
}

// ConnectJetStream starts one embedded server with JetStream on
// (RunJetStream) and returns a connection to it, closed when t ends, with
// the server.
func ConnectJetStream(t testing.TB) (*nats.Conn, *natsserver.Server) {
	t.Helper()
	srv := RunJetStream(t)
	nc, err := nats.Connect(srv.ClientURL())
	if err != nil {
		t.Fatalf("natstest: connect to %s: %v", srv.ClientURL(), err)
	}
	t.Cleanup(nc.Close)
	return nc, srv
}

// Cluster starts n NATS servers joined as one cluster by routes, JetStream
// on (each with its own temporary store), and waits until every server has
// a route to every other and JetStream has a meta leader. A cluster that
// does not come up (a free port taken meanwhile by another process) is
// shut down and started again on new ports, up to three times.
func Cluster(t testing.TB, n int) []*natsserver.Server {
	t.Helper()
	var err error
	for attempt := 0; attempt < 3; attempt++ {
		var servers []*natsserver.Server
		if servers, err = startCluster(t, n); err == nil {
			return servers
		}
		for _, s := range servers {
			s.Shutdown()
			s.WaitForShutdown()
		}
	}
	t.Fatalf("natstest: %v", err)
	return nil
}

func startCluster(t testing.TB, n int) ([]*natsserver.Server, error) {
	t.Helper()
	ports := make([]int, n)
	for i := range ports {
		ports[i] = freePort(t)
	}
	var routes []string
	for _, p := range ports {
		routes = append(routes, fmt.Sprintf("nats://127.0.0.1:%d", p))
	}
	var servers []*natsserver.Server
	for i := 0; i < n; i++ {
		servers = append(servers, newServer(t, &natsserver.Options{ServerName: fmt.Sprintf("s%d", i),
			JetStream: true, StoreDir: t.TempDir(),
			Cluster: natsserver.ClusterOpts{Name: "kraken-test", Host: "127.0.0.1", Port: ports[i]},
			Routes:  natsserver.RoutesFromStr(strings.Join(routes, ","))}))
	}
	for _, s := range servers {
		if !s.ReadyForConnections(10 * time.Second) {
			return servers, fmt.Errorf("NATS server %s not ready", s.Name())
		}
	}
	deadline := time.Now().Add(20 * time.Second)
	for _, s := range servers {
		for s.NumRoutes() < n-1 {
			if time.Now().After(deadline) {
				return servers, fmt.Errorf("server %s has %d routes, want %d", s.Name(), s.NumRoutes(), n-1)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	for {
		leader := false
		for _, s := range servers {
			leader = leader || s.JetStreamIsLeader()
		}
		if leader {
			return servers, nil
		}
		if time.Now().After(deadline) {
			return servers, errors.New("no JetStream meta leader")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// ClusterOptions returns the options of n servers of one cluster, as
// Cluster makes them (routes to each other, JetStream on, each with its own
// temporary store), for the caller to start with RunServer one at a time:
// JetStream has no meta leader until a majority runs.
func ClusterOptions(t testing.TB, n int) []*natsserver.Options {
	t.Helper()
	ports := make([]int, n)
	var routes []string
	for i := range ports {
		ports[i] = freePort(t)
		routes = append(routes, fmt.Sprintf("nats://127.0.0.1:%d", ports[i]))
	}
	var out []*natsserver.Options
	for i := 0; i < n; i++ {
		out = append(out, &natsserver.Options{ServerName: fmt.Sprintf("s%d", i),
			JetStream: true, StoreDir: t.TempDir(),
			Cluster: natsserver.ClusterOpts{Name: "kraken-test", Host: "127.0.0.1", Port: ports[i]},
			Routes:  natsserver.RoutesFromStr(strings.Join(routes, ","))})
	}
	return out
}

// FreePort returns a loopback TCP port nothing listens on now, e.g. to
// restart a server on the same port.
func FreePort(t testing.TB) int { return freePort(t) }

// freePort returns a loopback TCP port nothing listens on now.
func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
