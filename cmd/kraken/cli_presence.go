package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/NoLagApp/kraken/pkg/client"
)

// runPresence is `kraken presence ROOM`: it prints the presence list of a
// room, optionally after setting this connection's presence, and with
// --watch prints presence events until interrupted. It needs a broker that
// implements presence (wire-reference.md §7).
func runPresence(args []string, lookup func(string) (string, bool), stdout, stderr io.Writer) int {
	fs, cf := newCLIFlags("presence", "presence [flags] ROOM\n\n"+
		"Prints the presence list of ROOM (a room's slug, such as general for the\n"+
		"topics demo/general/...), one JSON object per member;\n"+
		"an empty room prints nothing there and says so on standard error.\n"+
		"Needs a broker that implements presence.", lookup, stderr)
	set := fs.String("set", "", "first set this connection's presence in ROOM to this JSON value")
	watch := fs.Bool("watch", false, "then print presence events until interrupted")
	pos, code, done := parseCommand(stderr, fs, cf, "presence", args, func(pos []string) error {
		if len(pos) != 1 {
			return fmt.Errorf("want one ROOM, got %d arguments", len(pos))
		}
		if pos[0] == "" || strings.Contains(pos[0], "/") {
			return fmt.Errorf("ROOM is a room's slug, such as general, not %q", pos[0])
		}
		return nil
	})
	if done {
		return code
	}
	room := pos[0]
	var data client.Data
	if *set != "" {
		var err error
		if data, err = client.FromJSON([]byte(*set)); err != nil {
			return cliUsage(stderr, fs, "presence", fmt.Errorf("--set must be JSON: %v", err))
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	c, err := cf.connect(ctx, client.Options{OnPresence: func(e client.PresenceEvent) {
		if !*watch {
			return
		}
		b, _ := json.Marshal(map[string]any{"event": e.Event, "actorTokenId": e.ActorTokenID, "presence": e.Presence})
		fmt.Fprintf(stdout, "%s\n", b)
	}})
	if err != nil {
		return cliFail(stderr, "presence", err)
	}
	defer c.Close()
	if data != nil {
		if err := c.SetPresence(ctx, room, data); err != nil {
			return cliFail(stderr, "presence", errors.New(explain(err)))
		}
	}
	members, err := c.GetPresence(ctx, room)
	if err != nil {
		return cliFail(stderr, "presence", errors.New(explain(err)))
	}
	if len(members) == 0 {
		// Standard output stays empty: scripts read one JSON line per member.
		fmt.Fprintf(stderr, "kraken presence: nobody present in %s (a room outside this token's grants lists nobody too)\n", printable(room))
	}
	for _, m := range members {
		line := map[string]any{"actorTokenId": m.ActorTokenID, "presence": m.Presence, "status": m.Status}
		if !m.JoinedAt.IsZero() {
			line["joinedAt"] = m.JoinedAt.UTC().Format("2006-01-02T15:04:05Z07:00")
		}
		b, _ := json.Marshal(line)
		fmt.Fprintf(stdout, "%s\n", b)
	}
	if *watch {
		<-ctx.Done()
	}
	return exitOK
}
