package client_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gobwas/ws"

	"github.com/NoLagApp/kraken/pkg/client"
)

// fakeClient connects a client to s, accepting its auth.
func fakeClient(t *testing.T, s *fakeServer, opts client.Options) (*client.Client, *fakeConn) {
	t.Helper()
	opts.URL = s.url()
	c := client.New("dev-token-bob", opts)
	t.Cleanup(func() { _ = c.Close() })
	done := make(chan error, 1)
	go func() { done <- c.Connect(context.Background()) }()
	fc := s.accept()
	fc.auth("token", "dev-token-bob", "protocolVersion", 2)
	if err := recv(t, done); err != nil {
		t.Fatal(err)
	}
	return c, fc
}

// async runs fn in a goroutine and returns its result channel.
func async(fn func() error) chan error {
	ch := make(chan error, 1)
	go func() { ch <- fn() }()
	return ch
}

func TestFakeReconnectResubscribesWithOptions(t *testing.T) {
	s := newFakeServer(t)
	var connects atomic.Int32
	c, fc := fakeClient(t, s, client.Options{ReconnectDelay: 10 * time.Millisecond, ReconnectJitter: -1,
		HeartbeatInterval: -1, OnConnect: func(client.Info) { connects.Add(1) }})
	h, got := collect()

	res := async(func() error {
		return c.Subscribe(context.Background(), "demo/general/a", h, client.WithQoS(0),
			client.WithLoadBalance("g1"), client.WithFilters("a"), client.WithFilterGroup("X", "y"))
	})
	fc.expect("subscribe", "topic", "demo/general/a", "qos", 0, "loadBalance", true, "loadBalanceGroup", "g1",
		"filters", []any{"a", []any{"X", "y"}})
	fc.send("type", "subscribed", "topic", "demo/general/a", "loadBalance", true)
	if err := recv(t, res); err != nil {
		t.Fatal(err)
	}
	res = async(func() error { return c.Subscribe(context.Background(), "demo/general/b", h) })
	fc.expect("subscribe", "topic", "demo/general/b", "qos", 1, "loadBalance", nil, "filters", nil)
	fc.send("type", "subscribed", "topic", "demo/general/b", "loadBalance", false)
	if err := recv(t, res); err != nil {
		t.Fatal(err)
	}
	res = async(func() error { return c.SetFilters(context.Background(), "demo/general/a", "c") })
	fc.expect("setFilters", "topic", "demo/general/a", "filters", []any{"c"})
	fc.send("type", "filtersUpdated", "topic", "demo/general/a", "filters", []any{"c"})
	if err := recv(t, res); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the connect event", func() bool { return connects.Load() == 1 })

	fc.drop()
	fc2 := s.accept()
	fc2.auth("token", "dev-token-bob", "reconnect", true, "protocolVersion", 2)
	fc2.expect("subscribe", "topic", "demo/general/a", "qos", 0, "loadBalance", true, "loadBalanceGroup", "g1",
		"filters", []any{"c"})
	fc2.expect("subscribe", "topic", "demo/general/b", "qos", 1, "loadBalance", nil, "filters", nil)
	if connects.Load() != 1 {
		t.Fatal("OnConnect ran before the subscriptions were confirmed")
	}
	fc2.send("type", "subscribed", "topic", "demo/general/a", "loadBalance", true)
	fc2.send("type", "subscribed", "topic", "demo/general/b", "loadBalance", false)
	waitFor(t, "the reconnect event", func() bool { return connects.Load() == 2 })
	fc2.send("type", "message", "topic", "demo/general/a", "data", "again", "from", "alice", "timestamp", 1700000000123)
	d := recv(t, got)
	if d.data.String() != `"again"` || d.meta.Sender != "alice" || d.meta.Timestamp.UnixMilli() != 1700000000123 {
		t.Fatalf("got %s %+v", d.data, d.meta)
	}
}

