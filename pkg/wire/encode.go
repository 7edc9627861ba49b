package wire

import "github.com/tinylib/msgp/msgp"

// Restored is one entry of restoredSubscriptions in a successful auth reply:
// a subscription actually restored, normalised (wire-reference.md §2.6,
// decisions.md OQ-53).
type Restored struct {
	// Name is the subscribed pattern.
	Name string
	// LoadBalance reports a load-balanced subscription.
	LoadBalance bool
	// LoadBalanceGroup is the group; "" omits the key.
	LoadBalanceGroup string
	// Filters are the normalised filter values; nil omits the key, an empty
	// non-nil slice encodes [].
	Filters []string
}

// AuthOK is a successful auth reply (wire-reference.md §2.3).
type AuthOK struct {
	// ActorTokenID, ProjectID and ActorType identify the token; ProjectID is
	// "" for a token without a project (decisions.md OQ-35).
	ActorTokenID, ProjectID, ActorType string
	// ProtocolVersion is the negotiated version, always sent (§2.7).
	ProtocolVersion int
	// Restored lists the restored subscriptions; nil encodes [] (§2.6).
	Restored []Restored
}

// AppendAuthOK appends {type:"auth", success:true, actorTokenId, projectId,
// actorType, protocolVersion, restoredSubscriptions:[{name, loadBalance,
// loadBalanceGroup?, filters?}, ...]} (wire-reference.md §2.3, §2.6;
// decisions.md OQ-53).
func AppendAuthOK(b []byte, a *AuthOK) []byte {
	b = msgp.AppendMapHeader(b, 7)
	b = appendType(b, "auth")
	b = msgp.AppendString(b, "success")
	b = msgp.AppendBool(b, true)
	b = appendStr(b, "actorTokenId", a.ActorTokenID)
	b = appendStr(b, "projectId", a.ProjectID)
	b = appendStr(b, "actorType", a.ActorType)
	b = msgp.AppendString(b, "protocolVersion")
	b = appendInt(b, int64(a.ProtocolVersion))
	b = msgp.AppendString(b, "restoredSubscriptions")
	b = msgp.AppendArrayHeader(b, uint32(len(a.Restored)))
	for i := range a.Restored {
		b = appendRestored(b, &a.Restored[i])
	}
	return b
}

// appendRestored appends one restoredSubscriptions entry.
func appendRestored(b []byte, r *Restored) []byte {
	n := uint32(2)
	if r.LoadBalanceGroup != "" {
		n++
	}
	if r.Filters != nil {
		n++
	}
	b = msgp.AppendMapHeader(b, n)
	b = appendStr(b, "name", r.Name)
	b = msgp.AppendString(b, "loadBalance")
	b = msgp.AppendBool(b, r.LoadBalance)
	if r.LoadBalanceGroup != "" {
		b = appendStr(b, "loadBalanceGroup", r.LoadBalanceGroup)
	}
	if r.Filters != nil {
		b = msgp.AppendString(b, "filters")
		b = msgp.AppendArrayHeader(b, uint32(len(r.Filters)))
		for _, f := range r.Filters {
			b = msgp.AppendString(b, f)
		}
	}
	return b
}

// AppendAuthFailed appends {type:"auth", success:false, error:reason}
// (wire-reference.md §2.4), reason being e.g. ErrAccessDenied or
// ErrAlreadyAuthenticated.
func AppendAuthFailed(b []byte, reason string) []byte {
	b = msgp.AppendMapHeader(b, 3)
	b = appendType(b, "auth")
	b = msgp.AppendString(b, "success")
	b = msgp.AppendBool(b, false)
	return appendStr(b, "error", reason)
}

// AppendReauthOK appends {type:"reauth", success:true}, the answer to an
// accepted reauth (docs/protocol.md "Auth"; @nolag/js-sdk 1.14 reads only
// success, wire-reference.md §12.5).
func AppendReauthOK(b []byte) []byte {
	b = msgp.AppendMapHeader(b, 2)
	b = appendType(b, "reauth")
	b = msgp.AppendString(b, "success")
	return msgp.AppendBool(b, true)
}

