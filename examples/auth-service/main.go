// Command auth-service is a small auth service for kraken's HTTP auth
// backend (AUTH_BACKEND=http): it answers POST /validate, /revalidate and
// /check-room-access under its base path with the demo actors alice and bob
// of examples/auth.json, in the JSON shapes of docs/backends.md. It also
// serves a hydration webhook, so a subscriber gets a `hydration` frame with
// the room's recent history.
//
// Run it, then kraken against it:
//
//	go run ./examples/auth-service
//	AUTH_BACKEND=http AUTH_HTTP_URL=http://127.0.0.1:9090/v1/kraken BACKEND_SECRET=dev-backend-secret go run ./cmd/kraken
//
// It is an example: tokens live in a map in memory, and a real service
// would look them up in its own database.
package main

import (
	"crypto/subtle"
	"encoding/json"
	"flag"
	"log"
	"net/http"
	"os"
	"strings"
	"sync"
)

// actor is what the service knows about one access token.
type actor struct {
	ID      string
	Revoked bool
}

// service holds the tokens and answers kraken.
type service struct {
	secret    string
	publicURL string // this service's own base URL, for the webhook it advertises

	mu     sync.Mutex
	tokens map[string]*actor // access token → actor
}

func main() {
	addr := flag.String("addr", "127.0.0.1:9090", "listen address")
	base := flag.String("base", "/v1/kraken", "base path kraken's AUTH_HTTP_URL points at")
	flag.Parse()
	secret := os.Getenv("BACKEND_SECRET")
	if secret == "" {
		secret = "dev-backend-secret"
	}
	s := &service{secret: secret, publicURL: "http://" + *addr + *base, tokens: map[string]*actor{
		"dev-token-alice": {ID: "alice"},
		"dev-token-bob":   {ID: "bob"},
	}}
	log.Printf("auth service on http://%s%s (bearer secret from BACKEND_SECRET, default dev-backend-secret)", *addr, *base)
	log.Fatal(http.ListenAndServe(*addr, s.routes(*base)))
}

// routes returns the handler of the three endpoints kraken calls and the
// hydration webhook, all under base.
func (s *service) routes(base string) http.Handler {
	base = strings.TrimRight(base, "/")
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+base+"/validate", s.authorized(s.validate))
	mux.HandleFunc("POST "+base+"/revalidate", s.authorized(s.revalidate))
	mux.HandleFunc("POST "+base+"/check-room-access", s.authorized(s.checkRoomAccess))
	mux.HandleFunc("POST "+base+"/webhooks/hydrate", s.hydrate)
	return mux
}

// authorized refuses requests without kraken's bearer secret.
func (s *service) authorized(h http.HandlerFunc) http.HandlerFunc {
	want := []byte("Bearer " + s.secret)
	return func(w http.ResponseWriter, r *http.Request) {
		if subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), want) != 1 {
			http.Error(w, `{"error":"unauthorized"}`, http.StatusUnauthorized)
			return
		}
		h(w, r)
	}
}

// validate answers POST /validate {"accessToken"}: always 200, so kraken
// can tell a denial from an outage.
func (s *service) validate(w http.ResponseWriter, r *http.Request) {
	var req struct {
		AccessToken string `json:"accessToken"`
	}
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<16)).Decode(&req); err != nil {
		http.Error(w, `{"error":"bad_request"}`, http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	a := s.tokens[req.AccessToken]
	s.mu.Unlock()
	if a == nil || a.Revoked {
		writeJSON(w, map[string]any{"result": "deny"})
		return
	}
	writeJSON(w, map[string]any{"result": "allow", "client_attrs": s.attrs(a.ID)})
}

// revalidate answers POST /revalidate {"actorTokenId"}.
func (s *service) revalidate(w http.ResponseWriter, r *http.Request) {
	var req struct {
		ActorTokenID string `json:"actorTokenId"`
	}
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<16)).Decode(&req); err != nil {
		http.Error(w, `{"error":"bad_request"}`, http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	var found *actor
	for _, a := range s.tokens {
		if a.ID == req.ActorTokenID {
			found = a
		}
	}
	s.mu.Unlock()
	if found == nil || found.Revoked {
		writeJSON(w, map[string]any{"valid": false, "disconnect_reason": "token_revoked"})
		return
	}
	body := s.attrs(found.ID)
	body["valid"] = true
	writeJSON(w, body)
}

// checkRoomAccess answers POST /check-room-access: this service grants
// nothing beyond the demo room, so every extra room is refused.
func (s *service) checkRoomAccess(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, map[string]any{"allow": false})
}

// hydrate is the hydration webhook: kraken calls it after a subscribe and
// sends what it answers to the subscriber as a `hydration` frame.
func (s *service) hydrate(w http.ResponseWriter, r *http.Request) {
	var req struct {
		ActorID   string `json:"actorId"`
		RoomName  string `json:"roomName"`
		TopicName string `json:"topicName"`
	}
	_ = json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<16)).Decode(&req)
	writeJSON(w, map[string]any{"welcome": "hello " + req.ActorID, "room": req.RoomName, "topic": req.TopicName})
}

// attrs are the client attributes of an actor, in the snake_case shape of
// docs/backends.md: one app, the demo room, the same grant as
// examples/auth.json.
func (s *service) attrs(id string) map[string]any {
	return map[string]any{
		"actor_token_id":  id,
		"organization_id": "demo-org",
		"project_id":      "demo-project",
		"actor_type":      "user",
		"rate_limit":      50,
		"apps": []any{map[string]any{
			"app_id":   "demo-app",
			"app_name": "demo",
			"allowed_topics": []any{map[string]any{
				"pattern": "demo/general/#", "topic": "demo-general", "permission": "pubSub",
				"room_id": "room-general", "room_slug": "general",
			}},
			"topic_webhooks": map[string]any{
				"history": map[string]any{"on_subscribe": map[string]any{"url": s.publicURL + "/webhooks/hydrate"}},
			},
		}},
	}
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}
