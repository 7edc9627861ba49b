package topic

import (
	"errors"
	"strings"
	"unicode/utf8"
)

// MaxTopicBytes is the default bound, in bytes, on the length of a topic or
// pattern accepted by ValidateSubscribe and ValidatePublish.
const MaxTopicBytes = 1024

// MaxTopicLevels is the default bound on the number of '/'-separated levels
// of a topic or pattern ("a/b/" has three levels).
const MaxTopicLevels = 64

// Validation errors. They are returned unwrapped, so both == and errors.Is
// work.
var (
	// ErrEmpty reports an empty topic or pattern.
	ErrEmpty = errors.New("topic: empty topic")
	// ErrTooLong reports a topic or pattern longer than MaxTopicBytes bytes.
	ErrTooLong = errors.New("topic: topic too long")
	// ErrTooManyLevels reports more than MaxTopicLevels levels.
	ErrTooManyLevels = errors.New("topic: too many levels")
	// ErrBadWildcard reports a '+' or '#' that is not a whole level, or a
	// '#' level that is not the last one (MQTT 3.1.1 §4.7.1; D-2).
	ErrBadWildcard = errors.New("topic: misplaced wildcard")
	// ErrWildcardInPublish reports a '+' or '#' character in a publish topic
	// (D-2, OQ-38).
	ErrWildcardInPublish = errors.New("topic: wildcard in publish topic")
	// ErrNullByte reports a U+0000 character (MQTT 3.1.1 §4.7.3).
	ErrNullByte = errors.New("topic: null byte in topic")
	// ErrNotUTF8 reports a topic that is not valid UTF-8: topics travel back
	// to clients as MessagePack str values, which must be UTF-8 (wire-reference.md
	// §1.6; MQTT 3.1.1 §1.5.3).
	ErrNotUTF8 = errors.New("topic: topic is not valid UTF-8")
)

// ValidateSubscribe checks a subscribe pattern: it must be non-empty (ErrEmpty),
// at most MaxTopicBytes bytes (ErrTooLong), free of U+0000 (ErrNullByte),
// valid UTF-8 (ErrNotUTF8), at
// most MaxTopicLevels levels (ErrTooManyLevels), and use '+' and '#' only as a
// whole level, with '#' only as the last level (ErrBadWildcard). These are the
// MQTT 3.1.1 §4.7 rules adopted by D-2. The first failing check, in that
// order, is returned.
func ValidateSubscribe(pattern string) error {
	if err := checkBounds(pattern); err != nil {
		return err
	}
	for {
		level, rest, more := cut(pattern)
		if level != "+" && level != "#" && strings.ContainsAny(level, "+#") {
			return ErrBadWildcard
		}
		if !more {
			return nil
		}
		if level == "#" {
			return ErrBadWildcard
		}
		pattern = rest
	}
}

// ValidatePublish checks a publish topic against the bounds of
// ValidateSubscribe (ErrEmpty, ErrTooLong, ErrNullByte, ErrNotUTF8,
// ErrTooManyLevels) and
// rejects any '+' or '#' character, anywhere, with ErrWildcardInPublish (D-2
// rejects wildcards in publish topics).
func ValidatePublish(topic string) error {
	if err := checkBounds(topic); err != nil {
		return err
	}
	if strings.ContainsAny(topic, "+#") {
		return ErrWildcardInPublish
	}
	return nil
}

// HasWildcard reports whether some level of pattern is exactly "+" or "#".
// A non-final "#" level counts, although Match treats it literally.
func HasWildcard(pattern string) bool {
	for {
		level, rest, more := cut(pattern)
		if level == "+" || level == "#" {
			return true
		}
		if !more {
			return false
		}
		pattern = rest
	}
}

// checkBounds applies the checks shared by subscribe and publish.
func checkBounds(s string) error {
	switch {
	case s == "":
		return ErrEmpty
	case len(s) > MaxTopicBytes:
		return ErrTooLong
	case strings.IndexByte(s, 0) >= 0:
		return ErrNullByte
	case !utf8.ValidString(s):
		return ErrNotUTF8
	case strings.Count(s, "/")+1 > MaxTopicLevels:
		return ErrTooManyLevels
	}
	return nil
}

// cut splits off the first level of s. more reports whether a '/' followed
// it, in which case rest holds the remaining levels.
func cut(s string) (level, rest string, more bool) {
	i := strings.IndexByte(s, '/')
	if i < 0 {
		return s, "", false
	}
	return s[:i], s[i+1:], true
}
