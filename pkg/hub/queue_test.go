package hub

import "testing"

// TestQueueThatNeverEmptiesStaysBounded: a connection whose transport
// takes about what arrives keeps one or two frames waiting forever, and
// its queue never empties; the queue's array must stay bounded by the
// frames waiting, not grow by a slot for every frame ever queued.
func TestQueueThatNeverEmptiesStaysBounded(t *testing.T) {
	c := &Conn{}
	frame := []byte("0123456789")
	c.queueLocked(frame)
	c.queueLocked(frame) // two frames: the pooled queue
	if c.q == nil {
		t.Fatal("two frames queued without a queue")
	}
	for i := 0; i < 100000; i++ {
		c.queueLocked(frame)
		c.consumeLocked(len(frame))
	}
	if got := c.queuedFrames(); got != 2 {
		t.Fatalf("%d frames waiting, want 2", got)
	}
	if got := c.queuedBytes(); got != 2*len(frame) {
		t.Fatalf("%d bytes waiting, want %d", got, 2*len(frame))
	}
	if n := cap(c.q.out); n > 64 {
		t.Fatalf("the queue's array holds %d slots for 2 frames waiting after 100,000 queued and written", n)
	}
	// What waits is still the frames in order, whole.
	for _, f := range c.queued() {
		if string(f) != string(frame) {
			t.Fatalf("queued frame %q, want %q", f, frame)
		}
	}
	c.dropQueueLocked()
}
