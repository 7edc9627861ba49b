package metrics

import "github.com/prometheus/client_golang/prometheus"

// descs are the descriptions of every kraken_* metric. Label values come
// from small fixed sets (the enums of pkg/server and pkg/disconnect, a
// worker's index, a backend's name): never a topic, a token, an actor or an
// organisation.
type descs struct {
	buildInfo, ready *prometheus.Desc

	connections, authenticated, accepted, closed, handshakes  *prometheus.Desc
	slowConsumers, inputOverflows, inputPauses, receivedBytes *prometheus.Desc

	authResults, authDuration, breakerOpen, tokenCache *prometheus.Desc
	reloads, tokens, tokenFileFailing                  *prometheus.Desc

	messagesIn, messageBytesIn, publications, deliveries, deliveredBytes *prometheus.Desc
	publishRefused, subscribeRefused, subscriptions, groups, topics      *prometheus.Desc
	resumeParked, resumeReplays, resumeRedelivered                       *prometheus.Desc

	inbox, inboxPubs, workerBusy, busy, unresponsive, queued, queuedMax   *prometheus.Desc
	retained, presenceRooms, presenceMembers, lobbyWatches, storeMessages *prometheus.Desc

	brokerUp, brokerDropped, brokerMessages, brokerDiscarded, brokerReconnects *prometheus.Desc
	brokerState, brokerStateFailing, brokerNodesDown, brokerRetained           *prometheus.Desc

	webhooks, webhookRetries, controlReports, controlDropped, blockedProjects, pendingProjects *prometheus.Desc
}

