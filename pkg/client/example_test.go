package client_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/NoLagApp/kraken/pkg/auth/static"
	"github.com/NoLagApp/kraken/pkg/client"
	"github.com/NoLagApp/kraken/pkg/hub"
	"github.com/NoLagApp/kraken/pkg/node"
	"github.com/NoLagApp/kraken/pkg/server"
	"github.com/NoLagApp/kraken/pkg/session"
)

// exampleBroker starts kraken in-process on a random loopback port with the
// demo tokens of examples/auth.json, and returns its WebSocket URL.
func exampleBroker() (url string, stop func()) {
	tokens, err := static.New(static.Config{Path: "../../examples/auth.json"})
	if err != nil {
		panic(err)
	}
	n, err := node.New(node.Config{Session: session.Config{Auth: tokens, RecordMessages: true},
		Hub: hub.Config{Workers: 2}})
	if err != nil {
		panic(err)
	}
	srv, err := server.New(n, server.Config{Addr: "127.0.0.1:0"})
	if err != nil {
		panic(err)
	}
	if err := n.Start(); err != nil {
		panic(err)
	}
	if err := srv.Start(); err != nil {
		panic(err)
	}
	return "ws://" + srv.Addr().String() + "/ws", func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = n.Shutdown(ctx)
		_ = tokens.Close()
	}
}

// The quickstart: bob subscribes, alice publishes, bob receives.
func Example() {
	url, stop := exampleBroker()
	defer stop()
	ctx := context.Background()

	bob := client.New("dev-token-bob", client.Options{URL: url})
	defer bob.Close()
	if err := bob.Connect(ctx); err != nil {
		fmt.Println("connect:", err)
		return
	}
	got := make(chan string, 1)
	err := bob.Subscribe(ctx, "demo/general/messages", func(data client.Data, meta client.Meta) {
		var msg struct {
			Text string `json:"text"`
		}
		if err := data.Decode(&msg); err != nil {
			got <- err.Error()
			return
		}
		got <- fmt.Sprintf("bob got %q from %s", msg.Text, meta.Sender)
	})
	fmt.Println("bob is subscribed:", err == nil)

	alice := client.New("dev-token-alice", client.Options{URL: url})
	defer alice.Close()
	if err := alice.Connect(ctx); err != nil {
		fmt.Println("connect:", err)
		return
	}
	err = alice.Publish(ctx, "demo/general/messages", map[string]string{"text": "hello from alice"})
	fmt.Println("alice published:", err == nil)
	fmt.Println(<-got)
	// Output:
	// bob is subscribed: true
	// alice published: true
	// bob got "hello from alice" from alice
}

// Subscribing outside the token's grants returns the broker's refusal as a
// *client.Error.
func ExampleError() {
	url, stop := exampleBroker()
	defer stop()
	ctx := context.Background()

	c := client.New("dev-token-bob", client.Options{URL: url})
	defer c.Close()
	if err := c.Connect(ctx); err != nil {
		fmt.Println("connect:", err)
		return
	}
	err := c.Subscribe(ctx, "demo/other/messages", func(client.Data, client.Meta) {})
	var e *client.Error
	if errors.As(err, &e) {
		fmt.Println(e.Code, e.Err, e.Topic, e.Hint != "")
	}
	fmt.Println(errors.Is(err, client.ErrUnknownTopic))

	bad := client.New("not-a-token", client.Options{URL: url})
	defer bad.Close()
	fmt.Println(bad.Connect(ctx))
	// Output:
	// 42940 unknown_topic demo/other/messages true
	// true
	// access_denied
}

// Workers subscribed with the same load-balance group share the messages:
// each goes to one worker, in turn.
func ExampleWithLoadBalance() {
	url, stop := exampleBroker()
	defer stop()
	ctx := context.Background()

	var mu sync.Mutex
	var wg sync.WaitGroup
	perWorker := map[string]int{}
	for _, name := range []string{"w1", "w2"} {
		w := client.New("dev-token-bob", client.Options{URL: url})
		defer w.Close()
		if err := w.Connect(ctx); err != nil {
			fmt.Println("connect:", err)
			return
		}
		err := w.Subscribe(ctx, "demo/general/jobs", func(client.Data, client.Meta) {
			mu.Lock()
			perWorker[name]++
			mu.Unlock()
			wg.Done()
		}, client.WithLoadBalance("workers"))
		if err != nil {
			fmt.Println("subscribe:", err)
			return
		}
	}
	producer := client.New("dev-token-alice", client.Options{URL: url})
	defer producer.Close()
	if err := producer.Connect(ctx); err != nil {
		fmt.Println("connect:", err)
		return
	}
	wg.Add(6)
	for i := range 6 {
		if err := producer.Publish(ctx, "demo/general/jobs", map[string]int{"job": i}); err != nil {
			fmt.Println("publish:", err)
		}
	}
	wg.Wait()
	fmt.Println("w1:", perWorker["w1"], "w2:", perWorker["w2"])
	// Output:
	// w1: 3 w2: 3
}
