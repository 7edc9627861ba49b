// Command quickstart is the quickstart's exchange in Go: bob subscribes to
// demo/general/messages, alice publishes {"text": "hello from alice"}, and
// bob prints what he got. Run it against a kraken started with the demo
// tokens (`make run`):
//
//	go run ./examples/go/quickstart --url ws://localhost:8080/ws
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/NoLagApp/kraken/pkg/client"
)

const topic = "demo/general/messages"

func main() {
	url := flag.String("url", envOr("KRAKEN_URL", client.DefaultURL), "broker WebSocket URL (env KRAKEN_URL)")
	flag.Parse()
	if err := run(*url); err != nil {
		fmt.Fprintln(os.Stderr, "quickstart:", err)
		os.Exit(1)
	}
}

func run(url string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	got := make(chan struct{}, 1)
	subscribed := make(chan error, 1)

	var bob *client.Client
	bob = client.New("dev-token-bob", client.Options{
		URL:     url,
		OnError: func(err error) { fmt.Println("error:", err) },
		// Subscribe in the connect handler: it runs after every successful
		// connect, reconnects included. This client would also re-subscribe
		// by itself after a reconnect; subscribing here again is harmless
		// and is the pattern that works with every SDK.
		OnConnect: func(client.Info) {
			err := bob.Subscribe(ctx, topic, func(data client.Data, meta client.Meta) {
				fmt.Printf("bob got: %s (from %s)\n", data, meta.Sender)
				select {
				case got <- struct{}{}:
				default:
				}
			})
			if err != nil {
				fmt.Println("subscribe failed:", err)
			} else {
				fmt.Println("bob is subscribed")
			}
			select {
			case subscribed <- err:
			default:
			}
		},
	})
	defer bob.Close()
	if err := bob.Connect(ctx); err != nil {
		return fmt.Errorf("bob: %w", err)
	}
	if err := <-subscribed; err != nil {
		return err
	}

	alice := client.New("dev-token-alice", client.Options{URL: url})
	defer alice.Close()
	if err := alice.Connect(ctx); err != nil {
		return fmt.Errorf("alice: %w", err)
	}
	// Publish returns once kraken has acknowledged the message, not when
	// bob has received it.
	if err := alice.Publish(ctx, topic, map[string]string{"text": "hello from alice"}); err != nil {
		fmt.Println("publish failed:", err)
		return err
	}
	fmt.Println("alice published")

	select {
	case <-got:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("bob got nothing: %w", ctx.Err())
	}
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}
