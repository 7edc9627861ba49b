package wire

// Command is one decoded client-to-server message (wire-reference.md §3.1, §2.1).
//
// String fields are copies and safe to retain. Data and Filters.Raw alias the
// buffer passed to Decode (or the scratch returned by DecodeJSON) and are
// valid only as long as that buffer is. Fields a message does not carry keep
// the defaults Decode sets: Echo true, QoS 1, ProtocolVersion 1, everything
// else zero.
type Command struct {
	// Type is the `type` string; "" when the key is absent (wire-reference.md §3.1).
	Type string

	// Token is the auth or reauth `token` when it is a string. HasToken
	// reports that the key is present at all, whatever its type (nil
	// included); TokenIsString that it is a string. A non-string token is
	// looked up, finds nothing and gets access_denied (wire-reference.md §2.1).
	Token         string
	HasToken      bool
	TokenIsString bool
	// Reconnect is true only for a literal true (wire-reference.md §2.1, §2.6).
	Reconnect bool
	// ClientID is the auth `clientId` when it is a string, as sent: the
	// client's name for a resumable session (decisions.md OQ-51).
	ClientID string
	// ProjectID is the auth `projectId`, used for logging only (§2.1).
	ProjectID string
	// ProtocolVersion is the auth `protocolVersion` when it is an integer
	// >= 1 (capped at the largest int), else 1. The caller negotiates
	// min(ProtocolVersion, 2) (wire-reference.md §2.1, §2.7).
	ProtocolVersion int

	// Topic is the `topic` pattern exactly as sent; HasTopic reports that it
	// was present and not nil.
	Topic    string
	HasTopic bool
	// Data is the raw msgpack of `data` exactly as sent: one well-formed
	// value nesting at most MaxDataDepth levels, never decoded or re-encoded
	// (decisions.md D-4, OQ-1).
	// A nil `data` gives HasData true and Data = {0xc0}. An absent `data`
	// leaves Data nil and HasData false; publish treats it as nil (OQ-14).
	Data    []byte
	HasData bool
	// Echo is false only for a literal false (wire-reference.md §6.2).
	Echo bool
	// QoS is `qos` when it is the integer 0, 1 or 2, else 1 (§6.3).
	QoS int
	// Retain is true only for a literal true (decisions.md OQ-17).
	Retain bool
	// Filter is the publish `filter` when it is a non-empty string (§6.9).
	Filter string
	// PubFilters is the publish `filters` array; HasPubFilters reports that
	// it was present and an array. Non-string elements are recorded as "" so
	// that PublishFilter rejects them (OQ-5). An array longer than 100
	// elements is recorded up to its 101st element. A publish `filters` that
	// is not an array is ignored (wire-reference.md §6.9).
	PubFilters    []string
	HasPubFilters bool
	// Filters is the subscribe or setFilters `filters` (wire-reference.md §6.9).
	Filters FilterSpec
	// MsgRef is the publish `msgRef` when it is a non-empty string, else ""
	// (wire-reference.md §3.4).
	MsgRef string
	// LoadBalance is true only for a literal true (wire-reference.md §3.1).
	LoadBalance bool
	// LoadBalanceGroup is the subscribe `loadBalanceGroup`;
	// HasLoadBalanceGroup is false when it is absent or nil
	// (decisions.md OQ-35).
	LoadBalanceGroup    string
	HasLoadBalanceGroup bool
	// RoomID is the presence or getPresence `roomId` slug (wire-reference.md §7).
	RoomID    string
	HasRoomID bool
	// LobbyID is the lobby slug of lobbySubscribe, lobbyUnsubscribe and
	// getLobbyPresence (wire-reference.md §7.4).
	LobbyID    string
	HasLobbyID bool
	// MsgID is the ack `msgId` (wire-reference.md §6.4).
	MsgID    string
	HasMsgID bool
	// MsgIDs is the batchAck `msgIds` (wire-reference.md §6.4).
	MsgIDs    []string
	HasMsgIDs bool
}

// Reset clears c to the zero Command for reuse, keeping the capacity of
// PubFilters, MsgIDs and Filters.Items (and of the Values of those items).
// Decode calls it before decoding, so those slices are overwritten by the
// next Decode into c: copy them to keep them longer (the strings in them
// are copies and may be kept).
func (c *Command) Reset() {
	*c = Command{
		PubFilters: c.PubFilters[:0],
		MsgIDs:     c.MsgIDs[:0],
		Filters:    FilterSpec{Items: c.Filters.Items[:0]},
	}
}

// resetWithDefaults resets c and sets the defaults of an absent field:
// Echo true, QoS 1, ProtocolVersion 1 (wire-reference.md §2.1, §3.1).
func (c *Command) resetWithDefaults() {
	c.Reset()
	c.Echo, c.QoS, c.ProtocolVersion = true, 1, 1
}
