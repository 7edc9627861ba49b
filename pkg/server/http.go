package server

import (
	"bytes"
	"encoding/base64"
	"errors"
	"net"
	"net/http"
	"strconv"

	"github.com/gobwas/ws"
	"go.uber.org/zap"

	"github.com/NoLagApp/kraken/pkg/disconnect"
	"github.com/NoLagApp/kraken/pkg/edge"
	"github.com/NoLagApp/kraken/pkg/hub"
	"github.com/NoLagApp/kraken/pkg/node"
)

var (
	crlfcrlf       = []byte("\r\n\r\n")
	healthResponse = []byte("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 15\r\nConnection: close\r\n\r\n{\"status\":\"ok\"}")
)

// tlsHandshakeRecord is the first byte of a TLS ClientHello (the content
// type of a handshake record); no HTTP request starts with it.
const tlsHandshakeRecord = 0x16

// handshake handles the HTTP request at the start of b once it is complete
// (wire-reference.md §1.1, §5.5). It returns 0 while the request is incomplete.
// A TLS ClientHello (a wss:// client on this plain port) is refused at its
// first byte: it carries no blank line and would otherwise wait for the
// handshake deadline, and the client's TLS library reports the plain HTTP
// answer at once ("first record does not look like a TLS handshake").
func (s *Server) handshake(st *connState, b []byte) int {
	if len(b) > 0 && b[0] == tlsHandshakeRecord {
		s.rejectRequest(st, 400, "this port speaks plain HTTP and WebSocket (ws://), not TLS (wss://)")
		return len(b)
	}
	end := bytes.Index(b, crlfcrlf)
	if end < 0 {
		if len(b) > s.cfg.MaxHeaderBytes {
			s.rejectRequest(st, 431, "request header too large")
		}
		return 0
	}
	req := b[:end+4]
	if len(req) > s.cfg.MaxHeaderBytes {
		s.rejectRequest(st, 431, "request header too large")
		return len(req)
	}
	line := req[:bytes.IndexByte(req, '\n')+1]
	parts, ok := requestLine(line)
	if !ok || !bytes.HasPrefix(parts[2], []byte("HTTP/")) {
		s.rejectRequest(st, 400, "malformed request line")
		return len(req)
	}
	if !s.forwardedFor(st, req) {
		return len(req)
	}
	path := parts[1]
	if i := bytes.IndexByte(path, '?'); i >= 0 {
		path = path[:i]
	}
	if s.lameDuck.Load() && string(path) != "/health" && string(path) != "/ready" {
		s.obs.handshakes[HandshakeRejected].Add(1)
		s.httpErrorWith(st, http.StatusServiceUnavailable, "Retry-After: 1\r\n",
			"this node is draining: connect to another one")
		return len(req)
	}
	switch string(path) {
	case internalPublishPath:
		n := s.internalPublish(st, b)
		if n < 0 {
			return 0 // the rest of the body: any more input
		}
		s.obs.handshakes[HandshakeInternal].Add(1)
		return n
	case "/health":
		s.obs.handshakes[HandshakeHealth].Add(1)
		st.write(healthResponse)
		st.Disconnect(disconnect.New(disconnect.HTTPDone))
	case "/ready":
		s.obs.handshakes[HandshakeReady].Add(1)
		s.ready(st)
	case "/ws":
		s.upgrade(st, req)
	default:
		if p, ok := s.cfg.Carried[string(path)]; ok {
			s.upgradeCarried(st, req, p)
			break
		}
		s.obs.handshakes[HandshakeNotFound].Add(1)
		switch {
		case bytes.Equal(path, []byte("/metrics")) || bytes.HasPrefix(path, []byte("/debug/")):
			s.httpError(st, 404, "not found on the data port: /metrics and /debug/pprof are served by the admin listener (ADMIN_ADDR, 127.0.0.1:9469 by default)")
		case bytes.Equal(path, []byte(MQTTPath)):
			s.httpError(st, 404, "not found: MQTT over WebSocket is off (MQTT_ENABLED=false); the WebSocket endpoint is /ws")
		default:
			s.httpError(st, 404, "not found: the WebSocket endpoint is /ws")
		}
	}
	return len(req)
}

// upgrade upgrades a request on /ws: no subprotocol, no extensions
// (permessage-deflate is not offered).
func (s *Server) upgrade(st *connState, req []byte) {
	if !s.upgradeWith(st, req, ws.Upgrader{}) {
		return
	}
	st.Conn.SetPhase(hub.PhaseOpen)
	s.opened(st) // counted and logged (stats.go)
}

