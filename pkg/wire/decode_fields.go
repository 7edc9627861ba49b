package wire

import (
	"math"

	"github.com/tinylib/msgp/msgp"
)

// cmdKind is a known message type (wire-reference.md §3.1); kindUnknown covers an
// absent or unknown `type`.
type cmdKind uint8

const (
	kindUnknown cmdKind = iota
	kindAuth
	kindSubscribe
	kindUnsubscribe
	kindSetFilters
	kindPublish
	kindPresence
	kindGetPresence
	kindLobbySubscribe
	kindLobbyUnsubscribe
	kindGetLobbyPresence
	kindAck
	kindBatchAck
	kindReauth
)

// lookupType returns the type string and its kind. Known types return a
// constant string, so decoding them does not allocate.
func lookupType(s []byte) (string, cmdKind) {
	switch string(s) {
	case "auth":
		return "auth", kindAuth
	case "subscribe":
		return "subscribe", kindSubscribe
	case "unsubscribe":
		return "unsubscribe", kindUnsubscribe
	case "setFilters":
		return "setFilters", kindSetFilters
	case "publish":
		return "publish", kindPublish
	case "presence":
		return "presence", kindPresence
	case "getPresence":
		return "getPresence", kindGetPresence
	case "lobbySubscribe":
		return "lobbySubscribe", kindLobbySubscribe
	case "lobbyUnsubscribe":
		return "lobbyUnsubscribe", kindLobbyUnsubscribe
	case "getLobbyPresence":
		return "getLobbyPresence", kindGetLobbyPresence
	case "ack":
		return "ack", kindAck
	case "batchAck":
		return "batchAck", kindBatchAck
	case "reauth":
		return "reauth", kindReauth
	}
	return string(s), kindUnknown
}

// isLobby reports whether k is one of the lobby message types.
func (k cmdKind) isLobby() bool {
	return k == kindLobbySubscribe || k == kindLobbyUnsubscribe || k == kindGetLobbyPresence
}

// usesTopic reports whether k carries a required `topic` (wire-reference.md §3.1).
func (k cmdKind) usesTopic() bool {
	return k == kindSubscribe || k == kindUnsubscribe || k == kindSetFilters || k == kindPublish
}

// apply interprets the collected raw fields into c. It returns a
// *DecodeError for an ill-typed field that belongs to the message type.
func (f *rawFields) apply(c *Command, k cmdKind) error {
	var err error
	if c.Topic, c.HasTopic, err = optString(c.Type, f.topic, "topic", k.usesTopic()); err != nil {
		return err
	}
	if c.RoomID, c.HasRoomID, err = optString(c.Type, f.roomID, "roomId", k == kindPresence || k == kindGetPresence); err != nil {
		return err
	}
	if c.LobbyID, c.HasLobbyID, err = optString(c.Type, f.lobbyID, "lobbyId", k.isLobby()); err != nil {
		return err
	}
	if c.MsgID, c.HasMsgID, err = optString(c.Type, f.msgID, "msgId", k == kindAck); err != nil {
		return err
	}
	if err = decodeMsgIDs(c, f.msgIDs, k == kindBatchAck); err != nil {
		return err
	}
	if c.ProjectID, _, err = optString(c.Type, f.projectID, "projectId", k == kindAuth); err != nil {
		return err
	}
	if c.LoadBalanceGroup, c.HasLoadBalanceGroup, err = optString(c.Type, f.loadBalanceGroup, "loadBalanceGroup", k == kindSubscribe); err != nil {
		return err
	}

	if f.token != nil {
		c.HasToken = true
		if s, _, ok := readStr(f.token); ok {
			c.Token, c.TokenIsString = string(s), true
		}
	}
	if f.data != nil {
		c.Data, c.HasData = f.data, true
	}
	c.Reconnect = isTrue(f.reconnect)
	if s, _, ok := readStr(f.clientID); ok && k == kindAuth {
		c.ClientID = string(s) // sanitised by the session (OQ-51); a non-string is ignored
	}
	c.Retain = isTrue(f.retain)
	c.LoadBalance = isTrue(f.loadBalance)
	c.Echo = !isFalse(f.echo)
	if v, ok := readInt(f.qos); ok && v >= 0 && v <= 2 {
		c.QoS = int(v)
	}
	if v, ok := readInt(f.protocolVersion); ok && v >= 1 {
		c.ProtocolVersion = int(min(v, math.MaxInt))
	}
	c.MsgRef = nonEmptyString(f.msgRef)
	c.Filter = nonEmptyString(f.filter)

	switch k {
	case kindSubscribe, kindSetFilters:
		decodeFilterSpec(&c.Filters, f.filters)
	case kindPublish:
		decodePubFilters(c, f.filters)
	}
	return nil
}

// optString decodes a field that must be a string when present and not nil.
// An ill-typed value is an error when strict, else ignored.
func optString(typ string, v []byte, field string, strict bool) (string, bool, error) {
	if v == nil || msgp.IsNil(v) {
		return "", false, nil
	}
	s, _, ok := readStr(v)
	if !ok {
		if strict {
			return "", false, &DecodeError{Type: typ, Reason: typ + ": " + field + " must be a string"}
		}
		return "", false, nil
	}
	return string(s), true, nil
}

