package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/NoLagApp/kraken/pkg/client"
)

// runSub is `kraken sub TOPIC...`: it subscribes to each topic and prints
// one line per message until interrupted (or --count messages). With
// --resume it sends --client-id as the session's clientId, so a broker with
// resumable sessions replays what it missed while reconnecting (printed
// marked, then a "replayed N of M" status line; docs/protocol.md
// "Resumable sessions").
func runSub(args []string, lookup func(string) (string, bool), stdout, stderr io.Writer) int {
	fs, cf := newCLIFlags("sub", "sub [flags] TOPIC...\n\n"+
		"Subscribes to each TOPIC and prints one line per message until interrupted:\n"+
		"  [15:04:05.000] TOPIC SENDER: DATA      (DATA as JSON)\n"+
		"or, with --json, one JSON object per line:\n"+
		"  {\"topic\":...,\"data\":...,\"sender\":...,\"timestamp\":...,\"msgId\":...}\n"+
		"where topic is the subscription as given (a wildcard pattern stays a pattern)\n"+
		"and sourceTopic, for a wildcard, the topic published to; the text form prints\n"+
		"the topic published to.\n"+
		"A hydration webhook's answer to a subscribe is printed marked, not counted:\n"+
		"  [15:04:05.000] [hydration] TOPIC: DATA   ({\"topic\":...,\"data\":...,\"hydration\":true})\n"+
		"Status lines go to standard error. Example:\n"+
		"  kraken sub --token dev-token-bob demo/general/messages\n\n"+
		"With --resume, against a broker with resumable sessions (RESUME_SESSIONS=true),\n"+
		"the session (identity: the token's actor and --client-id) survives a dropped\n"+
		"connection: after reconnecting, the messages missed meanwhile are printed\n"+
		"first, marked [replay] (\"isReplay\":true with --json), then a status line:\n"+
		"  kraken sub: replayed 50 of 50 missed messages (complete)\n"+
		"  kraken sub: replayed 0 of 0 missed messages (incomplete: session_expired)\n"+
		"Without --client-id the id is derived from the topics (kraken-sub-<8 hex>): the same\n"+
		"command resumes its own session, and subscribers of one token to other topics\n"+
		"get sessions of their own. Give concurrent --resume subscribers of one token to\n"+
		"the same topics their own --client-id.", lookup, stderr)
	asJSON := fs.Bool("json", false, "print one JSON object per message")
	group := fs.String("load-balance", "", "join this load-balanced group: each message goes to one member")
	var filters stringList
	fs.Var(&filters, "filter", "only receive messages published with this filter (repeatable)")
	count := fs.Int("count", 0, "exit after this many messages (0: run until interrupted)")
	resume := fs.Bool("resume", false, "resume the session after a dropped connection: replay what was missed (needs a broker with RESUME_SESSIONS=true and --qos 1 or 2)")
	clientID := fs.String("client-id", "", "the session's client id with --resume (sent as clientId; default: derived from the topics, so one command resumes its own session)")
	pos, code, done := parseCommand(stderr, fs, cf, "sub", args, func(pos []string) error {
		if len(pos) == 0 {
			return errors.New("want at least one TOPIC")
		}
		return nil
	})
	if done {
		return code
	}
	if *count < 0 {
		return cliUsage(stderr, fs, "sub", errors.New("--count must not be negative"))
	}
	if *resume && cf.qos < 1 {
		return cliUsage(stderr, fs, "sub", errors.New("--resume needs --qos 1 or 2: the broker keeps nothing missed at QoS 0"))
	}
	idSet := false
	fs.Visit(func(f *flag.Flag) { idSet = idSet || f.Name == "client-id" })
	if idSet && *clientID == "" {
		return cliUsage(stderr, fs, "sub", errors.New("--client-id must not be empty"))
	}
	if *resume && !idSet {
		*clientID = subClientID(pos)
	}
	if idSet && !*resume {
		return cliUsage(stderr, fs, "sub", errors.New("--client-id is the session's identity of --resume: pass --resume too"))
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	out := &subPrinter{w: stdout, json: *asJSON}
	var received int
	var mu sync.Mutex
	handler := func(data client.Data, meta client.Meta) {
		mu.Lock()
		defer mu.Unlock()
		if *count > 0 && received >= *count {
			return
		}
		out.print(data, meta)
		received++
		if *count > 0 && received == *count {
			cancel(nil)
		}
	}
	var status sync.Mutex // status lines come from callbacks and from here
	say := func(format string, a ...any) {
		status.Lock()
		defer status.Unlock()
		fmt.Fprintf(stderr, format+"\n", a...)
	}
	connected := false
	var id string
	if *resume {
		id = *clientID
	}
	c, err := cf.connect(ctx, client.Options{
		ClientID: id,
		// A replay can come on any reconnect to a broker with resumable
		// sessions (without --resume, the actor's one session), so it is
		// always reported.
		OnReplay:     func(r client.ReplayInfo) { say("kraken sub: %s", replayLine(r)) },
		OnDisconnect: func(err error) { say("kraken sub: connection lost: %s", explain(err)) },
		OnHydration: func(h client.Hydration) {
			mu.Lock()
			defer mu.Unlock()
			out.hydration(h)
		},
		OnReconnecting: func(n int, d time.Duration) {
			say("kraken sub: reconnecting in %s (attempt %d)", d.Round(time.Millisecond), n)
		},
		OnConnect: func(client.Info) {
			status.Lock()
			again := connected
			connected = true
			status.Unlock()
			if again {
				say("kraken sub: reconnected, subscriptions restored")
			}
		},
		OnError: func(err error) {
			if errors.Is(err, client.ErrAccessDenied) || errors.Is(err, client.ErrReconnectFailed) {
				cancel(connectError(cf.url, err))
				return
			}
			say("kraken sub: %v", err)
		},
	})
	if err != nil {
		return cliFail(stderr, "sub", err)
	}
	defer c.Close()
	var opts []client.SubscribeOption
	opts = append(opts, client.WithQoS(cf.qos))
	if *group != "" {
		opts = append(opts, client.WithLoadBalance(*group))
	}
	if len(filters) > 0 {
		opts = append(opts, client.WithFilters(filters...))
	}
	if *resume && *group != "" {
		say("kraken sub: note: a load-balanced subscription is restored on resuming but replays nothing (its messages go to the group's other members)")
	}
	for _, topic := range pos {
		if err := c.Subscribe(ctx, topic, handler, opts...); err != nil {
			if ctx.Err() != nil {
				break
			}
			return cliFail(stderr, "sub", requestError("subscribe to", topic, err))
		}
		say("kraken sub: subscribed to %s", printable(topic))
	}
	<-ctx.Done()
	if err := context.Cause(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return cliFail(stderr, "sub", err)
	}
	return exitOK
}

// replayLine describes the end of a replay: "replayed 50 of 50 missed
// messages (complete)", or "(incomplete: REASON)", with ", N already
// printed" for replayed copies of messages printed before the drop.
func replayLine(r client.ReplayInfo) string {
	state := "complete"
	if !r.Complete {
		reason := r.Reason
		if reason == "" {
			reason = "no reason given"
		}
		state = "incomplete: " + printable(reason)
	}
	if r.Duplicates > 0 {
		state += fmt.Sprintf(", %d already printed", r.Duplicates)
	}
	noun := "messages"
	if r.Count == 1 {
		noun = "message"
	}
	return fmt.Sprintf("replayed %d of %d missed %s (%s)", r.Replayed, r.Count, noun, state)
}

// subPrinter writes one line per message.
type subPrinter struct {
	w    io.Writer
	json bool
}

// subLine is the --json form of a message.
type subLine struct {
	Topic       string          `json:"topic"`
	Data        json.RawMessage `json:"data"`
	Sender      string          `json:"sender"`
	FromType    string          `json:"fromType,omitempty"`
	Timestamp   string          `json:"timestamp,omitempty"`
	MsgID       string          `json:"msgId,omitempty"`
	Filter      string          `json:"filter,omitempty"`
	SourceTopic string          `json:"sourceTopic,omitempty"`
	IsReplay    bool            `json:"isReplay,omitempty"`
}

func (p *subPrinter) print(data client.Data, meta client.Meta) {
	js := dataJSON(data)
	ts := meta.Timestamp
	if p.json {
		line := subLine{Topic: meta.Topic, Data: js, Sender: meta.Sender, FromType: meta.FromType,
			MsgID: meta.MsgID, Filter: meta.Filter, SourceTopic: meta.SourceTopic, IsReplay: meta.IsReplay}
		if !ts.IsZero() {
			line.Timestamp = ts.UTC().Format("2006-01-02T15:04:05.000Z07:00")
		}
		b, _ := json.Marshal(line)
		fmt.Fprintf(p.w, "%s\n", b)
		return
	}
	if ts.IsZero() {
		ts = time.Now()
	}
	topic := meta.Topic
	if meta.SourceTopic != "" {
		topic = meta.SourceTopic
	}
	sender := meta.Sender
	if sender == "" {
		sender = "?"
	}
	extra := ""
	if meta.Filter != "" {
		extra = " [filter " + meta.Filter + "]"
	}
	if meta.IsReplay {
		extra += " [replay]"
	}
	fmt.Fprintf(p.w, "[%s] %s %s%s: %s\n", ts.Local().Format("15:04:05.000"), printable(topic), printable(sender), printable(extra), printable(string(js)))
}

// dataJSON renders data as JSON, or as a JSON string of its description
// when it has no JSON form.
func dataJSON(data client.Data) json.RawMessage {
	js, err := data.MarshalJSON()
	if err != nil {
		js, _ = json.Marshal(data.String())
	}
	return js
}

// hydrationLine is the --json form of a hydration frame.
type hydrationLine struct {
	Topic     string          `json:"topic"`
	Data      json.RawMessage `json:"data"`
	Hydration bool            `json:"hydration"`
}

// hydration writes the line of a hydration frame: the answer of the
// hydration webhook of a subscribed topic, marked [hydration]
// ("hydration":true with --json).
func (p *subPrinter) hydration(h client.Hydration) {
	js := dataJSON(h.Data)
	topic := h.Pattern
	if topic == "" {
		topic = h.Topic
	}
	if p.json {
		b, _ := json.Marshal(hydrationLine{Topic: topic, Data: js, Hydration: true})
		fmt.Fprintf(p.w, "%s\n", b)
		return
	}
	fmt.Fprintf(p.w, "[%s] [hydration] %s: %s\n", time.Now().Format("15:04:05.000"), printable(topic), printable(string(js)))
}

// subClientID is the default --client-id of `kraken sub --resume`: derived
// from the topics, in order, so that running the same command again
// resumes its session and subscribers of one token to other topics do not
// take each other's (OQ-51 identities: [A-Za-z0-9_-], at most 64).
func subClientID(topics []string) string {
	sum := sha256.Sum256([]byte(strings.Join(topics, "\x00")))
	return "kraken-sub-" + hex.EncodeToString(sum[:4])
}
