package client_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/NoLagApp/kraken/pkg/client"
)

const topic = "demo/general/messages"

type delivery struct {
	data client.Data
	meta client.Meta
}

// collect returns a handler that forwards deliveries to a channel.
func collect() (client.Handler, chan delivery) {
	ch := make(chan delivery, 1024)
	return func(d client.Data, m client.Meta) { ch <- delivery{d, m} }, ch
}

func TestRoundTrip(t *testing.T) {
	b := startBroker(t, "127.0.0.1:0")
	bob := b.dial(t, "dev-token-bob", client.Options{})
	info := bob.Info()
	if info.ActorTokenID != "bob" || info.ProjectID != "demo-project" || info.ActorType != "user" || info.ProtocolVersion != 2 {
		t.Fatalf("info = %+v", info)
	}
	if bob.Status() != client.StatusConnected {
		t.Fatalf("status = %v", bob.Status())
	}
	h, got := collect()
	if err := bob.Subscribe(ctxT(t), topic, h); err != nil {
		t.Fatal(err)
	}
	alice := b.dial(t, "dev-token-alice", client.Options{})
	before := time.Now().Add(-time.Second)
	if err := alice.Publish(ctxT(t), topic, map[string]any{"text": "hello from alice", "n": 3}); err != nil {
		t.Fatal(err)
	}
	d := recv(t, got)
	var msg struct {
		Text string `json:"text"`
		N    int    `json:"n"`
	}
	if err := d.data.Decode(&msg); err != nil || msg.Text != "hello from alice" || msg.N != 3 {
		t.Fatalf("decoded %+v, %v from %s", msg, err, d.data)
	}
	m := d.meta
	if m.Topic != topic || m.Sender != "alice" || m.FromType != "actor" || len(m.MsgID) != 36 || m.IsReplay || m.Filter != "" {
		t.Fatalf("meta = %+v", m)
	}
	if m.Timestamp.Before(before) || m.Timestamp.After(time.Now().Add(time.Second)) {
		t.Fatalf("timestamp %v is not now", m.Timestamp)
	}
	var generic any
	if err := d.data.Decode(&generic); err != nil {
		t.Fatal(err)
	}
	if mm, _ := generic.(map[string]any); mm["text"] != "hello from alice" {
		t.Fatalf("generic = %#v", generic)
	}
}

func TestPublishNilAndRawData(t *testing.T) {
	b := startBroker(t, "127.0.0.1:0")
	bob := b.dial(t, "dev-token-bob", client.Options{})
	h, got := collect()
	if err := bob.Subscribe(ctxT(t), topic, h); err != nil {
		t.Fatal(err)
	}
	alice := b.dial(t, "dev-token-alice", client.Options{})
	if err := alice.Publish(ctxT(t), topic, nil); err != nil {
		t.Fatal(err)
	}
	if d := recv(t, got); !d.data.IsNil() || d.data.String() != "null" {
		t.Fatalf("nil data arrived as %x", []byte(d.data))
	}
	raw := client.Data{0xc4, 0x02, 0xff, 0x00} // bin, not valid UTF-8: passed through untouched
	if err := alice.Publish(ctxT(t), topic, raw); err != nil {
		t.Fatal(err)
	}
	if d := recv(t, got); string(d.data) != string(raw) {
		t.Fatalf("raw data arrived as %x", []byte(d.data))
	}
	js, _ := client.FromJSON([]byte(`{"b":1,"a":[true,null,1.5,"x"]}`))
	if err := alice.Emit(topic, js); err != nil {
		t.Fatal(err)
	}
	if d := recv(t, got); d.data.String() != `{"b":1,"a":[true,null,1.5,"x"]}` {
		t.Fatalf("json data arrived as %s", d.data)
	}
}

