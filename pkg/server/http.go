package server

import (
	"bytes"
	"io"
	"strconv"

	"github.com/gobwas/ws"

	"github.com/NoLagApp/kraken/pkg/hub"
)

var (
	crlfcrlf       = []byte("\r\n\r\n")
	healthResponse = []byte("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 15\r\nConnection: close\r\n\r\n{\"status\":\"ok\"}")
)

// handshake handles the HTTP request at the start of b once it is complete
// (protocol.md §1.1, §5.5). It returns 0 while the request is incomplete.
func (s *Server) handshake(st *connState, b []byte) int {
	end := bytes.Index(b, crlfcrlf)
	if end < 0 {
		if len(b) > s.cfg.MaxHeaderBytes {
			s.httpError(st, 431, "request header too large")
		}
		st.need = 0
		return 0
	}
	req := b[:end+4]
	if len(req) > s.cfg.MaxHeaderBytes {
		s.httpError(st, 431, "request header too large")
		return len(req)
	}
	line := req[:bytes.IndexByte(req, '\n')+1]
	parts := bytes.Fields(line)
	if len(parts) != 3 || !bytes.HasPrefix(parts[2], []byte("HTTP/")) {
		s.httpError(st, 400, "malformed request line")
		return len(req)
	}
	path := parts[1]
	if i := bytes.IndexByte(path, '?'); i >= 0 {
		path = path[:i]
	}
	switch string(path) {
	case "/health":
		st.closing = true
		st.write(healthResponse)
	case "/ws":
		s.upgrade(st, req)
	default:
		s.httpError(st, 404, "not found: the WebSocket endpoint is /ws")
	}
	return len(req)
}

// upgrade runs the gobwas/ws zero-copy upgrader over the buffered request:
// no subprotocol, no extensions (permessage-deflate is not offered).
func (s *Server) upgrade(st *connState, req []byte) {
	var resp bytes.Buffer
	rw := struct {
		io.Reader
		io.Writer
	}{bytes.NewReader(req), &resp}
	if _, err := (ws.Upgrader{}).Upgrade(rw); err != nil {
		st.closing = true
		if resp.Len() == 0 {
			s.httpError(st, 400, err.Error())
			return
		}
		st.write(resp.Bytes())
		return
	}
	st.write(resp.Bytes())
	st.c.SetPhase(hub.PhaseOpen)
}

// httpError answers a plain HTTP error with a one-line reason and closes.
func (s *Server) httpError(st *connState, status int, reason string) {
	body := reason + "\n"
	var b []byte
	b = append(b, "HTTP/1.1 "...)
	b = strconv.AppendInt(b, int64(status), 10)
	b = append(b, ' ')
	b = append(b, statusText(status)...)
	b = append(b, "\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: "...)
	b = strconv.AppendInt(b, int64(len(body)), 10)
	b = append(b, "\r\nConnection: close\r\n\r\n"...)
	b = append(b, body...)
	st.closing = true
	st.write(b)
}

func statusText(status int) string {
	switch status {
	case 400:
		return "Bad Request"
	case 404:
		return "Not Found"
	case 431:
		return "Request Header Fields Too Large"
	default:
		return "Error"
	}
}
