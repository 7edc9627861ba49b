// Package metrics exposes kraken to Prometheus: one collector of every
// kraken_* metric, registered with the Go runtime and process collectors,
// served at GET /metrics on the admin listener (ADMIN_ADDR, cmd/kraken).
//
// The collector pulls: at each scrape every component in
// Sources.Components (the node, its WebSocket server, the auth backends,
// the token cache, the control plane, the webhooks) writes its own samples
// on the shared descriptors (Descs) from counters and gauges it keeps
// anyway; the node gathers the worker-owned figures (topics, queued bytes,
// retained messages, presence) with one op per worker, bounded by
// Sources.Timeout. The package imports no component: it holds the
// descriptors (names, help, labels), the collector, the registry and the
// handler.
// Nothing is added to the delivery path, so a server without a scraper
// costs exactly what it cost before.
//
// Label values come from small fixed sets (close reasons, refusal reasons,
// auth outcomes, worker indexes, backend names); no topic, token, actor or
// organisation is ever a label. docs/operations.md lists every metric.
//
// The collector is safe for concurrent scrapes and starts no goroutine.
package metrics
