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
	// Warning marks a condition that is reported but leaves the node
	// ready (AddReadyWarning).
	Warning bool
}

// NotReadyReason is a readiness condition that does not hold.
type NotReadyReason struct {
	Name string
	Err  error
}

// AddReadyCheck adds a readiness condition. It is safe at any time; checks
// run on every /ready request and must be quick and not block.
func (n *Node) AddReadyCheck(name string, check func() error) {
	n.addCheck(ReadyCheck{Name: name, Check: check})
}

// AddReadyWarning adds a condition the admin listener's /ready reports
// under "warnings" when it fails, while the node stays ready: a problem
// an operator must fix that does not stop the node serving (a TLS
// certificate reload that failed keeps the certificate in force). Like a
// check, it must be quick and not block.
func (n *Node) AddReadyWarning(name string, check func() error) {
	n.addCheck(ReadyCheck{Name: name, Check: check, Warning: true})
}

func (n *Node) addCheck(c ReadyCheck) {
	n.checksMu.Lock()
	defer n.checksMu.Unlock()
	var next []ReadyCheck
	if cur := n.checks.Load(); cur != nil {
		next = append(next, *cur...)
	}
	next = append(next, c)
	n.checks.Store(&next)
}

// ReadyWarnings returns the warnings (AddReadyWarning) that fail now, nil
// when none does.
func (n *Node) ReadyWarnings() []NotReadyReason {
	var out []NotReadyReason
	if checks := n.checks.Load(); checks != nil {
		for _, c := range *checks {
			if !c.Warning {
				continue
			}
			if err := c.Check(); err != nil {
				out = append(out, NotReadyReason{Name: c.Name, Err: err})
			}
		}
	}
	return out
}

// NotReady returns the readiness conditions that do not hold, nil when the
// node is ready: it is not draining (Drain has begun: "draining"), not
// shutting down (Shutdown has begun: "shutting_down"), its broker backend
// (when it has a Ready() error method, checked by type assertion) is
// connected ("broker"), the backend's shared state works (when it is a
// broker.StateReporter: "cluster_state"), and every check added with
// AddReadyCheck passes.
func (n *Node) NotReady() []NotReadyReason {
	var out []NotReadyReason
	if n.lameDuck.Load() {
		err := error(errDrainingReady)
		if n.drained.Load() {
			err = errDrainedReady
		}
		out = append(out, NotReadyReason{Name: "draining", Err: err})
	}
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
			if c.Warning {
				continue
			}
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
	return ReadyDetailJSON(failing, nil, detail)
}

// ReadyDetailJSON is ReadyJSON with, when detail is set and warnings
// (Node.ReadyWarnings) is not empty, "warnings":{name: error text}.
func ReadyDetailJSON(failing, warnings []NotReadyReason, detail bool) string {
	var b strings.Builder
	if len(failing) == 0 {
		b.WriteString(`{"status":"ready"`)
	} else {
		b.WriteString(`{"status":"not_ready","failing":[`)
		for i, f := range failing {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(jsonString(f.Name))
		}
		b.WriteByte(']')
		if detail {
			writeReasons(&b, "reasons", failing)
		}
	}
	if detail && len(warnings) > 0 {
		writeReasons(&b, "warnings", warnings)
	}
	b.WriteByte('}')
	return b.String()
}

// writeReasons writes ,"key":{name: error text, ...}.
func writeReasons(b *strings.Builder, key string, rs []NotReadyReason) {
	b.WriteString(`,"` + key + `":{`)
	for i, f := range rs {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(jsonString(f.Name))
		b.WriteByte(':')
		b.WriteString(jsonString(f.Err.Error()))
	}
	b.WriteByte('}')
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
