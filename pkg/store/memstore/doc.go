// Package memstore is the bounded in-memory message store
// (STORE_BACKEND=memory, alias ets; wire-reference.md §6.5 and
// decisions.md OQ-31). It implements store.Store and store.Closer.
//
// # Bounds
//
// Nothing in a Store grows without bound:
//
//   - Count: when the number of records goes over Config.MaxMessages
//     (STORE_MAX_MESSAGES), the oldest max(count − limit, count/10) records
//     are dropped together with their acks (wire-reference.md §6.5).
//   - Age: a record expires Config.TTL (STORE_TTL_SECONDS) after it was
//     appended. Get and Ack treat it as absent from that instant, and the
//     sweeper removes it from memory at its next run (OQ-31: unlike v0.4.0,
//     where the TTL only filtered replay queries, expired records really
//     leave memory).
//   - Acks: each record keeps at most Config.MaxAcksPerMessage distinct
//     actors; later acks by new actors are ignored, which changes nothing
//     observable (OQ-66).
//
// Only the routing facts of a publish are kept, never its payload.
//
// # Layout
//
// Records are spread over 16 shards by a hash of the message id. Each shard
// is a mutex, a map from id to record and a FIFO ring of its records in
// append order, so concurrent publishers contend only when their ids land in
// the same shard. The global count is an atomic. Pruning for the count bound
// takes each shard's lock in turn and drops from each the oldest records in
// proportion to the shard's share of the count (the split sums to exactly
// the number to drop), so the records dropped are the oldest of each shard
// and, ids being uniformly hashed, approximately the oldest overall.
//
// # Concurrency
//
// A Store is safe for concurrent use. Append, Ack and Get hold one shard
// lock for a few map and ring operations and never block otherwise; at most
// one Append at a time prunes, and the others go on. Between prunes the
// count may exceed MaxMessages by at most the number of Appends in flight;
// once Appends quiesce it is back within the limit.
//
// New starts exactly one goroutine, the sweeper, which wakes every
// Config.SweepInterval, removes expired records and hands unused capacity of
// its maps and rings back to the garbage collector. Close stops it and waits
// for it to exit. Lock order: a goroutine holds at most one shard lock at a
// time.
package memstore
