// Package httpauth is the HTTP auth backend, AUTH_BACKEND=http
// (wire-reference.md §5.1): a Backend asks a control plane such as nolag-core
//
//	POST {base}/validate           {"accessToken": "<token>"}
//	POST {base}/revalidate         {"actorTokenId": "<id>"}
//	POST {base}/check-room-access  {"actorTokenId": "<id>", "pattern": "<as sent>"}
//
// with "Content-Type: application/json" and "Authorization: Bearer
// <BACKEND_SECRET>", and turns the answers into auth.Grant values of the same
// shape as the static backend's (wire-reference.md §4.2, OQ-39, OQ-40).
//
// Differences from kraken v0.4.0, all from decisions.md: the path of
// the base URL is kept (OQ-28); certificates are verified unless
// Config.InsecureSkipVerify (OQ-30); malformed answers
// are failed validations, never crashes (OQ-29); scope_id, scope_name,
// rate_limit and explicit lobby room_ids are read (OQ-40, OQ-6, OQ-19), and
// so is /validate's auth_expires_at, the token's expiry (OQ-65, amended); an
// empty secret sends no Authorization header instead of "Bearer ".
//
// # Errors
//
// The failed-auth reply string follows from package auth alone:
// errors.Is(err, auth.ErrDenied) → "access_denied", errors.Is(err,
// auth.ErrUnavailable) → "connection_failed", any other error →
// "authentication_failed" (wire-reference.md §2.4). Revalidate returns an
// *auth.RevokedError (wrapping auth.ErrDenied, close 4001 with its Reason) for
// {"valid":false} and an error wrapping auth.ErrUnavailable (retry) for
// everything else. CheckRoomAccess returns errors wrapping auth.ErrDenied or
// auth.ErrUnavailable, both a deny for the caller. See errors.go.
//
// # Transport
//
// One http.Client with a keep-alive pool is shared by all calls. Over
// https:// HTTP/2 is used when the server offers it (ALPN), HTTP/1.1
// otherwise. Redirects are not followed. Each call is bounded by its
// endpoint's timeout (5 s, or 2 s for check-room-access) and its ctx; at
// most Config.MaxInFlight requests run at once, and callers over the cap wait
// for a slot within the same bounds. Response bodies over Config.MaxBodyBytes
// are refused. A circuit breaker opens after Config.BreakerThreshold
// consecutive transport failures, timeouts or 5xx answers: for
// Config.BreakerCooldown every call fails at once with ErrBreakerOpen and no
// request is made, then exactly one probe is let through, and its answer
// closes the breaker (or its failure reopens it). A caller cancelling its own
// ctx never counts as a failure.
//
// # Concurrency
//
// Backend is safe for concurrent use by any number of goroutines; Validate,
// Revalidate and CheckRoomAccess block on network I/O for at most their
// timeout and return once ctx is done. Backend starts no goroutines of its
// own; net/http keeps one or two per open keep-alive connection, which Close
// releases. The breaker and the check-room-access negative cache each have a
// mutex held only for a few field updates. Grants and rules returned are
// new for every call and owned by the caller, but follow the auth package
// rule and are treated as read-only once shared.
//
// Put an auth.Cache in front of a Backend (wire-reference.md §4.8): it caches
// successes for 30 s and merges concurrent validations of one token into a
// single request.
//
// # Example
//
//	b, err := httpauth.New(httpauth.Config{
//		BaseURL: os.Getenv("AUTH_HTTP_URL"), // e.g. https://core.example/v1/internal/actors
//		Secret:  os.Getenv("BACKEND_SECRET"),
//		Logger:  log.Named("auth.http"),
//	})
//	if err != nil {
//		return err
//	}
//	defer b.Close()
//	a := auth.NewCache(b, 30*time.Second, 100_000, nil)
//	defer a.Close() // before b.Close: cancels and waits for its calls
//	g, err := a.Validate(ctx, token)
//	switch {
//	case err == nil:
//		// use g
//	case errors.Is(err, auth.ErrDenied):
//		// reply access_denied
//	case errors.Is(err, auth.ErrUnavailable):
//		// reply connection_failed
//	default:
//		// reply authentication_failed
//	}
package httpauth
