// Package auth defines the pluggable authentication slot of the broker: the
// normalised Grant a backend produces for an access token (wire-reference.md §4.2),
// the Authenticator interface every backend implements, and Cache, the 30 s
// success cache that sits in front of a backend (wire-reference.md §4.8, OQ-10,
// D-1).
//
// Backends live in sub-packages; auth/static reads the token file of
// wire-reference.md §4.1.
//
// # Concurrency
//
// Authenticator implementations must be safe for concurrent use by any number
// of goroutines; Validate and Revalidate may block on I/O and should honour
// their context. One that answers from memory says so (Instant), and is
// then called without a deadline or a cancellable context. A *Grant returned by an Authenticator or by Cache may be
// shared between callers and with the backend's internal state: treat it and
// every slice it holds as read-only.
//
// Cache is safe for concurrent use. It starts one goroutine per backend call
// it makes, shared by every caller validating the same token at that moment
// (so each caller can give up on its own ctx), except for an Instant backend,
// which it calls on the caller's goroutine; expired entries are evicted
// lazily on access and on insertion. Callbacks registered with
// OnChange run on the goroutine that applied the change (for auth/static, its
// file watcher), one after another in registration order.
package auth
