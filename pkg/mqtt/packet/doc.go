// Package packet is a strict MQTT 3.1.1 packet codec for the server side of
// kraken's MQTT listener (wire-reference.md §8; decisions.md OQ-27). It
// decodes what a client may send and encodes what a server sends. It does
// no I/O and keeps no state; every result is determined by the arguments. The reference is the OASIS
// standard "MQTT Version 3.1.1" (29 October 2014); doc comments cite its
// sections (§2.2.3) and normative statements ([MQTT-3.3.2-2]).
//
// # Inbound
//
// Parse decodes one packet from the start of whatever bytes have arrived
// and reports (0, nil) when the packet is not complete yet, so a reactor
// calls it from its read callback without blocking or waiting. Len reports
// a packet's full length from its first 2 to 5 bytes. The fixed header,
// including the Remaining Length bound (at most four bytes, at most the
// caller's maxSize), is checked before anything is allocated or buffered.
//
// Accepted: CONNECT, PUBLISH, PUBACK, PUBREC, PUBREL, PUBCOMP, SUBSCRIBE,
// UNSUBSCRIBE, PINGREQ, DISCONNECT. Refused: the reserved types 0 and 15,
// the packets only a server sends (CONNACK, SUBACK, UNSUBACK, PINGRESP),
// and every packet that breaks a rule of the spec: reserved flags, QoS 3,
// DUP with QoS 0, ill-formed UTF-8 or U+0000 in a string, an empty topic, a
// wildcard in a topic name, a misplaced wildcard in a filter, Packet
// Identifier 0, SUBSCRIBE or UNSUBSCRIBE without filters, a reserved
// requested-QoS bit, a wrong Remaining Length for acknowledgements, PINGREQ
// and DISCONNECT, CONNECT flag violations, a truncated field, and bytes
// after the last field. Each refusal is an *Error sentinel; its ReturnCode
// says whether to send CONNACK 1 or 2 before closing, or to close at once.
// Rules that need the session, such as a second CONNECT, are the
// listener's; ErrNotConnect and ErrSecondConnect are here for it.
//
// Accepted leniently, as 3.1.1 allows: a Remaining Length not in its
// shortest form (only MQTT 5 forbids that), the discouraged code points of
// §1.5.3 (control characters, non-characters), client identifiers of any
// length and characters (§3.1.3.1 lets the server allow more than 23
// alphanumerics), will messages and passwords of any bytes.
//
// # Outbound
//
// The Append functions append CONNACK, PUBLISH, PUBACK, PUBREC, PUBCOMP,
// SUBACK, UNSUBACK and PINGRESP to a caller's buffer and allocate nothing
// when it has room. AppendPublishHeader builds the part of a PUBLISH shared
// by every subscriber of one message (first byte, Remaining Length, topic)
// once; each QoS 1 delivery then adds only its two-byte Packet Identifier
// before the shared payload, and a QoS 0 delivery is the same bytes for
// every subscriber.
//
// # Ownership and concurrency
//
// Packet.Topic and Packet.Payload alias the buffer given to Parse (zero
// copy on the PUBLISH path): they are valid until that buffer is released
// or reused, and the caller copies what it keeps. All other fields are
// copies. A Packet is reused across calls; Parse overwrites it. The
// functions are safe for concurrent use on distinct arguments.
//
// # Why our own codec
//
// A library's packet package would do only if it were this strict.
// None of the well-kept ones is:
//
//   - github.com/eclipse/paho.mqtt.golang/packets reads from a blocking
//     io.Reader and allocates the declared Remaining Length before the
//     bytes arrive (its issue 754; a limit came later, off by default); it
//     accepts trailing bytes after the last field (issues 760, 776, 786,
//     open) and does not check topics as UTF-8. It is a client library.
//   - github.com/eclipse/paho.golang/packets is MQTT 5 only.
//   - github.com/mochi-mqtt/server/v2/packets decodes from an
//     io.ByteReader on a goroutine per connection, treats 3.1.1 as a mode
//     of MQTT 5, ignores bytes after a CONNECT's last field and allocates
//     in its encoders (bytes.Buffer, per-field slices).
//
// A 3.1.1 codec is small (the spec is about 80 pages), and ours is fuzzed
// (FuzzParse) and checked rule by rule.
//
// # Example
//
// A read callback on a netpoll connection, in outline:
//
//	for {
//		buf, _ := r.Peek(r.Len())
//		n, err := packet.Parse(buf, maxSize, &p)
//		if err != nil {
//			var perr *packet.Error
//			if errors.As(err, &perr) && perr.ReturnCode != packet.Accepted {
//				out = packet.AppendConnack(out, false, perr.ReturnCode)
//			}
//			return closeAfter(out)
//		}
//		if n == 0 {
//			return nil // wait for more bytes
//		}
//		handle(&p) // copies p.Topic and p.Payload if it keeps them
//		r.Skip(n)
//	}
package packet
