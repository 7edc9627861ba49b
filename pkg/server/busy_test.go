package server

import (
	"testing"
	"time"

	"github.com/NoLagApp/kraken/pkg/hub"
	"github.com/NoLagApp/kraken/pkg/session"
)

// TestPublishWhileWorkersAreBehindIsRefused checks the backpressure policy:
// while a worker has MaxPendingPublications queued, a publish already read
// gets 42910 with a detail instead of queueing (or waiting) without bound;
// the publisher's socket is not read further meanwhile (input flow
// control, TestFastPublisherIsSlowedNotClosedWhileTheWorkersAreBehind),
// and publishing works again once the worker catches up.
func TestPublishWhileWorkersAreBehindIsRefused(t *testing.T) {
	s := start(t, func(c *testConfig) {
		c.RateLimit = 1000
		c.Hub.MaxPendingPublications = 1
		c.Hub.Workers = 1
	})
	bob := authed(t, s, "dev-token-bob")
	subscribe(t, bob, "demo/general/busy")
	alice := authed(t, s, "dev-token-alice")

	release := make(chan struct{})
	blocked := make(chan struct{})
	// Hold the only worker so publications pile up behind it.
	s.hub.RunShared(func(hub.Writer) { close(blocked); <-release })
	<-blocked
	// Both in one write, read together: the second finds the worker full.
	alice.SendRaw(append(binFrame("type", "publish", "topic", "demo/general/busy", "data", 1, "msgRef", "a"),
		binFrame("type", "publish", "topic", "demo/general/busy", "data", 2, "msgRef", "b")...))
	alice.ExpectFields("type", "published", "msgRef", "a")
	// It says when to try again; a strict decoder reads it (the SDKs ignore
	// the extra key).
	busy := expectStrictError(t, alice, "code", 42910, "error", "rate_limit_exceeded", "detail", session.DetailBusy,
		"msgRef", "b", "retryAfterMs", session.BusyRetryAfterMs)
	if _, ok := busy["limit"]; ok {
		t.Errorf("the busy refusal has a limit: %v", busy)
	}
	// The reader pauses the socket once it has handled what it read.
	waitFor(t, 5*time.Second, func() bool { return s.hub.InputPauses() > 0 })
	close(release)

	bob.ExpectFields("type", "message", "data", 1)
	waitFor(t, 5*time.Second, func() bool { return !s.hub.Busy() })
	alice.Send("type", "publish", "topic", "demo/general/busy", "data", 3, "msgRef", "c")
	alice.ExpectFields("type", "published", "msgRef", "c")
	bob.ExpectFields("type", "message", "data", 3)
}
