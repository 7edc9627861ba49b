package static

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/NoLagApp/kraken/pkg/acl"
	"github.com/NoLagApp/kraken/pkg/auth"
)

// ErrRead wraps every failure to read the token file; the message names the
// path and the operating-system reason (D-1).
var ErrRead = errors.New("static: cannot read auth file")

// ErrParse wraps every failure to parse the token file; the message names the
// path and, for JSON syntax errors, the line and column (D-1).
var ErrParse = errors.New("static: cannot parse auth file")

// ErrInvalid wraps every reload refused because the file has an error that
// Check (kraken check-config) reports: an unknown permission, a grant
// pattern the broker's topic rules refuse, a field of the wrong type, an
// entry without an actorTokenId, no "tokens" object. The message names the
// path, the line and the column of the first error and the count of all.
// The tokens in force stay, as for ErrParse.
var ErrInvalid = errors.New("static: refused auth file")

// maxLoggedProblems bounds the errors listed in a refused reload's log line.
const maxLoggedProblems = 20

// DefaultPollInterval is how often the watcher checks the token file when
// Config.PollInterval is 0.
const DefaultPollInterval = time.Second

// Config configures a Static backend.
type Config struct {
	// Path is the token file (AUTH_FILE, wire-reference.md §4.1). Required.
	Path string
	// PollInterval is how often the file's mtime and size are checked for
	// changes; a change is loaded once it has stayed the same for one
	// interval. 0 means DefaultPollInterval (D-1).
	PollInterval time.Duration
	// Logger receives reload results and warnings about ignored fields;
	// nil means zap.NewNop().
	Logger *zap.Logger
}

// Stats are the reload counters of a Static backend (D-1: an operator must
// see failed reloads).
type Stats struct {
	// Reloads counts successful reloads after the initial load, each
	// counted once its OnChange callbacks have returned.
	Reloads uint64
	// ReloadFailures counts reloads that found the file unreadable,
	// unparsable or with an error Check reports (ErrInvalid), and kept the
	// last valid token set.
	ReloadFailures uint64
	// Tokens is the number of usable tokens in the current set.
	Tokens int
	// Failing reports that the last reload failed: the tokens in force are
	// those of an earlier version of the file (LastError says why).
	Failing bool
}

// Static is the token-file backend of wire-reference.md §4.1 with the reload
// behaviour of D-1. It implements auth.Authenticator, auth.Notifier and
// auth.RuleLister and is safe for concurrent use.
type Static struct {
	path string
	poll time.Duration
	log  *zap.Logger

	set atomic.Pointer[tokenSet]

	reloadMu sync.Mutex // serialises Reload and guards stamp
	stamp    fileStamp  // of the file as last read, successfully or not

	cbMu      sync.Mutex
	callbacks []func()

	reloads  atomic.Uint64
	failures atomic.Uint64
	lastErr  atomic.Pointer[error] // of the last reload; nil after a success

	stop      chan struct{}
	done      chan struct{}
	closeOnce sync.Once
}

// New loads the token file at cfg.Path and starts one watcher goroutine that
// reloads the file when its mtime or size changes; Close stops it.
//
// A missing, unreadable or unparsable file is an error wrapping ErrRead or
// ErrParse whose message names the path and, for JSON syntax errors, the line
// and column; D-1 makes this fatal at startup. Problems inside token entries
// only log warnings (OQ-29), and a file with errors that Check (kraken
// check-config) reports is served as written, with one error line naming
// the first error's line and column and the count of all.
func New(cfg Config) (*Static, error) {
	if cfg.Path == "" {
		return nil, fmt.Errorf("%w: the path is empty", ErrRead)
	}
	s := &Static{
		path: cfg.Path,
		poll: cfg.PollInterval,
		log:  cfg.Logger,
		stop: make(chan struct{}),
		done: make(chan struct{}),
	}
	if s.poll <= 0 {
		s.poll = DefaultPollInterval
	}
	if s.log == nil {
		s.log = zap.NewNop()
	}
	set, stamp, errs, err := s.load("")
	if err != nil {
		return nil, err
	}
	s.set.Store(set)
	s.stamp = stamp
	loaded := fmt.Sprintf("Loaded auth file %s: %d tokens", s.path, len(set.byToken))
	if len(errs) > 0 {
		loaded += fmt.Sprintf(", with the %d errors above (what they touch grants nothing)", len(errs))
	}
	s.log.Info(loaded, zap.String("path", s.path), zap.Int("tokens", len(set.byToken)))
	go s.watch() // owned by s: Close stops it and waits on done
	return s, nil
}

