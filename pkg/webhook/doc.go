// Package webhook calls customer webhooks (wire-reference.md §5.3;
// decisions.md OQ-1, OQ-22, OQ-40, OQ-63): the hydration webhook
// after a live subscribe, whose JSON answer becomes a hydration frame for
// the subscriber, and the trigger webhook after an accepted publish, whose
// final failure is reported to the control plane (§5.2 /webhook-failures).
//
// A Dispatcher owns the policy: a bounded queue (Config.QueueSize, 10000),
// a fixed pool of sender goroutines (Config.Workers, 16), a 30 s timeout per
// attempt, three attempts with pauses of 1 s and 2 s (5xx and transport
// errors are retried; 2xx is success; 4xx and any other status are final),
// and one OnFailure call per trigger that finally failed, with its header
// values left out. Requests are POSTs with Content-Type: application/json
// and the webhook's configured headers.
//
// Bodies (§5.3):
//
//	hydration  {"actorId","roomName","topicName","scope"}
//	trigger    {"roomName","topicName","actorId","data","scope"}
//
// where scope is null for an unscoped actor or {"accessScopeId","slug",
// "name"}, and data is the JSON rendering of the publish's MessagePack data
// by wire.AppendJSON (bin as a string, UTF-8 or base64; timestamps as RFC
// 3339; integer map keys as strings).
//
// The server picks the configuration with auth.App.HydrationFor and
// TriggerFor of the app the topic resolved to, keyed by TopicName of the
// pattern as sent; RoomName gives the roomName from the resolution
// (OQ-22).
//
// # Who calls what, from which goroutine
//
// The node makes one Dispatcher with New, which starts the senders, and
// calls Close on shutdown, after the server stopped accepting connections:
//
//   - Hydrate is called by the goroutine that handled a subscribe, after
//     the subscribed reply was queued (OQ-58: subscribed comes first);
//     Trigger by the goroutine that accepted a publish. Both return at
//     once: they take a read lock and make a non-blocking send on the queue;
//     when it is full the webhook is dropped and counted, and the subscribe
//     or publish goes on unaffected.
//   - deliver (Hydrate's callback) and Config.OnFailure run on a sender
//     goroutine and must not block: deliver should queue the hydration
//     frame on the connection, OnFailure hand the report to
//     control.Batcher.RecordWebhookFailure. A sender that blocks in them
//     stops sending.
//   - Stats may be called from anywhere at any time.
//
// Close stops accepting webhooks, waits for the queue to drain within its
// context, then cancels what is in flight or pausing between attempts
// (counted as dropped, not reported as failures), and returns once every
// sender has exited.
package webhook
