// Package node is the composition root of one kraken node: it builds the
// worker pool (pkg/hub), the session protocol (pkg/session) and the
// registry of resumable sessions (pkg/resume) from one Config, holds the
// backends it is handed (the fan-out broker, the message store, the control
// plane, the webhooks, all in session.Config), and owns the lifecycle that
// the transports (pkg/server for WebSocket and HTTP, pkg/mqtt/listener for
// MQTT) share: start, readiness, the counts of connections by transport,
// and shutdown.
//
// A transport is built from a Node and registers itself (AddTransport); it
// knows nothing of the other transports. The order of a run:
//
//	n, _ := node.New(cfg)                 // hub, session, resume registry
//	ws, _ := server.New(n, server.Config{Addr: ":8080"})
//	mq, _ := listener.New(n, listener.Config{Addr: ":1883"})
//	_ = n.Start()                         // hub, then the broker
//	_ = ws.Start(); _ = mq.Start()        // listen and serve
//	...
//	_ = n.Shutdown(ctx)                   // see Node.Shutdown
//
// Concurrency: every method of Node is safe for concurrent use. Counts and
// readiness checks are atomics and a copy-on-write slice; nothing the node
// keeps is touched on the delivery path.
package node