// Validate looks token up byte-exactly (wire-reference.md §4.1). An unknown token,
// or one whose entry was skipped as unusable, is auth.ErrDenied. It never
// blocks and ignores ctx.
func (s *Static) Validate(_ context.Context, token string) (*auth.Grant, error) {
	if g, ok := s.set.Load().byToken[token]; ok {
		return g, nil
	}
	return nil, auth.ErrDenied
}

// Revalidate returns the grant of the first token entry, in file order, whose
// actorTokenId is actorTokenID, else auth.ErrDenied (wire-reference.md §4.9). While
// the file is broken the last valid set answers (D-1). It never blocks.
func (s *Static) Revalidate(_ context.Context, actorTokenID string) (*auth.Grant, error) {
	if g, ok := s.set.Load().byActor[actorTokenID]; ok {
		return g, nil
	}
	return nil, auth.ErrDenied
}

// Instant implements auth.Instant: Validate and Revalidate look the token
// set in force up in memory.
func (s *Static) Instant() bool { return true }

// RuleSets returns the distinct rule lists of the tokens in force
// (auth.RuleLister), for POST /internal/publish; ok is always true.
func (s *Static) RuleSets() ([]acl.Rules, bool) { return s.set.Load().rules, true }

// OnChange registers f to run after every successful reload, once the new
// token set is in place (D-1). Callbacks run one after another on the
// reloading goroutine, in registration order; f must not block for long.
func (s *Static) OnChange(f func()) {
	s.cbMu.Lock()
	defer s.cbMu.Unlock()
	s.callbacks = append(s.callbacks, f)
}

// Reload re-reads the token file now, as ReloadFor("reload").
func (s *Static) Reload() error { return s.ReloadFor("reload") }

// ReloadFor re-reads the token file now; trigger says why, in the log line
// ("file_changed" from the watcher, "sighup" from the signal handler).
//
// Each reload logs exactly one line. A file is loaded only when Check
// would find no error in it (the two share one validator). A valid file
// replaces the whole token set atomically, logs "Reloaded auth file
// <path>: <n> tokens" at info (with Check's warnings, if any, in the
// "warnings" field) and then runs the OnChange callbacks. An unreadable or
// unparsable file logs "Cannot read auth file <path>: <reason>" or "Failed
// to parse auth file <path>: <reason>", and a file with errors "Refused
// auth file <path>: <n> errors, the first at <path>:<line>:<column>: ...",
// at error level with the count of the tokens kept; it counts a failure
// and keeps the last valid set (D-1). The returned error wraps ErrRead,
// ErrParse or ErrInvalid, and LastError (so Ready) returns it until a
// reload succeeds.
func (s *Static) ReloadFor(trigger string) error {
	s.reloadMu.Lock()
	set, stamp, warnings, err := s.load(trigger)
	s.stamp = stamp
	if err != nil {
		s.lastErr.Store(&err)
		s.reloadMu.Unlock()
		s.failures.Add(1)
		return err
	}
	s.set.Store(set)
	s.lastErr.Store(nil)
	s.reloadMu.Unlock()

	fields := []zap.Field{zap.String("path", s.path), zap.Int("tokens", len(set.byToken)), zap.String("trigger", trigger)}
	if len(warnings) > 0 {
		fields = append(fields, zap.Strings("warnings", warnings))
	}
	s.log.Info(fmt.Sprintf("Reloaded auth file %s: %d tokens", s.path, len(set.byToken)), fields...)
	s.cbMu.Lock()
	cbs := append([]func(){}, s.callbacks...)
	s.cbMu.Unlock()
	for _, f := range cbs {
		f()
	}
	s.reloads.Add(1) // after the callbacks, so Stats shows a finished reload
	return nil
}

