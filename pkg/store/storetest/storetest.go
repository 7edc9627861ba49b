package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/NoLagApp/kraken/pkg/store"
)

// Options tells Run what the backend under test is expected to do.
type Options struct {
	// Records is true for a backend that holds what it is given (memstore)
	// and false for one that records nothing (noop): then Get must never
	// find a record and Len must stay 0, while argument errors are still
	// checked.
	Records bool
}

// Run runs the conformance suite as subtests of t. factory must return a
// new, empty store for each call, using its t for cleanup (a store.Closer is
// closed by the suite too, so Close must be idempotent). A recording store
// must be able to hold at least 1000 records for one minute of real time
// without dropping any.
func Run(t *testing.T, factory func(t *testing.T) store.Store, opts Options) {
	t.Helper()
	s := suite{factory: factory, opts: opts}
	t.Run("AppendGet", s.appendGet)
	t.Run("GetUnknown", s.getUnknown)
	t.Run("Copies", s.copies)
	t.Run("InvalidAppend", s.invalidAppend)
	t.Run("Duplicate", s.duplicate)
	t.Run("AckUnknownIgnored", s.ackUnknownIgnored)
	t.Run("AckInvalidActor", s.ackInvalidActor)
	t.Run("AckTwoActors", s.ackTwoActors)
	t.Run("Concurrent", s.concurrent)
	t.Run("Close", s.close)
}

type suite struct {
	factory func(t *testing.T) store.Store
	opts    Options
}

// baseTime is a millisecond-precise UTC instant, so a backend that keeps
// Unix milliseconds round-trips it exactly.
var baseTime = time.UnixMilli(1_700_000_000_000).UTC()

// record returns a fully populated record with id.
func record(id string) store.Record {
	return store.Record{
		MsgID:       id,
		ProjectID:   "proj",
		AppID:       "app",
		RoomID:      "room",
		Topic:       "proj/app/room/chat",
		Pattern:     "chat",
		Sender:      "actor-pub",
		PayloadSize: 42,
		Timestamp:   baseTime,
	}
}

// msgID returns a distinct UUIDv4-shaped id for n.
func msgID(n int) string {
	return fmt.Sprintf("%08x-0000-4000-8000-%012x", n, n)
}

// equal compares records field by field, instants with time.Time.Equal.
func equal(a, b store.Record) bool {
	ta, tb := a.Timestamp, b.Timestamp
	a.Timestamp, b.Timestamp = time.Time{}, time.Time{}
	return a == b && ta.Equal(tb)
}

// mustAppend appends r and fails the test on an error.
func mustAppend(t *testing.T, s store.Store, r store.Record) {
	t.Helper()
	if err := s.Append(context.Background(), &r); err != nil {
		t.Fatalf("Append(%q) = %v, want nil", r.MsgID, err)
	}
}

// wantLen checks Len against n records appended: n when the backend records,
// 0 otherwise.
func (s suite) wantLen(t *testing.T, st store.Store, n int) {
	t.Helper()
	if !s.opts.Records {
		n = 0
	}
	if got := st.Len(); got != n {
		t.Fatalf("Len() = %d, want %d", got, n)
	}
}

// wantGet checks Get(id): the record and ackers when the backend records
// and want is not nil, absent otherwise.
func (s suite) wantGet(t *testing.T, st store.Store, id string, want *store.Record, wantAcks []string) {
	t.Helper()
	r, acks, ok := st.Get(context.Background(), id)
	if !s.opts.Records || want == nil {
		if ok {
			t.Fatalf("Get(%q) = %+v, %q, true; want ok=false", id, r, acks)
		}
		return
	}
	if !ok {
		t.Fatalf("Get(%q): ok=false, want the record", id)
	}
	if !equal(r, *want) {
		t.Fatalf("Get(%q) record = %+v, want %+v", id, r, *want)
	}
	if len(acks) != len(wantAcks) || !slices.Equal(acks, wantAcks) {
		t.Fatalf("Get(%q) ackedBy = %q, want %q", id, acks, wantAcks)
	}
}

