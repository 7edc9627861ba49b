// Command chat is a terminal chat room on topic demo/general/chat: each
// line typed is published, messages from the others are printed, and room
// presence shows who is here.
//
//	go run ./examples/go/chat --token dev-token-alice --name alice
//	go run ./examples/go/chat --token dev-token-bob --name bob
//
// Type /who to list the room's members, /quit to leave.
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"time"

	"github.com/NoLagApp/kraken/pkg/client"
)

const (
	topic = "demo/general/chat"
	room  = "general" // the room slug of demo/general/# in the demo tokens
)

type line struct {
	Name string `json:"name"`
	Text string `json:"text"`
}

type member struct {
	Name string `json:"name"`
}

func main() {
	url := flag.String("url", envOr("KRAKEN_URL", client.DefaultURL), "broker WebSocket URL (env KRAKEN_URL)")
	token := flag.String("token", envOr("KRAKEN_TOKEN", "dev-token-alice"), "access token (env KRAKEN_TOKEN)")
	name := flag.String("name", "", "your name in the room (default: the token's actor)")
	flag.Parse()
	if err := run(*url, *token, *name); err != nil {
		fmt.Fprintln(os.Stderr, "chat:", err)
		os.Exit(1)
	}
}

func run(url, token, name string) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	c := client.New(token, client.Options{
		URL:            url,
		OnError:        func(err error) { fmt.Println("! error:", err) },
		OnDisconnect:   func(err error) { fmt.Println("! connection lost:", err) },
		OnReconnecting: func(n int, d time.Duration) { fmt.Printf("! reconnecting in %s\n", d.Round(time.Second)) },
		// Presence events need a broker that implements presence (kraken
		// does); with one that does not, they simply never arrive.
		OnPresence: func(e client.PresenceEvent) {
			var m member
			_ = e.Presence.Decode(&m)
			switch e.Event {
			case "join":
				fmt.Printf("* %s joined\n", shown(m.Name, e.ActorTokenID))
			case "leave":
				fmt.Printf("* %s left\n", safe(e.ActorTokenID))
			}
		},
	})
	defer c.Close()
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := c.Connect(cctx); err != nil {
		return err
	}
	if name == "" {
		name = c.Info().ActorTokenID
	}
	err := c.Subscribe(cctx, topic, func(data client.Data, meta client.Meta) {
		var l line
		if err := data.Decode(&l); err != nil {
			fmt.Printf("%s: %s\n", safe(meta.Sender), safe(data.String()))
			return
		}
		fmt.Printf("[%s] %s: %s\n", meta.Timestamp.Format("15:04"), shown(l.Name, meta.Sender), safe(l.Text))
	})
	if err != nil {
		return err
	}
	// Join the room's presence; the client sets it again after reconnects.
	if err := c.SetPresence(cctx, room, member{Name: name}); err != nil {
		return err
	}
	fmt.Printf("connected to %s as %s; type a message, /who or /quit\n", url, name)

	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(os.Stdin)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	for {
		select {
		case <-ctx.Done():
			return nil
		case text, ok := <-lines:
			if !ok || text == "/quit" {
				return nil
			}
			if text == "/who" {
				who(ctx, c)
				continue
			}
			if strings.TrimSpace(text) == "" {
				continue
			}
			// NoEcho: our own lines are not delivered back to us.
			if err := c.Publish(ctx, topic, line{Name: name, Text: text}, client.NoEcho()); err != nil {
				fmt.Println("! not sent:", err)
			}
		}
	}
}

// who prints the room's members (needs a broker with presence).
func who(ctx context.Context, c *client.Client) {
	members, err := c.GetPresence(ctx, room)
	if err != nil {
		fmt.Println("! /who:", err)
		return
	}
	for _, m := range members {
		var p member
		_ = m.Presence.Decode(&p)
		fmt.Printf("* %s since %s\n", shown(p.Name, m.ActorTokenID), m.JoinedAt.Format("15:04"))
	}
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// shown is how a member appears: the display name it chose, followed by its
// authenticated actor id when the two differ, so nobody can pass for
// someone else; both made safe for the terminal.
func shown(name, actor string) string {
	if name == "" || name == actor {
		return safe(actor)
	}
	return safe(name) + " (" + safe(actor) + ")"
}

// safe shows control characters (escape sequences, line breaks) sent by
// other users as Go escapes instead of letting them act on the terminal.
func safe(s string) string {
	q := strconv.Quote(s)
	return q[1 : len(q)-1]
}