// Stats returns the reload counters and the current token count.
func (s *Static) Stats() Stats {
	return Stats{
		Reloads:        s.reloads.Load(),
		ReloadFailures: s.failures.Load(),
		Tokens:         len(s.set.Load().byToken),
		Failing:        s.lastErr.Load() != nil,
	}
}

// LastError returns the error of the last reload, or nil when it succeeded
// (or none has run since New).
func (s *Static) LastError() error {
	if p := s.lastErr.Load(); p != nil {
		return *p
	}
	return nil
}

// Ready is LastError: a node whose token file's last load failed serves
// the previous tokens, and says so on its readiness check.
func (s *Static) Ready() error { return s.LastError() }

// Close stops the watcher goroutine and waits for it to exit. The backend
// keeps answering from the last loaded set. Close is idempotent and always
// returns nil.
func (s *Static) Close() error {
	s.closeOnce.Do(func() { close(s.stop) })
	<-s.done
	return nil
}

// load reads and parses the file. At startup (trigger is "") only a file
// that cannot be read or parsed fails (D-1), and problems inside token
// entries are logged as warnings (OQ-29). A reload (trigger is not "") also
// runs validate, Check's validator, and refuses the file when it finds an
// error; it logs nothing but its one line: a failure here at error level
// with the exact D-1 wording, the trigger and the count of the tokens kept,
// and on success the caller's line, which carries the warnings returned.
// The stamp is taken before reading, so a write racing the read is seen
// as a change at the next poll.
func (s *Static) load(trigger string) (*tokenSet, fileStamp, []string, error) {
	reload := trigger != ""
	failed := func(msg string, extra ...zap.Field) {
		s.log.Error(msg, append([]zap.Field{zap.String("path", s.path), zap.String("trigger", trigger),
			zap.Int("tokens", len(s.set.Load().byToken))}, extra...)...)
	}
	stamp := statFile(s.path)
	data, err := os.ReadFile(s.path)
	if err != nil {
		reason := err
		var pe *fs.PathError
		if errors.As(err, &pe) {
			reason = pe.Err
		}
		if reload {
			failed(fmt.Sprintf("Cannot read auth file %s: %v", s.path, reason))
		}
		return nil, stamp, nil, fmt.Errorf("%w %s: %w", ErrRead, s.path, reason)
	}
	log := s.log
	if reload {
		log = zap.NewNop() // validate reports what parseTokenFile would warn about
	}
	set, err := parseTokenFile(data, s.path, log)
	if err != nil {
		if reload {
			failed(fmt.Sprintf("Failed to parse auth file %s: %v", s.path, err))
		}
		return nil, stamp, nil, fmt.Errorf("%w %s: %w", ErrParse, s.path, err)
	}
	var errs, warnings []string
	for _, p := range validate(data) {
		if p.Warning {
			warnings = append(warnings, p.at(s.path))
		} else {
			errs = append(errs, p.at(s.path))
		}
	}
	if len(errs) == 0 {
		return set, stamp, warnings, nil
	}
	reason := fmt.Sprintf("1 error, at %s", errs[0])
	if len(errs) > 1 {
		reason = fmt.Sprintf("%d errors, the first at %s", len(errs), errs[0])
	}
	if !reload {
		// At startup there are no earlier tokens to keep: the file is
		// served as written (OQ-29), and one error line says what it lacks.
		s.log.Error(fmt.Sprintf("Auth file %s has %s; it is served as written, and what the errors touch grants nothing (kraken check-config lists every problem)", s.path, reason),
			zap.String("path", s.path), zap.Strings("errors", errs[:min(len(errs), maxLoggedProblems)]),
			zap.Int("error_count", len(errs)))
		return set, stamp, errs, nil // New says so in its "Loaded" line
	}
	reason += "; the last valid tokens stay in force (kraken check-config lists every problem)"
	failed(fmt.Sprintf("Refused auth file %s: %s", s.path, reason),
		zap.Strings("errors", errs[:min(len(errs), maxLoggedProblems)]), zap.Int("error_count", len(errs)))
	return nil, stamp, nil, fmt.Errorf("%w %s: %s", ErrInvalid, s.path, reason)
}

var (
	_ auth.Authenticator = (*Static)(nil)
	_ auth.Notifier      = (*Static)(nil)
	_ auth.Instant       = (*Static)(nil)
)
