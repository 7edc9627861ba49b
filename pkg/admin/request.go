package admin

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"unicode/utf8"
)

// What a request may carry, read strictly: an operator's typo must not
// widen or narrow an action without a word (a misspelt filter that is
// ignored would disconnect more than meant).

// maxBody bounds a request body, in bytes.
const maxBody = 64 << 10

// readBody decodes r's JSON body into v (a pointer to a struct) and
// reports whether it could; when not, it has answered: 413 for a body
// over maxBody, 400 with the reason for anything else that is not one JSON
// object of v's fields: invalid UTF-8, a field v does not have (field
// names are exact: JSON's usual case-insensitive match is not applied), a
// field given twice, a value of the wrong type, a second value.
func readBody(w http.ResponseWriter, r *http.Request, v any) bool {
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("the body is over %d bytes, the admin API's bound", maxBody))
		return false
	case err != nil:
		writeError(w, http.StatusBadRequest, "the body could not be read: "+err.Error())
		return false
	}
	if err := decodeStrict(data, v); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return false
	}
	return true
}

// decodeStrict is readBody's decoding.
func decodeStrict(data []byte, v any) error {
	if len(bytes.TrimSpace(data)) == 0 {
		return errors.New("the body is empty: send a JSON object")
	}
	if !utf8.Valid(data) {
		return errors.New("the body is not valid UTF-8")
	}
	allowed := jsonFields(v)
	dec := json.NewDecoder(bytes.NewReader(data))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return errors.New("the body is not a JSON object")
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return fmt.Errorf("the body is not the JSON object expected: %v", err)
		}
		key := tok.(string)
		if !slices.Contains(allowed, key) {
			return fmt.Errorf("unknown field %q: the fields are %s", key, strings.Join(allowed, ", "))
		}
		if seen[key] {
			return fmt.Errorf("field %q is given twice", key)
		}
		seen[key] = true
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return fmt.Errorf("the body is not the JSON object expected: %v", err)
		}
	}
	if _, err := dec.Token(); err != nil {
		return fmt.Errorf("the body is not the JSON object expected: %v", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errors.New("the body holds more than one JSON value")
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("the body is not the JSON object expected: %v", err)
	}
	return nil
}

// jsonFields returns the JSON names of the fields of the struct v points
// to.
func jsonFields(v any) []string {
	t := reflect.TypeOf(v).Elem()
	out := make([]string, 0, t.NumField())
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if name != "" && name != "-" {
			out = append(out, name)
		}
	}
	return out
}

// checkQuery answers 400 and reports false when r's query has a parameter
// not in allowed, or one given twice.
func checkQuery(w http.ResponseWriter, r *http.Request, allowed ...string) bool {
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil { // r.URL.Query() would drop the bad pair and widen a filter
		writeError(w, http.StatusBadRequest, "the query is malformed: "+err.Error())
		return false
	}
	for k, vs := range q {
		if !slices.Contains(allowed, k) {
			msg := fmt.Sprintf("unknown query parameter %q", k)
			if len(allowed) > 0 {
				msg += ": the parameters are " + strings.Join(allowed, ", ")
			}
			writeError(w, http.StatusBadRequest, msg)
			return false
		}
		if len(vs) > 1 {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("query parameter %q is given twice", k))
			return false
		}
	}
	return true
}

// routes are the API's routes by path, with their methods, for the
// answer to a path the API has with another method (405) or with a
// trailing slash (404 naming the path meant).
type routes map[string][]string

// add records the route of a ServeMux pattern, "METHOD /path".
func (rt routes) add(pattern string) {
	method, path, ok := strings.Cut(pattern, " ")
	if ok {
		rt[path] = append(rt[path], method)
	}
}

// notFound answers a request no route took.
func (rt routes) notFound(w http.ResponseWriter, r *http.Request) {
	if methods, ok := rt[r.URL.Path]; ok {
		w.Header().Set("Allow", strings.Join(methods, ", "))
		writeError(w, http.StatusMethodNotAllowed, fmt.Sprintf("%s %s: this path takes %s", r.Method, r.URL.Path,
			strings.Join(methods, " or ")))
		return
	}
	msg := "no admin API path " + r.Method + " " + r.URL.Path + ": see GET /api/openapi.json"
	if trimmed := strings.TrimRight(r.URL.Path, "/"); trimmed != r.URL.Path {
		if _, ok := rt[trimmed]; ok {
			msg = "no admin API path " + r.URL.Path + ": did you mean " + trimmed + " (no trailing slash)?"
		}
	}
	writeError(w, http.StatusNotFound, msg)
}
