package packet

// Len reports the length in bytes of the packet at the start of buf, fixed
// header included, as soon as its fixed header is complete: it needs at
// most 5 bytes. It returns (0, nil) when buf holds less than a whole fixed
// header; it never reads past the fixed header, so a reactor can call it on
// whatever has arrived and wait, without buffering, until n bytes are there.
//
// The checks of the fixed header run here, in this order, and Parse repeats
// them: ErrReservedType, ErrServerPacket, ErrQoS3, ErrDupQoS0,
// ErrReservedFlags (from the first byte alone), then ErrRemainingLength,
// ErrAckLength, ErrNonZeroLength and ErrTooLarge. maxSize bounds n; a
// maxSize <= 0 or above MaxPacketSize means MaxPacketSize.
func Len(buf []byte, maxSize int) (n int, err error) {
	hdr, rem, err := header(buf, maxSize)
	if hdr == 0 {
		return 0, err
	}
	return hdr + rem, nil
}

// Parse decodes the packet at the start of buf into p and returns its
// length n. It never blocks and never waits: it returns (0, nil), leaving p
// untouched, when buf does not yet hold the whole packet, and the caller
// calls it again once more bytes have arrived, with buf starting at the
// same packet. On success 2 <= n <= len(buf) and the next packet starts at
// buf[n:]. On failure n is 0, err is one of the *Error sentinels, whose
// ReturnCode tells what to answer before closing the connection, and p's
// contents are unspecified.
//
// Nothing is allocated before the whole packet is in buf, nor in
// proportion to a declared length: the fixed header (see Len), including
// maxSize, is checked first. Decoding a PUBLISH, an acknowledgement, a
// PINGREQ or a DISCONNECT allocates nothing; a CONNECT allocates its copied
// strings, a SUBSCRIBE or UNSUBSCRIBE its filter strings and any growth of
// p.Filters. See Packet for what aliases buf.
//
// Fields are decoded and checked in wire order, so a packet with several
// faults reports the first; within a UTF-8 string the checks are
// ErrTruncated, ErrInvalidUTF8, ErrNullChar, then the topic rules. The one
// exception is ErrIdentifierRejected, which needs a CONNECT otherwise
// well-formed [MQTT-3.1.4-1] and is checked last. p must not be nil.
func Parse(buf []byte, maxSize int, p *Packet) (n int, err error) {
	hdr, rem, err := header(buf, maxSize)
	if hdr == 0 {
		return 0, err
	}
	n = hdr + rem
	if len(buf) < n {
		return 0, nil
	}
	first := buf[0]
	*p = Packet{Type: Type(first >> 4), Filters: p.Filters[:0]}
	body := buf[hdr:n:n]
	switch p.Type {
	case TypeConnect:
		err = parseConnect(body, &p.Connect)
	case TypePublish:
		err = parsePublish(first, body, p)
	case TypePuback, TypePubrec, TypePubrel, TypePubcomp:
		// header checked that the body is exactly two bytes.
		p.PacketID, err = packetID(body)
	case TypeSubscribe:
		err = parseFilters(body, p, true)
	case TypeUnsubscribe:
		err = parseFilters(body, p, false)
	case TypePingreq, TypeDisconnect:
		// header checked that the body is empty.
	}
	if err != nil {
		return 0, err
	}
	return n, nil
}

// header checks the fixed header at the start of buf and returns its length
// hdr (2 to 5) and the Remaining Length rem. hdr is 0 when buf ends inside
// the fixed header or on error.
func header(buf []byte, maxSize int) (hdr, rem int, err error) {
	if len(buf) == 0 {
		return 0, 0, nil
	}
	if err := checkFirstByte(buf[0]); err != nil {
		return 0, 0, err
	}
	// §2.2.3: seven bits per byte, least significant first, at most four
	// bytes; a fourth byte with its continuation bit set is malformed, and
	// is refused without waiting for a fifth.
	for i := 1; ; i++ {
		if i >= len(buf) {
			return 0, 0, nil
		}
		b := buf[i]
		rem |= int(b&0x7f) << (7 * (i - 1))
		if b&0x80 == 0 {
			hdr = i + 1
			break
		}
		if i == 4 {
			return 0, 0, ErrRemainingLength
		}
	}
	switch Type(buf[0] >> 4) {
	case TypePuback, TypePubrec, TypePubrel, TypePubcomp:
		if rem != 2 {
			return 0, 0, ErrAckLength
		}
	case TypePingreq, TypeDisconnect:
		if rem != 0 {
			return 0, 0, ErrNonZeroLength
		}
	}
	if maxSize <= 0 || maxSize > MaxPacketSize {
		maxSize = MaxPacketSize
	}
	if hdr+rem > maxSize {
		return 0, 0, ErrTooLarge
	}
	return hdr, rem, nil
}

// checkFirstByte checks the packet type and the flags of Table 2.2
// (§2.2.1, §2.2.2, §3.3.1).
func checkFirstByte(b byte) error {
	flags := b & 0x0f
	switch Type(b >> 4) {
	case 0, 15:
		return ErrReservedType
	case TypeConnack, TypeSuback, TypeUnsuback, TypePingresp:
		return ErrServerPacket
	case TypePublish:
		qos := flags >> 1 & 3
		if qos == 3 {
			return ErrQoS3
		}
		if qos == 0 && flags&0x08 != 0 {
			return ErrDupQoS0
		}
		return nil
	case TypePubrel, TypeSubscribe, TypeUnsubscribe:
		if flags != 0x02 {
			return ErrReservedFlags
		}
		return nil
	default:
		if flags != 0 {
			return ErrReservedFlags
		}
		return nil
	}
}

// parsePublish decodes a PUBLISH body (§3.3.2, §3.3.3); first is the first
// byte, already checked.
func parsePublish(first byte, body []byte, p *Packet) error {
	p.QoS = first >> 1 & 3
	p.Dup = first&0x08 != 0
	p.Retain = first&0x01 != 0
	r := reader{b: body}
	topic, err := r.str()
	if err != nil {
		return err
	}
	if err := checkTopicName(topic); err != nil {
		return err
	}
	if p.QoS > 0 {
		if p.PacketID, err = r.packetID(); err != nil {
			return err
		}
	}
	p.Topic = topic
	p.Payload = r.rest()
	return nil
}

// parseFilters decodes a SUBSCRIBE body (withQoS) or an UNSUBSCRIBE body
// (§3.8.2, §3.8.3, §3.10.2, §3.10.3).
func parseFilters(body []byte, p *Packet, withQoS bool) error {
	r := reader{b: body}
	id, err := r.packetID()
	if err != nil {
		return err
	}
	p.PacketID = id
	for r.more() {
		f, err := r.str()
		if err != nil {
			return err
		}
		if err := checkTopicFilter(f); err != nil {
			return err
		}
		var qos byte
		if withQoS {
			if qos, err = r.byte(); err != nil {
				return err
			}
			// Six reserved bits and the value 3 [MQTT-3.8.3-4].
			if qos > 2 {
				return ErrSubscribeQoS
			}
		}
		p.Filters = append(p.Filters, Filter{Topic: string(f), QoS: qos})
	}
	if len(p.Filters) == 0 {
		if withQoS {
			return ErrEmptySubscribe
		}
		return ErrEmptyUnsubscribe
	}
	return nil
}

// packetID decodes a two-byte Packet Identifier that must not be 0.
func packetID(b []byte) (uint16, error) {
	r := reader{b: b}
	return r.packetID()
}
