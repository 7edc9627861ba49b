package metrics

import "github.com/prometheus/client_golang/prometheus"

// Descs are the descriptions of every kraken_* metric. Label values come
// from small fixed sets (the enums of pkg/server and pkg/disconnect, a
// worker's index, a backend's name): never a topic, a token, an actor or an
// organisation.
type Descs struct {
	BuildInfo, Ready, Draining *prometheus.Desc

	Connections, Authenticated, Accepted, Closed, Handshakes  *prometheus.Desc
	SlowConsumers, InputOverflows, InputPauses, ReceivedBytes *prometheus.Desc

	AuthResults, AuthDuration, BreakerOpen, TokenCache *prometheus.Desc
	Reloads, Tokens, TokenFileFailing                  *prometheus.Desc

	MessagesIn, MessageBytesIn, Publications, Deliveries, DeliveredBytes *prometheus.Desc
	PublishRefused, SubscribeRefused, Subscriptions, Groups, Topics      *prometheus.Desc
	ResumeParked, ResumeReplays, ResumeRedelivered                       *prometheus.Desc
	ResumeSaved, ResumeTakenOver                                         *prometheus.Desc
	MQTTSessionsKept, MQTTWills, MQTTTakeovers, MQTTSessionDropped       *prometheus.Desc
	ConnectionsRefused, ProxyHeaderErrors                                *prometheus.Desc
	TLSHandshakes, TLSReloads, TLSExpiry                                 *prometheus.Desc

	Inbox, InboxPubs, WorkerBusy, Busy, Unresponsive, Queued, QueuedMax   *prometheus.Desc
	Retained, PresenceRooms, PresenceMembers, LobbyWatches, StoreMessages *prometheus.Desc

	BrokerUp, BrokerDropped, BrokerMessages, BrokerDiscarded, BrokerReconnects *prometheus.Desc
	BrokerState, BrokerStateFailing, BrokerNodesDown, BrokerRetained           *prometheus.Desc

	Webhooks, WebhookRetries, ControlReports, ControlDropped, BlockedProjects, PendingProjects *prometheus.Desc

	HistoryAppended, HistoryDropped, HistoryErrors, HistoryStored, HistoryStoredBytes *prometheus.Desc

	DurableGroups, DurableDeliveries, DurablePending *prometheus.Desc

	MemoryReturns, MemoryReturned *prometheus.Desc
}