func TestFakeBackoffSchedule(t *testing.T) {
	s := newFakeServer(t)
	var mu sync.Mutex
	var delays []time.Duration
	var errs []error
	c, fc := fakeClient(t, s, client.Options{
		ReconnectDelay: 10 * time.Millisecond, ReconnectMultiplier: 2, MaxReconnectDelay: 40 * time.Millisecond,
		ReconnectJitter: -1, MaxReconnectAttempts: 5, HeartbeatInterval: -1,
		OnReconnecting: func(n int, d time.Duration) { mu.Lock(); delays = append(delays, d); mu.Unlock() },
		OnError:        func(err error) { mu.Lock(); errs = append(errs, err); mu.Unlock() },
	})
	fc.drop()
	start := time.Now()
	for range 5 { // every attempt is refused with a transient error
		r := s.accept()
		r.expect("auth", "reconnect", true)
		r.send("type", "auth", "success", false, "error", "connection_failed")
	}
	waitFor(t, "the client to give up", func() bool { return c.Status() == client.StatusDisconnected })
	if el := time.Since(start); el < 10*time.Millisecond+20*time.Millisecond+40*time.Millisecond*2 {
		t.Fatalf("5 attempts took %v, less than the back-off", el)
	}
	s.noConnection(50 * time.Millisecond)
	waitFor(t, "the give-up error", func() bool { mu.Lock(); defer mu.Unlock(); return len(errs) == 1 })
	mu.Lock()
	defer mu.Unlock()
	want := []time.Duration{10, 20, 40, 40, 40}
	for i := range want {
		want[i] *= time.Millisecond
	}
	if len(delays) != 5 || delays[0] != want[0] || delays[1] != want[1] || delays[2] != want[2] || delays[4] != want[4] {
		t.Fatalf("delays %v, want %v", delays, want)
	}
	if !errors.Is(errs[0], client.ErrReconnectFailed) {
		t.Fatalf("error %v", errs[0])
	}
}

func TestFakeRefusedTokenStopsReconnecting(t *testing.T) {
	s := newFakeServer(t)
	errs := make(chan error, 4)
	c, fc := fakeClient(t, s, client.Options{ReconnectDelay: time.Millisecond, HeartbeatInterval: -1,
		OnError: func(err error) { errs <- err }})
	h, _ := collect()
	res := async(func() error { return c.Subscribe(context.Background(), "demo/general/a", h) })
	fc.expect("subscribe")
	fc.drop() // before the broker answered: the Subscribe keeps waiting for the next connection
	r := s.accept()
	r.expect("auth", "reconnect", true)
	r.send("type", "auth", "success", false, "error", "access_denied")
	if err := recv(t, res); !errors.Is(err, client.ErrAccessDenied) {
		t.Fatalf("pending subscribe: %v", err)
	}
	if err := recv(t, errs); !errors.Is(err, client.ErrAccessDenied) {
		t.Fatalf("OnError: %v", err)
	}
	s.noConnection(50 * time.Millisecond)
	if c.Status() != client.StatusDisconnected {
		t.Fatalf("status %v", c.Status())
	}
}

func TestFakeHeartbeatWhileHandlerBlocked(t *testing.T) {
	s := newFakeServer(t)
	c, fc := fakeClient(t, s, client.Options{HeartbeatInterval: 10 * time.Millisecond})
	release := make(chan struct{})
	entered := make(chan struct{}, 1)
	res := async(func() error {
		return c.Subscribe(context.Background(), "demo/general/slow", func(client.Data, client.Meta) {
			entered <- struct{}{}
			<-release
		})
	})
	fc.expect("subscribe")
	fc.send("type", "subscribed", "topic", "demo/general/slow")
	if err := recv(t, res); err != nil {
		t.Fatal(err)
	}
	fc.send("type", "message", "topic", "demo/general/slow", "data", 1)
	recv(t, entered)
	// The handler is stuck; heartbeats keep going and replies are still read.
	beats := 0
	for beats < 3 {
		if f := fc.next(); f.op == ws.OpBinary && len(f.payload) == 0 {
			beats++
		}
	}
	h, _ := collect()
	res = async(func() error { return c.Subscribe(context.Background(), "demo/general/other", h) })
	fc.expect("subscribe", "topic", "demo/general/other")
	fc.send("type", "subscribed", "topic", "demo/general/other")
	if err := recv(t, res); err != nil {
		t.Fatal(err)
	}
	close(release)
}

func TestFakeBatchedAcks(t *testing.T) {
	s := newFakeServer(t)
	c, fc := fakeClient(t, s, client.Options{HeartbeatInterval: -1, AckInterval: 30 * time.Millisecond})
	h, got := collect()
	res := async(func() error { return c.Subscribe(context.Background(), "demo/general/a", h) })
	fc.expect("subscribe")
	fc.send("type", "subscribed", "topic", "demo/general/a")
	if err := recv(t, res); err != nil {
		t.Fatal(err)
	}
	const n = 150
	for i := range n {
		fc.send("type", "message", "topic", "demo/general/a", "data", i, "msgId", "m"+strings.Repeat("x", i%3)+string(rune('A'+i%26))+itoa(i), "requiresAck", true)
	}
	fc.send("type", "message", "topic", "demo/general/a", "data", "no ack", "msgId", "plain")
	for range n + 1 {
		recv(t, got)
	}
	acked := map[string]bool{}
	first := true
	for len(acked) < n {
		m := fc.expect("batchAck")
		ids := m["msgIds"].([]any)
		if first && len(ids) != 100 {
			t.Fatalf("first batch has %d ids, want 100", len(ids))
		}
		first = false
		for _, id := range ids {
			acked[id.(string)] = true
		}
	}
	if acked["plain"] || len(acked) != n {
		t.Fatalf("acked %d ids (plain: %v)", len(acked), acked["plain"])
	}
}