func TestTypedErrors(t *testing.T) {
	b := startBroker(t, "127.0.0.1:0")

	bad := client.New("no-such-token", client.Options{URL: b.url()})
	defer bad.Close()
	err := bad.Connect(ctxT(t))
	var ce *client.Error
	if !errors.As(err, &ce) || ce.Err != "access_denied" || !errors.Is(err, client.ErrAccessDenied) {
		t.Fatalf("connect with a bad token: %v", err)
	}

	var async []error
	var mu sync.Mutex
	bob := b.dial(t, "dev-token-bob", client.Options{OnError: func(err error) { mu.Lock(); async = append(async, err); mu.Unlock() }})
	h, _ := collect()
	err = bob.Subscribe(ctxT(t), "demo/other/x", h)
	if !errors.As(err, &ce) || ce.Code != 42940 || ce.Err != "unknown_topic" || ce.Topic != "demo/other/x" || ce.Hint == "" {
		t.Fatalf("subscribe outside the grants: %#v", err)
	}
	if !errors.Is(err, client.ErrUnknownTopic) {
		t.Fatalf("errors.Is(%v, ErrUnknownTopic) = false", err)
	}
	if len(bob.Subscriptions()) != 0 {
		t.Fatalf("a refused subscription is kept: %+v", bob.Subscriptions())
	}
	err = bob.Publish(ctxT(t), "demo/other/x", "hi")
	if !errors.As(err, &ce) || ce.Code != 42940 || ce.MsgRef == "" || ce.Topic != "demo/other/x" {
		t.Fatalf("publish outside the grants: %#v", err)
	}
	err = bob.Publish(ctxT(t), topic, "x", client.WithFilter("a/b"))
	if !errors.Is(err, client.ErrInvalidFilter) {
		t.Fatalf("publish with a bad filter: %v", err)
	}
	err = bob.Subscribe(ctxT(t), topic, h, client.WithFilters("bad/filter"))
	if !errors.As(err, &ce) || ce.Topic != topic {
		t.Fatalf("subscribe with a bad filter: %v", err)
	}
	if err := bob.SetFilters(ctxT(t), "demo/general/none", "x"); !errors.Is(err, client.ErrNotSubscribed) {
		t.Fatalf("setFilters without a subscription: %v", err)
	}
	// Emit errors go to OnError.
	if err := bob.Emit("demo/other/y", 1); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the Emit error", func() bool { mu.Lock(); defer mu.Unlock(); return len(async) == 1 })
	mu.Lock()
	if !errors.Is(async[0], client.ErrUnknownTopic) {
		t.Fatalf("async error = %v", async[0])
	}
	mu.Unlock()

	// Protocol v1 gets not_authorized with the same code.
	v1 := b.dial(t, "dev-token-alice", client.Options{ProtocolVersion: 1})
	if v1.Info().ProtocolVersion != 1 {
		t.Fatalf("negotiated %d", v1.Info().ProtocolVersion)
	}
	err = v1.Subscribe(ctxT(t), "demo/other/x", h)
	if !errors.Is(err, client.ErrNotAuthorized) || !errors.As(err, &ce) || ce.Code != 42940 {
		t.Fatalf("v1 subscribe outside the grants: %v", err)
	}
}

