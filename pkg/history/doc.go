// Package history keeps a durable message history in JetStream, from
// which a client that reconnects to any node, or to a node that restarted,
// can be given what it missed after its position.
//
// All topics share one stream, Stream(Prefix) (KRAKEN_HISTORY for the
// default prefix), file storage, on the subjects
//
//	<Prefix>.h.<level>.<level>...
//
// one token per topic level, escaped as natsbroker escapes them (package
// natssubject), so an MQTT-style pattern maps to subject filters ("+" to
// "*", a trailing "#" to the parent and parent.>). A position is a stream
// sequence: every entry has one (Entry.Seq), sequences increase in the
// order the stream stored the entries, across all topics, and are never
// reused while the stream exists. A new subscriber's position is LastSeq;
// a client's position after an entry is the entry's Seq.
//
// The stream is bounded (Config): entries older than MaxAge, the oldest
// entries past MaxBytes, and a topic's oldest entries past
// MaxMsgsPerTopic are removed (discard old). Read says when entries after
// a position may be missing for that reason (ReadResult: what is detected
// exactly, and what is reported conservatively).
//
// SeqAt turns a time into a position: the one before the first entry the
// stream stored at or after it, and whether entries of that time may have
// been removed already.
//
// Append never waits on the network: it is a JetStream asynchronous
// publish with the message id as Nats-Msg-Id (the stream stores an id seen
// within DuplicateWindow once), bounded by MaxPending; drops and failures
// are counted (Stats) and logged at a low rate. Sync waits until the
// entries appended so far are acknowledged (or given up).
//
// Embedded runs a NATS server with JetStream inside the process, without
// a listener, for a single node that wants a durable history without an
// external NATS system.
package history
