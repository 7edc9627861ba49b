// Package natssubject maps kraken routing keys ("app/room/topic") and
// MQTT-style subscription patterns to NATS subjects, one subject token per
// topic level, for the packages that keep topics in NATS (natsbroker's
// publications and retained messages, history's stream).
//
// A NATS subject token may not contain '.', whitespace, or be empty, and a
// whole token '*' or '>' is a wildcard, so those bytes, control bytes and
// the escape byte '%' itself are written as '%' and two upper-case hex
// digits; an empty level is a lone "%" (never produced otherwise, since '%'
// is always escaped). Everything else, UTF-8 included, is kept, so subjects
// stay readable in `nats sub` output.
package natssubject

import (
	"errors"
	"strings"
)

const hexDigits = "0123456789ABCDEF"

func needsEscape(c byte) bool {
	return c <= ' ' || c == 0x7f || c == '.' || c == '*' || c == '>' || c == '%'
}

// AppendLevel appends the escaped token of one topic level to b and
// returns the extended slice.
func AppendLevel(b []byte, level string) []byte {
	if level == "" {
		return append(b, '%')
	}
	for i := 0; i < len(level); i++ {
		c := level[i]
		if needsEscape(c) {
			b = append(b, '%', hexDigits[c>>4], hexDigits[c&0xf])
			continue
		}
		b = append(b, c)
	}
	return b
}

// Key returns the subject of the concrete routing key under prefix (one or
// more tokens, e.g. "kraken.m"): prefix, then one escaped token per
// '/'-separated level of key.
func Key(prefix, key string) string {
	b := make([]byte, 0, len(prefix)+len(key)+8)
	b = append(b, prefix...)
	for _, level := range strings.Split(key, "/") {
		b = append(b, '.')
		b = AppendLevel(b, level)
	}
	return string(b)
}

// Patterns returns the subjects that receive every key the MQTT-style
// pattern matches (MQTT 3.1.1 §4.7.1, as topic.Match): "+" becomes "*",
// and a trailing "#" becomes both its parent (it matches zero levels) and
// parent.> — or prefix.> alone for the pattern "#". Other '+' and '#'
// bytes are literal, as in topic.Match. A pattern without wildcards gives
// Key(prefix, pattern) alone.
func Patterns(prefix, pattern string) []string {
	levels := strings.Split(pattern, "/")
	hash := levels[len(levels)-1] == "#"
	if hash {
		levels = levels[:len(levels)-1]
	}
	b := make([]byte, 0, len(prefix)+len(pattern)+8)
	b = append(b, prefix...)
	for _, level := range levels {
		b = append(b, '.')
		if level == "+" {
			b = append(b, '*')
			continue
		}
		b = AppendLevel(b, level)
	}
	if !hash {
		return []string{string(b)}
	}
	if len(levels) == 0 {
		return []string{prefix + ".>"}
	}
	return []string{string(b), string(b) + ".>"}
}

// ErrSubject is returned by KeyOf for a subject that Key did not make.
var ErrSubject = errors.New("natssubject: not a key subject of the prefix")

// KeyOf is the inverse of Key: the routing key whose subject under prefix
// is subject. It fails with ErrSubject when subject is not prefix followed
// by at least one token, or a token holds a '%' not followed by two
// upper-case hex digits (or a lone "%" for an empty level).
func KeyOf(prefix, subject string) (string, error) {
	if len(subject) <= len(prefix)+1 || !strings.HasPrefix(subject, prefix) || subject[len(prefix)] != '.' {
		return "", ErrSubject
	}
	rest := subject[len(prefix)+1:]
	if strings.IndexByte(rest, '%') < 0 {
		return strings.ReplaceAll(rest, ".", "/"), nil
	}
	b := make([]byte, 0, len(rest))
	for i, token := range strings.Split(rest, ".") {
		if i > 0 {
			b = append(b, '/')
		}
		if token == "%" {
			continue
		}
		for j := 0; j < len(token); j++ {
			c := token[j]
			if c != '%' {
				b = append(b, c)
				continue
			}
			if j+2 >= len(token) {
				return "", ErrSubject
			}
			hi, lo := Unhex(token[j+1]), Unhex(token[j+2])
			if hi < 0 || lo < 0 {
				return "", ErrSubject
			}
			b = append(b, byte(hi<<4|lo))
			j += 2
		}
	}
	return string(b), nil
}

// Unhex is the value of an upper-case hex digit of an escape, -1 for
// anything else.
func Unhex(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'A' && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}

// StoreName returns the name of a JetStream stream or key-value bucket of
// kind (e.g. "HISTORY", "SESSIONS", "RETAINED") for the subject prefix
// prefix: "KRAKEN_<kind>" for the default prefix "kraken" (and ""),
// otherwise prefix with every byte outside [A-Za-z0-9_-] replaced by '_',
// then "_<kind>". JetStream names allow no '.', '*', '>' or space.
func StoreName(prefix, kind string) string {
	if prefix == "" || prefix == "kraken" {
		return "KRAKEN_" + kind
	}
	b := []byte(prefix)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			b[i] = '_'
		}
	}
	return string(b) + "_" + kind
}
