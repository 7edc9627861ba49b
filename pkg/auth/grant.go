package auth

import (
	"time"

	"github.com/NoLagApp/kraken/pkg/acl"
)

// Grant is what a backend knows about one access token, normalised so that
// every backend produces the same shape (wire-reference.md §4.2).
//
// A Grant handed out by an Authenticator is shared: callers must not modify
// it or the slices it holds.
type Grant struct {
	// ActorTokenID is the actor identity; revalidation looks the actor up by
	// it (wire-reference.md §4.9). Never empty for a successful validation.
	ActorTokenID string
	// OrganizationID keys the per-organisation connection limit (§4.11);
	// "" means no limit applies.
	OrganizationID string
	// ProjectID is echoed in the auth reply and used in load-balance group
	// names; "" when the backend has none (OQ-35).
	ProjectID string
	// ActorType is echoed in the auth reply; backends default it to "user"
	// (wire-reference.md §2.3).
	ActorType string
	// ScopeSlug enables scope injection (wire-reference.md §4.5); "" means none.
	ScopeSlug string
	// AppID and AppName are the token-level app: the app of the token as a
	// whole (wire-reference.md §4.1). Each rule carries its own app as well (OQ-39).
	AppID, AppName string
	// Rules are the ACL and topic-resolution rules in backend order
	// (wire-reference.md §4.3–§4.6).
	Rules acl.Rules
	// ActiveSubscriptions are restored on auth{reconnect:true}
	// (wire-reference.md §2.6).
	ActiveSubscriptions []Subscription
	// Lobbies are the lobbies the actor may observe, allowedLobbies in the
	// static file (wire-reference.md §4.1, OQ-19).
	Lobbies []Lobby
	// MaxConnections is the per-organisation connection limit; 0 means
	// unlimited (wire-reference.md §4.11).
	MaxConnections int
	// MaxMessageSize is the per-token message size limit in bytes; 0 means
	// the server default, MAX_MESSAGE_SIZE (OQ-7).
	MaxMessageSize int
	// RateLimit is the per-connection publish limit in publishes per second;
	// 0 means the server default, RATE_LIMIT (OQ-6).
	RateLimit int
	// ScopeID and ScopeName describe the actor's scope for webhook bodies
	// (wire-reference.md §5.3, OQ-40); "" when the backend gives none.
	ScopeID, ScopeName string
	// Apps are the actor's apps with their webhook configuration
	// (wire-reference.md §4.2, §5.3), looked up by a topic's resolved app id.
	Apps []App
	// PersistentSession and SessionExpiry are the backend's session
	// settings (persistent_session, session_expiry_seconds, wire-reference.md
	// §4.2); kept for resumable sessions.
	PersistentSession bool
	SessionExpiry     time.Duration
	// ExpiresAt is when the validated token expires (the HTTP backend's
	// auth_expires_at, a client token's JWT exp); the zero time when the
	// backend gives none, as the token file never does. Only Validate sets
	// it: a revalidation is about the actor, not a token. A connection is
	// closed with 4003 token_expired at this time, and a token already past
	// it is refused with access_denied (docs/protocol.md "Auth").
	ExpiresAt time.Time
}

// App returns the app with id, or nil.
func (g *Grant) App(id string) *App {
	for i := range g.Apps {
		if g.Apps[i].ID == id {
			return &g.Apps[i]
		}
	}
	return nil
}

// App is one app of a grant and its customer webhooks (wire-reference.md §5.3).
type App struct {
	ID, Name string
	// Hydration is called after a live subscribe (the app-level
	// hydration_webhook); Trigger after an accepted publish (the app-level
	// trigger_webhook). nil means none.
	Hydration, Trigger *Webhook
	// TopicWebhooks override Hydration and Trigger per topic name, the last
	// level of the pattern as sent (topic_webhooks).
	TopicWebhooks map[string]TopicWebhooks
}

// TopicWebhooks are the per-topic webhook overrides of an app.
type TopicWebhooks struct {
	OnSubscribe, OnPublish *Webhook
}

// Webhook is one webhook configuration: POST URL with the extra Headers.
type Webhook struct {
	URL     string
	Headers map[string]string
}

// HydrationFor returns the webhook to call after a subscribe to a topic
// named topicName (the last level of the pattern): the topic's on_subscribe
// override, else the app-level hydration webhook, else nil (§5.3).
func (a *App) HydrationFor(topicName string) *Webhook {
	if a == nil {
		return nil
	}
	if t, ok := a.TopicWebhooks[topicName]; ok && t.OnSubscribe != nil {
		return t.OnSubscribe
	}
	return a.Hydration
}

// TriggerFor returns the webhook to call after a publish to a topic named
// topicName: the topic's on_publish override, else the app-level trigger
// webhook, else nil (§5.3).
func (a *App) TriggerFor(topicName string) *Webhook {
	if a == nil {
		return nil
	}
	if t, ok := a.TopicWebhooks[topicName]; ok && t.OnPublish != nil {
		return t.OnPublish
	}
	return a.Trigger
}

// Subscription is one subscription a backend lists for restoring on
// reconnect (wire-reference.md §2.6, OQ-53).
type Subscription struct {
	// Pattern is the client pattern (the legacy key is "name").
	Pattern string
	// LoadBalance requests a shared subscription (wire-reference.md §6.8).
	LoadBalance bool
	// LoadBalanceGroup is the group name as the backend gave it; "" means
	// the actor id is used (wire-reference.md §4.7).
	LoadBalanceGroup string
	// Filters are the subscription filters, restored as-is (wire-reference.md §6.9).
	Filters []string
}

// Lobby is one lobby the actor may observe (wire-reference.md §4.1, §7.3, OQ-19).
type Lobby struct {
	// Slug is the name clients use in lobby frames.
	Slug string
	// ID is the internal lobby id.
	ID string
	// Rooms is the explicit room membership, as room slugs or room ids.
	// nil means the backend gave no list and membership is inferred from
	// the actor's rules; a non-nil empty slice is an explicit empty lobby
	// (OQ-19).
	Rooms []string
}
