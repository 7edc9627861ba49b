package node

import (
	"strings"

	"github.com/NoLagApp/kraken/pkg/broker"
)

// ReadyCheck is one condition of readiness (Node.NotReady): Name is a
// short code shown on the public /ready ("token_file", "auth_service"),
// Check returns why it does not hold, or nil.
type ReadyCheck struct {
	Name  string
	Check func() error
}

// NotReadyReason is a readiness condition that does not hold.
type NotReadyReason struct {
	Name string
	Err  error
}

// AddReadyCheck adds a readiness condition. It is safe at any time; checks
// run on every /ready request and must be quick and not block.
func (n *Node) AddReadyCheck(name string, check func() error) {
	n.checksMu.Lock()
	defer n.checksMu.Unlock()
	var next []ReadyCheck
	if cur := n.checks.Load(); cur != nil {
		next = append(next, *cur...)
	}
	next = append(next, ReadyCheck{Name: name, Check: check})
	n.checks.Store(&next)
}

// NotReady returns the readiness conditions that do not hold, nil when the
// node is ready: it is not shutting down (Shutdown has begun:
// "shutting_down"), its broker backend (when it has a Ready() error
// method, checked by type assertion) is connected
// ("broker"), the backend's shared state works (when it is a
// broker.StateReporter: "cluster_state"), and every check added with
// AddReadyCheck passes.
func (n *Node) NotReady() []NotReadyReason {
	var out []NotReadyReason
	if n.draining.Load() {
		out = append(out, NotReadyReason{Name: "shutting_down", Err: errShuttingDown})
	}
	if r, ok := n.broker.(interface{ Ready() error }); ok {
		if err := r.Ready(); err != nil {
			out = append(out, NotReadyReason{Name: "broker", Err: err})
		}
	}
	if r, ok := n.broker.(broker.StateReporter); ok {
		if err := r.StateReady(); err != nil {
			out = append(out, NotReadyReason{Name: "cluster_state", Err: err})
		}
	}
	if checks := n.checks.Load(); checks != nil {
		for _, c := range *checks {
			if err := c.Check(); err != nil {
				out = append(out, NotReadyReason{Name: c.Name, Err: err})
			}
		}
	}
	return out
}

type readyError string

func (e readyError) Error() string { return string(e) }

const errShuttingDown = readyError("the broker is shutting down")

// ReadyJSON renders the answer of /ready: {"status":"ready"}, or
// {"status":"not_ready","failing":[names]} with, when detail is set,
// "reasons":{name: error text} (the admin listener's; the WebSocket port's
// /ready names the failing checks only, since it may face the internet).
func ReadyJSON(failing []NotReadyReason, detail bool) string {
	if len(failing) == 0 {
		return `{"status":"ready"}`
	}
	var b strings.Builder
	b.WriteString(`{"status":"not_ready","failing":[`)
	for i, f := range failing {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(jsonString(f.Name))
	}
	b.WriteByte(']')
	if detail {
		b.WriteString(`,"reasons":{`)
		for i, f := range failing {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(jsonString(f.Name))
			b.WriteByte(':')
			b.WriteString(jsonString(f.Err.Error()))
		}
		b.WriteByte('}')
	}
	b.WriteByte('}')
	return b.String()
}

// jsonString quotes s as a JSON string.
func jsonString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20:
			const hex = "0123456789abcdef"
			b.WriteString(`\u00`)
			b.WriteByte(hex[r>>4])
			b.WriteByte(hex[r&0xf])
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}
