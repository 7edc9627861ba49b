// Package static is the default auth backend, AUTH_BACKEND=static: access
// tokens are read from a JSON token file (wire-reference.md §4.1) and reloaded when
// the file changes (D-1). It also provides AllowAll, the insecure
// AUTH_ALLOW_ALL=true development backend.
//
// # Token file
//
//	{ "_comment": "ignored",
//	  "tokens": { "<token>": { "actorTokenId": "alice", ... }, ... } }
//
// At startup a missing "tokens" key means no tokens; a top-level value that
// is not an object, or a "tokens" value that is not an object, makes the
// file unparsable. Inside a token entry nothing is fatal at startup: an
// entry without a string actorTokenId is skipped and its token refused
// (OQ-29), and a field of the wrong JSON type is ignored; both log a
// warning naming the entry by its position (token strings are secrets and
// are never logged). Rules keep their own app_id and app_name, so one token
// may span several apps (OQ-39).
//
// # Checking
//
// Check (kraken check-config) validates a file strictly: everything that
// would not take effect as written is an error with its line and column,
// among them an unknown permission, a grant pattern or an active
// subscription that the broker's topic rules refuse (package topic: empty,
// over 1024 bytes or 64 levels, '+' or '#' not a whole level, '#' not
// last), a field of the wrong type and a missing "tokens" object.
//
// # Reload
//
// New fails on a missing, unreadable or unparsable file (D-1: fatal at
// startup). Afterwards a watcher goroutine compares the file's mtime and size
// every Config.PollInterval and reloads it once a change has settled for one
// poll, so a change takes effect within two intervals. A reload runs Check's
// validator, the same function, and loads the file only when it finds no
// error: the new set replaces the whole token set atomically and then the
// OnChange callbacks run (auth.Cache flushes itself there). A file that
// cannot be read or parsed, or that has an error, is not loaded: the reload
// logs one line at error level ("Cannot read auth file <path>: <reason>",
// "Failed to parse auth file <path>: line L, column C: <reason>" or
// "Refused auth file <path>: <n> errors, the first at <path>:L:C: ..."),
// increments Stats.ReloadFailures, and Ready returns the reason until a
// reload succeeds. The last valid set stays in force, so live connections
// are never revoked and no grant is lowered by a bad edit (D-1, OQ-11).
//
// # Concurrency
//
// Static is safe for concurrent use. Validate and Revalidate read the current
// token set through an atomic pointer and never block. Reload calls are
// serialised; OnChange callbacks run on the reloading goroutine (the watcher,
// or the caller of Reload) in registration order. Static starts exactly one
// goroutine, the watcher, which Close stops and waits for. Grants are shared
// between callers and must be treated as read-only. AllowAll keeps the
// grants of its most recent actors (a mutex-guarded map, bounded), so that
// the connections of one token share one.
package static
