package admin_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/NoLagApp/kraken/pkg/admin"
	"github.com/NoLagApp/kraken/pkg/disconnect"
)

// recordingMux records the patterns Register adds.
type recordingMux struct{ patterns []string }

func (m *recordingMux) Handle(p string, _ http.Handler) { m.patterns = append(m.patterns, p) }

// spec is the part of openapi.json the test reads.
type spec struct {
	Paths map[string]map[string]struct {
		Responses map[string]struct {
			Ref     string `json:"$ref"`
			Content map[string]struct {
				Schema map[string]any `json:"schema"`
			} `json:"content"`
		} `json:"responses"`
	} `json:"paths"`
	Components struct {
		Schemas map[string]map[string]any `json:"schemas"`
	} `json:"components"`
}

func loadSpec(t *testing.T) spec {
	t.Helper()
	data, err := os.ReadFile("openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	var s spec
	if err := json.Unmarshal(data, &s); err != nil {
		t.Fatal(err)
	}
	return s
}

// The OpenAPI document lists exactly the routes Register serves, and the
// answers of a live node match the schemas it gives for them: every
// required field present, every field of the documented type.
func TestOpenAPIMatchesTheHandlers(t *testing.T) {
	s := loadSpec(t)
	var documented []string
	for path, methods := range s.Paths {
		for m := range methods {
			documented = append(documented, strings.ToUpper(m)+" "+path)
		}
	}
	var mux recordingMux
	admin.New(startNode(t, nodeOptions{}).n, admin.Config{}).Register(&mux)
	var served []string
	for _, p := range mux.patterns {
		if p != "/api/" && p != "GET /status" { // the catch-all answering 404; the page, HTML
			served = append(served, p)
		}
	}
	sort.Strings(documented)
	sort.Strings(served)
	if fmt.Sprint(documented) != fmt.Sprint(served) {
		t.Fatalf("documented routes %v\nserved routes     %v", documented, served)
	}

	drained := make(chan bool, 1)
	tn := startNode(t, nodeOptions{secret: "k", drain: func(exit bool) error { drained <- exit; return nil }})
	bob := tn.client(t, "dev-token-bob")
	bob.Send("type", "subscribe", "topic", "demo/general/spec")
	bob.ExpectType("subscribed")
	bob.Send("type", "presence", "roomId", "general", "data", "here")
	bob.ExpectFields("type", "presence", "event", "join")
	checks := []struct {
		method, path string
		body         any
	}{
		{"GET", "/api/connections", nil},
		{"GET", "/api/connections?limit=0", nil},
		{"GET", "/api/topics", nil},
		{"GET", "/api/presence", nil},
		{"GET", "/api/presence?room=general", nil},
		{"GET", "/api/presence?room=none", nil},
		{"GET", "/api/info", nil},
		{"POST", "/api/disconnect", map[string]any{"actor": "nobody"}},
		{"POST", "/api/disconnect", map[string]any{}},
		{"POST", "/api/revoke", map[string]any{"actor": "nobody"}},
		{"POST", "/api/drain", nil},
		{"GET", "/api/openapi.json", nil},
	}
	for _, c := range checks {
		status, body := tn.call(t, c.method, c.path, c.body)
		route := strings.SplitN(c.path, "?", 2)[0]
		op, ok := s.Paths[route][strings.ToLower(c.method)]
		if !ok {
			t.Fatalf("%s %s: not documented", c.method, route)
		}
		resp, ok := op.Responses[strconv.Itoa(status)]
		if !ok {
			t.Errorf("%s %s: status %d not documented (%s)", c.method, c.path, status, body)
			continue
		}
		schema := map[string]any{"$ref": resp.Ref}
		if resp.Ref == "#/components/responses/Error" {
			schema = map[string]any{"$ref": "#/components/schemas/Error"}
		} else if ct, ok := resp.Content["application/json"]; ok {
			schema = ct.Schema
		}
		var v any
		if err := json.Unmarshal(body, &v); err != nil {
			t.Errorf("%s %s: %v", c.method, c.path, err)
			continue
		}
		if err := s.check(schema, v, "$"); err != nil {
			t.Errorf("%s %s (%d): %v\n%s", c.method, c.path, status, err, body)
		}
	}
	// The codes an operator may choose are the table's.
	enum := s.Components.Schemas["DisconnectRequest"]["properties"].(map[string]any)["code"].(map[string]any)["enum"].([]any)
	var documentedCodes, codes []int
	for _, c := range enum {
		documentedCodes = append(documentedCodes, int(c.(float64)))
	}
	for c := range disconnect.OperatorCodes {
		codes = append(codes, int(c))
	}
	sort.Ints(documentedCodes)
	sort.Ints(codes)
	if fmt.Sprint(documentedCodes) != fmt.Sprint(codes) {
		t.Errorf("documented codes %v, disconnect.OperatorCodes %v", documentedCodes, codes)
	}
	// A refusal that the check must catch: the validator itself works.
	if err := s.check(map[string]any{"$ref": "#/components/schemas/Connection"}, map[string]any{"node": "x"}, "$"); err == nil {
		t.Fatal("a connection with only a node passed the schema")
	}
}

// check reports the first way v breaks schema.
func (s spec) check(schema map[string]any, v any, at string) error {
	if ref, ok := schema["$ref"].(string); ok {
		name, found := strings.CutPrefix(ref, "#/components/schemas/")
		sub, ok := s.Components.Schemas[name]
		if !found || !ok {
			return fmt.Errorf("%s: unknown $ref %q", at, ref)
		}
		return s.check(sub, v, at)
	}
	typ, _ := schema["type"].(string)
	switch typ {
	case "object":
		m, ok := v.(map[string]any)
		if !ok {
			return fmt.Errorf("%s: %T, want an object", at, v)
		}
		if req, ok := schema["required"].([]any); ok {
			for _, r := range req {
				if _, ok := m[r.(string)]; !ok {
					return fmt.Errorf("%s: required field %q missing", at, r)
				}
			}
		}
		props, _ := schema["properties"].(map[string]any)
		extra, _ := schema["additionalProperties"].(map[string]any)
		for k, val := range m {
			p, ok := props[k].(map[string]any)
			if !ok {
				if extra == nil {
					if props != nil {
						return fmt.Errorf("%s: field %q is not documented", at, k)
					}
					continue
				}
				p = extra
			}
			if err := s.check(p, val, at+"."+k); err != nil {
				return err
			}
		}
	case "array":
		a, ok := v.([]any)
		if !ok {
			return fmt.Errorf("%s: %T, want an array", at, v)
		}
		items, _ := schema["items"].(map[string]any)
		for i, e := range a {
			if err := s.check(items, e, fmt.Sprintf("%s[%d]", at, i)); err != nil {
				return err
			}
		}
	case "string":
		if _, ok := v.(string); !ok {
			return fmt.Errorf("%s: %T, want a string", at, v)
		}
	case "integer":
		if f, ok := v.(float64); !ok || f != float64(int64(f)) {
			return fmt.Errorf("%s: %v, want an integer", at, v)
		}
	case "number":
		if _, ok := v.(float64); !ok {
			return fmt.Errorf("%s: %T, want a number", at, v)
		}
	case "boolean":
		if _, ok := v.(bool); !ok {
			return fmt.Errorf("%s: %T, want a boolean", at, v)
		}
	}
	return nil
}
