// Package store defines the message-store slot of the broker: the Record kept
// for each accepted publish (wire-reference.md §6.5) and the Store interface that
// records publishes and the acks of their recipients (wire-reference.md §6.4).
//
// Backends live in sub-packages: store/memstore is the bounded in-memory
// backend (STORE_BACKEND=memory, alias ets) and store/noop records nothing
// (STORE_BACKEND=noop). store/storetest is the conformance suite every
// backend's tests run.
//
// What is recorded is deliberately small (decisions.md OQ-31): the
// routing facts and the payload size, never the payload, and one ack set per
// message instead of a delivery record per recipient. Acks change nothing
// observable: nothing is ever re-sent, whether a message is acked or not
// (OQ-66). Message ids are assigned by the caller whenever RECORD_MESSAGES is
// on, even when the backend is noop (wire-reference.md §6.4); a Store never makes
// them up.
//
// # Concurrency
//
// Every Store implementation must be safe for concurrent use by any number of
// goroutines. Append is called on the publish path and Ack on a connection's
// read path, so neither may block for long: in-memory backends take only
// short critical sections, and a backend that does I/O must buffer or drop
// rather than wait, and must return promptly once ctx is done. Get and Len
// may be called at any time, also after Close.
//
// A Store keeps no reference to the *Record passed to Append: the caller may
// reuse it as soon as Append returns. Get returns copies that the caller
// owns.
//
// A Store that starts goroutines or holds resources implements Closer. The
// node calls Close once on shutdown; after it Append and Ack return an error
// wrapping ErrClosed.
package store
