package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"strings"

	"github.com/tinylib/msgp/msgp"
)

// DecodeJSON decodes a text frame (wire-reference.md §1.3; decisions.md
// OQ-45): text must hold exactly one JSON value, which is converted to
// msgpack appended to scratch and then passed to Decode. It returns scratch
// grown by the msgpack; c.Data and c.Filters.Raw alias it, so the caller keeps
// it for as long as it uses c and may reuse it (as scratch[:0]) afterwards.
// On a JSON error it returns scratch unchanged and c reset as by Decode.
//
// Conversion: JSON object key order is kept, strings become str, integers
// become msgpack ints in their shortest encoding (the unsigned family for
// non-negative values, as the SDKs' encoders write them),
// other numbers float64, true/false/null the msgpack literals. Maps and
// arrays get the shortest header for their size.
//
// Errors: text that is not exactly one JSON value (including empty or blank
// text, trailing data, and numbers out of the float64 range) gives a
// *DecodeError whose Reason starts with "invalid json: "; the caller answers
// it with ErrInvalidJSON and never closes the connection (OQ-45). Nesting
// has Decode's two bounds: the value of a top-level "data" key may nest
// MaxDataDepth levels counted from itself ("data nesting deeper than 128"),
// the rest MaxDepth levels, the outermost value being level 1 ("envelope
// nesting deeper than 32"). All other errors are Decode's.
func DecodeJSON(text []byte, c *Command, scratch []byte) ([]byte, error) {
	start := len(scratch)
	out, err := ConvertJSON(scratch, text)
	if err != nil {
		c.resetWithDefaults()
		return out, err
	}
	return out, Decode(out[start:], c)
}

// ConvertJSON appends the MessagePack form of the single JSON value in text
// to scratch (the conversion step of DecodeJSON, OQ-45). Invalid JSON, or
// nesting past MaxDepth or MaxDataDepth (see DecodeJSON), is a *DecodeError
// and leaves scratch as it was.
func ConvertJSON(scratch, text []byte) ([]byte, error) {
	start := len(scratch)
	out, err := appendJSON(scratch, text)
	if err != nil {
		return out[:start], err
	}
	return out, nil
}

// container is an open JSON object or array during conversion: where its
// reserved 5-byte msgpack header starts and how many keys plus values it
// holds so far.
type container struct {
	at     int
	tokens uint32
	isMap  bool
}

// jsonHeaderReserve is the header space reserved for a container: the size
// of a map32 or array32 header.
const jsonHeaderReserve = 5

// appendJSON converts the single JSON value in text to msgpack appended to
// out. It does not recurse: containers are tracked on a fixed stack of
// 1+MaxDataDepth entries (the envelope and a `data` value at the bound),
// their headers reserved and then shrunk to the shortest form when they
// close.
func appendJSON(out, text []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(text))
	dec.UseNumber()
	var fixed [1 + MaxDataDepth]container
	stack := fixed[:0]
	// limit is how many containers may be open before another one opens:
	// MaxDepth in the envelope, 1+MaxDataDepth inside the value of a
	// top-level "data" key. dataKey reports that the token just read was
	// that key.
	limit, dataKey := MaxDepth, false
	for started := false; !started || len(stack) > 0; started = true {
		tok, err := dec.Token()
		if err != nil {
			return out, jsonError(err, !started)
		}
		dataValue := false
		if len(stack) > 0 {
			top := &stack[len(stack)-1]
			top.tokens++
			if len(stack) == 1 && top.isMap {
				// Odd counts are keys (or the closing brace).
				dataValue = dataKey && top.tokens%2 == 0
				dataKey = top.tokens%2 == 1 && tok == "data"
			}
		}
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '{', '[':
				if dataValue {
					limit = 1 + MaxDataDepth
				}
				if len(stack) >= limit {
					reason := reasonEnvelopeTooDeep
					if limit > MaxDepth {
						reason = reasonDataTooDeep
					}
					return out, &DecodeError{Reason: reason}
				}
				stack = append(stack, container{at: len(out), isMap: t == '{'})
				out = append(out, make([]byte, jsonHeaderReserve)...)
			default: // '}' or ']': the closing token is not an element
				top := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				top.tokens--
				out = closeContainer(out, top)
				if len(stack) == 1 {
					limit = MaxDepth // back in the envelope
				}
			}
		case string:
			out = msgp.AppendString(out, t)
		case json.Number:
			if out, err = appendJSONNumber(out, t); err != nil {
				return out, err
			}
		case bool:
			out = msgp.AppendBool(out, t)
		case nil:
			out = msgp.AppendNil(out)
		}
	}
	if _, err := dec.Token(); err != io.EOF {
		if err == nil {
			return out, &DecodeError{Reason: "invalid json: trailing data after the value"}
		}
		return out, jsonError(err, false)
	}
	return out, nil
}

// closeContainer writes the shortest header for the container c, whose body
// follows its reserved header at the end of out, and moves the body up.
func closeContainer(out []byte, c container) []byte {
	var buf [jsonHeaderReserve]byte
	var hdr []byte
	if c.isMap {
		hdr = msgp.AppendMapHeader(buf[:0], c.tokens/2)
	} else {
		hdr = msgp.AppendArrayHeader(buf[:0], c.tokens)
	}
	n := copy(out[c.at:], hdr)
	body := c.at + jsonHeaderReserve
	n += copy(out[c.at+n:], out[body:])
	return out[:c.at+n]
}

// appendJSONNumber appends an integer literal as a msgpack int in its
// shortest encoding (see appendInt; uint64 above the int64 range) and any
// other number as float64.
func appendJSONNumber(out []byte, n json.Number) ([]byte, error) {
	s := n.String()
	if !strings.ContainsAny(s, ".eE") {
		if i, err := strconv.ParseInt(s, 10, 64); err == nil {
			return appendInt(out, i), nil
		}
		if u, err := strconv.ParseUint(s, 10, 64); err == nil {
			return msgp.AppendUint64(out, u), nil
		}
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return out, &DecodeError{Reason: "invalid json: number " + s + " out of range"}
	}
	return msgp.AppendFloat64(out, f), nil
}

// jsonError turns a json.Decoder error into a *DecodeError.
func jsonError(err error, first bool) error {
	switch {
	case first && err == io.EOF:
		return &DecodeError{Reason: "invalid json: empty text"}
	case err == io.EOF || errors.Is(err, io.ErrUnexpectedEOF):
		return &DecodeError{Reason: "invalid json: unexpected end of input"}
	}
	return &DecodeError{Reason: "invalid json: " + err.Error()}
}
