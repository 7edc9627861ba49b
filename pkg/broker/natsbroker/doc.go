// Package natsbroker joins kraken nodes over NATS (BROKER_BACKEND=nats):
// a broker.Broker whose nodes share one NATS system (a server or a
// cluster), JetStream on for what must outlive a publish.
//
//   - Publications go to the subject of their routing key (subject.go);
//     a node subscribes to the subjects of the keys and patterns it has
//     interest in, so NATS sends one message per interested node. The
//     connection that publishes is NoEcho: a node is never sent its own
//     publish back.
//   - Load-balanced groups are NATS queue groups, on a second connection
//     with echo, so the publishing node's own members take part.
//   - Retained messages are a JetStream stream (RetainedStream of the
//     prefix: KRAKEN_RETAINED for the default "kraken", <prefix>_RETAINED
//     otherwise; one message per retained subject, RetainTTL, MaxRetained,
//     RetainReplicas) that every node follows from the start: it replays
//     the ones set before it started, then follows (retained.go).
//   - Presence, per-organisation connection counts and node liveness are a
//     JetStream KV bucket (StateBucket, StateReplicas replicas, default
//     RetainReplicas): see state.go for the keys, how a node is judged down
//     (Heartbeat, LivenessTimeout) and who purges its keys.
//
// Start waits (up to RetainWait, 5 s by default) until the node follows
// the retained stream, so a retained publish made once Start has returned
// is kept for nodes that start later. When JetStream cannot be reached
// that soon (a fresh cluster still electing its meta leader, a JetStream
// outage), Start returns anyway rather than hold the node up: the node
// follows retained publishes live meanwhile, retries in the background
// (backoff up to 5 s, until Close) and logs once when it follows the
// stream. Its own retained publishes of the meantime reach the live nodes
// at once and are stored in the stream once it can be reached (unless a
// newer one for the topic is there by then); only from then on are they
// replayed to nodes that start later. RetainedReady says whether the node
// follows the stream; the retry is logged at start and on recovery, and
// Stats counts what was stored late (Recaptured) or not at all (Unkept).
//
// The shared state can fail while the connections to NATS stay up: a
// bucket of one replica is offline while its server is down, and a watch
// whose consumer was on a lost server stops without an error. Failed
// writes and watches are retried, counted (Stats.StateErrors) and logged,
// the first of an outage at once and then at most one line per 10 s, and
// StateReady (broker.StateReporter: /ready's cluster_state) reports them
// until writes and the watch work again (health.go); a watch that stopped
// is replaced. A node warns once when the NATS cluster has more servers
// than the JetStream replicas, up to three (replicas.go).
//
// Without JetStream on the servers, publications and groups cross as
// usual, but retained messages set before a node started do not reach it
// and presence, connection counts and liveness stay per node; each is
// logged once at start.
//
// A Broker is safe for concurrent use. Nothing its callers call waits on
// the network: publishes and subscriptions are queued by nats.go, shared
// state changes by the broker's writer goroutine (coalesced per key,
// bounded by StateQueue, dropped changes counted and repaired). Handler
// methods are called on nats.go's and the broker's goroutines.
package natsbroker