// AppendReauthFailed appends {type:"reauth", success:false, error:reason,
// code}, the answer to a refused reauth: reason is one of ErrBadRequest,
// ErrAccessDenied, ErrActorMismatch, ErrAuthenticationFailed and
// ErrConnectionFailed, code its CodeBadRequest … CodeServiceUnavailable.
func AppendReauthFailed(b []byte, reason string, code int) []byte {
	b = msgp.AppendMapHeader(b, 4)
	b = appendType(b, "reauth")
	b = msgp.AppendString(b, "success")
	b = msgp.AppendBool(b, false)
	b = appendStr(b, "error", reason)
	b = msgp.AppendString(b, "code")
	return appendInt(b, int64(code))
}

// AppendSubscribed appends {type:"subscribed", topic, loadBalance}, topic
// being the pattern as sent (wire-reference.md §3.2).
func AppendSubscribed(b []byte, topic string, loadBalance bool) []byte {
	b = msgp.AppendMapHeader(b, 3)
	b = appendType(b, "subscribed")
	b = appendStr(b, "topic", topic)
	b = msgp.AppendString(b, "loadBalance")
	return msgp.AppendBool(b, loadBalance)
}

// AppendUnsubscribed appends {type:"unsubscribed", topic} (wire-reference.md §3.2).
// topic is the client's, unchecked (an unsubscribe is answered whatever it
// names, OQ-60): it is echoed as Echo gives it.
func AppendUnsubscribed(b []byte, topic string) []byte {
	b = msgp.AppendMapHeader(b, 2)
	b = appendType(b, "unsubscribed")
	return appendStr(b, "topic", Echo(topic))
}

// AppendFiltersUpdated appends {type:"filtersUpdated", topic, filters}
// (wire-reference.md §3.1, §3.2, §6.9). raw is the client's `filters` msgpack
// (FilterSpec.Raw), copied verbatim and unnormalised when it is an array;
// when raw is nil, or not an array (e.g. nil), filters is an empty array.
// topic is the client's, unchecked: it is echoed as Echo gives it.
func AppendFiltersUpdated(b []byte, topic string, raw []byte) []byte {
	b = msgp.AppendMapHeader(b, 3)
	b = appendType(b, "filtersUpdated")
	b = appendStr(b, "topic", Echo(topic))
	b = msgp.AppendString(b, "filters")
	if msgp.NextType(raw) != msgp.ArrayType {
		return msgp.AppendArrayHeader(b, 0)
	}
	return append(b, raw...)
}

// AppendPublished appends {type:"published", topic, msgRef}, the ack of a
// publish that carried a non-empty msgRef (wire-reference.md §2.7, §3.2). The
// topic has been validated; msgRef is the client's, unchecked, and is
// echoed as Echo gives it (the SDKs' references are short ASCII, which
// comes back exactly).
func AppendPublished(b []byte, topic, msgRef string) []byte {
	b = msgp.AppendMapHeader(b, 3)
	b = appendType(b, "published")
	b = appendStr(b, "topic", topic)
	return appendStr(b, "msgRef", Echo(msgRef))
}

// appendType appends the key "type" and its value.
func appendType(b []byte, typ string) []byte {
	return appendStr(b, "type", typ)
}

// appendStr appends a str key and a str value.
func appendStr(b []byte, key, value string) []byte {
	b = msgp.AppendString(b, key)
	return msgp.AppendString(b, value)
}

// appendInt appends i in its shortest encoding, using the unsigned family for
// non-negative values as the original server does (wire-reference.md §1.6):
// 200 is uint8 (cc c8), not int16.
func appendInt(b []byte, i int64) []byte {
	if i >= 0 {
		return msgp.AppendUint64(b, uint64(i))
	}
	return msgp.AppendInt64(b, i)
}

// AppendHydration appends {type:"hydration", topic:topicName,
// pattern, data} (wire-reference.md §5.3, OQ-23): topic is the last level of the
// subscribed pattern, as the Python SDK expects, pattern the whole
// subscribed topic as sent, and data the hydration webhook's answer as one
// MessagePack value, copied verbatim.
func AppendHydration(b []byte, topicName, pattern string, data []byte) []byte {
	b = msgp.AppendMapHeader(b, 4)
	b = appendStr(b, "type", "hydration")
	b = appendStr(b, "topic", topicName)
	b = appendStr(b, "pattern", pattern)
	b = msgp.AppendString(b, "data")
	return append(b, data...)
}
