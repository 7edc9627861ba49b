package control

// FlushUsage makes the usage goroutine run an interval report now, as its
// ticker would, and waits for it to finish. It returns at once on a closed
// Batcher. Tests only.
func (b *Batcher) FlushUsage() {
	done := make(chan struct{})
	select {
	case b.flushReq <- done:
		<-done
	case <-b.stop:
	}
}
