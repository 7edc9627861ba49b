// Package sessionkv keeps the resumable sessions of a cluster in a
// JetStream key-value bucket, so that any node can take over a session
// whose client reconnects to it, and sessions outlive the restart of the
// node that held them.
//
// # Bucket
//
// One bucket per prefix, Bucket(Prefix): KRAKEN_SESSIONS for the default
// prefix "kraken", otherwise the prefix with every byte outside
// [A-Za-z0-9_-] replaced by '_', then "_SESSIONS". It is file stored, with
// History 1 (only a session's newest Record is kept) and Config.Replicas
// replicas. Open makes it, or updates its settings to Config's.
//
// # Records and keys
//
// A Record is stored as JSON under the key of its ID: the lower-case hex
// SHA-256 of the ID's bytes (Key), 64 characters, since a key may only
// hold [-/_=.a-zA-Z0-9] and an ID may hold any bytes (e.g.
// "actor\x00clientId"). Save replaces a session's record; Load reads it,
// Delete removes it. The ID is a JSON string in the stored value, so bytes
// that are not valid UTF-8 are not kept there; Load returns the ID it was
// asked for.
//
// # TTL
//
// The bucket's TTL (Config.TTL, the stream's MaxAge, default 24 h) removes
// a record not saved again for that long, whatever its Expiry: nodes save
// the records they hold more often than TTL, and a record outlives the
// nodes that forget it by at most TTL. Record.Expires, Saved + Expiry, is
// when a parked session may be dropped; readers check it, the bucket does
// not.
//
// # Takeover
//
// A node that takes over a session tells the node named in its Record
// over core NATS (the same connection, no JetStream): TakeOver publishes
// the session ID, as the message's raw bytes, to
//
//	<Prefix>.session.takeover.<node>
//
// the node ID escaped as one subject token (natssubject.AppendLevel), and
// that node's Listen calls its function with the ID. Notices are at most
// once: a node that does not listen at that moment misses it.
package sessionkv