func TestNotConnectedAndClosed(t *testing.T) {
	b := startBroker(t, "127.0.0.1:0")
	c := client.New("dev-token-bob", client.Options{URL: b.url()})
	h, _ := collect()
	if err := c.Subscribe(ctxT(t), topic, h); !errors.Is(err, client.ErrNotConnected) {
		t.Fatalf("subscribe before connect: %v", err)
	}
	if err := c.Publish(ctxT(t), topic, 1); !errors.Is(err, client.ErrNotConnected) {
		t.Fatalf("publish before connect: %v", err)
	}
	if err := c.Connect(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	if err := c.Connect(ctxT(t)); !errors.Is(err, client.ErrAlreadyConnected) {
		t.Fatalf("second connect: %v", err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if c.Status() != client.StatusClosed {
		t.Fatalf("status %v", c.Status())
	}
	if err := c.Publish(ctxT(t), topic, 1); !errors.Is(err, client.ErrClosed) {
		t.Fatalf("publish after close: %v", err)
	}
	if err := c.Connect(ctxT(t)); !errors.Is(err, client.ErrClosed) {
		t.Fatalf("connect after close: %v", err)
	}
}

func TestEchoFiltersAndUnsubscribe(t *testing.T) {
	b := startBroker(t, "127.0.0.1:0")
	alice := b.dial(t, "dev-token-alice", client.Options{})
	bob := b.dial(t, "dev-token-bob", client.Options{})
	ha, gotA := collect()
	hb, gotB := collect()
	if err := alice.Subscribe(ctxT(t), topic, ha); err != nil {
		t.Fatal(err)
	}
	if err := bob.Subscribe(ctxT(t), topic, hb, client.WithFilters("red")); err != nil {
		t.Fatal(err)
	}
	if err := alice.Publish(ctxT(t), topic, "plain", client.NoEcho()); err != nil {
		t.Fatal(err)
	}
	if err := alice.Publish(ctxT(t), topic, "red one", client.WithFilter("red")); err != nil {
		t.Fatal(err)
	}
	d := recv(t, gotB)
	if d.data.String() != `"red one"` || d.meta.Filter != "red" {
		t.Fatalf("bob got %s %+v", d.data, d.meta)
	}
	if d := recv(t, gotA); d.data.String() != `"red one"` { // echo of the second; the first had no echo
		t.Fatalf("alice got %s", d.data)
	}
	if err := bob.SetFilters(ctxT(t), topic, "blue"); err != nil {
		t.Fatal(err)
	}
	if f := bob.Subscriptions()[0].Filters; len(f.Values) != 1 || f.Values[0] != "blue" {
		t.Fatalf("filters after SetFilters: %+v", f)
	}
	if err := alice.Publish(ctxT(t), topic, "red two", client.WithFilter("red"), client.NoEcho()); err != nil {
		t.Fatal(err)
	}
	if err := alice.Publish(ctxT(t), topic, "blue one", client.WithFilter("blue"), client.NoEcho()); err != nil {
		t.Fatal(err)
	}
	if d := recv(t, gotB); d.data.String() != `"blue one"` {
		t.Fatalf("bob got %s after SetFilters", d.data)
	}
	if err := bob.Unsubscribe(ctxT(t), topic); err != nil {
		t.Fatal(err)
	}
	if err := alice.Publish(ctxT(t), topic, "blue two", client.WithFilter("blue"), client.NoEcho()); err != nil {
		t.Fatal(err)
	}
	nothing(t, gotB, 100*time.Millisecond)
	nothing(t, gotA, 0)
}

func TestLoadBalancedGroup(t *testing.T) {
	b := startBroker(t, "127.0.0.1:0")
	var counts [3]atomic.Int32
	for i := range counts {
		w := b.dial(t, "dev-token-bob", client.Options{})
		err := w.Subscribe(ctxT(t), "demo/general/jobs", func(client.Data, client.Meta) { counts[i].Add(1) },
			client.WithLoadBalance("workers"))
		if err != nil {
			t.Fatal(err)
		}
		if s := w.Subscriptions(); !s[0].LoadBalance || s[0].Group != "workers" {
			t.Fatalf("subscription %+v", s)
		}
	}
	alice := b.dial(t, "dev-token-alice", client.Options{})
	for i := range 9 {
		if err := alice.Publish(ctxT(t), "demo/general/jobs", i); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "9 jobs", func() bool { return counts[0].Load()+counts[1].Load()+counts[2].Load() == 9 })
	for i := range counts {
		if n := counts[i].Load(); n != 3 {
			t.Fatalf("worker %d got %d of 9 jobs, want 3 (round-robin)", i, n)
		}
	}
}

func TestConcurrentPublishers(t *testing.T) {
	b := startBroker(t, "127.0.0.1:0")
	bob := b.dial(t, "dev-token-bob", client.Options{})
	var mu sync.Mutex
	seen := map[string]bool{}
	err := bob.Subscribe(ctxT(t), topic, func(d client.Data, _ client.Meta) {
		var s string
		_ = d.Decode(&s)
		mu.Lock()
		seen[s] = true
		mu.Unlock()
	})
	if err != nil {
		t.Fatal(err)
	}
	const clients, goroutines, each = 3, 4, 25
	var wg sync.WaitGroup
	errs := make(chan error, clients*goroutines*each)
	for c := range clients {
		pub := b.dial(t, "dev-token-alice", client.Options{})
		for g := range goroutines {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range each {
					var err error
					if i%2 == 0 {
						err = pub.Publish(context.Background(), topic, fmt.Sprintf("%d-%d-%d", c, g, i))
					} else {
						err = pub.Emit(topic, fmt.Sprintf("%d-%d-%d", c, g, i))
					}
					if err != nil {
						errs <- err
					}
				}
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	waitFor(t, "every message", func() bool { mu.Lock(); defer mu.Unlock(); return len(seen) == clients*goroutines*each })
}

// TestReconnectAfterBrokerRestart restarts the broker on the same address:
// the client reconnects, subscribes again with the original options, and
// receives again.
func TestReconnectAfterBrokerRestart(t *testing.T) {
	b := startBroker(t, "127.0.0.1:0")
	var connects, disconnects atomic.Int32
	var reconnecting []time.Duration
	var mu sync.Mutex
	opts := client.Options{
		ReconnectDelay: 20 * time.Millisecond, MaxReconnectDelay: 100 * time.Millisecond, ReconnectJitter: -1,
		OnConnect:      func(client.Info) { connects.Add(1) },
		OnDisconnect:   func(error) { disconnects.Add(1) },
		OnReconnecting: func(_ int, d time.Duration) { mu.Lock(); reconnecting = append(reconnecting, d); mu.Unlock() },
	}
	bob := b.dial(t, "dev-token-bob", opts)
	h, got := collect()
	if err := bob.Subscribe(ctxT(t), topic, h, client.WithFilters("red"), client.WithQoS(0)); err != nil {
		t.Fatal(err)
	}
	hj, jobs := collect()
	if err := bob.Subscribe(ctxT(t), "demo/general/jobs", hj, client.WithLoadBalance("workers")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the first connect event", func() bool { return connects.Load() == 1 })

	b.restart()
	waitFor(t, "the reconnect", func() bool { return connects.Load() == 2 })
	if disconnects.Load() != 1 || bob.Status() != client.StatusConnected {
		t.Fatalf("disconnects %d, status %v", disconnects.Load(), bob.Status())
	}
	mu.Lock()
	if len(reconnecting) == 0 || reconnecting[0] != 20*time.Millisecond {
		t.Fatalf("reconnect delays %v", reconnecting)
	}
	mu.Unlock()
	subs := bob.Subscriptions()
	if len(subs) != 2 || !subs[0].Active || subs[0].QoS != 0 || subs[0].Filters.Values[0] != "red" ||
		!subs[1].Active || !subs[1].LoadBalance || subs[1].Group != "workers" {
		t.Fatalf("subscriptions after the reconnect: %+v", subs)
	}

	// Two members of the group: bob's restored subscription and a new one.
	other := b.dial(t, "dev-token-bob", client.Options{})
	ho, otherJobs := collect()
	if err := other.Subscribe(ctxT(t), "demo/general/jobs", ho, client.WithLoadBalance("workers")); err != nil {
		t.Fatal(err)
	}
	alice := b.dial(t, "dev-token-alice", client.Options{})
	if err := alice.Publish(ctxT(t), topic, "plain"); err != nil {
		t.Fatal(err)
	}
	if err := alice.Publish(ctxT(t), topic, "red", client.WithFilter("red")); err != nil {
		t.Fatal(err)
	}
	if d := recv(t, got); d.data.String() != `"red"` {
		t.Fatalf("after the restart bob got %s: the filter was not restored", d.data)
	}
	for i := range 4 {
		if err := alice.Publish(ctxT(t), "demo/general/jobs", i); err != nil {
			t.Fatal(err)
		}
	}
	recv(t, jobs)
	recv(t, jobs)
	recv(t, otherJobs)
	recv(t, otherJobs)
	nothing(t, jobs, 50*time.Millisecond)
}

func TestSubscribeWaitsWhileReconnecting(t *testing.T) {
	b := startBroker(t, "127.0.0.1:0")
	bob := b.dial(t, "dev-token-bob", client.Options{ReconnectDelay: 200 * time.Millisecond, ReconnectJitter: -1})
	b.stop()
	waitFor(t, "reconnecting", func() bool { return bob.Status() == client.StatusReconnecting })
	if err := bob.Publish(ctxT(t), topic, 1); !errors.Is(err, client.ErrNotConnected) {
		t.Fatalf("publish while reconnecting: %v", err)
	}
	done := make(chan error, 1)
	h, got := collect()
	go func() { done <- bob.Subscribe(context.Background(), topic, h) }()
	b.start(b.addr)
	if err := recv(t, done); err != nil {
		t.Fatal(err)
	}
	alice := b.dial(t, "dev-token-alice", client.Options{})
	if err := alice.Publish(ctxT(t), topic, "back"); err != nil {
		t.Fatal(err)
	}
	recv(t, got)
}

func TestCloseFromHandler(t *testing.T) {
	b := startBroker(t, "127.0.0.1:0")
	bob := b.dial(t, "dev-token-bob", client.Options{})
	closed := make(chan error, 1)
	if err := bob.Subscribe(ctxT(t), topic, func(client.Data, client.Meta) { closed <- bob.Close() }); err != nil {
		t.Fatal(err)
	}
	alice := b.dial(t, "dev-token-alice", client.Options{})
	if err := alice.Publish(ctxT(t), topic, 1); err != nil {
		t.Fatal(err)
	}
	if err := recv(t, closed); err != nil {
		t.Fatal(err)
	}
	if bob.Status() != client.StatusClosed {
		t.Fatalf("status %v", bob.Status())
	}
}
