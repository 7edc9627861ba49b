package natsbroker

import (
	"errors"
	"strings"

	"github.com/NoLagApp/kraken/pkg/natssubject"
)

// Shared state lives in one JetStream KV bucket (see state.go) under three
// kinds of key, each a '.'-separated list of escaped tokens:
//
//	n.<node>        the node's liveness key, put every Heartbeat
//	p.<node>.<id>   the presence of connection id (encodePresence)
//	c.<node>.<org>  the node's count of connections of org (decimal)
//
// A KV key may hold only [-/_=.a-zA-Z0-9], so a token keeps the bytes
// [A-Za-z0-9_-] and writes every other byte as '=' and two upper-case hex
// digits; the empty string is a lone "=" (never produced otherwise).

const (
	kindNode     = "n"
	kindPresence = "p"
	kindConns    = "c"
)

var errKey = errors.New("natsbroker: malformed state key")

const hexDigits = "0123456789ABCDEF"

func plainKeyByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

// appendKeyToken appends the escaped form of s to b.
func appendKeyToken(b []byte, s string) []byte {
	if s == "" {
		return append(b, '=')
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if plainKeyByte(c) {
			b = append(b, c)
			continue
		}
		b = append(b, '=', hexDigits[c>>4], hexDigits[c&0xf])
	}
	return b
}

// parseKeyToken reverses appendKeyToken.
func parseKeyToken(t string) (string, error) {
	if t == "=" {
		return "", nil
	}
	if t == "" {
		return "", errKey
	}
	if !strings.Contains(t, "=") {
		return t, nil
	}
	b := make([]byte, 0, len(t))
	for i := 0; i < len(t); i++ {
		c := t[i]
		if c != '=' {
			if !plainKeyByte(c) {
				return "", errKey
			}
			b = append(b, c)
			continue
		}
		if i+2 >= len(t) {
			return "", errKey
		}
		hi, lo := natssubject.Unhex(t[i+1]), natssubject.Unhex(t[i+2])
		if hi < 0 || lo < 0 {
			return "", errKey
		}
		b = append(b, byte(hi<<4|lo))
		i += 2
	}
	return string(b), nil
}

// stateKey is the KV key of kind for node and, but for kindNode, item (a
// connection id or an organisation id).
func stateKey(kind, node, item string) string {
	b := make([]byte, 0, 4+len(node)+len(item))
	b = append(b, kind...)
	b = append(b, '.')
	b = appendKeyToken(b, node)
	if kind != kindNode {
		b = append(b, '.')
		b = appendKeyToken(b, item)
	}
	return string(b)
}

// parseStateKey reverses stateKey.
func parseStateKey(key string) (kind, node, item string, err error) {
	parts := strings.Split(key, ".")
	want := 3
	if parts[0] == kindNode {
		want = 2
	}
	if len(parts) != want || parts[0] != kindNode && parts[0] != kindPresence && parts[0] != kindConns {
		return "", "", "", errKey
	}
	if node, err = parseKeyToken(parts[1]); err != nil || node == "" {
		return "", "", "", errKey
	}
	if want == 3 {
		if item, err = parseKeyToken(parts[2]); err != nil {
			return "", "", "", errKey
		}
	}
	return parts[0], node, item, nil
}
