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