// upgradeWith runs the gobwas/ws zero-copy upgrader u over the buffered
// request and queues its 101, or answers a refused upgrade (refuseUpgrade:
// the connection closes) and reports false.
func (s *Server) upgradeWith(st *connState, req []byte, u ws.Upgrader) bool {
	if origins := s.cfg.AllowedOrigins; len(origins) > 0 {
		// A browser's upgrade from an origin not allowed (ALLOWED_ORIGINS):
		// 403 with the reason. No Origin header (not a browser): not checked.
		u.OnHeader = func(key, value []byte) error {
			if bytes.EqualFold(key, []byte("Origin")) && !origins.Allowed(value) {
				return ws.RejectConnectionError(ws.RejectionStatus(http.StatusForbidden),
					ws.RejectionReason("origin not allowed: "+string(value)+" (ALLOWED_ORIGINS)"))
			}
			return nil
		}
	}
	rw := newUpgradeIO(req)
	_, err := u.Upgrade(rw)
	if err == nil && !secKeyValid(req) {
		err = ws.ErrHandshakeBadSecKey
	}
	var resp []byte
	if err == nil {
		resp = rw.response()
	}
	rw.release()
	if err != nil {
		s.refuseUpgrade(st, err)
		return false
	}
	st.write(resp)
	return true
}

// ready answers GET /ready: 200 {"status":"ready"}, or 503 with the names
// of the failing checks (node.Node.NotReady; the reasons are on the admin
// listener only). /health stays the liveness answer.
func (s *Server) ready(st *connState) {
	failing := s.node.NotReady()
	status := http.StatusOK
	if len(failing) > 0 {
		status = http.StatusServiceUnavailable
	}
	s.httpAnswer(st, status, "application/json", "Cache-Control: no-store\r\n", node.ReadyJSON(failing, false))
}

// refuseUpgrade answers a refused upgrade with the status gobwas chose (400
// for a missing or malformed header, 405 for a method other than GET, 426
// for an unsupported Sec-WebSocket-Version, 505 for HTTP/1.0), the headers
// that status calls for (Allow: GET with 405, RFC 9110 §15.5.6;
// Sec-WebSocket-Version: 13 when the version is missing or unsupported, RFC
// 6455 §4.2.2, §4.4), and closes.
func (s *Server) refuseUpgrade(st *connState, err error) {
	s.obs.handshakes[HandshakeRejected].Add(1)
	if ce := s.log.Check(zap.DebugLevel, "upgrade refused"); ce != nil {
		ce.Write(connFields(st.Conn, zap.Error(err))...)
	}
	status, header := http.StatusBadRequest, ""
	var rej *ws.ConnectionRejectedError
	if errors.As(err, &rej) && rej.StatusCode() != 0 {
		status = rej.StatusCode()
	}
	switch err {
	case ws.ErrHandshakeBadMethod:
		header = "Allow: GET\r\n"
	case ws.ErrHandshakeBadSecVersion, ws.ErrHandshakeUpgradeRequired:
		header = "Sec-WebSocket-Version: 13\r\n"
	}
	s.httpErrorWith(st, status, header, err.Error())
}

// secKeyValid reports whether the request's Sec-WebSocket-Key (the last one,
// as gobwas reads it) is the base64 encoding of 16 bytes (RFC 6455 §4.1, item
// 7); gobwas checks only its length. req is a complete request.
func secKeyValid(req []byte) bool {
	key := headerValue(req, "Sec-WebSocket-Key")
	var raw [18]byte // base64.StdEncoding.DecodedLen(24)
	if len(key) != 24 {
		return false
	}
	n, err := base64.StdEncoding.Decode(raw[:], key)
	return err == nil && n == 16
}

// headerValue returns the trimmed value of the last header called name in
// the complete request head, or nil. Only the upgrade reads a field this
// way (Sec-WebSocket-Key, which gobwas has already checked is there once);
// other requests are read by net/http (readHTTPRequest).
func headerValue(head []byte, name string) []byte {
	var value []byte
	headerValues(head, name, func(v []byte) { value = v })
	return value
}

// headerValues calls f with the trimmed value of every header called name
// in the complete request head, in order (an upgrade's
// Sec-WebSocket-Key, the subprotocols offered to a Carried protocol).
func headerValues(head []byte, name string, f func(value []byte)) {
	rest := head[bytes.IndexByte(head, '\n')+1:]
	for {
		i := bytes.IndexByte(rest, '\n')
		if i < 0 {
			return
		}
		k, v, ok := bytes.Cut(rest[:i], []byte(":"))
		if ok && bytes.EqualFold(bytes.TrimSpace(k), []byte(name)) {
			f(bytes.TrimSpace(v))
		}
		rest = rest[i+1:]
	}
}

