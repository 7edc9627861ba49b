package node

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/NoLagApp/kraken/pkg/auth"
	"github.com/NoLagApp/kraken/pkg/broker"
	"github.com/NoLagApp/kraken/pkg/broker/local"
	"github.com/NoLagApp/kraken/pkg/hub"
	"github.com/NoLagApp/kraken/pkg/session"
)

// steps records the order of the lifecycle calls a test sees.
type steps struct {
	mu  sync.Mutex
	got []string
}

func (s *steps) add(step string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.got = append(s.got, step)
}

func (s *steps) list() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.got)
}

// recordingTransport is a transport with no socket: it records Drain and
// Shutdown, and whether the node was already not ready at its Drain.
type recordingTransport struct {
	name  string
	steps *steps
	n     *Node
}

func (t *recordingTransport) Kind(*hub.Conn) Kind { return KindMQTT }
func (t *recordingTransport) Drain() {
	t.steps.add(t.name + ".drain")
	if !slices.ContainsFunc(t.n.NotReady(), func(r NotReadyReason) bool { return r.Name == "shutting_down" }) {
		t.steps.add(t.name + ".drain while ready")
	}
}
func (t *recordingTransport) Shutdown(context.Context) error {
	t.steps.add(t.name + ".shutdown")
	return nil
}

// recordingBroker is the single-node broker, recording its start and close.
type recordingBroker struct {
	local.Broker
	steps *steps
}

func (b recordingBroker) Start(ctx context.Context, h broker.Handler) error {
	b.steps.add("broker.start")
	return b.Broker.Start(ctx, h)
}

func (b recordingBroker) Close() error {
	b.steps.add("broker.close")
	return nil
}

// startRecording starts a node whose broker records into st, with two
// transports: a recordingTransport "a" and the one b returns for it.
func startRecording(t *testing.T, st *steps, b func(*Node) Transport) *Node {
	t.Helper()
	n, err := New(Config{Hub: hub.Config{Workers: 1, Tick: 20 * time.Millisecond},
		Session: session.Config{Auth: denyAll{}, Broker: recordingBroker{steps: st}}})
	if err != nil {
		t.Fatal(err)
	}
	n.AddTransport(1, &recordingTransport{name: "a", steps: st, n: n})
	n.AddTransport(2, b(n))
	if err := n.Start(); err != nil {
		t.Fatal(err)
	}
	return n
}

type denyAll struct{}

func (denyAll) Validate(context.Context, string) (*auth.Grant, error) { return nil, auth.ErrDenied }
func (denyAll) Revalidate(context.Context, string) (*auth.Grant, error) {
	return nil, auth.ErrDenied
}

func TestNewNeedsAnAuthenticator(t *testing.T) {
	if _, err := New(Config{}); err == nil {
		t.Fatal("New without an Authenticator: nil error")
	}
}

// Shutdown answers not ready first, drains every transport before the hub
// closes anything, stops the transports' loops, closes the broker, and
// cancels the base context last.
func TestShutdownOrder(t *testing.T) {
	var st steps
	n := startRecording(t, &st, func(n *Node) Transport { return &recordingTransport{name: "b", steps: &st, n: n} })
	if failing := n.NotReady(); failing != nil {
		t.Fatalf("NotReady after Start = %v, want none", failing)
	}
	context.AfterFunc(n.Context(), func() { st.add("context.cancel") })
	if err := n.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := n.Shutdown(context.Background()); err != nil {
		t.Fatalf("a second Shutdown: %v", err)
	}
	time.Sleep(10 * time.Millisecond) // the AfterFunc's goroutine
	want := []string{"broker.start", "a.drain", "b.drain", "a.shutdown", "b.shutdown", "broker.close", "context.cancel"}
	if got := st.list(); !slices.Equal(got, want) {
		t.Fatalf("steps = %v, want %v", got, want)
	}
	if failing := n.NotReady(); len(failing) != 1 || failing[0].Name != "shutting_down" {
		t.Fatalf("NotReady after Shutdown = %v, want shutting_down", failing)
	}
}

// A readiness check added at any time is run by NotReady, with its name.
func TestReadyChecks(t *testing.T) {
	n, err := New(Config{Session: session.Config{Auth: denyAll{}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = n.Shutdown(context.Background()) }()
	n.AddReadyCheck("token_file", func() error { return errors.New("broken") })
	n.AddReadyCheck("auth_service", func() error { return nil })
	failing := n.NotReady()
	if len(failing) != 1 || failing[0].Name != "token_file" {
		t.Fatalf("NotReady = %v, want token_file", failing)
	}
	if got, want := ReadyJSON(failing, true), `{"status":"not_ready","failing":["token_file"],"reasons":{"token_file":"broken"}}`; got != want {
		t.Fatalf("ReadyJSON = %s, want %s", got, want)
	}
}