func itoa(i int) string {
	if i == 0 {
		return "0"
	}
	s := ""
	for ; i > 0; i /= 10 {
		s = string(rune('0'+i%10)) + s
	}
	return s
}

func TestFakeSlowConsumerDrops(t *testing.T) {
	s := newFakeServer(t)
	var dropped atomic.Uint64
	c, fc := fakeClient(t, s, client.Options{HeartbeatInterval: -1, HandlerQueueSize: 2, DisableAutoAck: true,
		OnError: func(err error) {
			var sc *client.SlowConsumerError
			if errors.As(err, &sc) {
				dropped.Add(sc.Dropped)
			}
		}})
	release := make(chan struct{})
	var handled atomic.Int32
	res := async(func() error {
		return c.Subscribe(context.Background(), "demo/general/a", func(client.Data, client.Meta) {
			<-release
			handled.Add(1)
		})
	})
	fc.expect("subscribe")
	fc.send("type", "subscribed", "topic", "demo/general/a")
	if err := recv(t, res); err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		fc.send("type", "message", "topic", "demo/general/a", "data", i)
	}
	// The reader is not blocked: it still answers a publish.
	pub := async(func() error { return c.Publish(context.Background(), "demo/general/a", 1, client.WithMsgRef("r1")) })
	fc.expect("publish", "msgRef", "r1")
	fc.send("type", "published", "topic", "demo/general/a", "msgRef", "r1")
	if err := recv(t, pub); err != nil {
		t.Fatal(err)
	}
	close(release)
	waitFor(t, "the drops to be reported", func() bool { return uint64(handled.Load())+dropped.Load() == 10 })
	if dropped.Load() < 7 {
		t.Fatalf("dropped %d of 10 with a queue of 2", dropped.Load())
	}
}

func TestFakePublishFrames(t *testing.T) {
	s := newFakeServer(t)
	errs := make(chan error, 4)
	c, fc := fakeClient(t, s, client.Options{HeartbeatInterval: -1, OnError: func(err error) { errs <- err }})
	res := async(func() error {
		return c.Publish(context.Background(), "demo/general/a", nil, client.WithQoS(2), client.NoEcho(), client.Retain(),
			client.WithCompositeFilter("B", "a"))
	})
	m := fc.expect("publish", "topic", "demo/general/a", "data", nil, "qos", 2, "echo", false, "retain", true,
		"filters", []any{"B", "a"})
	if _, ok := m["data"]; !ok {
		t.Fatal("nil data was left out")
	}
	ref, _ := m["msgRef"].(string)
	if ref == "" {
		t.Fatal("no msgRef")
	}
	fc.send("type", "published", "topic", "demo/general/a", "msgRef", ref)
	if err := recv(t, res); err != nil {
		t.Fatal(err)
	}

	res = async(func() error { return c.Publish(context.Background(), "demo/general/a", "x", client.WithFilter("f")) })
	m = fc.expect("publish", "echo", true, "qos", 1, "filter", "f", "retain", nil)
	fc.send("type", "error", "code", 42910, "error", "rate_limit_exceeded", "topic", "demo/general/a", "msgRef", m["msgRef"], "limit", 50, "retryAfterMs", 412)
	var ce *client.Error
	if err := recv(t, res); !errors.As(err, &ce) || ce.Code != 42910 || ce.MsgRef != m["msgRef"] || !errors.Is(err, client.ErrRateLimited) ||
		ce.Limit != 50 || ce.RetryAfterMs != 412 || !strings.Contains(err.Error(), "limit 50 publishes/s") {
		t.Fatalf("publish error %v (%+v)", err, ce)
	}

	if err := c.Emit("demo/general/a", map[string]int{"n": 1}); err != nil {
		t.Fatal(err)
	}
	fc.expect("publish", "msgRef", nil, "data", map[string]any{"n": 1})
	fc.send("type", "error", "code", 42930, "error", "message_too_large", "topic", "demo/general/a", "maxSizeBytes", 921600)
	if err := recv(t, errs); !errors.Is(err, client.ErrMessageTooLarge) || !strings.Contains(err.Error(), "921600") {
		t.Fatalf("OnError %v", err)
	}

	res = async(func() error { return c.Publish(context.Background(), "demo/general/a", 1) })
	fc.expect("publish")
	fc.drop()
	if err := recv(t, res); !errors.Is(err, client.ErrDisconnected) {
		t.Fatalf("publish across a lost connection: %v", err)
	}
}

