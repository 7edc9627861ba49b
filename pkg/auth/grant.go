package auth

import "github.com/NoLagApp/kraken/pkg/acl"

// Grant is what a backend knows about one access token, normalised so that
// every backend produces the same shape (protocol.md §4.2).
//
// A Grant handed out by an Authenticator is shared: callers must not modify
// it or the slices it holds.
type Grant struct {
	// ActorTokenID is the actor identity; revalidation looks the actor up by
	// it (protocol.md §4.9). Never empty for a successful validation.
	ActorTokenID string
	// OrganizationID keys the per-organisation connection limit (§4.11);
	// "" means no limit applies.
	OrganizationID string
	// ProjectID is echoed in the auth reply and used in load-balance group
	// names; "" when the backend has none (OQ-35).
	ProjectID string
	// ActorType is echoed in the auth reply; backends default it to "user"
	// (protocol.md §2.3).
	ActorType string
	// ScopeSlug enables scope injection (protocol.md §4.5); "" means none.
	ScopeSlug string
	// AppID and AppName are the token-level app: the app of the token as a
	// whole (protocol.md §4.1). Each rule carries its own app as well (OQ-39).
	AppID, AppName string
	// Rules are the ACL and topic-resolution rules in backend order
	// (protocol.md §4.3–§4.6).
	Rules acl.Rules
	// ActiveSubscriptions are restored on auth{reconnect:true}
	// (protocol.md §2.6).
	ActiveSubscriptions []Subscription
	// Lobbies are the lobbies the actor may observe, allowedLobbies in the
	// static file (protocol.md §4.1, OQ-19).
	Lobbies []Lobby
	// MaxConnections is the per-organisation connection limit; 0 means
	// unlimited (protocol.md §4.11).
	MaxConnections int
	// MaxMessageSize is the per-token message size limit in bytes; 0 means
	// the server default, MAX_MESSAGE_SIZE (OQ-7).
	MaxMessageSize int
	// RateLimit is the per-connection publish limit in publishes per second;
	// 0 means the server default, RATE_LIMIT (OQ-6).
	RateLimit int
}

// Subscription is one subscription a backend lists for restoring on
// reconnect (protocol.md §2.6, OQ-53).
type Subscription struct {
	// Pattern is the client pattern (the legacy key is "name").
	Pattern string
	// LoadBalance requests a shared subscription (protocol.md §6.8).
	LoadBalance bool
	// LoadBalanceGroup is the group name as the backend gave it; "" means
	// the actor id is used (protocol.md §4.7).
	LoadBalanceGroup string
	// Filters are the subscription filters, restored as-is (protocol.md §6.9).
	Filters []string
}

// Lobby is one lobby the actor may observe (protocol.md §4.1, §7.3, OQ-19).
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
