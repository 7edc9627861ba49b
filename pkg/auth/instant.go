package auth

// Instant is an optional interface of an Authenticator that answers from
// memory: its Validate and Revalidate never block (no I/O, no waiting on
// another goroutine) and ignore their context, as the token file and the
// AUTH_ALLOW_ALL backend do. A caller may then call them with a context
// that has no deadline and cannot be cancelled: the session makes no
// timer and no cancellable context for such a call, and there is never a
// call in flight to cancel when the connection closes.
type Instant interface {
	// Instant reports whether the backend answers from memory; the answer
	// never changes over the backend's life.
	Instant() bool
}

// IsInstant reports whether a implements Instant and answers from memory.
func IsInstant(a Authenticator) bool {
	i, ok := a.(Instant)
	return ok && i.Instant()
}
