package history

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/NoLagApp/kraken/pkg/natssubject"
)

// Reasons of an incomplete Read (ReadResult.Reason).
const (
	// ReasonLimit: entries after the position may have been removed by
	// the stream's bounds (MaxAge, MaxBytes, MaxMsgsPerTopic).
	ReasonLimit = "history_limit"
	// ReasonReset: the position is past the stream's last sequence: the
	// stream was deleted and made again since (sequences start over), or
	// the position comes from another stream.
	ReasonReset = "history_reset"
)

// maxCapChecks bounds the topics at their MaxMsgsPerTopic bound whose
// oldest entry Read looks up; past it Read reports ReasonLimit without
// looking further.
const maxCapChecks = 64

// fetchBatch bounds the entries asked for at once while reading.
const fetchBatch = 512

// Entry is one stored entry of the history.
type Entry struct {
	Seq   uint64    // stream sequence: the position after this entry (Read's after)
	Topic string    // the routing key it was appended under, e.g. "demo-app/general/messages"
	MsgID string    // Append's msgID ("" if none)
	Time  time.Time // when the stream stored it (the server's clock)
	Data  []byte    // Append's data; the caller's to keep
}

// ReadResult says what a Read covers and whether entries are missing.
//
// It speaks of the range (after, R], R being Next when Next ≠ 0 and Last
// otherwise. Complete is true when no entry of the topics read that the
// stream ever stored in that range has been removed; then Reason is "" and
// Lost 0. Otherwise Reason is ReasonLimit or ReasonReset and Lost is the
// number of such entries removed when it can be counted, else -1.
//
// What can be detected, and the rule applied. The stream removes entries
// in two ways: MaxAge and MaxBytes (and a purge) remove its oldest entries,
// whatever their topics, so everything below its first sequence F is gone;
// MaxMsgsPerTopic removes a topic's oldest entry when a new one is stored,
// anywhere in the stream. The stream keeps no record of a removed entry's
// topic. So:
//
//   - when after+1 < F, entries (after, F) are gone: reported
//     (ReasonLimit), even though none may have been of these topics;
//   - else an entry of topic T in the range was removed by MaxMsgsPerTopic
//     only if T holds MaxMsgsPerTopic entries now and its oldest one is
//     after after+1 (removal keeps a topic's newest entries, and T could
//     only have dropped below the bound again through removals from the
//     front, which make F > after+1). That is reported too, even though
//     what was removed may all have come before after. It cannot happen
//     when Last - after ≤ MaxMsgsPerTopic, and Read looks nothing up then;
//     otherwise it asks the stream for the entry count per subject of the
//     topics read and the oldest entry of each at the bound (up to 64 of
//     them; past that it reports ReasonLimit).
//
// Both are judged on the stream's state after the entries were read, so
// an entry removed while Read ran is reported too.
//
// Lost is counted exactly when one of the topics read is "#" (every topic):
// then every sequence in the range that Read did not return was removed,
// since a sequence is only ever given to a stored entry. Otherwise an
// incomplete result has Lost -1. Entries removed by other means than these
// bounds in the middle of the stream (a delete with the nats CLI) are not
// detected unless "#" is read.
//
// A client's position on a quiet topic ages: once the stream's first
// sequence passes it, Read reports ReasonLimit although the topic lost
// nothing. Callers keep positions fresh by moving a client's position to
// LastSeq (or the Last of a Read) while it is connected.
type ReadResult struct {
	Complete bool
	Reason   string
	Lost     int
	// Next is the Seq of the last entry returned when Read stopped at
	// limit with entries possibly left (pass it as after to go on), else 0.
	Next uint64
	// Last is the stream's last sequence when Read began; Read returns no
	// entry past it.
	Last uint64
}

