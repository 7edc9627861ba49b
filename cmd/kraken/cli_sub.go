package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/NoLagApp/kraken/pkg/client"
)

// runSub is `kraken sub TOPIC...`: it subscribes to each topic and prints
// one line per message until interrupted (or --count messages).
func runSub(args []string, lookup func(string) (string, bool), stdout, stderr io.Writer) int {
	fs, cf := newCLIFlags("sub", "sub [flags] TOPIC...\n\n"+
		"Subscribes to each TOPIC and prints one line per message until interrupted:\n"+
		"  [15:04:05.000] TOPIC SENDER: DATA      (DATA as JSON)\n"+
		"or, with --json, one JSON object per line:\n"+
		"  {\"topic\":...,\"data\":...,\"sender\":...,\"timestamp\":...,\"msgId\":...}\n"+
		"Status lines go to standard error. Example:\n"+
		"  kraken sub --token dev-token-bob demo/general/messages", lookup, stderr)
	asJSON := fs.Bool("json", false, "print one JSON object per message")
	group := fs.String("load-balance", "", "join this load-balanced group: each message goes to one member")
	var filters stringList
	fs.Var(&filters, "filter", "only receive messages published with this filter (repeatable)")
	count := fs.Int("count", 0, "exit after this many messages (0: run until interrupted)")
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
	c, err := cf.connect(ctx, client.Options{
		OnDisconnect: func(err error) { say("kraken sub: connection lost: %v", err) },
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
	js, err := data.MarshalJSON()
	if err != nil {
		js, _ = json.Marshal(data.String())
	}
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
	fmt.Fprintf(p.w, "[%s] %s %s%s: %s\n", ts.Local().Format("15:04:05.000"), printable(topic), printable(sender), printable(extra), printable(string(js)))
}
