package natsbroker

import (
	"strings"
)

// Topic levels become NATS subject tokens. A token may not contain '.',
// whitespace, or be empty, and a whole token '*' or '>' is a wildcard, so
// those bytes, control bytes and the escape byte '%' itself are written as
// '%' and two upper-case hex digits; an empty level is a lone "%" (never
// produced otherwise, since '%' is always escaped). Everything else, UTF-8
// included, is kept, so subjects stay readable in `nats sub` output.

const hexDigits = "0123456789ABCDEF"

func needsEscape(c byte) bool {
	return c <= ' ' || c == 0x7f || c == '.' || c == '*' || c == '>' || c == '%'
}

// appendLevel appends the escaped token of one topic level to b.
func appendLevel(b []byte, level string) []byte {
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

// keySubject is the subject of the concrete routing key under prefix (e.g.
// "kraken.m"): one escaped token per level.
func keySubject(prefix, key string) string {
	b := make([]byte, 0, len(prefix)+len(key)+8)
	b = append(b, prefix...)
	for _, level := range strings.Split(key, "/") {
		b = append(b, '.')
		b = appendLevel(b, level)
	}
	return string(b)
}

// patternSubjects are the subjects that receive every key the MQTT-style
// pattern matches (MQTT 3.1.1 §4.7.1, as topic.Match): "+" becomes "*", and
// a trailing "#" becomes both its parent (it matches zero levels) and
// parent.> — or ">" alone for the pattern "#". Other '+' and '#' bytes are
// literal, as in topic.Match.
func patternSubjects(prefix, pattern string) []string {
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
		b = appendLevel(b, level)
	}
	if !hash {
		return []string{string(b)}
	}
	if len(levels) == 0 {
		return []string{prefix + ".>"}
	}
	return []string{string(b), string(b) + ".>"}
}
