// Command authsvc is the auth service of the benchmark's connect-http case:
// an HTTP auth backend for kraken (AUTH_BACKEND=http) that answers every
// call after a fixed delay and counts the calls.
//
//	authsvc --addr 127.0.0.1:18070 --delay 20ms
//	AUTH_BACKEND=http AUTH_HTTP_URL=http://127.0.0.1:18070/v1/kraken BACKEND_SECRET=bench-secret kraken
//	curl 127.0.0.1:18070/stats
//
// It accepts the tokens the load generator sends with --token bench-tok
// --tokens K: "bench-tok" and "bench-tok-<i>" for any i. Each token is its
// own actor (actor_token_id = the token) with the grant of the demo actors
// of examples/auth.json: pubSub on demo/general/#. Any other token is
// denied.
//
// GET /stats answers the counts since the start (or the last POST
// /stats/reset) as one JSON object; the load generator reads it before and
// after a run (--auth-stats). The counts are also printed on exit.
//
//	authsvc tokens --n 19000 > tokens.json
//
// writes a static token file (AUTH_FILE) with the same tokens and grants, so
// the token file can be measured against the service in the same run.
package main

import (
	"bufio"
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "tokens" {
		os.Exit(tokensMain(os.Args[2:], os.Stdout))
	}
	os.Exit(serveMain(os.Args[1:]))
}

// service answers kraken and counts.
type service struct {
	secret string
	prefix string
	delay  time.Duration

	validate, denied, revalidate, roomAccess atomic.Int64
	inFlight, maxInFlight                    atomic.Int64
	conns                                    atomic.Int64
}

// Stats is the body of GET /stats.
type Stats struct {
	// Validate counts POST /validate calls, allowed or denied.
	Validate int64 `json:"validate"`
	// Denied counts the /validate calls answered deny.
	Denied          int64 `json:"validate_denied"`
	Revalidate      int64 `json:"revalidate"`
	CheckRoomAccess int64 `json:"check_room_access"`
	// InFlight and MaxInFlight are calls being answered now and at most
	// at once (each call holds its slot for the delay).
	InFlight    int64 `json:"in_flight"`
	MaxInFlight int64 `json:"max_in_flight"`
	// Conns counts the TCP connections accepted: kraken keeps its
	// connections to the service alive, so this stays near its pool size.
	Conns int64 `json:"conns"`
	// CPUNs is this process's user+system CPU time since it started.
	CPUNs   int64 `json:"cpu_ns"`
	DelayNs int64 `json:"delay_ns"`
}

func serveMain(args []string) int {
	fs := flag.NewFlagSet("authsvc", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:18070", "listen address")
	base := fs.String("base", "/v1/kraken", "base path kraken's AUTH_HTTP_URL points at")
	delay := fs.Duration("delay", 0, "time every call takes before it is answered")
	prefix := fs.String("prefix", "bench-tok", `accepted tokens: PREFIX and PREFIX-<anything>`)
	secret := fs.String("secret", "", "bearer secret kraken must send (default $BACKEND_SECRET, else bench-secret)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *secret == "" {
		*secret = os.Getenv("BACKEND_SECRET")
	}
	if *secret == "" {
		*secret = "bench-secret"
	}
	s := &service{secret: *secret, prefix: *prefix, delay: *delay}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "authsvc:", err)
		return 1
	}
	srv := &http.Server{Handler: s.routes(*base), ReadHeaderTimeout: 10 * time.Second,
		ConnState: func(_ net.Conn, st http.ConnState) {
			if st == http.StateNew {
				s.conns.Add(1)
			}
		}}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	fmt.Fprintf(os.Stderr, "authsvc: http://%s%s, delay %v, tokens %s and %s-*\n", ln.Addr(), strings.TrimRight(*base, "/"), *delay, *prefix, *prefix)
	select {
	case err = <-done:
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_ = srv.Shutdown(sctx)
		cancel()
		err = nil
	}
	st := s.stats()
	fmt.Fprintf(os.Stderr, "authsvc: %d validate (%d denied), %d revalidate, %d check-room-access, at most %d in flight, %d connections, %.3f s CPU\n",
		st.Validate, st.Denied, st.Revalidate, st.CheckRoomAccess, st.MaxInFlight, st.Conns, float64(st.CPUNs)/1e9)
	if err != nil && !errors.Is(err, http.ErrServerClosed) {
		fmt.Fprintln(os.Stderr, "authsvc:", err)
		return 1
	}
	return 0
}

