package server

import (
	"bytes"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"go.uber.org/zap"

	"github.com/NoLagApp/kraken/pkg/acl"
	"github.com/NoLagApp/kraken/pkg/auth"
	"github.com/NoLagApp/kraken/pkg/hub"
	"github.com/NoLagApp/kraken/pkg/session"
	"github.com/NoLagApp/kraken/pkg/topic"
	"github.com/NoLagApp/kraken/pkg/wire"
)

// internalPublishPath is the backend publish endpoint (wire-reference.md §5.4).
const internalPublishPath = "/internal/publish"

// DefaultInternalSecret is the placeholder secret of the original's image;
// while INTERNAL_SECRET is unset or still this value, /internal/publish is
// not served (OQ-26, OQ-64).
const DefaultInternalSecret = "change_me"

// internalEnabled reports whether /internal/publish is served.
func (s *Server) internalEnabled() bool {
	return s.cfg.InternalSecret != "" && s.cfg.InternalSecret != DefaultInternalSecret
}

// internalRequest is the JSON body of POST /internal/publish (wire-reference.md
// §5.4, OQ-26): topic, a routing key ("demo-app/demo/general/messages") or
// a client's topic ("demo/general/messages") read with the grants in force
// (internalTarget), or a client pattern with an optional app id resolved
// as a wildcard rule resolves it (§4.6).
type internalRequest struct {
	Topic   *string         `json:"topic"`
	Pattern *string         `json:"pattern"`
	AppID   string          `json:"appId"`
	Payload json.RawMessage `json:"payload"`
	Retain  bool            `json:"retain"`
	QoS     *int            `json:"qos"`
}

// internalPublish answers the POST /internal/publish request at the start
// of b, whose head is complete. It returns the bytes it consumed, all of b
// once the request is answered (the connection is then closed, as after
// every plain HTTP request), or -1 while the body is still arriving.
func (s *Server) internalPublish(st *connState, b []byte) int {
	if !s.internalEnabled() {
		s.httpJSON(st, 404, `{"error":"not_found"}`)
		return len(b)
	}
	hr, err := readHTTPRequest(b, s.cfg.MaxInternalBody)
	var refused *httpRefusal
	switch {
	case errors.Is(err, errIncomplete):
		return -1
	case errors.As(err, &refused):
	case hr.Method != http.MethodPost:
		s.httpAnswer(st, 405, "application/json", "Allow: POST\r\n", `{"error":"method_not_allowed","detail":"POST only"}`)
		return len(b)
	case hr.Unframed:
		refused = refuseNoLength
	}
	if refused != nil {
		body := `{"error":"` + refused.code + `","detail":` + strconv.Quote(refused.reason)
		if refused.status == 413 {
			body += `,"maxBytes":` + strconv.Itoa(s.cfg.MaxInternalBody)
		}
		s.httpJSON(st, refused.status, body+"}")
		return len(b)
	}
	body := hr.Body
	want := "Bearer " + s.cfg.InternalSecret
	if got := hr.Header.Values("Authorization"); len(got) != 1 || subtle.ConstantTimeCompare([]byte(got[0]), []byte(want)) != 1 {
		// Logged at info: a wrong secret is worth seeing (never the header).
		s.log.Info("internal publish refused", connFields(st.Conn, zap.Int("status", 401),
			zap.String("reason", "unauthorized"))...)
		s.httpJSON(st, 401, `{"error":"unauthorized"}`)
		return len(b)
	}
	var req internalRequest
	if err := json.Unmarshal(body, &req); err != nil {
		s.httpJSON(st, 400, `{"error":"invalid_json"}`)
		return len(b)
	}
	rt, status, errBody := s.internalTarget(&req)
	if errBody != "" {
		if status != 400 {
			s.log.Info("internal publish refused", connFields(st.Conn, zap.Int("status", status),
				zap.String("reason", rt.reason), zap.String("topic", wire.Echo(*req.Topic)))...)
		}
		s.httpJSON(st, status, errBody)
		return len(b)
	}
	key, display := rt.key, rt.display
	data, err := session.DataFromJSON(req.Payload)
	if err != nil {
		s.httpJSON(st, 400, `{"error":"invalid_payload","detail":`+strconv.Quote(errDetail(err))+`}`)
		return len(b)
	}
	if len(data) > s.sess.MaxMessageSize {
		s.httpJSON(st, 413, `{"error":"message_too_large","maxSizeBytes":`+strconv.Itoa(s.sess.MaxMessageSize)+`}`)
		return len(b)
	}
	if s.hub.Busy() {
		s.httpJSON(st, 503, `{"error":"broker_busy"}`)
		return len(b)
	}
	now := time.Now()
	p := &hub.Publication{Key: key, Topic: display, Echo: true, Retain: req.Retain,
		ClearRetained: req.Retain && len(data) == 1 && data[0] == 0xc0}
	p.Msg = wire.Message{Topic: display, Data: data, From: "server", FromType: "server", Timestamp: now.UnixMilli()}
	if s.sess.RecordMessages {
		p.Msg.MsgID = uuid.NewString()
	}
	if err := s.proto.Inject(p, session.SourceInternal); err != nil {
		s.httpJSON(st, 502, `{"error":"broker_unavailable"}`)
		return len(b)
	}
	s.httpJSON(st, 200, routedBody(rt))
	return len(b)
}