func NewDescs() Descs {
	n := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc("kraken_"+name, help, labels, nil)
	}
	return Descs{
		BuildInfo: n("build_info", "Always 1; the labels name the build.", "version", "go_version"),
		Ready:     n("ready", "1 while /ready answers ready: not shutting down, the token file's last load succeeded, the auth service's breaker is closed, the broker backend is connected, the history's stream is reachable (STORE_BACKEND=jetstream)."),
		Draining:  n("draining", "1 while the node is in lame-duck drain (SIGUSR2, POST /api/drain): not ready, accepting nothing, closing its connections over DRAIN_SECONDS."),

		Connections:    n("connections", "Open connections: WebSocket ones, and plain HTTP requests or handshakes in progress.", "transport"),
		Authenticated:  n("connections_authenticated", "Open connections (WebSocket and MQTT) that are authenticated."),
		Accepted:       n("connections_accepted_total", "TCP connections accepted."),
		Closed:         n("connections_closed_total", "Connections that ended, by transport and close reason (peer_closed: the peer went away before the broker decided a close).", "transport", "reason"),
		Handshakes:     n("handshakes_total", "First HTTP requests of a connection, by outcome: websocket (upgraded), health, ready, internal_publish, not_found, rejected (malformed, too large, upgrade refused), timeout.", "outcome"),
		SlowConsumers:  n("slow_consumers_total", "Connections closed as slow consumers (1008 slow_consumer), by reason: outbound_bytes (the send queue passed OUTBOUND_MAX_BYTES), write_timeout (the socket took nothing for WRITE_TIMEOUT_SECONDS), inflight_window (an MQTT QoS 1 window stayed full).", "reason"),
		InputOverflows: n("input_overflows_total", "Connections closed because they sent faster than their frames could be handled (1008 input_overflow)."),
		InputPauses:    n("input_pauses_total", "Times a connection's socket stopped being read because the workers were behind (input flow control: TCP slows its client down)."),
		ReceivedBytes:  n("received_bytes_total", "Bytes read from client sockets and processed (requests and frames, headers included)."),

		AuthResults:      n("auth_results_total", "auth and reauth frames by backend, type and outcome: ok, denied, org_limit (auth), mismatch (reauth: actor_mismatch), unavailable (connection_failed), error (authentication_failed).", "backend", "type", "outcome"),
		AuthDuration:     n("auth_duration_seconds", "Time to validate a token: token cache, token file or auth service.", "backend"),
		BreakerOpen:      n("auth_breaker_open", "1 while the HTTP auth service's circuit breaker fails calls fast.", "backend"),
		TokenCache:       n("token_cache_entries", "Validated tokens held in the token cache (expired ones until evicted)."),
		Reloads:          n("token_file_reloads_total", "Reloads of the token file after startup, by result (failed: unreadable, unparsable, or refused for an error kraken check-config reports; the last valid tokens stay in force).", "result"),
		Tokens:           n("token_file_tokens", "Usable tokens in the token set in force."),
		TokenFileFailing: n("token_file_load_failing", "1 while the token file's last reload failed."),

		MessagesIn:       n("messages_in_total", "Accepted publishes, by source (client, internal).", "source"),
		MessageBytesIn:   n("message_bytes_in_total", "Bytes of data of the accepted publishes, by source.", "source"),
		Publications:     n("publications_total", "Publications fanned out by the workers, other nodes' included."),
		Deliveries:       n("deliveries_total", "Message frames queued to subscribers (messages out)."),
		DeliveredBytes:   n("delivered_bytes_total", "Bytes of those frames, counted per publication."),
		PublishRefused:   n("publish_refused_total", "Refused publishes by reason: rate, size, grant, busy, quota, invalid_topic, invalid_filter, bad_request.", "reason"),
		SubscribeRefused: n("subscribe_refused_total", "Refused subscribes by reason: grant, invalid_topic, invalid_filter, bad_request, too_many_subscriptions.", "reason"),
		Subscriptions:    n("subscriptions", "Subscriptions, broadcast and load-balanced."),
		Groups:           n("groups", "Load-balanced groups."),

		ConnectionsRefused: n("connections_refused_total", "Connections the edge limits refused, at their accept or once their client's address was known (PROXY protocol, a trusted proxy's forwarding header), by the bound reached: connections (MAX_CONNECTIONS), address (MAX_CONNECTIONS_PER_ADDRESS), pending (MAX_PENDING_CONNECTIONS), pending_address (MAX_PENDING_PER_ADDRESS), rate (MAX_ACCEPT_RATE_PER_ADDRESS).", "reason"),
		ProxyHeaderErrors:  n("proxy_header_errors_total", "Connections closed without an answer because their first bytes were not a valid PROXY protocol header (PROXY_PROTOCOL), by listener: ws, mqtt.", "listener"),
		TLSHandshakes:      n("tls_handshakes_total", "TLS handshakes begun on the TLS listeners (a complete ClientHello, or first bytes that are not TLS), by listener (wss, mqtts) and result: ok, or failed (not TLS, a bad or stalled handshake, a client certificate refused).", "listener", "result"),
		TLSReloads:         n("tls_certificate_reloads_total", "Reloads of the TLS certificate files (SIGHUP, or the files changed), by result: ok, or error (the certificate in force stays; the admin /ready says why).", "result"),
		TLSExpiry:          n("tls_certificate_expiry_timestamp_seconds", "When the TLS certificate in force expires, in Unix seconds."),
		MQTTSessionsKept:   n("mqtt_sessions_kept", "MQTT persistent sessions (Clean Session 0) kept while their client is disconnected; they hold no socket."),
		MQTTWills:          n("mqtt_wills_total", "MQTT will messages published (a connection ended without DISCONNECT); one the grants or limits refuse is not counted (it is logged as a refused publish)."),
		MQTTTakeovers:      n("mqtt_takeovers_total", "MQTT connections closed by a new CONNECT with the same client identifier and actor."),
		MQTTSessionDropped: n("mqtt_session_messages_dropped_total", "QoS 1 and 2 messages a kept MQTT session dropped past its bounds (RESUME_MAX_BYTES, STORE_MAX_MESSAGES) while its client was away."),
		ResumeParked:       n("resume_sessions_parked", "Resumable sessions kept while their client is disconnected (RESUME_SESSIONS); they hold no socket."),
		ResumeReplays:      n("resume_replays_total", "Replays sent to reconnects with reconnect:true, by result: complete, session_expired, session_taken_over, backlog_limit, history_limit, store_unavailable.", "result"),
		ResumeSaved:        n("resume_saved_total", "Resumable session records written to the session store (STORE_BACKEND=jetstream), MQTT persistent sessions' included, by result: ok, error (records of a batch the store refused).", "result"),
		ResumeTakenOver:    n("resume_taken_over_total", "Resumable sessions of this node, MQTT persistent sessions included, that a reconnect resumed on another node (the live connection closed or the kept session dropped here)."),
		ResumeRedelivered:  n("resume_redelivered_total", "Unacked load-balanced messages of sessions that ended unresumed, by result: given_back (to another member of the group), lost (no member on this node).", "result"),
		Topics:             n("topics", "Routing keys and wildcard patterns with a broadcast subscriber, counted once per worker that holds one."),

		Inbox:        n("worker_inbox_ops", "Ops waiting in a worker's inbox.", "worker"),
		InboxPubs:    n("worker_inbox_publications", "Publications waiting in a worker's inbox.", "worker"),
		WorkerBusy:   n("worker_busy", "1 while a worker holds its maximum of pending publications.", "worker"),
		Busy:         n("busy", "1 while some worker is busy: publishes are refused with 42910 (the broker is busy)."),
		Unresponsive: n("workers_unresponsive", "Workers that did not answer this scrape in time; their figures are left out of the worker-owned gauges."),
		Queued:       n("outbound_queued_bytes", "Bytes queued to connections and not yet written."),
		QueuedMax:    n("outbound_queued_max_bytes", "The largest send queue of one connection, in bytes."),
		Retained:     n("retained_messages", "Retained messages (each worker keeps a copy; the largest count)."),

		PresenceRooms:   n("presence_rooms", "Presence rooms with members or lobby watchers."),
		PresenceMembers: n("presence_members", "Presence members across rooms."),
		LobbyWatches:    n("lobby_watches", "Lobby watches across rooms."),
		StoreMessages:   n("store_messages", "Messages held by the message store."),

		BrokerUp:           n("broker_up", "1 while the fan-out broker between nodes is connected (always 1 for local).", "backend"),
		BrokerDropped:      n("broker_dropped_total", "Messages between nodes dropped: in, from other nodes while the workers were behind; out, those the backend could not send.", "direction"),
		BrokerMessages:     n("broker_messages_total", "Messages between nodes: out, sent to the bus; in, received from it.", "direction"),
		BrokerDiscarded:    n("broker_discarded_total", "Messages from the bus discarded: duplicate copies, malformed.", "kind"),
		BrokerReconnects:   n("broker_reconnects_total", "Reconnections of the broker backend to its bus."),
		BrokerState:        n("broker_state_total", "Shared-state operations between nodes (presence, connection counts) by kind: write, dropped, error, malformed, purged, rejoin.", "kind"),
		BrokerStateFailing: n("broker_state_failing", "1 while this node's writes or watch of the shared state between nodes (presence, connection counts, liveness) fail (/ready: cluster_state)."),
		BrokerRetained:     n("broker_retained_total", "This node's retained publishes made before it followed the retained stream (JetStream slow or down at start), by kind: recaptured (stored late, never over a newer one), unkept (could not be stored: other nodes started later miss them).", "kind"),
		BrokerNodesDown:    n("broker_nodes_down_total", "Other nodes judged stopped: their members left and their connections stopped counting."),

		Webhooks:        n("webhooks_total", "Customer webhooks by result: sent, failed, dropped.", "result"),
		WebhookRetries:  n("webhook_retries_total", "Webhook retry attempts."),
		ControlReports:  n("control_reports_total", "Reports to the control plane by kind and result.", "kind", "result"),
		ControlDropped:  n("control_dropped_total", "Records refused by the control plane's full queues, by kind.", "kind"),
		BlockedProjects: n("control_blocked_projects", "Projects the control plane has blocked (their publishes get 42920)."),
		PendingProjects: n("control_pending_projects", "Projects with usage counts not yet reported."),

		HistoryAppended:    n("history_appended_total", "Accepted publishes queued for the durable history (STORE_BACKEND=jetstream)."),
		HistoryDropped:     n("history_dropped_total", "History entries never sent to the stream: its queue full (the stream slower than the publishes, or down), the connection refusing them, or still queued at shutdown."),
		HistoryErrors:      n("history_errors_total", "History entries sent that the stream refused or did not acknowledge within 10 s (they may still have been stored)."),
		HistoryStored:      n("history_stored_messages", "Entries in the history stream, all topics and nodes, as of its last stream info (at most about a second old)."),
		HistoryStoredBytes: n("history_stored_bytes", "Bytes of the history stream, as JetStream counts them (HISTORY_MAX_BYTES bounds it)."),

		DurableGroups:     n("durable_groups", "Durable load-balanced groups with members on this node (each fed from the history)."),
		DurableDeliveries: n("durable_deliveries_total", "Durable groups' messages this node handed to a member, by how they were settled: acked (the member's ack), taken (the connection of a member that never acks stayed open 10 s after it), returned (given back to the store: the member's connection closed first, or no member here), filtered (no member here takes its filter: settled undelivered).", "result"),
		DurablePending:    n("durable_pending", "Durable groups' messages handed to members here and not settled yet."),

		MemoryReturns:  n("memory_returns_total", "Times the heap left free by a burst of connections (1,000 or more accepted within 5 s) was given back to the operating system, once none was accepted for half a second (IDLE_MEMORY_RETURN)."),
		MemoryReturned: n("memory_returned_bytes_total", "Bytes those returns gave back to the operating system."),
	}
}