func (s *service) routes(base string) http.Handler {
	base = strings.TrimRight(base, "/")
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+base+"/validate", s.call(&s.validate, s.answerValidate))
	mux.HandleFunc("POST "+base+"/revalidate", s.call(&s.revalidate, s.answerRevalidate))
	mux.HandleFunc("POST "+base+"/check-room-access", s.call(&s.roomAccess, func(w http.ResponseWriter, _ []byte) {
		writeBody(w, []byte(`{"allow":false}`))
	}))
	mux.HandleFunc("GET /stats", func(w http.ResponseWriter, _ *http.Request) {
		b, _ := json.Marshal(s.stats())
		writeBody(w, b)
	})
	mux.HandleFunc("POST /stats/reset", func(w http.ResponseWriter, _ *http.Request) {
		s.reset()
		writeBody(w, []byte(`{}`))
	})
	return mux
}

// call checks the bearer secret, reads the body, counts the call, holds it
// for the delay and answers it.
func (s *service) call(count *atomic.Int64, answer func(http.ResponseWriter, []byte)) http.HandlerFunc {
	want := []byte("Bearer " + s.secret)
	return func(w http.ResponseWriter, r *http.Request) {
		if subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), want) != 1 {
			http.Error(w, `{"error":"unauthorized"}`, http.StatusUnauthorized)
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 1<<16))
		if err != nil {
			http.Error(w, `{"error":"bad_request"}`, http.StatusBadRequest)
			return
		}
		count.Add(1)
		n := s.inFlight.Add(1)
		for {
			m := s.maxInFlight.Load()
			if n <= m || s.maxInFlight.CompareAndSwap(m, n) {
				break
			}
		}
		if s.delay > 0 {
			time.Sleep(s.delay)
		}
		answer(w, body)
		s.inFlight.Add(-1)
	}
}

// accepted reports whether token is one of the load generator's.
func (s *service) accepted(token string) bool {
	return token == s.prefix || strings.HasPrefix(token, s.prefix+"-")
}

func (s *service) answerValidate(w http.ResponseWriter, body []byte) {
	var req struct {
		AccessToken string `json:"accessToken"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		http.Error(w, `{"error":"bad_request"}`, http.StatusBadRequest)
		return
	}
	if !s.accepted(req.AccessToken) {
		s.denied.Add(1)
		writeBody(w, []byte(`{"result":"deny"}`))
		return
	}
	b, _ := json.Marshal(struct {
		Result string `json:"result"`
		Attrs  attrs  `json:"client_attrs"`
	}{"allow", attrsOf(req.AccessToken)})
	writeBody(w, b)
}

func (s *service) answerRevalidate(w http.ResponseWriter, body []byte) {
	var req struct {
		ActorTokenID string `json:"actorTokenId"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		http.Error(w, `{"error":"bad_request"}`, http.StatusBadRequest)
		return
	}
	if !s.accepted(req.ActorTokenID) {
		writeBody(w, []byte(`{"valid":false,"disconnect_reason":"token_revoked"}`))
		return
	}
	b, _ := json.Marshal(struct {
		Valid bool `json:"valid"`
		attrs
	}{true, attrsOf(req.ActorTokenID)})
	writeBody(w, b)
}