func (s suite) appendGet(t *testing.T) {
	minimal := store.Record{MsgID: msgID(2), Timestamp: baseTime}
	wildcard := record(msgID(3))
	wildcard.RoomID, wildcard.Pattern, wildcard.PayloadSize = "", "feeds/+/news", 0
	tests := []struct {
		name string
		give []store.Record
	}{
		{name: "one full record", give: []store.Record{record(msgID(1))}},
		{name: "only the required fields", give: []store.Record{minimal}},
		{name: "wildcard-resolved, empty payload", give: []store.Record{wildcard}},
		{name: "several", give: []store.Record{record(msgID(4)), record(msgID(5)), minimal, wildcard}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := s.factory(t)
			for _, r := range tt.give {
				mustAppend(t, st, r)
			}
			s.wantLen(t, st, len(tt.give))
			for _, r := range tt.give {
				s.wantGet(t, st, r.MsgID, &r, nil)
			}
		})
	}
}

func (s suite) getUnknown(t *testing.T) {
	st := s.factory(t)
	mustAppend(t, st, record(msgID(1)))
	for _, id := range []string{"", msgID(2), "not-an-id"} {
		s.wantGet(t, st, id, nil, nil)
	}
}

// copies checks that Append keeps no reference to its argument and Get
// returns values the caller owns.
func (s suite) copies(t *testing.T) {
	st := s.factory(t)
	ctx := context.Background()
	r := record(msgID(1))
	want := r
	if err := st.Append(ctx, &r); err != nil {
		t.Fatalf("Append = %v", err)
	}
	r.Topic, r.PayloadSize = "changed", 1
	if err := st.Ack(ctx, "actor-a", want.MsgID); err != nil {
		t.Fatalf("Ack = %v", err)
	}
	if _, acks, ok := st.Get(ctx, want.MsgID); ok && len(acks) > 0 {
		acks[0] = "changed" // must not reach the store
	}
	s.wantGet(t, st, want.MsgID, &want, []string{"actor-a"})
}

func (s suite) invalidAppend(t *testing.T) {
	empty := record("")
	tests := []struct {
		name string
		give *store.Record
	}{
		{name: "nil record", give: nil},
		{name: "empty msgId", give: &empty},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := s.factory(t)
			if err := st.Append(context.Background(), tt.give); !errors.Is(err, store.ErrInvalidRecord) {
				t.Fatalf("Append = %v, want %v", err, store.ErrInvalidRecord)
			}
			s.wantLen(t, st, 0)
		})
	}
}

func (s suite) duplicate(t *testing.T) {
	st := s.factory(t)
	first := record(msgID(1))
	second := first
	second.Topic, second.Sender = "other/topic", "actor-other"
	mustAppend(t, st, first)
	err := st.Append(context.Background(), &second)
	switch {
	case s.opts.Records && !errors.Is(err, store.ErrDuplicate):
		t.Fatalf("second Append = %v, want %v", err, store.ErrDuplicate)
	case !s.opts.Records && err != nil:
		t.Fatalf("second Append = %v, want nil from a store that records nothing", err)
	}
	s.wantLen(t, st, 1)
	s.wantGet(t, st, first.MsgID, &first, nil)
}

func (s suite) ackUnknownIgnored(t *testing.T) {
	known := msgID(1)
	tests := []struct {
		name     string
		give     []string
		wantAcks []string
	}{
		{name: "one unknown id", give: []string{msgID(9)}},
		{name: "no ids", give: nil},
		{name: "empty id", give: []string{""}},
		{name: "malformed id", give: []string{"not-an-id"}},
		{name: "known among unknown", give: []string{msgID(8), "", known, msgID(9)}, wantAcks: []string{"actor-a"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := s.factory(t)
			r := record(known)
			mustAppend(t, st, r)
			if err := st.Ack(context.Background(), "actor-a", tt.give...); err != nil {
				t.Fatalf("Ack(%q) = %v, want nil", tt.give, err)
			}
			s.wantLen(t, st, 1)
			s.wantGet(t, st, known, &r, tt.wantAcks)
			for _, id := range tt.give {
				if id != known {
					s.wantGet(t, st, id, nil, nil)
				}
			}
		})
	}
}

func (s suite) ackInvalidActor(t *testing.T) {
	st := s.factory(t)
	r := record(msgID(1))
	mustAppend(t, st, r)
	if err := st.Ack(context.Background(), "", r.MsgID); !errors.Is(err, store.ErrInvalidAck) {
		t.Fatalf("Ack with empty actor = %v, want %v", err, store.ErrInvalidAck)
	}
	s.wantGet(t, st, r.MsgID, &r, nil)
}