func TestFakePresenceFrames(t *testing.T) {
	s := newFakeServer(t)
	presence := make(chan client.PresenceEvent, 4)
	lobby := make(chan client.LobbyPresenceEvent, 4)
	c, fc := fakeClient(t, s, client.Options{HeartbeatInterval: -1, ReconnectDelay: time.Millisecond,
		OnPresence:      func(e client.PresenceEvent) { presence <- e },
		OnLobbyPresence: func(e client.LobbyPresenceEvent) { lobby <- e }})
	if err := c.SetPresence(ctxT(t), "general", map[string]string{"name": "bob"}); err != nil {
		t.Fatal(err)
	}
	fc.expect("presence", "roomId", "general", "data", map[string]any{"name": "bob"})
	fc.send("type", "presence", "event", "join", "data", map[string]any{"actor_token_id": "alice", "presence": map[string]any{"name": "alice"}})
	ev := recv(t, presence)
	if ev.Event != "join" || ev.ActorTokenID != "alice" || ev.Presence.String() != `{"name":"alice"}` {
		t.Fatalf("presence event %+v", ev)
	}
	list := make(chan []client.PresenceMember, 1)
	res := async(func() error {
		m, err := c.GetPresence(context.Background(), "general")
		list <- m
		return err
	})
	fc.expect("getPresence", "roomId", "general")
	fc.send("type", "presenceList", "roomId", "general", "data", []any{
		map[string]any{"actorTokenId": "alice", "presence": map[string]any{"name": "alice"}, "joinedAt": 1796015615, "status": "online"}})
	if err := recv(t, res); err != nil {
		t.Fatal(err)
	}
	if m := <-list; len(m) != 1 || m[0].ActorTokenID != "alice" || m[0].Status != "online" || m[0].JoinedAt.Unix() != 1796015615 {
		t.Fatalf("members %+v", m)
	}

	state := make(chan client.LobbyState, 1)
	res = async(func() error {
		st, err := c.SubscribeLobby(context.Background(), "lobby1")
		state <- st
		return err
	})
	fc.expect("lobbySubscribe", "lobbyId", "lobby1")
	fc.send("type", "lobbySubscribed", "lobbyId", "lobby1", "presence", map[string]any{
		"general": map[string]any{"alice": map[string]any{"actorTokenId": "alice", "presence": map[string]any{"name": "alice"}, "joinedAt": 1}}})
	if err := recv(t, res); err != nil {
		t.Fatal(err)
	}
	if st := <-state; st["general"]["alice"].Presence.String() != `{"name":"alice"}` {
		t.Fatalf("lobby state %+v", st)
	}
	fc.send("type", "lobbyPresence", "event", "leave", "lobbyId", "lobby1", "roomId", "general", "actorId", "alice", "data", map[string]any{})
	if e := recv(t, lobby); e.Event != "leave" || e.RoomID != "general" || e.ActorID != "alice" {
		t.Fatalf("lobby event %+v", e)
	}
	res = async(func() error { _, err := c.SubscribeLobby(context.Background(), "secret"); return err })
	fc.expect("lobbySubscribe", "lobbyId", "secret")
	fc.send("type", "error", "error", "not_authorized", "lobbyId", "secret")
	if err := recv(t, res); !errors.Is(err, client.ErrNotAuthorized) {
		t.Fatalf("lobby refused: %v", err)
	}

	// No answer: the request times out and says why.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	_, err := c.GetPresence(ctx, "general")
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "presence") {
		t.Fatalf("GetPresence without an answer: %v", err)
	}

	// After a reconnect the lobby and the presence are sent again.
	fc.drop()
	fc2 := s.accept()
	fc2.auth("reconnect", true)
	fc2.expect("lobbySubscribe", "lobbyId", "lobby1")
	fc2.expect("presence", "roomId", "general", "data", map[string]any{"name": "bob"})
}

