package server

import (
	"bytes"
	"crypto/subtle"
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"go.uber.org/zap"

	"github.com/NoLagApp/kraken/pkg/hub"
	"github.com/NoLagApp/kraken/pkg/session"
	"github.com/NoLagApp/kraken/pkg/topic"
	"github.com/NoLagApp/kraken/pkg/wire"
)

// internalPublishPath is the backend publish endpoint (protocol.md §5.4).
const internalPublishPath = "/internal/publish"

// DefaultInternalSecret is the placeholder secret of the original's image;
// while INTERNAL_SECRET is unset or still this value, /internal/publish is
// not served (OQ-26, OQ-64).
const DefaultInternalSecret = "change_me"

// internalEnabled reports whether /internal/publish is served.
func (s *Server) internalEnabled() bool {
	return s.cfg.InternalSecret != "" && s.cfg.InternalSecret != DefaultInternalSecret
}

// internalRequest is the JSON body of POST /internal/publish (protocol.md
// §5.4, OQ-26): the raw broker topic (a routing key, e.g.
// "demo-app/demo/general/messages"), or a client pattern with an optional
// app id resolved as a wildcard rule resolves it (§4.6).
type internalRequest struct {
	Topic   *string         `json:"topic"`
	Pattern *string         `json:"pattern"`
	AppID   string          `json:"appId"`
	Payload json.RawMessage `json:"payload"`
	Retain  bool            `json:"retain"`
	QoS     *int            `json:"qos"`
}

// internalPublish answers the POST /internal/publish request req, whose
// body it returns the length of once complete (0 while it is not). The
// request is answered and the connection closed, as every plain HTTP
// request is.
func (s *Server) internalPublish(st *connState, method []byte, head, rest []byte) int {
	if !s.internalEnabled() {
		s.httpJSON(st, 404, `{"error":"not_found"}`)
		return 0
	}
	if string(method) != "POST" {
		s.httpJSON(st, 404, `{"error":"not_found"}`)
		return 0
	}
	n, ok := contentLength(head)
	switch {
	case !ok:
		s.httpJSON(st, 411, `{"error":"length_required"}`)
		return 0
	case n > s.cfg.MaxInternalBody:
		s.httpJSON(st, 413, `{"error":"body_too_large","maxBytes":`+strconv.Itoa(s.cfg.MaxInternalBody)+`}`)
		return 0
	case len(rest) < n:
		return -1 // the body is not all here yet
	}
	body := rest[:n]
	want := "Bearer " + s.cfg.InternalSecret
	if subtle.ConstantTimeCompare(headerValue(head, "Authorization"), []byte(want)) != 1 {
		// Logged at info: a wrong secret is worth seeing (never the header).
		s.log.Info("internal publish refused", connFields(st.Conn, zap.Int("status", 401),
			zap.String("reason", "unauthorized"))...)
		s.httpJSON(st, 401, `{"error":"unauthorized"}`)
		return n
	}
	var req internalRequest
	if err := json.Unmarshal(body, &req); err != nil {
		s.httpJSON(st, 400, `{"error":"invalid_json"}`)
		return n
	}
	key, display, errBody := internalTarget(&req)
	if errBody != "" {
		s.httpJSON(st, 400, errBody)
		return n
	}
	data, err := session.DataFromJSON(req.Payload)
	if err != nil {
		s.httpJSON(st, 400, `{"error":"invalid_payload","detail":`+strconv.Quote(errDetail(err))+`}`)
		return n
	}
	if len(data) > s.cfg.MaxMessageSize {
		s.httpJSON(st, 413, `{"error":"message_too_large","maxSizeBytes":`+strconv.Itoa(s.cfg.MaxMessageSize)+`}`)
		return n
	}
	if s.hub.Busy() {
		s.httpJSON(st, 503, `{"error":"broker_busy"}`)
		return n
	}
	now := time.Now()
	p := &hub.Publication{Key: key, Topic: display, Echo: true, Retain: req.Retain,
		ClearRetained: req.Retain && len(data) == 1 && data[0] == 0xc0}
	p.Msg = wire.Message{Topic: display, Data: data, From: "server", FromType: "server", Timestamp: now.UnixMilli()}
	if s.cfg.RecordMessages {
		p.Msg.MsgID = uuid.NewString()
	}
	if err := s.proto.Inject(p, session.SourceInternal); err != nil {
		s.httpJSON(st, 502, `{"error":"broker_unavailable"}`)
		return n
	}
	s.httpJSON(st, 200, `{"success":true}`)
	return n
}

// missingFields is the 400 body of a request without a target or payload.
const missingFields = `{"error":"missing_required_fields","required":["topic","payload"]}`

// internalTarget returns the routing key and the display topic of an
// internal publish: the raw broker topic as the key, with its first level
// (the app) taken off for display, or the pattern under its app ("unscoped"
// without one, §4.6). It returns a 400 body for a bad request.
func internalTarget(req *internalRequest) (key, display, errBody string) {
	if len(bytes.TrimSpace(req.Payload)) == 0 {
		return "", "", missingFields
	}
	switch {
	case req.Topic != nil && *req.Topic != "":
		key = *req.Topic
		display = key
		if _, after, ok := strings.Cut(key, "/"); ok && after != "" {
			display = after
		}
	case req.Pattern != nil && *req.Pattern != "":
		app := req.AppID
		if app == "" {
			app = "unscoped"
		}
		display = *req.Pattern
		key = app + "/" + display
	default:
		return "", "", missingFields
	}
	if err := topic.ValidatePublish(display); err != nil {
		return "", "", `{"error":"invalid_topic","detail":` + strconv.Quote(err.Error()) + `}`
	}
	return key, display, ""
}

// contentLength returns the request's Content-Length; ok is false when it
// has none or it is malformed (chunked bodies are not accepted).
func contentLength(head []byte) (int, bool) {
	v := headerValue(head, "Content-Length")
	if v == nil {
		return 0, false
	}
	n, err := strconv.Atoi(string(v))
	return n, err == nil && n >= 0
}

// contentLengthOr0 is the request's Content-Length, 0 without one.
func contentLengthOr0(head []byte) int {
	n, _ := contentLength(head)
	return n
}

// headerValue returns the trimmed value of the last header called name in
// the complete request head, or nil.
func headerValue(head []byte, name string) []byte {
	var value []byte
	rest := head[bytes.IndexByte(head, '\n')+1:]
	for {
		i := bytes.IndexByte(rest, '\n')
		if i < 0 {
			break
		}
		k, v, ok := bytes.Cut(rest[:i], []byte(":"))
		if ok && bytes.EqualFold(bytes.TrimSpace(k), []byte(name)) {
			value = bytes.TrimSpace(v)
		}
		rest = rest[i+1:]
	}
	return value
}

// httpJSON answers a plain HTTP request with a JSON body and closes.
func (s *Server) httpJSON(st *connState, status int, body string) {
	s.httpAnswer(st, status, "application/json", "", body)
}