func (d *Descs) All() []*prometheus.Desc {
	return []*prometheus.Desc{
		d.BuildInfo, d.Ready,
		d.Connections, d.Authenticated, d.Accepted, d.Closed, d.Handshakes,
		d.SlowConsumers, d.InputOverflows, d.InputPauses, d.ReceivedBytes,
		d.AuthResults, d.AuthDuration, d.BreakerOpen, d.TokenCache,
		d.Reloads, d.Tokens, d.TokenFileFailing,
		d.MessagesIn, d.MessageBytesIn, d.Publications, d.Deliveries, d.DeliveredBytes,
		d.PublishRefused, d.SubscribeRefused, d.Subscriptions, d.Groups, d.Topics,
		d.ResumeParked, d.ResumeReplays, d.ResumeRedelivered, d.ResumeSaved, d.ResumeTakenOver,
		d.MQTTSessionsKept, d.MQTTWills, d.MQTTTakeovers, d.MQTTSessionDropped,
		d.ConnectionsRefused, d.ProxyHeaderErrors, d.TLSHandshakes, d.TLSReloads, d.TLSExpiry,
		d.Inbox, d.InboxPubs, d.WorkerBusy, d.Busy, d.Unresponsive, d.Queued, d.QueuedMax,
		d.Retained, d.PresenceRooms, d.PresenceMembers, d.LobbyWatches, d.StoreMessages,
		d.BrokerUp, d.BrokerDropped, d.BrokerMessages, d.BrokerDiscarded, d.BrokerReconnects,
		d.BrokerState, d.BrokerStateFailing, d.BrokerNodesDown, d.BrokerRetained,
		d.Webhooks, d.WebhookRetries, d.ControlReports, d.ControlDropped, d.BlockedProjects, d.PendingProjects,
		d.HistoryAppended, d.HistoryDropped, d.HistoryErrors, d.HistoryStored, d.HistoryStoredBytes,
		d.DurableGroups, d.DurableDeliveries, d.DurablePending,
		d.MemoryReturns, d.MemoryReturned,
	}
}