// route is where an internal publish goes: its routing key, the topic its
// message carries (the subscribers' display topic), and how the request
// named it (via); reason is why it was refused.
type route struct {
	key, display, via, reason string
}

// How an internal publish named its target, the "via" of the answer.
const (
	viaRoutingKey  = "routing_key"  // topic: a routing key the grants in force produce
	viaClientTopic = "client_topic" // topic: a client's topic, resolved as the grants' clients resolve it
	viaPattern     = "pattern"      // pattern and appId
	viaUnchecked   = "unchecked"    // topic, taken as a routing key: the auth backend cannot list its grants
)

// routedBody is the 200 answer: {"success":true,"routedTo":<key>,"via":…}.
func routedBody(rt route) string {
	b, _ := json.Marshal(struct {
		Success  bool   `json:"success"`
		RoutedTo string `json:"routedTo"`
		Via      string `json:"via"`
	}{true, rt.key, rt.via})
	return string(b)
}

// missingFields is the 400 body of a request without a target or payload.
const missingFields = `{"error":"missing_required_fields","required":["topic","payload"]}`

// internalTarget returns where an internal publish goes, or the HTTP
// status and body of its refusal:
//   - pattern (with appId, "unscoped" without one): the key a wildcard rule
//     of that app resolves it to, "<appId>/<pattern>" (§4.6);
//   - topic, when the auth backend lists the grants in force (the token
//     file: auth.RuleLister): a routing key some grant produces, as it is;
//     else a client's topic ("demo/general/messages"), routed to the key
//     the grants' clients resolve it to when they agree (acl.Place); 409
//     when they do not, 422 when no grant routes it either way;
//   - topic, when the backend cannot list its grants (AUTH_BACKEND=http):
//     taken as the routing key, unchecked, as the original did.
func (s *Server) internalTarget(req *internalRequest) (rt route, status int, errBody string) {
	if len(bytes.TrimSpace(req.Payload)) == 0 {
		return rt, 400, missingFields
	}
	switch {
	case req.Topic != nil && *req.Topic != "":
		t := *req.Topic
		if err := topic.ValidatePublish(t); err != nil {
			return rt, 400, invalidTopic(err)
		}
		return s.placeTopic(t)
	case req.Pattern != nil && *req.Pattern != "":
		app := req.AppID
		if app == "" {
			app = "unscoped"
		}
		rt = route{key: app + "/" + *req.Pattern, display: *req.Pattern, via: viaPattern}
	default:
		return rt, 400, missingFields
	}
	if err := topic.ValidatePublish(rt.display); err != nil {
		return rt, 400, invalidTopic(err)
	}
	return rt, 200, ""
}

// placeTopic places the topic t of an internal publish (internalTarget).
func (s *Server) placeTopic(t string) (rt route, status int, errBody string) {
	var sets []acl.Rules
	listed := false
	if rl, ok := s.sess.Auth.(auth.RuleLister); ok {
		sets, listed = rl.RuleSets()
	}
	if !listed {
		rt = route{key: t, display: t, via: viaUnchecked}
		if _, after, ok := strings.Cut(t, "/"); ok && after != "" {
			rt.display = after // the app's level off, as a wildcard rule's key has it
		}
		return rt, 200, ""
	}
	key, pattern, how, keys := acl.Place(sets, t)
	switch how {
	case acl.PlacedAsKey:
		return route{key: key, display: pattern, via: viaRoutingKey}, 200, ""
	case acl.PlacedAsTopic:
		return route{key: key, display: pattern, via: viaClientTopic}, 200, ""
	case acl.PlacedAmbiguous:
		b, _ := json.Marshal(struct {
			Error      string   `json:"error"`
			Detail     string   `json:"detail"`
			Candidates []string `json:"candidates"`
		}{"ambiguous_topic", "tokens in force route this topic to different keys: send one of them as topic, or pattern and appId",
			keys[:min(len(keys), maxCandidates)]})
		return route{reason: "ambiguous_topic"}, 409, string(b)
	}
	return route{reason: "unknown_topic"}, 422, `{"error":"unknown_topic","detail":` +
		`"no token in force routes this topic, as a routing key or as a client's topic"}`
}

// maxCandidates bounds the keys a 409 lists.
const maxCandidates = 10

func invalidTopic(err error) string {
	return `{"error":"invalid_topic","detail":` + strconv.Quote(err.Error()) + `}`
}

// httpJSON answers a plain HTTP request with a JSON body and closes.
func (s *Server) httpJSON(st *connState, status int, body string) {
	s.httpAnswer(st, status, "application/json", "", body)
}
