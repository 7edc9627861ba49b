package server

import (
	"errors"
	"fmt"
	"testing"
	"unicode/utf8"

	"github.com/tinylib/msgp/msgp"
)

// strictDecode decodes a server frame as the strictest SDK decoder does
// (Python's msgpack.unpackb with raw=False and strict_map_key=True, the Go
// SDK's typed fields): it fails the test unless payload is exactly one
// map whose keys are str, every str (keys and values, however deep) is
// valid UTF-8, and nothing is left over. Integers come back as int64 or
// uint64, floats as float64, bin as []byte.
func strictDecode(t testing.TB, payload []byte) map[string]any {
	t.Helper()
	v, rest, err := strictValue(payload, 0)
	if err == nil && len(rest) != 0 {
		err = fmt.Errorf("%d bytes after the value", len(rest))
	}
	if err != nil {
		t.Fatalf("strict decode of % x: %v", head(payload), err)
	}
	m, ok := v.(map[string]any)
	if !ok {
		t.Fatalf("strict decode: %T, want a map", v)
	}
	return m
}

func head(b []byte) []byte { return b[:min(len(b), 64)] }

func strictValue(b []byte, depth int) (any, []byte, error) {
	if depth > 64 {
		return nil, b, errors.New("nested too deep")
	}
	switch msgp.NextType(b) {
	case msgp.StrType:
		s, rest, err := msgp.ReadStringZC(b)
		if err != nil {
			return nil, b, err
		}
		if !utf8.Valid(s) {
			return nil, b, fmt.Errorf("str %q is not valid UTF-8", head(s))
		}
		return string(s), rest, nil
	case msgp.MapType:
		n, rest, err := msgp.ReadMapHeaderBytes(b)
		if err != nil {
			return nil, b, err
		}
		m := make(map[string]any, n)
		for i := uint32(0); i < n; i++ {
			if msgp.NextType(rest) != msgp.StrType {
				return nil, b, fmt.Errorf("map key of type %v, want str", msgp.NextType(rest))
			}
			var k, v any
			if k, rest, err = strictValue(rest, depth+1); err != nil {
				return nil, b, err
			}
			if v, rest, err = strictValue(rest, depth+1); err != nil {
				return nil, b, fmt.Errorf("%q: %w", k, err)
			}
			m[k.(string)] = v
		}
		return m, rest, nil
	case msgp.ArrayType:
		n, rest, err := msgp.ReadArrayHeaderBytes(b)
		if err != nil {
			return nil, b, err
		}
		a := make([]any, n)
		for i := range a {
			if a[i], rest, err = strictValue(rest, depth+1); err != nil {
				return nil, b, err
			}
		}
		return a, rest, nil
	case msgp.ExtensionType, msgp.InvalidType:
		return nil, b, fmt.Errorf("type %v: the server never sends it", msgp.NextType(b))
	}
	return readScalar(b)
}

// readScalar reads a nil, bool, number or bin.
func readScalar(b []byte) (any, []byte, error) {
	switch msgp.NextType(b) {
	case msgp.NilType:
		rest, err := msgp.ReadNilBytes(b)
		return nil, rest, err
	case msgp.BoolType:
		return msgp.ReadBoolBytes(b)
	case msgp.IntType:
		return msgp.ReadInt64Bytes(b)
	case msgp.UintType:
		return msgp.ReadUint64Bytes(b)
	case msgp.Float64Type:
		return msgp.ReadFloat64Bytes(b)
	case msgp.Float32Type:
		f, rest, err := msgp.ReadFloat32Bytes(b)
		return float64(f), rest, err
	case msgp.BinType:
		return msgp.ReadBytesBytes(b, nil)
	}
	return nil, b, fmt.Errorf("unexpected type %v", msgp.NextType(b))
}

// TestStrictDecodeRefusesWhatPythonRefuses: the strict decoder is as strict
// as the Python SDK's: a str that is not UTF-8 and an int map key fail it.
func TestStrictDecodeRefusesWhatPythonRefuses(t *testing.T) {
	for name, b := range map[string][]byte{
		"str not UTF-8": {0x81, 0xa1, 'k', 0xa2, 0xff, 0xfe},
		"int map key":   {0x81, 0x01, 0xa1, 'v'},
		"trailing byte": {0x80, 0xc0},
	} {
		if _, rest, err := strictValue(b, 0); err == nil && len(rest) == 0 {
			t.Errorf("%s: decoded", name)
		}
	}
	if _, rest, err := strictValue([]byte{0x82, 0xa1, 'k', 0xc4, 0x01, 0xff, 0xa1, 'n', 0xcd, 0x01, 0x00}, 0); err != nil || len(rest) != 0 {
		t.Errorf("a valid map: %v, %d left", err, len(rest))
	}
}
