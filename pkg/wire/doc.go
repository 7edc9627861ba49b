// Package wire is kraken's MessagePack wire protocol: it decodes the messages
// clients send and encodes the frames the server sends back. It does no I/O
// and holds no state; everything it returns is determined by its arguments.
// The reference is wire-reference.md (§1.3, §1.6, §2, §3, §6.9, §12.4) together with
// the decisions in decisions.md, which win where the two differ.
//
// # Inbound
//
// A client sends one MessagePack map per binary WebSocket frame
// (wire-reference.md §1.3). Decode turns a non-empty frame into a Command:
//
//   - The frame must be exactly one well-formed value. Validate checks this
//     without recursion and without ever allocating in proportion to a
//     declared length, so hostile frames fail fast. Nesting has two bounds:
//     MaxDataDepth for the value of the top-level `data` key, counted from
//     that value, and MaxDepth for the rest of the frame (the envelope).
//     Failures are *DecodeError values whose Reason is meant for the
//     `detail` of a bad_request error frame (decisions.md OQ-46).
//   - A well-formed value that is not a map yields ErrNotMap (§1.3).
//   - Keys may be str or bin, as may any string field (§1.6). Unknown keys
//     and unknown types are not errors (§2.1, §12.4, OQ-46): the caller
//     ignores what it does not know.
//   - `data` is kept as the publisher's raw msgpack bytes and never decoded
//     or re-encoded (D-4, OQ-1); ext values pass through.
//   - Defaults and the silent fallbacks of ill-typed optional fields follow
//     §3.1 and §12.4 (qos 1, echo true, retain and loadBalance only for a
//     literal true); see Command.
//
// DecodeJSON does the same for a JSON text frame (§1.3, OQ-45), by
// converting it to msgpack first, with the same two nesting bounds; invalid
// JSON is a *DecodeError, never a crash.
//
// FilterSpec.Normalize and PublishFilter validate and normalise filters
// (§6.9, OQ-4, OQ-5, OQ-41).
//
// # Outbound
//
// The Append functions each append exactly one msgpack map to a byte slice
// and return it (§1.4). Every string they write, keys included, is a msgpack
// str and never bin, since the SDKs compare them with native strings (§1.6).
// Integers take their shortest encoding, keys come in the documented order,
// and optional keys are omitted when zero. Given a buffer with enough spare
// capacity they do not allocate, so the fan-out path can encode a Message
// into a pooled buffer.
//
// # Ownership and concurrency
//
// Strings in a Command are copies and may be retained; Command.Data and
// Command.Filters.Raw alias the decoded buffer. A Command is reused with
// Reset (Decode calls it). Functions in this package are safe for
// concurrent use on distinct arguments.
package wire
