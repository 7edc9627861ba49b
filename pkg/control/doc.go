// Package control is the control-plane slot of the broker (wire-reference.md §5.2,
// §6.12; decisions.md OQ-48, OQ-49, OQ-63): usage reports per
// project, the set of projects blocked for their monthly quota, subscription
// change reports and webhook failure reports.
//
// The slot is split the way every slot is (the core owns policy, backends
// only deliver):
//
//   - Controller is the delivery backend: three calls, one per report kind.
//     control/noop (the default, CONTROL_BACKEND=noop) accepts everything
//     and never blocks a project; control/httpcontrol
//     (CONTROL_BACKEND=http) POSTs to {CONTROL_HTTP_URL}/usage,
//     /subscriptions and /webhook-failures. control/controltest is the
//     conformance suite and a fake HTTP control plane. README.md says how
//     to write another backend.
//   - Batcher is the policy, the same whatever the backend: it counts
//     publishes per project and reports them every UsageInterval (30 s), or
//     at once for a project whose count reaches UsageThreshold (100); it
//     keeps counts that failed to be delivered for the next report; it
//     keeps the blocked set, replaced by every answer that carries one and
//     refreshed with an empty report when nothing is pending; it batches
//     subscription changes (50, or every 500 ms) and queues webhook failure
//     reports, dropping what does not fit.
//
// # Who calls what, from which goroutine
//
// The node builds one Batcher at startup with New, calls Start, and on
// shutdown calls Close (after the server has stopped accepting publishes,
// so the final report is complete) and then the Controller's Close if it
// implements Closer.
//
//   - RecordPublish and Blocked are called on the publish path, by the
//     goroutine that handles the publish (a netpoll reader, an MQTT reader,
//     an internal publish), for every accepted publish and before the ACL
//     check respectively (§6.12). Blocked takes no lock. RecordPublish
//     never waits for the backend and on its common path takes no lock
//     either: one atomic add to the project's counter, found in a
//     concurrent map; the Batcher mutex only for a project's first publish
//     since its counter was last removed and when a project reaches
//     UsageThreshold.
//   - RecordSubscription is called on a connection's read path for each
//     live subscribe, setFilters and unsubscribe (§5.2); it never waits.
//   - RecordWebhookFailure is the OnFailure of webhook.Dispatcher, called
//     from a webhook sender goroutine; it never waits.
//   - Stats may be called from anywhere at any time.
//
// Start runs three goroutines, each calling its Controller method serially:
// usage (threshold, interval, refresh and final reports), subscriptions and
// webhook failures, so a slow endpoint delays only its own kind of report.
// Each call is bounded by Config.Timeout. The queues are bounded: the
// usage counters by the number of projects that published within about one
// UsageInterval (an interval report removes the counters it finds idle),
// the subscription and failure queues by Config.SubscriptionQueue and
// Config.FailureQueue (each up to twice that while a report is in flight).
// Close stops the records, makes the final reports within its context and
// returns once the three goroutines have exited; calls still in flight when
// the context ends are cancelled, which a Controller must honour promptly.
//
// # Example
//
//	ctrl, err := httpcontrol.New(httpcontrol.Config{BaseURL: url, Secret: secret})
//	if err != nil { ... }
//	b := control.New(control.Config{Controller: ctrl, Node: hostname, Logger: log})
//	b.Start()
//	defer ctrl.Close()
//	defer b.Close(shutdownCtx)
//	...
//	if b.Blocked(grant.ProjectID) { /* 42920 monthly_quota_exceeded */ }
//	n, _ := wire.JSONLen(cmd.Data) // len(wire.AppendJSON(nil, cmd.Data))
//	b.RecordPublish(grant.ProjectID, n)
package control