// Read returns the stored entries of topics with a sequence greater than
// after and at most the stream's last sequence when Read began, oldest
// first, at most limit of them (limit ≥ 1), and what the result covers
// (ReadResult). A topic is a routing key, or an MQTT-style pattern with "+"
// levels and a trailing "#" (matched as topic.Match does); the entries of
// a topic that several of them match are returned once. after is 0 to read
// from the start, or an Entry.Seq, LastSeq or ReadResult.Last/Next.
//
// Read makes an ephemeral JetStream consumer (NATS ≥ 2.10 for several
// topics), so it costs a few requests; it fails when the stream cannot be
// reached within ctx, with the entries read so far.
func (h *History) Read(ctx context.Context, topics []string, after uint64, limit int) ([]Entry, ReadResult, error) {
	if limit < 1 {
		return nil, ReadResult{}, errors.New("history: Read limit < 1")
	}
	if len(topics) == 0 {
		return nil, ReadResult{}, errors.New("history: Read without topics")
	}
	filters, covering := h.filters(topics)
	info, err := h.st.Info(ctx)
	if err != nil {
		return nil, ReadResult{}, fmt.Errorf("history: stream %s: %w", h.stream, err)
	}
	last, first := info.State.LastSeq, info.State.FirstSeq
	if first == 0 {
		first = last + 1
	}
	res := ReadResult{Complete: true, Last: last}
	if after > last {
		res.Complete, res.Reason, res.Lost = false, ReasonReset, -1
		return nil, res, nil
	}
	var entries []Entry
	if after < last {
		entries, res.Next, err = h.fetch(ctx, filters, after, last, limit)
		if err != nil {
			return entries, res, err
		}
	}
	end := last
	if res.Next != 0 {
		end = res.Next
	}
	lost := 0
	switch {
	case covering:
		lost = int(end-after) - len(entries)
	case after >= last:
	case after+1 < first:
		lost = -1
	default:
		// Entries removed while they were read: the stream's state from
		// now on, when it covers them.
		if info, err = h.st.Info(ctx); err != nil {
			return entries, res, fmt.Errorf("history: stream %s: %w", h.stream, err)
		}
		first, max := info.State.FirstSeq, info.Config.MaxMsgsPerSubject
		switch {
		case after+1 < first:
			lost = -1
		case max > 0 && info.State.LastSeq-after > uint64(max):
			capped, err := h.cappedAfter(ctx, filters, after, max)
			if err != nil {
				return entries, res, err
			}
			if capped {
				lost = -1
			}
		}
	}
	if lost != 0 {
		res.Complete, res.Reason, res.Lost = false, ReasonLimit, lost
	}
	return entries, res, nil
}

// filters returns the stream subjects of topics, none a subset of another
// (JetStream refuses overlapping consumer filters), and whether one of
// them is every subject of the stream.
func (h *History) filters(topics []string) ([]string, bool) {
	var all []string
	for _, t := range topics {
		all = append(all, natssubject.Patterns(h.base, t)...)
	}
	var out []string
	for i, s := range all {
		covered := false
		for j, o := range all {
			if i != j && subsetOf(s, o) && (!subsetOf(o, s) || j < i) {
				covered = true // strictly inside o, or equal to an earlier one
				break
			}
		}
		if !covered {
			out = append(out, s)
		}
	}
	covering := false
	for _, s := range out {
		covering = covering || s == h.base+".>"
	}
	return out, covering
}

// subsetOf reports whether every subject the filter a matches, the filter
// b matches too.
func subsetOf(a, b string) bool {
	at, bt := strings.Split(a, "."), strings.Split(b, ".")
	for i, t := range bt {
		if t == ">" {
			return len(at) > i
		}
		if i >= len(at) {
			return false
		}
		switch {
		case at[i] == ">":
			return false
		case t == "*":
		case t != at[i]:
			return false
		}
	}
	return len(at) == len(bt)
}

// fetch reads the entries of filters in (after, last], at most limit;
// next is the Seq of the last one when it stopped at limit with matching
// entries left.
func (h *History) fetch(ctx context.Context, filters []string, after, last uint64, limit int) ([]Entry, uint64, error) {
	cons, release, err := h.ephemeral(ctx, jetstream.ConsumerConfig{
		DeliverPolicy:  jetstream.DeliverByStartSequencePolicy,
		OptStartSeq:    after + 1,
		FilterSubjects: filters,
	})
	if err != nil {
		return nil, 0, fmt.Errorf("history: read consumer: %w", err)
	}
	defer release()
	pending := cons.CachedInfo().NumPending
	var entries []Entry
	for pending > 0 && len(entries) < limit {
		if err := ctx.Err(); err != nil {
			return entries, 0, err
		}
		msgs, err := fetchReady(ctx, cons, min(limit-len(entries), fetchBatch))
		if err != nil {
			return entries, 0, fmt.Errorf("history: read: %w", err)
		}
		got, past := 0, false
		for _, msg := range msgs {
			got++
			md, err := msg.Metadata()
			if err != nil {
				continue
			}
			pending = md.NumPending
			if md.Sequence.Stream > last {
				past = true
				continue
			}
			topic, err := natssubject.KeyOf(h.base, msg.Subject())
			if err != nil {
				continue // not Append's: ignored
			}
			entries = append(entries, Entry{Seq: md.Sequence.Stream, Topic: topic,
				MsgID: msg.Headers().Get(jetstream.MsgIDHeader), Time: md.Timestamp, Data: msg.Data()})
		}
		if past || got == 0 {
			pending = 0 // past last, or removed meanwhile
		}
	}
	var next uint64
	if len(entries) == limit && pending > 0 && entries[limit-1].Seq < last {
		next = entries[limit-1].Seq
	}
	return entries, next, nil
}

