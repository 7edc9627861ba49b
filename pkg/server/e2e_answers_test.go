package server

import (
	"testing"
	"time"

	"github.com/gobwas/ws"

	"github.com/NoLagApp/kraken/pkg/testpeer"
)

// Every request the protocol answers gets exactly one answer, in request
// order, however fast it comes (decisions.md OQ-67 amended; case
// 002); a filter change is not a new subscribe (case 003).

// Case 002: 200 publishes with msgRef in one burst at the default 50 per
// second get 200 answers: 50 published and 150 rate_limit_exceeded, each
// carrying its msgRef; a retry in the same window is answered too, and one
// in the next window passes.
func TestEveryRefusedPublishIsAnswered(t *testing.T) {
	s := start(t, nil)
	alice := authed(t, s, "dev-token-alice", "protocolVersion", 2)
	alignToSecond()
	sentAt := time.Now()
	replies := publishBurst(t, alice, "demo/general/t", 200)
	published, refused := 0, 0
	for i, f := range replies {
		if f.Map["msgRef"] != itoa(i) {
			t.Fatalf("answer %d is for msgRef %v: %s", i, f.Map["msgRef"], f)
		}
		switch f.Type() {
		case "published":
			published++
		case "error":
			want := map[string]any{"type": "error", "code": 42910, "error": "rate_limit_exceeded",
				"topic": "demo/general/t", "msgRef": itoa(i), "limit": 50}
			if !sameJSON(retryAfterChecked(t, f.Map), want) {
				t.Fatalf("answer %d = %s, want %v", i, f, want)
			}
			refused++
		default:
			t.Fatalf("answer %d = %s", i, f)
		}
	}
	oneWindow := time.Now().Unix() == sentAt.Unix()
	if oneWindow && (published != 50 || refused != 150) {
		t.Fatalf("within one second: %d published, %d refused; want 50 and 150", published, refused)
	}
	if published < 50 || published > 100 {
		t.Fatalf("%d of 200 published, want 50 (100 at most if the burst straddled a second)", published)
	}
	if oneWindow {
		alice.Send("type", "publish", "topic", "demo/general/t", "data", 1, "msgRef", "retry")
		if f := alice.Expect(); f.Map["msgRef"] != "retry" {
			t.Fatalf("the retry in the same window got %s, want its answer", f)
		}
	}
	alignToSecond()
	alice.Send("type", "publish", "topic", "demo/general/t", "data", 1, "msgRef", "next")
	alice.ExpectFields("type", "published", "msgRef", "next")
}

// Subscribe errors are answers too: 30 refused subscribes in one burst get
// 30 error frames, each naming its topic, although the budget for errors
// that answer nothing is 10 a second.
func TestEveryRefusedSubscribeIsAnswered(t *testing.T) {
	s := start(t, nil)
	bob := authed(t, s, "dev-token-bob")
	var burst []byte
	for i := 0; i < 30; i++ {
		burst = append(burst, binFrame("type", "subscribe", "topic", "other/room/"+itoa(i))...)
	}
	bob.SendRaw(burst)
	for i := 0; i < 30; i++ {
		bob.ExpectFields("type", "error", "code", 42940, "topic", "other/room/"+itoa(i))
	}
	expectPong(t, bob)
}

// A client provoking errors far past any honest rate is closed with 1008
// too_many_errors, after the answers it was owed: never left waiting.
func TestErrorFloodIsClosedAfterItsAnswers(t *testing.T) {
	s := startWith(t, fastTokens(5), func(c *testConfig) { c.ErrorFloodLimit = 20 })
	alice := authed(t, s, "dev-token-alice")
	alignToSecond()
	replies := 0
	var burst []byte
	for i := 0; i < 40; i++ {
		burst = append(burst, binFrame("type", "publish", "topic", "demo/general/t", "data", i, "msgRef", itoa(i))...)
	}
	alice.SendRaw(burst)
	for {
		f := alice.Expect()
		if f.OpCode == ws.OpClose {
			if code, text := ws.ParseCloseFrameData(f.Payload); code != 1008 || text != "too_many_errors" {
				t.Fatalf("close = %d %q, want 1008 too_many_errors", code, text)
			}
			break
		}
		if f.Map["msgRef"] != itoa(replies) {
			t.Fatalf("answer %d is %s", replies, f)
		}
		replies++
	}
	// 5 published and 20 refusals answered; the 21st error closes instead.
	if replies < 25 || replies >= 40 {
		t.Fatalf("%d answers before the close, want 25 (5 published, 20 refused)", replies)
	}
}

// Case 003: setFilters changes the subscription in place: filtersUpdated is
// its only answer, and the retained message is not sent again, for a
// broadcast and for a load-balanced subscription.
func TestSetFiltersDoesNotResendTheRetainedMessage(t *testing.T) {
	for _, extra := range [][]any{nil, {"loadBalance", true}} {
		s := start(t, nil)
		alice := authed(t, s, "dev-token-alice")
		alice.Send("type", "publish", "topic", "demo/general/r", "data", testpeer.Map("v", 1), "retain", true, "msgRef", "r")
		alice.ExpectFields("type", "published", "msgRef", "r")

		bob := authed(t, s, "dev-token-bob")
		subscribe(t, bob, "demo/general/r", extra...)
		bob.ExpectFields("type", "message", "topic", "demo/general/r")
		bob.Send("type", "setFilters", "topic", "demo/general/r", "filters", []any{})
		bob.ExpectFields("type", "filtersUpdated", "topic", "demo/general/r")
		bob.ExpectNothing(200 * time.Millisecond)

		// The new filters are in force once filtersUpdated is read.
		bob.Send("type", "setFilters", "topic", "demo/general/r", "filters", []any{"blue"})
		bob.ExpectFields("type", "filtersUpdated", "filters", []any{"blue"})
		alice.Send("type", "publish", "topic", "demo/general/r", "data", "red", "filter", "red")
		alice.Send("type", "publish", "topic", "demo/general/r", "data", "blue", "filter", "blue")
		bob.ExpectFields("type", "message", "data", "blue")
		bob.ExpectNothing(100 * time.Millisecond)
	}
}
