package wire

import "unicode/utf8"

// MaxEcho bounds, in bytes, what an error frame echoes of the client's
// input (its topic, msgRef, lobbyId, and a detail quoting it). It is the
// length a topic may have (topic.MaxTopicBytes), so every valid topic is
// echoed exactly, as the SDKs need: they match an error to the request it
// answers by its topic or msgRef, compared as strings.
const MaxEcho = 1024

// ellipsis ends an echo cut short.
const ellipsis = "…"

// Echo returns s as an error frame, or a log line, repeats it: s itself
// when it is valid UTF-8 of at most MaxEcho bytes; otherwise each byte that
// is not part of valid UTF-8 replaced by U+FFFD, and a result over MaxEcho
// bytes cut at a character boundary and ended with "…", MaxEcho bytes at
// most in all. Every string kraken sends is a MessagePack str, which must
// hold UTF-8: a decoder that checks (Python's msgpack) refuses the whole
// frame otherwise.
func Echo(s string) string {
	if len(s) <= MaxEcho && utf8.ValidString(s) {
		return s
	}
	b := make([]byte, 0, min(len(s), MaxEcho))
	fit := 0 // the length of b at its last character boundary that leaves room for the ellipsis
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:]) // an invalid byte: RuneError, 1
		i += n
		if len(b)+utf8.RuneLen(r) > MaxEcho {
			return string(append(b[:fit], ellipsis...))
		}
		b = utf8.AppendRune(b, r)
		if len(b) <= MaxEcho-len(ellipsis) {
			fit = len(b)
		}
	}
	return string(b)
}
