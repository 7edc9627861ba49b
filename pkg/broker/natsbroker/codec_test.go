package natsbroker

import (
	"testing"

	"github.com/NoLagApp/kraken/pkg/broker"
)

// A message's QoS travels in flags bits 2 and 3, beside Retain and
// ClearRetained, so nodes of different versions read each other's
// messages: a message of a node that does not set them (flags 0-3) decodes
// with neither (delivered at most at QoS 1, as before), and the new bits
// leave the old ones as they were.
func TestCodecCarriesQoSCompatibly(t *testing.T) {
	for _, m := range []broker.Message{
		{Key: "k", Topic: "t", Data: []byte{0xc0}, AtMostOnce: true},
		{Key: "k", Topic: "t", Data: []byte{0xc0}, ExactlyOnce: true, Retain: true},
		{Key: "k", Topic: "t", Data: []byte{0xc0}, ClearRetained: true, Retain: true},
	} {
		b := encode(&m, 1)
		got, _, err := decode(b)
		if err != nil || got.AtMostOnce != m.AtMostOnce || got.ExactlyOnce != m.ExactlyOnce ||
			got.Retain != m.Retain || got.ClearRetained != m.ClearRetained {
			t.Fatalf("decoded %+v, %v; want %+v", got, err, m)
		}
		if flags := b[len(b)-1]; m.AtMostOnce == (flags&4 == 0) || m.ExactlyOnce == (flags&8 == 0) ||
			m.Retain == (flags&1 == 0) || m.ClearRetained == (flags&2 == 0) {
			t.Fatalf("flags %08b for %+v", flags, m)
		}
	}
	old := encode(&broker.Message{Key: "k", Topic: "t", Data: []byte{0xc0}, Retain: true}, 1)
	old[len(old)-1] = 1 // what a node before the QoS bits sends for a retained QoS 2 publish
	if got, _, err := decode(old); err != nil || got.AtMostOnce || got.ExactlyOnce || !got.Retain {
		t.Fatalf("an older node's message decoded as %+v, %v", got, err)
	}
}
