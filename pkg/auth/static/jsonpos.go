package static

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// describeJSONError turns a decoding error into a reason that names the line
// and column of the problem when encoding/json reports an offset (D-1).
// Lines and columns are 1-based; columns count characters, not bytes.
func describeJSONError(data []byte, err error) string {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		pos := int(se.Offset)
		if !strings.HasPrefix(se.Error(), "unexpected end") && pos > 0 {
			pos-- // Offset is just past the offending byte
		}
		return fmt.Sprintf("%s: %v", position(data, pos), se)
	}
	return err.Error()
}

// position renders byte offset pos of data as "line L, column C".
func position(data []byte, pos int) string {
	line, col := lineCol(data, pos)
	return fmt.Sprintf("line %d, column %d", line, col)
}

// lineCol returns the 1-based line and column of byte offset pos in data.
func lineCol(data []byte, pos int) (line, col int) {
	pos = min(max(pos, 0), len(data))
	head := data[:pos]
	line = bytes.Count(head, []byte{'\n'}) + 1
	start := bytes.LastIndexByte(head, '\n') + 1
	return line, utf8.RuneCount(head[start:]) + 1
}

// jsonType names the JSON type of a value decoded with UseNumber, for
// warnings and errors.
func jsonType(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case json.Number:
		return "a number"
	case bool:
		return "a boolean"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	default:
		return fmt.Sprintf("%T", v)
	}
}

// rawType names the JSON type of an undecoded value from its first byte.
func rawType(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return "empty"
	}
	switch raw[0] {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	default:
		return "a number"
	}
}

// decodeNumbers decodes raw into v keeping numbers as json.Number.
func decodeNumbers(raw json.RawMessage, v any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	return dec.Decode(v)
}

// orderedMember is one member of a JSON object, in file order.
type orderedMember struct {
	Key   string
	Value json.RawMessage
}

// orderedObject splits a JSON object into its members in file order. raw
// must be a syntactically valid object. A key that appears twice keeps the
// position of its first appearance and the value of its last, as
// encoding/json keeps the last value.
func orderedObject(raw json.RawMessage) ([]orderedMember, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if _, err := dec.Token(); err != nil { // '{'
		return nil, err
	}
	var out []orderedMember
	seen := map[string]int{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key, _ := tok.(string)
		var val json.RawMessage
		if err := dec.Decode(&val); err != nil {
			return nil, err
		}
		if i, ok := seen[key]; ok {
			out[i].Value = val
			continue
		}
		seen[key] = len(out)
		out = append(out, orderedMember{Key: key, Value: val})
	}
	return out, nil
}
