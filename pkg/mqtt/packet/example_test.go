package packet_test

import (
	"errors"
	"fmt"

	"github.com/NoLagApp/kraken/pkg/mqtt/packet"
)

// A reactor parses whatever has arrived and keeps the rest for later.
func ExampleParse() {
	arrived := []byte{
		0x32, 0x0A, 0x00, 0x03, 'a', '/', 'b', 0x00, 0x07, 'h', 'i', '!', // PUBLISH QoS 1
		0xC0, 0x00, // PINGREQ
		0x82, 0x08, 0x00, // the first bytes of a SUBSCRIBE
	}
	var p packet.Packet
	var out []byte
	for {
		n, err := packet.Parse(arrived, 1<<20, &p)
		if err != nil {
			fmt.Println("close:", err)
			return
		}
		if n == 0 {
			fmt.Printf("waiting, %d bytes kept\n", len(arrived))
			break
		}
		switch p.Type {
		case packet.TypePublish:
			fmt.Printf("%v %s %q qos %d id %d\n", p.Type, p.Topic, p.Payload, p.QoS, p.PacketID)
			out = packet.AppendPuback(out, p.PacketID)
		case packet.TypePingreq:
			fmt.Println(p.Type)
			out = packet.AppendPingresp(out)
		}
		arrived = arrived[n:]
	}
	fmt.Printf("reply % x\n", out)
	// Output:
	// PUBLISH a/b "hi!" qos 1 id 7
	// PINGREQ
	// waiting, 3 bytes kept
	// reply 40 02 00 07 d0 00
}

// A CONNECT of another protocol version gets CONNACK 1 before the close.
func ExampleError() {
	mqtt5 := []byte{0x10, 0x0D, 0x00, 0x04, 'M', 'Q', 'T', 'T', 0x05, 0x02, 0x00, 0x3C, 0x00, 0x00, 0x00}
	var p packet.Packet
	_, err := packet.Parse(mqtt5, 1<<20, &p)
	var perr *packet.Error
	if errors.As(err, &perr) && perr.ReturnCode != packet.Accepted {
		fmt.Printf("% x then close: %v\n", packet.AppendConnack(nil, false, perr.ReturnCode), err)
	}
	// Output:
	// 20 02 00 01 then close: packet: protocol level is not 4 [MQTT-3.1.2-2]
}
