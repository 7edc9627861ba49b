package main

import (
	"context"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/NoLagApp/kraken/pkg/client"
	"github.com/NoLagApp/kraken/pkg/session"
	"github.com/NoLagApp/kraken/pkg/testpeer"
)

// TestCLISubResume: `kraken sub --resume` against a broker with resumable
// sessions, its TCP connection cut while alice publishes 3 messages, prints
// after its automatic reconnect those 3 in order marked [replay], the
// status line "replayed 3 of 3 missed messages (complete)", then a live
// message unmarked, and exits after --count 4.
func TestCLISubResume(t *testing.T) {
	e := newCLIEnvWith(t, func(c *session.Config) { c.Resume = session.ResumeConfig{Enabled: true, Expiry: time.Minute} })
	brokerAddr := e.srv.Addr().String()
	proxy := testpeer.NewProxy(t, brokerAddr)
	e.url = "ws://" + proxy.Addr() + "/ws"
	s := e.startSub("dev-token-bob", "--resume", "--client-id", "cli-test", "--count", "4", "demo/general/messages")

	alice := client.New("dev-token-alice", client.Options{URL: "ws://" + brokerAddr + "/ws"})
	defer alice.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := alice.Connect(ctx); err != nil {
		t.Fatal(err)
	}
	publish := func(n int) {
		t.Helper()
		if err := alice.Publish(ctx, "demo/general/messages", map[string]int{"n": n}); err != nil {
			t.Fatal(err)
		}
	}

	proxy.Hold()
	proxy.Cut()
	deadline := time.Now().Add(10 * time.Second)
	for e.node.Protocol().ResumeStats().Parked != 1 { // the broker parked the session
		if time.Now().After(deadline) {
			t.Fatal("the broker did not park the session")
		}
		time.Sleep(5 * time.Millisecond)
	}
	for n := 1; n <= 3; n++ {
		publish(n)
	}
	if l := e.next(s.errs); !strings.Contains(l, "connection lost") {
		t.Fatalf("stderr: %q", l)
	}
	proxy.Release()

	for n := 1; n <= 3; n++ {
		re := regexp.MustCompile(`^\[\d\d:\d\d:\d\d\.\d{3}\] demo/general/messages alice \[replay\]: \{"n":` + strconv.Itoa(n) + `\}$`)
		if l := e.line(s); !re.MatchString(l) {
			t.Fatalf("replayed message %d: %q", n, l)
		}
	}
	// The replay line and the reconnect line, in either order (OnReplay
	// usually runs first; Options.OnReplay).
	want := map[string]bool{
		"kraken sub: replayed 3 of 3 missed messages (complete)": true,
		"kraken sub: reconnected, subscriptions restored":        true,
	}
	for len(want) > 0 {
		l := e.next(s.errs)
		if strings.Contains(l, "reconnecting in") {
			continue
		}
		if !want[l] {
			t.Fatalf("stderr: %q", l)
		}
		delete(want, l)
	}
	publish(4)
	re := regexp.MustCompile(`^\[\d\d:\d\d:\d\d\.\d{3}\] demo/general/messages alice: \{"n":4\}$`)
	if l := e.line(s); !re.MatchString(l) {
		t.Fatalf("live message: %q", l)
	}
	if code := e.wait(s); code != 0 {
		t.Fatalf("sub exit %d", code)
	}
}

// TestCLISubResumeUsage: --resume with --qos 0, and --client-id without
// --resume, are usage errors.
func TestCLISubResumeUsage(t *testing.T) {
	lookup := func(k string) (string, bool) {
		if k == "KRAKEN_TOKEN" {
			return "dev-token-bob", true
		}
		return "", false
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--resume", "--qos", "0", "demo/general/messages"}, "--resume needs --qos 1 or 2"},
		{[]string{"--client-id", "x", "demo/general/messages"}, "pass --resume too"},
		{[]string{"--resume", "--client-id", "", "demo/general/messages"}, "must not be empty"},
	} {
		var out, errb strings.Builder
		if code := runSub(c.args, lookup, &out, &errb); code != exitUsage || !strings.Contains(errb.String(), c.want) {
			t.Errorf("%v: exit %d, stderr %q", c.args, code, errb.String())
		}
	}
}

// TestSubClientIDFollowsTheTopics: the default --client-id of --resume is
// the same for the same topics, differs for others (two subscribers of one
// token to different topics do not take each other's session), and is a
// valid session id ([A-Za-z0-9_-], at most 64).
func TestSubClientIDFollowsTheTopics(t *testing.T) {
	a := subClientID([]string{"demo/general/a"})
	if a != subClientID([]string{"demo/general/a"}) {
		t.Fatal("not the same id for the same topics")
	}
	for _, other := range [][]string{{"demo/general/b"}, {"demo/general/a", "demo/general/b"}, {"demo/general/ab"}} {
		if subClientID(other) == a {
			t.Errorf("%v has the id of [demo/general/a]", other)
		}
	}
	if len(a) > 64 || strings.Trim(a, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") != "" {
		t.Errorf("id %q is not a valid session id", a)
	}
}

// TestReplayLine: the status line of a replayEnd.
func TestReplayLine(t *testing.T) {
	for _, c := range []struct {
		r    client.ReplayInfo
		want string
	}{
		{client.ReplayInfo{Count: 50, Replayed: 50, Complete: true}, "replayed 50 of 50 missed messages (complete)"},
		{client.ReplayInfo{Count: 1, Replayed: 1, Complete: true}, "replayed 1 of 1 missed message (complete)"},
		{client.ReplayInfo{Reason: client.ReplaySessionExpired}, "replayed 0 of 0 missed messages (incomplete: session_expired)"},
		{client.ReplayInfo{Count: 3, Replayed: 3, Complete: true, Duplicates: 1}, "replayed 3 of 3 missed messages (complete, 1 already printed)"},
		{client.ReplayInfo{Count: 7, Replayed: 7, Reason: "backlog_limit\x1b[2J"}, `replayed 7 of 7 missed messages (incomplete: backlog_limit\x1b[2J)`},
	} {
		if got := replayLine(c.r); got != c.want {
			t.Errorf("replayLine(%+v) = %q, want %q", c.r, got, c.want)
		}
	}
}
