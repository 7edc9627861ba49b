// Package edge holds the policies kraken applies at its edge, before a
// connection reaches the session protocol: which browser origins may
// upgrade (Origins), the connection limits (Limiter), and the client's
// address behind a proxy (ParseProxyHeader, TrustedProxies).
package edge

import (
	"bytes"
	"fmt"
	"net/url"
	"strings"
)

// Origins is a list of allowed browser origins for WebSocket upgrades
// (ALLOWED_ORIGINS, docs/SECURITY.md). An empty list allows every origin.
// Each pattern is an origin as browsers send it in the Origin header (RFC
// 6454 §7: scheme "://" host, and ":" port when it is not the scheme's
// default), compared case-insensitively; a host of the form "*.example.com"
// matches every subdomain of example.com at any depth, not example.com
// itself.
type Origins []originPattern

type originPattern struct {
	scheme, host, port string // lower case; host without the "*." of a wildcard
	wildcard           bool
}

// ParseOrigins parses a comma-separated list of origin patterns, e.g.
// "https://app.example.com, https://*.example.com, http://localhost:3000".
// Spaces around entries are ignored and an empty list gives nil (every
// origin allowed). The error names the first entry that is not a scheme
// and host with an optional port (no path, query, user or fragment).
func ParseOrigins(list string) (Origins, error) {
	return parseList(list, "origin", parseOrigin)
}

// parseList parses the comma-separated entries of list with parse, spaces
// around them ignored and empty ones skipped; nil for none. The error names
// the first entry parse refuses, as an entry of kind what.
func parseList[T any](list, what string, parse func(string) (T, error)) ([]T, error) {
	var out []T
	for _, raw := range strings.Split(list, ",") {
		raw = strings.TrimSpace(raw)
		if raw == "" {
			continue
		}
		p, err := parse(raw)
		if err != nil {
			return nil, fmt.Errorf("edge: %s %q: %w", what, raw, err)
		}
		out = append(out, p)
	}
	return out, nil
}

func parseOrigin(raw string) (originPattern, error) {
	wild := false
	candidate := raw
	if i := strings.Index(raw, "://*."); i > 0 {
		wild = true
		candidate = raw[:i+3] + raw[i+5:]
	}
	u, err := url.Parse(candidate)
	switch {
	case err != nil:
		return originPattern{}, err
	case u.Scheme == "" || u.Host == "":
		return originPattern{}, fmt.Errorf("want scheme://host[:port]")
	case u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" || u.Opaque != "":
		return originPattern{}, fmt.Errorf("an origin has no user, path, query or fragment")
	case strings.Contains(u.Hostname(), "*"):
		return originPattern{}, fmt.Errorf("a wildcard is only allowed as the first label, *.example.com")
	}
	return originPattern{scheme: strings.ToLower(u.Scheme), host: strings.ToLower(u.Hostname()),
		port: u.Port(), wildcard: wild}, nil
}

// Allowed reports whether origin, an Origin header's value, is allowed: it
// is when the list is empty or a pattern matches it. "null" (an opaque
// origin: a sandboxed frame, a file) matches no pattern.
func (o Origins) Allowed(origin []byte) bool {
	if len(o) == 0 {
		return true
	}
	scheme, rest, ok := bytes.Cut(bytes.TrimSpace(origin), []byte("://"))
	if !ok || len(rest) == 0 || bytes.ContainsAny(rest, "/?#@") {
		return false
	}
	host, port := rest, []byte(nil)
	if i := bytes.LastIndexByte(rest, ':'); i >= 0 && !bytes.HasSuffix(rest, []byte("]")) {
		host, port = rest[:i], rest[i+1:]
	}
	for _, p := range o {
		if !bytes.EqualFold(scheme, []byte(p.scheme)) || string(port) != p.port {
			continue
		}
		h := string(bytes.ToLower(bytes.TrimSuffix(bytes.TrimPrefix(host, []byte("[")), []byte("]"))))
		if !p.wildcard && h == p.host || p.wildcard && strings.HasSuffix(h, "."+p.host) {
			return true
		}
	}
	return false
}