// nonEmptyString returns the string at v, or "" when v is absent or not a
// string.
func nonEmptyString(v []byte) string {
	s, _, ok := readStr(v)
	if !ok {
		return ""
	}
	return string(s)
}

// isTrue reports whether v is the msgpack literal true.
func isTrue(v []byte) bool {
	t, _, err := msgp.ReadBoolBytes(v)
	return err == nil && t
}

// isFalse reports whether v is the msgpack literal false.
func isFalse(v []byte) bool {
	t, _, err := msgp.ReadBoolBytes(v)
	return err == nil && !t
}

// readInt reads a msgpack integer of any width. Unsigned values above the
// int64 range saturate at math.MaxInt64. Floats are not integers (§2.1).
func readInt(v []byte) (int64, bool) {
	switch msgp.NextType(v) {
	case msgp.IntType:
		i, _, err := msgp.ReadInt64Bytes(v)
		return i, err == nil
	case msgp.UintType:
		u, _, err := msgp.ReadUint64Bytes(v)
		return int64(min(u, math.MaxInt64)), err == nil
	}
	return 0, false
}

// decodeMsgIDs fills MsgIDs from an array of strings; nil counts as absent.
// Anything else is an error when strict, else ignored.
func decodeMsgIDs(c *Command, v []byte, strict bool) error {
	if v == nil || msgp.IsNil(v) {
		return nil
	}
	if readStrings(&c.MsgIDs, v) {
		c.HasMsgIDs = true
		return nil
	}
	c.MsgIDs = c.MsgIDs[:0]
	if strict {
		return &DecodeError{Type: c.Type, Reason: c.Type + ": msgIds must be an array of strings"}
	}
	return nil
}

// readStrings appends the elements of the array v to dst and reports
// whether v is an array whose elements are all strings.
func readStrings(dst *[]string, v []byte) bool {
	n, rest, err := msgp.ReadArrayHeaderBytes(v)
	if err != nil {
		return false
	}
	for range n {
		s, after, ok := readStr(rest)
		if !ok {
			return false
		}
		*dst = append(*dst, string(s))
		rest = after
	}
	return true
}

// decodeFilterSpec fills s from the raw subscribe or setFilters `filters`
// (wire-reference.md §6.9, decisions.md OQ-41).
func decodeFilterSpec(s *FilterSpec, v []byte) {
	if v == nil {
		return
	}
	s.Raw = v
	switch msgp.NextType(v) {
	case msgp.NilType:
		s.Kind = FiltersNull
		return
	case msgp.ArrayType:
		s.Kind = FiltersArray
	default:
		s.Kind = FiltersInvalid
		return
	}
	n, rest, err := msgp.ReadArrayHeaderBytes(v)
	if err != nil {
		return
	}
	for range min(n, maxFilters+1) {
		rest = decodeFilterItem(s.nextItem(), rest)
	}
}

// nextItem appends a cleared item to s.Items, reusing capacity left by
// Reset, and returns it.
func (s *FilterSpec) nextItem() *FilterItem {
	i := len(s.Items)
	if i < cap(s.Items) {
		s.Items = s.Items[:i+1]
		s.Items[i] = FilterItem{Values: s.Items[i].Values[:0]}
	} else {
		s.Items = append(s.Items, FilterItem{})
	}
	return &s.Items[i]
}

// decodeFilterItem decodes one element of a `filters` array into it and
// returns the bytes after the element.
func decodeFilterItem(it *FilterItem, b []byte) []byte {
	if s, rest, ok := readStr(b); ok {
		it.Values = append(it.Values, string(s))
		it.Valid = true
		return rest
	}
	if msgp.NextType(b) != msgp.ArrayType {
		return skip(b)
	}
	n, rest, err := msgp.ReadArrayHeaderBytes(b)
	if err != nil {
		return skip(b)
	}
	it.Group, it.Valid = true, true
	for range n {
		s, after, ok := readStr(rest)
		if !ok {
			it.Valid = false
			it.Values = it.Values[:0]
			after = skip(rest)
		} else if it.Valid {
			it.Values = append(it.Values, string(s))
		}
		rest = after
	}
	return rest
}

// decodePubFilters fills PubFilters from a publish `filters` array; any other
// value is ignored (wire-reference.md §6.9). Non-string elements become "" so that
// PublishFilter rejects them (decisions.md OQ-5).
func decodePubFilters(c *Command, v []byte) {
	if msgp.NextType(v) != msgp.ArrayType {
		return
	}
	n, rest, err := msgp.ReadArrayHeaderBytes(v)
	if err != nil {
		return
	}
	c.HasPubFilters = true
	for range min(n, maxFilters+1) {
		s, after, ok := readStr(rest)
		if !ok {
			after = skip(rest)
		}
		c.PubFilters = append(c.PubFilters, string(s))
		rest = after
	}
}