// cappedAfter reports whether a subject of filters holds max entries
// (its MaxMsgsPerTopic bound) and none at or before after+1: then some
// of its entries after after may have been removed by the bound.
func (h *History) cappedAfter(ctx context.Context, filters []string, after uint64, max int64) (bool, error) {
	var capped []string
	for _, f := range filters {
		info, err := h.st.Info(ctx, jetstream.WithSubjectFilter(f))
		if err != nil {
			return false, fmt.Errorf("history: stream %s: %w", h.stream, err)
		}
		for subject, n := range info.State.Subjects {
			if int64(n) >= max {
				capped = append(capped, subject)
			}
		}
	}
	if len(capped) > maxCapChecks {
		return true, nil
	}
	for _, subject := range capped {
		m, err := h.st.GetMsg(ctx, 1, jetstream.WithGetMsgSubject(subject))
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			continue // removed meanwhile
		}
		if err != nil {
			return false, fmt.Errorf("history: stream %s: %w", h.stream, err)
		}
		if m.Sequence > after+1 {
			return true, nil
		}
	}
	return false, nil
}

// SeqAt returns the Read position just before the first entry the stream
// stored at or after t (by Entry.Time, the server's clock), so that
// Read(ctx, topics, after, limit) returns every entry of topics stored at
// or after t that the stream still holds; entries stored before t may
// follow after too when the stream stored them while SeqAt ran.
//
// Let S be the sequence of the first entry stored at or after t, or the
// stream's last sequence + 1 when it holds none. Then after is S-1: 0 when
// S is the stream's first sequence ever, the stream's LastSeq when no
// entry is stored at or after t.
//
// gap reports that entries stored at or after t may have been removed
// from the front of the stream (MaxAge, MaxBytes, a purge) before SeqAt
// looked, whatever their topics: it is true when S > 1 and S-1 is before
// the stream's first sequence (S is its first entry, or the stream is
// empty). The stream's entries are stored in the order of their times (a
// server clock stepped back aside), so when the entry S-1 is stored its
// time is before t, and so is that of every entry before it: nothing at
// or after t can be missing before S, and after is S-1.
//
// When S-1 was removed from the middle of the stream (MaxMsgsPerTopic, or
// a delete), its time is unknown, and so is that of the entries removed
// right before it; such a removal matters only for the topics a Read asks
// for. SeqAt then returns after = S-2 with no gap: a Read from there
// returns the same entries (S-1 is gone) and reports a removal by
// MaxMsgsPerTopic of a topic it reads anywhere from S-1 on (ReadResult),
// which covers every entry at or after t that was removed before S (all
// entries between such an entry and S are removed, so its topic's oldest
// entry left is after S-1). That report may be a false alarm when the
// entries removed were before t; a removal of another topic's entries,
// the common case on a busy stream, reports nothing. gap is false on a
// stream that never held an entry, or when t is before its first entry
// and nothing was ever removed.
//
// SeqAt makes an ephemeral JetStream consumer starting at t
// (DeliverByStartTimePolicy) and fetches one entry; it then looks up the
// entry S-1 (a stream message get). It fails when the stream cannot be
// reached within ctx.
func (h *History) SeqAt(ctx context.Context, t time.Time) (after uint64, gap bool, err error) {
	info, err := h.st.Info(ctx)
	if err != nil {
		return 0, false, fmt.Errorf("history: stream %s: %w", h.stream, err)
	}
	s, found, err := h.firstAt(ctx, t)
	if err != nil {
		return 0, false, err
	}
	if !found {
		// None at or after t when the consumer began: every entry the
		// stream stored up to info's LastSeq is before t. (Entries stored
		// since may be before t too: after is the earlier bound.) If the
		// consumer saw entries that were removed before the fetch, the
		// stream's state now tells: S-1 = last is then not stored.
		s = info.State.LastSeq + 1
	}
	if s <= 1 {
		return 0, false, nil
	}
	stored, err := h.holds(ctx, s-1)
	switch {
	case err != nil:
		return 0, false, err
	case stored:
		return s - 1, false, nil
	}
	if info, err = h.st.Info(ctx); err != nil { // the front as of now: S-1 was removed before
		return 0, false, fmt.Errorf("history: stream %s: %w", h.stream, err)
	}
	if s-1 < info.State.FirstSeq || info.State.Msgs == 0 {
		return s - 1, true, nil // removed from the front
	}
	return s - 2, false, nil // removed from the middle: Read from S-2 reports it for its topics
}