func (s *service) stats() Stats {
	st := Stats{
		Validate:        s.validate.Load(),
		Denied:          s.denied.Load(),
		Revalidate:      s.revalidate.Load(),
		CheckRoomAccess: s.roomAccess.Load(),
		InFlight:        s.inFlight.Load(),
		MaxInFlight:     s.maxInFlight.Load(),
		Conns:           s.conns.Load(),
		DelayNs:         int64(s.delay),
	}
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		st.CPUNs = ru.Utime.Nano() + ru.Stime.Nano()
	}
	return st
}

func (s *service) reset() {
	s.validate.Store(0)
	s.denied.Store(0)
	s.revalidate.Store(0)
	s.roomAccess.Store(0)
	s.maxInFlight.Store(s.inFlight.Load())
}

func writeBody(w http.ResponseWriter, b []byte) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(b)
}

// The client attributes of docs/backends.md (snake_case), one app with the
// demo room: the same grant as the demo actors of examples/auth.json.
type attrs struct {
	ActorTokenID string `json:"actor_token_id"`
	ProjectID    string `json:"project_id"`
	ActorType    string `json:"actor_type"`
	Apps         []app  `json:"apps"`
}

type app struct {
	AppID         string `json:"app_id"`
	AppName       string `json:"app_name"`
	AllowedTopics []rule `json:"allowed_topics"`
}

type rule struct {
	Pattern    string `json:"pattern"`
	Topic      string `json:"topic"`
	Permission string `json:"permission"`
	RoomID     string `json:"room_id"`
	RoomSlug   string `json:"room_slug"`
}

var demoRule = rule{Pattern: "demo/general/#", Topic: "demo-general", Permission: "pubSub", RoomID: "room-general", RoomSlug: "general"}

func attrsOf(token string) attrs {
	return attrs{ActorTokenID: token, ProjectID: "demo-project", ActorType: "user",
		Apps: []app{{AppID: "demo-app", AppName: "demo", AllowedTopics: []rule{demoRule}}}}
}

// tokensMain writes a static token file with PREFIX and PREFIX-0 …
// PREFIX-(n-1), each its own actor with the grant the service answers.
func tokensMain(args []string, out io.Writer) int {
	fs := flag.NewFlagSet("authsvc tokens", flag.ContinueOnError)
	n := fs.Int("n", 1000, "tokens PREFIX-0 … PREFIX-(n-1), besides PREFIX itself")
	prefix := fs.String("prefix", "bench-tok", "token prefix")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	bw := bufio.NewWriterSize(out, 1<<16)
	err := writeTokenFile(bw, *prefix, *n)
	if err == nil {
		err = bw.Flush()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "authsvc tokens:", err)
		return 1
	}
	return 0
}

// staticEntry is one token of the token file (pkg/auth/static).
type staticEntry struct {
	ActorTokenID  string         `json:"actorTokenId"`
	ProjectID     string         `json:"projectId"`
	ActorType     string         `json:"actorType"`
	AllowedTopics []staticTopics `json:"allowedTopics"`
}

type staticTopics struct {
	rule
	AppID   string `json:"app_id"`
	AppName string `json:"app_name"`
}

func writeTokenFile(out io.Writer, prefix string, n int) error {
	w := &errWriter{w: out}
	w.str(`{"_comment":"generated by bench/authsvc tokens","tokens":{`)
	for i := -1; i < n; i++ {
		tok := prefix
		if i >= 0 {
			tok = fmt.Sprintf("%s-%d", prefix, i)
			w.str(",")
		}
		k, _ := json.Marshal(tok)
		v, _ := json.Marshal(staticEntry{ActorTokenID: tok, ProjectID: "demo-project", ActorType: "user",
			AllowedTopics: []staticTopics{{rule: demoRule, AppID: "demo-app", AppName: "demo"}}})
		w.str("\n")
		w.bytes(k)
		w.str(":")
		w.bytes(v)
	}
	w.str("\n}}\n")
	return w.err
}

type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) bytes(b []byte) {
	if e.err == nil {
		_, e.err = e.w.Write(b)
	}
}

func (e *errWriter) str(s string) { e.bytes([]byte(s)) }