func (s suite) ackTwoActors(t *testing.T) {
	type ack struct {
		actor string
		ids   []string
	}
	m1, m2 := msgID(1), msgID(2)
	tests := []struct {
		name   string
		give   []ack
		wantM1 []string
		wantM2 []string
	}{
		{
			name:   "single acks",
			give:   []ack{{"actor-a", []string{m1}}, {"actor-b", []string{m1}}},
			wantM1: []string{"actor-a", "actor-b"},
		},
		{
			name:   "batch ack",
			give:   []ack{{"actor-b", []string{m2, m1}}, {"actor-a", []string{m1}}},
			wantM1: []string{"actor-b", "actor-a"},
			wantM2: []string{"actor-b"},
		},
		{
			name: "repeated acks are idempotent",
			give: []ack{
				{"actor-a", []string{m1}}, {"actor-a", []string{m1, m1}},
				{"actor-b", []string{m1}}, {"actor-a", []string{m1, m2}},
			},
			wantM1: []string{"actor-a", "actor-b"},
			wantM2: []string{"actor-a"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := s.factory(t)
			r1, r2 := record(m1), record(m2)
			mustAppend(t, st, r1)
			mustAppend(t, st, r2)
			for _, a := range tt.give {
				if err := st.Ack(context.Background(), a.actor, a.ids...); err != nil {
					t.Fatalf("Ack(%q, %q) = %v", a.actor, a.ids, err)
				}
			}
			s.wantGet(t, st, m1, &r1, tt.wantM1)
			s.wantGet(t, st, m2, &r2, tt.wantM2)
		})
	}
}

// concurrent appends, acks and reads from several goroutines at once; run
// under -race it checks the store's locking.
func (s suite) concurrent(t *testing.T) {
	const (
		writers = 8
		each    = 100
		readers = 4
	)
	st := s.factory(t)
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	stop := make(chan struct{})
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			actor := fmt.Sprintf("actor-%d", w)
			for i := range each {
				r := record(msgID(w*each + i))
				if err := st.Append(ctx, &r); err != nil {
					errs <- fmt.Errorf("Append(%q): %w", r.MsgID, err)
					return
				}
				if err := st.Ack(ctx, actor, r.MsgID); err != nil {
					errs <- fmt.Errorf("Ack(%q): %w", r.MsgID, err)
					return
				}
				if err := st.Ack(ctx, "actor-shared", r.MsgID, msgID(writers*each+i)); err != nil {
					errs <- fmt.Errorf("batch Ack(%q): %w", r.MsgID, err)
					return
				}
				st.Get(ctx, r.MsgID)
			}
		}()
	}
	var rwg sync.WaitGroup
	for g := range readers {
		rwg.Add(1)
		go func() {
			defer rwg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				st.Get(ctx, msgID((g*31+i)%(writers*each)))
				_ = st.Ack(ctx, "actor-reader", msgID(writers*each+i))
				_ = st.Len()
			}
		}()
	}
	wg.Wait()
	close(stop)
	rwg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		return
	}
	s.wantLen(t, st, writers*each)
	for w := range writers {
		for i := range each {
			r := record(msgID(w*each + i))
			s.wantGet(t, st, r.MsgID, &r, []string{fmt.Sprintf("actor-%d", w), "actor-shared"})
		}
	}
}

func (s suite) close(t *testing.T) {
	st := s.factory(t)
	c, ok := st.(store.Closer)
	if !ok {
		t.Skip("the store does not implement store.Closer")
	}
	ctx := context.Background()
	r := record(msgID(1))
	mustAppend(t, st, r)
	for i := range 2 {
		if err := c.Close(); err != nil {
			t.Fatalf("Close #%d = %v, want nil", i+1, err)
		}
	}
	r2 := record(msgID(2))
	if err := st.Append(ctx, &r2); !errors.Is(err, store.ErrClosed) {
		t.Fatalf("Append after Close = %v, want %v", err, store.ErrClosed)
	}
	if err := st.Ack(ctx, "actor-a", r.MsgID); !errors.Is(err, store.ErrClosed) {
		t.Fatalf("Ack after Close = %v, want %v", err, store.ErrClosed)
	}
	st.Get(ctx, r.MsgID) // must not panic
	st.Len()
}