// firstAt returns the sequence of the first entry the stream holds stored
// at or after t, found false when it holds none.
func (h *History) firstAt(ctx context.Context, t time.Time) (uint64, bool, error) {
	start := t
	cons, release, err := h.ephemeral(ctx, jetstream.ConsumerConfig{
		DeliverPolicy: jetstream.DeliverByStartTimePolicy,
		OptStartTime:  &start,
		FilterSubject: h.base + ".>",
	})
	if err != nil {
		return 0, false, fmt.Errorf("history: position consumer: %w", err)
	}
	defer release()
	if cons.CachedInfo().NumPending == 0 {
		return 0, false, nil
	}
	msgs, err := fetchReady(ctx, cons, 1)
	if err != nil {
		return 0, false, fmt.Errorf("history: position: %w", err)
	}
	var seq uint64
	for _, msg := range msgs {
		if md, err := msg.Metadata(); err == nil {
			seq = md.Sequence.Stream
		}
	}
	return seq, seq != 0, nil
}

// holds reports whether the stream holds the entry of sequence seq.
func (h *History) holds(ctx context.Context, seq uint64) (bool, error) {
	_, err := h.st.GetMsg(ctx, seq)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, jetstream.ErrMsgNotFound):
		return false, nil
	}
	return false, fmt.Errorf("history: stream %s: %w", h.stream, err)
}

// ephemeral makes the one-reader consumer of cfg (its start and filters)
// that a read, a count or a position look-up walks the stream with: no
// acknowledgements, in memory, one replica, removed by the server 30 s
// after its last use if release (which deletes it, within 2 s) fails.
func (h *History) ephemeral(ctx context.Context, cfg jetstream.ConsumerConfig) (jetstream.Consumer, func(), error) {
	cfg.AckPolicy = jetstream.AckNonePolicy
	cfg.InactiveThreshold = 30 * time.Second
	cfg.MemoryStorage, cfg.Replicas = true, 1
	cons, err := h.st.CreateConsumer(ctx, cfg)
	if err != nil {
		return nil, nil, err
	}
	return cons, func() {
		dctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_ = h.st.DeleteConsumer(dctx, cons.CachedInfo().Name)
		cancel()
	}, nil
}

// notServingWait bounds how long fetchReady asks a consumer that is not
// serving yet, and notServingEvery is how often.
const (
	notServingWait  = 2 * time.Second
	notServingEvery = 20 * time.Millisecond
)

// fetchReady returns what cons.FetchNoWait(n) gets (none when nothing is
// pending: jetstream.ErrNoMessages is no error). On a clustered stream a
// consumer just made may not serve yet (its leader has not subscribed to
// its next-message subject: nats.ErrNoResponders); the fetch is asked
// again every notServingEvery until it is served, notServingWait has
// passed, or ctx ends.
func fetchReady(ctx context.Context, cons jetstream.Consumer, n int) ([]jetstream.Msg, error) {
	give := time.Now().Add(notServingWait)
	for {
		batch, err := cons.FetchNoWait(n)
		var msgs []jetstream.Msg
		if err == nil {
			for msg := range batch.Messages() {
				msgs = append(msgs, msg)
			}
			err = batch.Error()
		}
		switch {
		case err == nil || errors.Is(err, jetstream.ErrNoMessages):
			return msgs, nil
		case !errors.Is(err, nats.ErrNoResponders) || len(msgs) > 0 || time.Now().After(give):
			return msgs, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(notServingEvery):
		}
	}
}