// forwardedFor takes the client's address from the forwarding headers of
// req, a complete request head, when its peer is a trusted proxy
// (Config.TrustedProxies, edge.TrustedProxies.ClientAddr: Forwarded, else
// X-Forwarded-For), makes it the connection's (reactor.Stream.Readdress:
// logs, metrics and limits see it from now on) and applies that address's
// edge limits; once per connection (a request whose body is still coming
// is looked at again). It reports false when they refuse the connection,
// answered with 429 and the reason (refuseAtEdge).
func (s *Server) forwardedFor(st *connState, req []byte) bool {
	tp := s.cfg.TrustedProxies
	if len(tp) == 0 {
		return true
	}
	peer := edge.AddrOfPort(st.RemoteAddrPort())
	if !tp.Trusts(peer) {
		return true
	}
	var fwd, xff [][]byte
	headerValues(req, "Forwarded", func(v []byte) { fwd = append(fwd, v) })
	if len(fwd) == 0 {
		headerValues(req, "X-Forwarded-For", func(v []byte) { xff = append(xff, v) })
	}
	// The connection was admitted on the node's bounds alone (Open): its
	// address's apply now, once, to the client's address the proxy
	// forwards, or to the proxy's own when it forwards none.
	client, ok := tp.ClientAddr(peer, fwd, xff)
	if !ok {
		ta, isTCP := st.RemoteAddr().(*net.TCPAddr)
		if !isTCP {
			return true
		}
		client = ta.AddrPort()
	}
	from, ok := st.Readdress(client)
	if !ok { // done already: a request whose body is still coming
		return true
	}
	if r := s.node.Readdress(st.Conn, from); r != edge.Admitted {
		s.refuseAtEdge(st, r)
		return false
	}
	return true
}

// refuseAtEdge answers a connection the node's edge limits refused
// (node.Node.Admit, or Readdress once its client's address is known)
// before its request is handled: 429 Too Many Requests for
// a bound of its address, 503 Service Unavailable for one of the node,
// with Retry-After and the reason naming the setting, then closes (the
// request that arrives meanwhile is discarded).
func (s *Server) refuseAtEdge(st *connState, r edge.Refusal) {
	s.obs.handshakes[HandshakeRejected].Add(1)
	if ce := s.log.Check(zap.DebugLevel, "connection refused at the edge"); ce != nil {
		ce.Write(connFields(st.Conn, zap.Stringer("reason", r))...)
	}
	status := http.StatusServiceUnavailable
	if r.PerAddress() {
		status = http.StatusTooManyRequests
	}
	s.httpErrorWith(st, status, "Retry-After: 1\r\n", r.Text())
}

// rejectRequest answers a malformed or oversized request (counted as a
// rejected handshake) and closes.
func (s *Server) rejectRequest(st *connState, status int, reason string) {
	s.obs.handshakes[HandshakeRejected].Add(1)
	if ce := s.log.Check(zap.DebugLevel, "request refused"); ce != nil {
		ce.Write(connFields(st.Conn, zap.Int("status", status), zap.String("reason", reason))...)
	}
	s.httpError(st, status, reason)
}

// httpError answers a plain HTTP error with a one-line reason and closes.
func (s *Server) httpError(st *connState, status int, reason string) {
	s.httpErrorWith(st, status, "", reason)
}

// httpErrorWith is httpError with extra header lines, each ending in CRLF.
func (s *Server) httpErrorWith(st *connState, status int, header, reason string) {
	s.httpAnswer(st, status, "text/plain; charset=utf-8", header, reason+"\n")
}

// httpAnswer answers a plain HTTP request with status, a body of
// contentType and the extra header lines, then closes.
func (s *Server) httpAnswer(st *connState, status int, contentType, header, body string) {
	var b []byte
	b = append(b, "HTTP/1.1 "...)
	b = strconv.AppendInt(b, int64(status), 10)
	b = append(b, ' ')
	b = append(b, http.StatusText(status)...)
	b = append(b, "\r\nContent-Type: "...)
	b = append(b, contentType...)
	b = append(b, "\r\n"...)
	b = append(b, header...)
	b = append(b, "Content-Length: "...)
	b = strconv.AppendInt(b, int64(len(body)), 10)
	b = append(b, "\r\nConnection: close\r\n\r\n"...)
	b = append(b, body...)
	st.write(b)
	st.Disconnect(disconnect.New(disconnect.HTTPDone))
}
