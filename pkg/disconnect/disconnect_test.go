package disconnect

import (
	"testing"

	"github.com/gobwas/ws"
)

// Case 001: what a client should recover from never closes with 1000 or
// 1001 (the Python SDK would stay silent forever, wire-reference.md §12.3), no
// reserved code goes on the wire (D-5), and every reason has a label.
func TestNoRecoverableCloseUses1000Or1001(t *testing.T) {
	labels := map[string]Reason{}
	for r := Reason(1); int(r) < NumReasons; r++ {
		code := r.Code()
		switch {
		case code == 1005, code == 1006, code == 1015:
			t.Errorf("%v closes with reserved code %d", r, code)
		case r.Reconnect() && (code == 1000 || code == 1001):
			t.Errorf("%v should reconnect but closes with %d, which the Python SDK treats as final", r, code)
		case r.String() == "unknown" || r.String() == "peer_closed":
			t.Errorf("reason %d has no label", r)
		}
		if other, dup := labels[r.String()]; dup {
			t.Errorf("%d and %d share the label %q", other, r, r.String())
		}
		labels[r.String()] = r
	}
	if Shutdown.Code() != 1012 {
		t.Errorf("shutdown closes with %d, want 1012 (service restart)", Shutdown.Code())
	}
}

func TestDisconnectOverrides(t *testing.T) {
	tests := []struct {
		name      string
		give      Disconnect
		wantCode  ws.StatusCode
		wantText  string
		wantFrame bool
	}{
		{"defaults", New(IdleTimeout), 4000, "idle_timeout", true},
		{"text override", WithText(ProtocolError, "reserved opcode"), 1002, "reserved opcode", true},
		{"echoed code", Disconnect{Reason: ClientClosed, Code: 4321}, 4321, "", true},
		{"no code from the client", New(ClientClosed), 1000, "", true},
		{"before the upgrade", New(HTTPDone), 0, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.give.StatusCode(); got != tt.wantCode {
				t.Errorf("StatusCode = %d, want %d", got, tt.wantCode)
			}
			if got := tt.give.Message(); got != tt.wantText {
				t.Errorf("Message = %q, want %q", got, tt.wantText)
			}
			if got := tt.give.SendsFrame(); got != tt.wantFrame {
				t.Errorf("SendsFrame = %v, want %v", got, tt.wantFrame)
			}
		})
	}
}
