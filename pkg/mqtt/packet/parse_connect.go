package packet

// Connect flag bits (MQTT 3.1.1 §3.1.2.3, Figure 3.4).
const (
	flagReserved     = 0x01
	flagCleanSession = 0x02
	flagWill         = 0x04
	flagWillQoS      = 0x18 // two bits, shifted by 3
	flagWillRetain   = 0x20
	flagPassword     = 0x40
	flagUsername     = 0x80
)

// parseConnect decodes a CONNECT body (§3.1.2, §3.1.3) in wire order: the
// protocol name and level first, so that a client of another version gets
// CONNACK 1 whatever follows [MQTT-3.1.2-2]; then the flags, the keep
// alive, the payload fields the flags announce [MQTT-3.1.3-1], no byte
// after them; and last the client identifier rule, which needs an
// otherwise valid packet before CONNACK 2 may be sent [MQTT-3.1.4-1].
func parseConnect(body []byte, c *Connect) error {
	r := reader{b: body}
	name, err := r.str()
	if err != nil {
		return err
	}
	level, err := r.byte()
	if err != nil {
		return err
	}
	if string(name) != "MQTT" {
		return ErrProtocolName
	}
	if level != 4 {
		return ErrProtocolLevel
	}
	flags, err := r.byte()
	if err != nil {
		return err
	}
	if err := checkConnectFlags(flags); err != nil {
		return err
	}
	c.CleanSession = flags&flagCleanSession != 0
	c.Will = flags&flagWill != 0
	c.WillQoS = flags & flagWillQoS >> 3
	c.WillRetain = flags&flagWillRetain != 0
	c.HasUsername = flags&flagUsername != 0
	c.HasPassword = flags&flagPassword != 0
	if c.KeepAlive, err = r.uint16(); err != nil {
		return err
	}
	id, err := r.str()
	if err != nil {
		return err
	}
	var willTopic, willMessage, username, password []byte
	if c.Will {
		if willTopic, err = r.str(); err != nil {
			return err
		}
		if err := checkTopicName(willTopic); err != nil {
			return err
		}
		if willMessage, err = r.binary(); err != nil {
			return err
		}
	}
	if c.HasUsername {
		if username, err = r.str(); err != nil {
			return err
		}
	}
	if c.HasPassword {
		if password, err = r.binary(); err != nil {
			return err
		}
	}
	if r.more() {
		return ErrTrailingBytes
	}
	if len(id) == 0 && !c.CleanSession {
		return ErrIdentifierRejected
	}
	c.ClientID = string(id)
	c.WillTopic = string(willTopic)
	if c.Will {
		c.WillMessage = append([]byte{}, willMessage...)
	}
	c.Username = string(username)
	c.Password = string(password)
	return nil
}

// checkConnectFlags checks the connect flags byte (§3.1.2.3-§3.1.2.9).
func checkConnectFlags(flags byte) error {
	will := flags&flagWill != 0
	qos := flags & flagWillQoS >> 3
	switch {
	case flags&flagReserved != 0:
		return ErrConnectReserved // [MQTT-3.1.2-3]
	case !will && qos != 0, will && qos == 3:
		return ErrWillQoS // [MQTT-3.1.2-13], [MQTT-3.1.2-14]
	case !will && flags&flagWillRetain != 0:
		return ErrWillRetain // [MQTT-3.1.2-15]
	case flags&flagPassword != 0 && flags&flagUsername == 0:
		return ErrPasswordWithoutUsername // [MQTT-3.1.2-22]
	}
	return nil
}
