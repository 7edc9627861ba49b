package wire

import (
	"bytes"
	"errors"
	"testing"

	"github.com/tinylib/msgp/msgp"
)

// raw is msgpack that enc copies verbatim.
type raw []byte

// bin is a string that enc writes as msgpack bin instead of str.
type bin string

// kv is an ordered map for enc: key, value, key, value, ...
type kv []any

// enc encodes v as msgpack, keeping the order of kv maps and []any arrays.
func enc(v any) []byte { return appendVal(nil, v) }

func appendVal(b []byte, v any) []byte {
	switch v := v.(type) {
	case raw:
		return append(b, v...)
	case bin:
		return msgp.AppendBytes(b, []byte(v))
	case []any:
		b = msgp.AppendArrayHeader(b, uint32(len(v)))
		for _, e := range v {
			b = appendVal(b, e)
		}
		return b
	case kv:
		b = msgp.AppendMapHeader(b, uint32(len(v)/2))
		for _, e := range v {
			b = appendVal(b, e)
		}
		return b
	}
	out, err := msgp.AppendIntf(b, v)
	if err != nil {
		panic(err)
	}
	return out
}

// cat concatenates byte slices.
func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

// repeat returns n copies of p.
func repeat(p []byte, n int) []byte { return bytes.Repeat(p, n) }

// nested returns depth single-element arrays around inner.
func nested(depth int, inner []byte) []byte {
	return cat(repeat([]byte{0x91}, depth), inner)
}

// errString renders err for table comparisons: "" for nil, "ErrNotMap",
// the Type and Reason of a *DecodeError, else the message.
func errString(err error) string {
	var de *DecodeError
	switch {
	case err == nil:
		return ""
	case err == ErrNotMap:
		return "ErrNotMap"
	case errors.As(err, &de):
		if de.Type != "" {
			return "[" + de.Type + "] " + de.Reason
		}
		return de.Reason
	}
	return err.Error()
}

// jsonOf renders msgpack as JSON for failure messages and golden files.
func jsonOf(t testing.TB, b []byte) string {
	t.Helper()
	var buf bytes.Buffer
	if rest, err := msgp.UnmarshalAsJSON(&buf, b); err != nil || len(rest) != 0 {
		t.Fatalf("msgpack % x does not render as JSON: %v (%d bytes left)", b, err, len(rest))
	}
	return buf.String()
}

// depthOf returns how deep maps and arrays nest in the msgpack value at the
// start of b (0 for a scalar, 1 for [1] or {}) and the bytes after it. It
// recurses: it is the reference for the iterative checks, on test inputs.
func depthOf(b []byte) (int, []byte, error) {
	var n uint32
	var err error
	rest := b
	switch msgp.NextType(b) {
	case msgp.MapType:
		n, rest, err = msgp.ReadMapHeaderBytes(b)
		n *= 2
	case msgp.ArrayType:
		n, rest, err = msgp.ReadArrayHeaderBytes(b)
	default:
		rest, err = msgp.Skip(b)
		return 0, rest, err
	}
	if err != nil {
		return 0, rest, err
	}
	deepest := 0
	for range n {
		var d int
		if d, rest, err = depthOf(rest); err != nil {
			return 0, rest, err
		}
		deepest = max(deepest, d)
	}
	return deepest + 1, rest, nil
}

// frameDepths measures the msgpack frame b as Decode bounds it: data is the
// deepest value of a top-level "data" key (str or bin), envelope the depth
// of the frame with those values left out (the top-level map is level 1).
// rest is what follows the frame's first value.
func frameDepths(b []byte) (envelope, data int, rest []byte, err error) {
	if msgp.NextType(b) != msgp.MapType {
		envelope, rest, err = depthOf(b)
		return envelope, 0, rest, err
	}
	n, rest, err := msgp.ReadMapHeaderBytes(b)
	if err != nil {
		return 0, 0, rest, err
	}
	envelope = 1
	for range n {
		key := rest
		var d int
		if d, rest, err = depthOf(rest); err != nil {
			return 0, 0, rest, err
		}
		envelope = max(envelope, d+1)
		s, _, isStr := readStr(key)
		isData := isStr && string(s) == "data"
		if d, rest, err = depthOf(rest); err != nil {
			return 0, 0, rest, err
		}
		if isData {
			data = max(data, d)
		} else {
			envelope = max(envelope, d+1)
		}
	}
	return envelope, data, rest, nil
}

// deepData returns a msgpack value nesting depth levels, one-entry maps
// {"k": ...} and one-element arrays taking turns, around the string "leaf".
func deepData(depth int) []byte {
	var b []byte
	for i := range depth {
		if i%2 == 0 {
			b = append(b, 0x81, 0xa1, 'k')
		} else {
			b = append(b, 0x91)
		}
	}
	return append(b, 0xa4, 'l', 'e', 'a', 'f')
}