func newDescs() descs {
	n := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc("kraken_"+name, help, labels, nil)
	}
	return descs{
		buildInfo: n("build_info", "Always 1; the labels name the build.", "version", "go_version"),
		ready:     n("ready", "1 while /ready answers ready: not shutting down, the token file's last load succeeded, the auth service's breaker is closed, the broker backend is connected."),

		connections:    n("connections", "Open connections: WebSocket ones, and plain HTTP requests or handshakes in progress.", "transport"),
		authenticated:  n("connections_authenticated", "Open WebSocket connections that are authenticated."),
		accepted:       n("connections_accepted_total", "TCP connections accepted."),
		closed:         n("connections_closed_total", "Connections that ended, by transport and close reason (peer_closed: the peer went away before the broker decided a close).", "transport", "reason"),
		handshakes:     n("handshakes_total", "First HTTP requests of a connection, by outcome: websocket (upgraded), health, ready, internal_publish, not_found, rejected (malformed, too large, upgrade refused), timeout.", "outcome"),
		slowConsumers:  n("slow_consumers_total", "Connections closed as slow consumers (1008 slow_consumer), by reason: outbound_bytes (the send queue passed OUTBOUND_MAX_BYTES), write_timeout (the socket took nothing for WRITE_TIMEOUT_SECONDS), inflight_window (an MQTT QoS 1 window stayed full).", "reason"),
		inputOverflows: n("input_overflows_total", "Connections closed because they sent faster than their frames could be handled (1008 input_overflow)."),
		inputPauses:    n("input_pauses_total", "Times a connection's socket stopped being read because the workers were behind (input flow control: TCP slows its client down)."),
		receivedBytes:  n("received_bytes_total", "Bytes read from client sockets and processed (requests and frames, headers included)."),

		authResults:      n("auth_results_total", "auth and reauth frames by backend, type and outcome: ok, denied, org_limit (auth), mismatch (reauth: actor_mismatch), unavailable (connection_failed), error (authentication_failed).", "backend", "type", "outcome"),
		authDuration:     n("auth_duration_seconds", "Time to validate a token: token cache, token file or auth service.", "backend"),
		breakerOpen:      n("auth_breaker_open", "1 while the HTTP auth service's circuit breaker fails calls fast.", "backend"),
		tokenCache:       n("token_cache_entries", "Validated tokens held in the token cache (expired ones until evicted)."),
		reloads:          n("token_file_reloads_total", "Reloads of the token file after startup, by result (failed: unreadable, unparsable, or refused for an error kraken check-config reports; the last valid tokens stay in force).", "result"),
		tokens:           n("token_file_tokens", "Usable tokens in the token set in force."),
		tokenFileFailing: n("token_file_load_failing", "1 while the token file's last reload failed."),

		messagesIn:       n("messages_in_total", "Accepted publishes, by source (client, internal).", "source"),
		messageBytesIn:   n("message_bytes_in_total", "Bytes of data of the accepted publishes, by source.", "source"),
		publications:     n("publications_total", "Publications fanned out by the workers, other nodes' included."),
		deliveries:       n("deliveries_total", "Message frames queued to subscribers (messages out)."),
		deliveredBytes:   n("delivered_bytes_total", "Bytes of those frames, counted per publication."),
		publishRefused:   n("publish_refused_total", "Refused publishes by reason: rate, size, grant, busy, quota, invalid_topic, invalid_filter, bad_request.", "reason"),
		subscribeRefused: n("subscribe_refused_total", "Refused subscribes by reason: grant, invalid_topic, invalid_filter, bad_request, too_many_subscriptions.", "reason"),
		subscriptions:    n("subscriptions", "Subscriptions, broadcast and load-balanced."),
		groups:           n("groups", "Load-balanced groups."),

		resumeParked:      n("resume_sessions_parked", "Resumable sessions kept while their client is disconnected (RESUME_SESSIONS); they hold no socket."),
		resumeReplays:     n("resume_replays_total", "Replays sent to reconnects with reconnect:true, by result: complete, session_expired, session_taken_over, backlog_limit.", "result"),
		resumeRedelivered: n("resume_redelivered_total", "Unacked load-balanced messages of sessions that ended unresumed, by result: given_back (to another member of the group), lost (no member on this node).", "result"),
		topics:            n("topics", "Routing keys and wildcard patterns with a broadcast subscriber, counted once per worker that holds one."),

		inbox:        n("worker_inbox_ops", "Ops waiting in a worker's inbox.", "worker"),
		inboxPubs:    n("worker_inbox_publications", "Publications waiting in a worker's inbox.", "worker"),
		workerBusy:   n("worker_busy", "1 while a worker holds its maximum of pending publications.", "worker"),
		busy:         n("busy", "1 while some worker is busy: publishes are refused with 42910 (the broker is busy)."),
		unresponsive: n("workers_unresponsive", "Workers that did not answer this scrape in time; their figures are left out of the worker-owned gauges."),
		queued:       n("outbound_queued_bytes", "Bytes queued to connections and not yet written."),
		queuedMax:    n("outbound_queued_max_bytes", "The largest send queue of one connection, in bytes."),
		retained:     n("retained_messages", "Retained messages (each worker keeps a copy; the largest count)."),

		presenceRooms:   n("presence_rooms", "Presence rooms with members or lobby watchers."),
		presenceMembers: n("presence_members", "Presence members across rooms."),
		lobbyWatches:    n("lobby_watches", "Lobby watches across rooms."),
		storeMessages:   n("store_messages", "Messages held by the message store."),

		brokerUp:           n("broker_up", "1 while the fan-out broker between nodes is connected (always 1 for local).", "backend"),
		brokerDropped:      n("broker_dropped_total", "Messages between nodes dropped: in, from other nodes while the workers were behind; out, those the backend could not send.", "direction"),
		brokerMessages:     n("broker_messages_total", "Messages between nodes: out, sent to the bus; in, received from it.", "direction"),
		brokerDiscarded:    n("broker_discarded_total", "Messages from the bus discarded: duplicate copies, malformed.", "kind"),
		brokerReconnects:   n("broker_reconnects_total", "Reconnections of the broker backend to its bus."),
		brokerState:        n("broker_state_total", "Shared-state operations between nodes (presence, connection counts) by kind: write, dropped, error, malformed, purged, rejoin.", "kind"),
		brokerStateFailing: n("broker_state_failing", "1 while this node's writes or watch of the shared state between nodes (presence, connection counts, liveness) fail (/ready: cluster_state)."),
		brokerRetained:     n("broker_retained_total", "This node's retained publishes made before it followed the retained stream (JetStream slow or down at start), by kind: recaptured (stored late, never over a newer one), unkept (could not be stored: other nodes started later miss them).", "kind"),
		brokerNodesDown:    n("broker_nodes_down_total", "Other nodes judged stopped: their members left and their connections stopped counting."),

		webhooks:        n("webhooks_total", "Customer webhooks by result: sent, failed, dropped.", "result"),
		webhookRetries:  n("webhook_retries_total", "Webhook retry attempts."),
		controlReports:  n("control_reports_total", "Reports to the control plane by kind and result.", "kind", "result"),
		controlDropped:  n("control_dropped_total", "Records refused by the control plane's full queues, by kind.", "kind"),
		blockedProjects: n("control_blocked_projects", "Projects the control plane has blocked (their publishes get 42920)."),
		pendingProjects: n("control_pending_projects", "Projects with usage counts not yet reported."),
	}
}

func (d *descs) all() []*prometheus.Desc {
	return []*prometheus.Desc{
		d.buildInfo, d.ready,
		d.connections, d.authenticated, d.accepted, d.closed, d.handshakes,
		d.slowConsumers, d.inputOverflows, d.inputPauses, d.receivedBytes,
		d.authResults, d.authDuration, d.breakerOpen, d.tokenCache,
		d.reloads, d.tokens, d.tokenFileFailing,
		d.messagesIn, d.messageBytesIn, d.publications, d.deliveries, d.deliveredBytes,
		d.publishRefused, d.subscribeRefused, d.subscriptions, d.groups, d.topics,
		d.resumeParked, d.resumeReplays, d.resumeRedelivered,
		d.inbox, d.inboxPubs, d.workerBusy, d.busy, d.unresponsive, d.queued, d.queuedMax,
		d.retained, d.presenceRooms, d.presenceMembers, d.lobbyWatches, d.storeMessages,
		d.brokerUp, d.brokerDropped, d.brokerMessages, d.brokerDiscarded, d.brokerReconnects,
		d.brokerState, d.brokerStateFailing, d.brokerNodesDown, d.brokerRetained,
		d.webhooks, d.webhookRetries, d.controlReports, d.controlDropped, d.blockedProjects, d.pendingProjects,
	}
}
