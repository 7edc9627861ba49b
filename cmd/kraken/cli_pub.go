package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/NoLagApp/kraken/pkg/client"
)

// runPub is `kraken pub TOPIC DATA`: it publishes DATA (JSON, sent as
// MessagePack) to TOPIC and waits for the broker's acknowledgement of each
// message.
func runPub(args []string, lookup func(string) (string, bool), stdout, stderr io.Writer) int {
	return runPubWithInput(args, lookup, os.Stdin, stdout, stderr)
}

func runPubWithInput(args []string, lookup func(string) (string, bool), stdin io.Reader, stdout, stderr io.Writer) int {
	fs, cf := newCLIFlags("pub", "pub [flags] TOPIC DATA\n\n"+
		"Publishes DATA, a JSON value sent as MessagePack, to TOPIC and waits for the\n"+
		"broker to acknowledge it. DATA \"-\" reads the JSON from standard input.\n"+
		"Example: kraken pub --token dev-token-alice demo/general/messages '{\"text\":\"hi\"}'", lookup, stderr)
	retain := fs.Bool("retain", false, "ask the broker to retain the message for later subscribers")
	noEcho := fs.Bool("no-echo", false, "do not deliver the message back to this connection")
	filter := fs.String("filter", "", "publish with this filter value")
	count := fs.Int("count", 1, "publish the message this many times")
	rate := fs.Float64("rate", 0, "messages per second when --count > 1 (0: one after the other)")
	quiet := fs.Bool("quiet", false, "print nothing on success")
	pos, code, done := parseCommand(stderr, fs, cf, "pub", args, func(pos []string) error {
		if len(pos) != 2 {
			return fmt.Errorf("want TOPIC and DATA, got %d arguments", len(pos))
		}
		return nil
	})
	if done {
		return code
	}
	if *count < 1 {
		return cliUsage(stderr, fs, "pub", errors.New("--count must be at least 1"))
	}
	if *rate < 0 {
		return cliUsage(stderr, fs, "pub", errors.New("--rate must not be negative"))
	}
	topic, text := pos[0], []byte(pos[1])
	if pos[1] == "-" {
		var err error
		if text, err = io.ReadAll(stdin); err != nil {
			return cliFail(stderr, "pub", fmt.Errorf("read DATA from standard input: %v", err))
		}
	}
	data, err := client.FromJSON(text)
	if err != nil {
		return cliUsage(stderr, fs, "pub", fmt.Errorf("DATA must be JSON (quote a string: '\"hello\"'): %v", err))
	}
	opts := []client.PublishOption{client.WithQoS(cf.qos)}
	if *retain {
		opts = append(opts, client.Retain())
	}
	if *noEcho {
		opts = append(opts, client.NoEcho())
	}
	if *filter != "" {
		opts = append(opts, client.WithFilter(*filter))
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	c, err := cf.connect(ctx, client.Options{DisableReconnect: true})
	if err != nil {
		return cliFail(stderr, "pub", err)
	}
	defer c.Close()

	var tick *time.Ticker
	if *rate > 0 && *count > 1 {
		tick = time.NewTicker(time.Duration(float64(time.Second) / *rate))
		defer tick.Stop()
	}
	start := time.Now()
	sent := 0
	for sent < *count {
		if sent > 0 && tick != nil {
			select {
			case <-tick.C:
			case <-ctx.Done():
			}
		}
		if ctx.Err() != nil {
			break
		}
		if err := c.Publish(ctx, topic, data, opts...); err != nil {
			if ctx.Err() != nil {
				break
			}
			if sent > 0 {
				fmt.Fprintf(stderr, "kraken pub: %d of %d messages published\n", sent, *count)
			}
			return cliFail(stderr, "pub", requestError("publish to", topic, err))
		}
		sent++
	}
	if !*quiet {
		if sent == 1 {
			fmt.Fprintf(stdout, "published to %s\n", printable(topic))
		} else {
			fmt.Fprintf(stdout, "published %d messages to %s in %s\n", sent, printable(topic), time.Since(start).Round(time.Millisecond))
		}
	}
	if sent < *count {
		return exitFail // interrupted
	}
	return exitOK
}
