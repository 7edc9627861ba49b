package node

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"
)

// lameDuckTransport is a recordingTransport that implements LameDuck.
type lameDuckTransport struct{ recordingTransport }

func (t *lameDuckTransport) LameDuck() { t.steps.add(t.name + ".lameduck") }

// Drain answers "draining" at once, stops every transport accepting
// (LameDuck where implemented, else Drain), and returns at once with no
// connection; a second Drain, or one after Shutdown, is refused; the
// Shutdown after it drains every transport as always.
func TestDrainStopsAcceptingAndIsOnce(t *testing.T) {
	var st steps
	n := startRecording(t, &st, func(n *Node) Transport {
		return &lameDuckTransport{recordingTransport{name: "b", steps: &st, n: n}}
	})
	began := time.Now()
	if err := n.Drain(context.Background(), time.Minute); err != nil {
		t.Fatalf("Drain with no connection: %v", err)
	}
	if took := time.Since(began); took > time.Second {
		t.Errorf("Drain with no connection took %v", took)
	}
	if failing := n.NotReady(); len(failing) != 1 || failing[0].Name != "draining" {
		t.Fatalf("NotReady after Drain = %v, want draining", failing)
	}
	if !n.Draining() {
		t.Error("Draining() = false after Drain")
	}
	if err := n.Drain(context.Background(), 0); !errors.Is(err, ErrDraining) {
		t.Fatalf("a second Drain = %v, want ErrDraining", err)
	}
	if err := n.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	// recordingTransport marks a Drain before "shutting_down": the drain's
	// comes while the node answers "draining".
	want := []string{"broker.start", "a.drain", "a.drain while ready", "b.lameduck",
		"a.drain", "b.drain", "a.shutdown", "b.shutdown", "broker.close"}
	if got := st.list(); !slices.Equal(got, want) {
		t.Fatalf("steps = %v, want %v", got, want)
	}
}