// TestFakeClientIDAndReplayFrames: Options.ClientID goes as clientId in the
// auth frame of the connect and of every reconnect; replayed messages reach
// their topic's handler in order with IsReplay, and each replayEnd is
// reported to OnReplay after them, with replayStart's count, complete and
// reason (a replayEnd without complete, the original broker's, counts as
// complete).
func TestFakeClientIDAndReplayFrames(t *testing.T) {
	s := newFakeServer(t)
	events := make(chan string, 16) // handler and OnReplay, in the order they ran
	c := client.New("dev-token-bob", client.Options{URL: s.url(), ClientID: "bobs-phone",
		ReconnectDelay: time.Millisecond, ReconnectJitter: -1, HeartbeatInterval: -1, DisableAutoAck: true,
		OnReplay: func(r client.ReplayInfo) { events <- fmt.Sprintf("replay %+v", r) }})
	t.Cleanup(func() { _ = c.Close() })
	h := func(d client.Data, m client.Meta) {
		events <- fmt.Sprintf("message %s %s replay=%v", d, m.MsgID, m.IsReplay)
	}
	expect := func(want string) {
		t.Helper()
		if got := recv(t, events); got != want {
			t.Fatalf("got %q, want %q", got, want)
		}
	}
	done := async(func() error { return c.Connect(context.Background()) })
	fc := s.accept()
	fc.auth("token", "dev-token-bob", "clientId", "bobs-phone", "reconnect", nil)
	if err := recv(t, done); err != nil {
		t.Fatal(err)
	}
	res := async(func() error { return c.Subscribe(context.Background(), "demo/general/a", h) })
	fc.expect("subscribe", "topic", "demo/general/a", "qos", 1)
	fc.send("type", "subscribed", "topic", "demo/general/a")
	if err := recv(t, res); err != nil {
		t.Fatal(err)
	}

	fc.drop()
	fc2 := s.accept()
	fc2.auth("token", "dev-token-bob", "clientId", "bobs-phone", "reconnect", true)
	fc2.send("type", "replayStart", "count", 2)
	fc2.send("type", "message", "topic", "demo/general/a", "data", 1, "msgId", "m1", "requiresAck", true, "isReplay", true)
	fc2.send("type", "message", "topic", "demo/general/a", "data", 2, "msgId", "m2", "requiresAck", true, "isReplay", true)
	fc2.send("type", "replayEnd", "replayed", 2, "count", 2, "complete", true)
	fc2.expect("subscribe", "topic", "demo/general/a", "qos", 1)
	fc2.send("type", "subscribed", "topic", "demo/general/a")
	fc2.send("type", "message", "topic", "demo/general/a", "data", 3, "msgId", "m3")
	expect("message 1 m1 replay=true")
	expect("message 2 m2 replay=true")
	expect("replay {Count:2 Replayed:2 Complete:true Reason: Duplicates:0}")
	expect("message 3 m3 replay=false")

	// An incomplete replay; then the original broker's replayEnd{replayed}.
	fc2.send("type", "replayStart", "count", 0)
	fc2.send("type", "replayEnd", "replayed", 0, "count", 0, "complete", false, "reason", "session_expired")
	expect("replay {Count:0 Replayed:0 Complete:false Reason:session_expired Duplicates:0}")
	fc2.send("type", "replayEnd", "replayed", 1)
	expect("replay {Count:1 Replayed:1 Complete:true Reason: Duplicates:0}")
}

// TestFakeCloseSendsTheBatchedAcks: Close sends the acks still waiting for
// their batch before it closes, so a handled message is not sent again (a
// durable group's, a resumed session's).
func TestFakeCloseSendsTheBatchedAcks(t *testing.T) {
	s := newFakeServer(t)
	c, fc := fakeClient(t, s, client.Options{HeartbeatInterval: -1, AckInterval: time.Hour})
	h, got := collect()
	res := async(func() error { return c.Subscribe(context.Background(), "demo/general/a", h) })
	fc.expect("subscribe")
	fc.send("type", "subscribed", "topic", "demo/general/a")
	if err := recv(t, res); err != nil {
		t.Fatal(err)
	}
	fc.send("type", "message", "topic", "demo/general/a", "data", 1, "msgId", "m1", "requiresAck", true)
	recv(t, got)
	time.Sleep(50 * time.Millisecond) // the handler returned: its ack is batched, an hour from being sent
	_ = c.Close()
	m := fc.expect("batchAck")
	if ids := m["msgIds"].([]any); len(ids) != 1 || ids[0] != "m1" {
		t.Fatalf("batchAck %v at Close, want [m1]", ids)
	}
}
