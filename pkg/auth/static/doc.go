// Package static is the default auth backend, AUTH_BACKEND=static: access
// tokens are read from a JSON token file (protocol.md §4.1) and reloaded when
// the file changes (D-1). It also provides AllowAll, the insecure
// AUTH_ALLOW_ALL=true development backend.
//
// # Token file
//
//	{ "_comment": "ignored",
//	  "tokens": { "<token>": { "actorTokenId": "alice", ... }, ... } }
//
// A missing "tokens" key means no tokens; a top-level value that is not an
// object, or a "tokens" value that is not an object, makes the file
// unparsable. Inside a token entry nothing is fatal: an entry without a
// string actorTokenId is skipped and its token refused (OQ-29), and a field
// of the wrong JSON type is ignored; both log a warning naming the entry by
// its position (token strings are secrets and are never logged). Rules keep
// their own app_id and app_name, so one token may span several apps (OQ-39).
//
// # Reload
//
// New fails on a missing, unreadable or unparsable file (D-1: fatal at
// startup). Afterwards a watcher goroutine compares the file's mtime and size
// every Config.PollInterval and reloads it once a change has settled for one
// poll, so a change takes effect within two intervals. A valid file replaces
// the whole token set atomically and then runs the OnChange callbacks
// (auth.Cache flushes itself there). A broken file logs "Failed to parse auth file <path>: <reason>" or
// "Cannot read auth file <path>: <reason>" at error level, increments
// Stats.ReloadFailures and keeps the last valid set, so live connections are
// never revoked by a bad edit (D-1, OQ-11).
//
// # Concurrency
//
// Static is safe for concurrent use. Validate and Revalidate read the current
// token set through an atomic pointer and never block. Reload calls are
// serialised; OnChange callbacks run on the reloading goroutine (the watcher,
// or the caller of Reload) in registration order. Static starts exactly one
// goroutine, the watcher, which Close stops and waits for. Grants are shared
// between callers and must be treated as read-only. AllowAll has no state.
package static
