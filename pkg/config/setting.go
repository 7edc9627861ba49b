package config

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/NoLagApp/kraken/pkg/edge"
)

// setting is one row of the table in vars.go: the documented Var plus how to
// parse a value into a Config and how to check it.
type setting struct {
	Var
	// set parses v into c; the error is the reason only (no name, no value).
	set func(c *Config, v string) error
	// check reports a range or choice problem of the value in c, naming the
	// variable; nil means the value is always acceptable.
	check func(c *Config) error
	// get renders the value in c as it would be written in the
	// environment (Config.Values, print-env).
	get func(c *Config) string
	// isBool makes the flag usable bare (--auth-allow-all).
	isBool bool
}

// flagName is the flag for an environment variable: lowercased, '_' -> '-'.
func flagName(env string) string {
	return strings.ReplaceAll(strings.ToLower(env), "_", "-")
}

func newSetting(env, def, help string) setting {
	return setting{Var: Var{Env: env, Flag: flagName(env), Default: def, Help: help}}
}

// parseInt parses a decimal integer, tolerating surrounding spaces.
func parseInt(v string) (int64, error) {
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	var ne *strconv.NumError
	if errors.As(err, &ne) && errors.Is(ne.Err, strconv.ErrRange) {
		return 0, errors.New("out of range")
	}
	if err != nil {
		return 0, errors.New("not an integer")
	}
	return n, nil
}

// rangeProblem describes why n is outside lo..hi, or "" when it is inside.
func rangeProblem(n, lo, hi int64) string {
	switch {
	case n < lo && lo == 0:
		return "must not be negative"
	case n < lo:
		return fmt.Sprintf("must be at least %d", lo)
	case n > hi:
		return fmt.Sprintf("out of range (%d..%d)", lo, hi)
	}
	return ""
}

// intSetting is an integer in lo..hi.
func intSetting(env, def, help string, field func(*Config) *int, lo, hi int) setting {
	s := newSetting(env, def, help)
	s.set = func(c *Config, v string) error {
		n, err := parseInt(v)
		if err != nil {
			return err
		}
		if n < math.MinInt || n > math.MaxInt {
			return errors.New("out of range")
		}
		*field(c) = int(n)
		return nil
	}
	s.get = func(c *Config) string { return strconv.Itoa(*field(c)) }
	s.check = func(c *Config) error {
		n := *field(c)
		if p := rangeProblem(int64(n), int64(lo), int64(hi)); p != "" {
			return &fieldError{msg: fmt.Sprintf("%s=%d: %s", env, n, p)}
		}
		return nil
	}
	return s
}

// cappedIntSetting is an integer in lo..ceiling where larger input values are
// lowered to ceiling instead of being refused.
func cappedIntSetting(env, def, help string, field func(*Config) *int, lo, ceiling int) setting {
	s := intSetting(env, def, help, field, lo, ceiling)
	set := s.set
	s.set = func(c *Config, v string) error {
		if err := set(c, v); err != nil {
			return err
		}
		*field(c) = min(*field(c), ceiling)
		return nil
	}
	return s
}

// maxSeconds is the largest whole number of seconds a time.Duration holds.
const maxSeconds = math.MaxInt64 / int64(time.Second)

// secondsSetting is a whole number of seconds, at least lo.
func secondsSetting(env, def, help string, field func(*Config) *time.Duration, lo int64) setting {
	s := newSetting(env, def, help)
	s.set = func(c *Config, v string) error {
		n, err := parseInt(v)
		if err != nil {
			return err
		}
		if n > maxSeconds || n < -maxSeconds {
			return errors.New("out of range")
		}
		*field(c) = time.Duration(n) * time.Second
		return nil
	}
	s.get = func(c *Config) string { return strconv.FormatInt(int64(*field(c)/time.Second), 10) }
	s.check = func(c *Config) error {
		d := *field(c)
		if d < time.Duration(lo)*time.Second {
			secs := strconv.FormatFloat(d.Seconds(), 'f', -1, 64)
			return &fieldError{msg: fmt.Sprintf("%s=%s: %s", env, secs, rangeProblem(-1, lo, maxSeconds))}
		}
		return nil
	}
	return s
}

// stringSetting is free text; an empty value means def when emptyIsDefault.
func stringSetting(env, def, help string, field func(*Config) *string, emptyIsDefault bool) setting {
	s := newSetting(env, def, help)
	s.set = func(c *Config, v string) error {
		if v == "" && emptyIsDefault {
			v = def
		}
		*field(c) = v
		return nil
	}
	s.get = func(c *Config) string { return *field(c) }
	return s
}

// secretSetting is a stringSetting whose value print-env masks.
func secretSetting(env, help string, field func(*Config) *string) setting {
	s := stringSetting(env, "", help, field, false)
	s.Secret = true
	return s
}

// boolSetting takes exactly "true" or "false". The original broker counted
// any value but "true" as off (wire-reference.md §9); here any other value is an
// error, so RECORD_MESSAGES=1 or TRUE is reported instead of silently
// switching the setting off.
func boolSetting(env, def, help string, field func(*Config) *bool) setting {
	s := newSetting(env, def, help)
	s.set = func(c *Config, v string) error {
		switch v {
		case "true":
			*field(c) = true
		case "false":
			*field(c) = false
		default:
			return errors.New("must be true or false")
		}
		return nil
	}
	s.get = func(c *Config) string { return strconv.FormatBool(*field(c)) }
	s.isBool = true
	return s
}

// choiceSetting is one of choices, matched without regard to case or
// surrounding spaces. aliases map accepted spellings to a choice;
// unavailable values are known but not built.
func choiceSetting(env, def, help string, field func(*Config) *string, choices []string, aliases map[string]string, unavailable ...string) setting {
	s := newSetting(env, def, help)
	s.set = func(c *Config, v string) error {
		v = strings.ToLower(strings.TrimSpace(v))
		if a, ok := aliases[v]; ok {
			v = a
		}
		*field(c) = v
		return nil
	}
	s.get = func(c *Config) string { return *field(c) }
	s.check = func(c *Config) error {
		v := *field(c)
		for _, ch := range choices {
			if v == ch {
				return nil
			}
		}
		for _, u := range unavailable {
			if v == u {
				return &fieldError{msg: fmt.Sprintf("%s=%s is not available in this build", env, v)}
			}
		}
		want := append(append([]string{}, choices...), slices.Sorted(maps.Keys(aliases))...)
		return &fieldError{msg: fmt.Sprintf("%s=%q: unknown value (want %s)", env, v, strings.Join(want, ", "))}
	}
	return s
}

// addrSetting is a listen address host:port (host may be empty: every
// interface), or "off".
func addrSetting(env, def, help string, field func(*Config) *string) setting {
	s := stringSetting(env, def, help, field, true)
	s.check = func(c *Config) error {
		v := *field(c)
		if v == AddrOff {
			return nil
		}
		if _, err := splitAddr(v); err != "" {
			return &fieldError{msg: fmt.Sprintf("%s=%q: %s (want host:port, e.g. 127.0.0.1:9469, or off)", env, v, err)}
		}
		return nil
	}
	return s
}

// splitAddr returns the port of host:port, or why v is not one.
func splitAddr(v string) (int, string) {
	_, port, err := net.SplitHostPort(v)
	if err != nil {
		return 0, "not host:port"
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 0 || n > 65535 {
		return 0, "the port must be 0 to 65535"
	}
	return n, ""
}

// originsSetting is ALLOWED_ORIGINS, checked with edge.ParseOrigins.
func originsSetting() setting {
	return parsedSetting("ALLOWED_ORIGINS", "browser origins allowed to upgrade, comma-separated (https://app.example.com, https://*.example.com); empty allows every origin",
		func(c *Config) *string { return &c.AllowedOrigins }, func(v string) error { _, err := edge.ParseOrigins(v); return err })
}

// parsedSetting is a stringSetting without default whose value check
// accepts (an edge list parsed again where it is used).
func parsedSetting(env, help string, field func(*Config) *string, check func(string) error) setting {
	s := stringSetting(env, "", help, field, false)
	s.check = func(c *Config) error {
		if err := check(*field(c)); err != nil {
			return &fieldError{msg: fmt.Sprintf("%s=%s: %v", env, *field(c), err)}
		}
		return nil
	}
	return s
}

// PortOff is the value of an optional port setting left unset (WSS_PORT,
// MQTTS_PORT): that listener is off.
const PortOff = -1

// optionalPortSetting is a port that is off unless set: "" (the default)
// or "off" is PortOff, else 0..65535 (0: any free port).
func optionalPortSetting(env, help string, field func(*Config) *int) setting {
	s := newSetting(env, "", help)
	s.set = func(c *Config, v string) error {
		if v = strings.TrimSpace(v); v == "" || v == AddrOff {
			*field(c) = PortOff
			return nil
		}
		n, err := parseInt(v)
		if err != nil {
			return err
		}
		if n < 0 || n > 65535 {
			return errors.New("out of range (0..65535, or off)")
		}
		*field(c) = int(n)
		return nil
	}
	s.get = func(c *Config) string {
		if *field(c) == PortOff {
			return ""
		}
		return strconv.Itoa(*field(c))
	}
	return s
}

// Listeners is a set of kraken's listeners by name, as PROXY_PROTOCOL
// lists them: ws (the WebSocket port), wss (its TLS port), mqtt (the MQTT
// port), mqtts (its TLS port).
type Listeners struct{ WS, WSS, MQTT, MQTTS bool }

// listenerNames are the names of Listeners, in the order they are written.
var listenerNames = []string{"ws", "wss", "mqtt", "mqtts"}

// fields returns pointers to the members of l, in listenerNames' order.
func (l *Listeners) fields() []*bool { return []*bool{&l.WS, &l.WSS, &l.MQTT, &l.MQTTS} }

// String lists the listeners in l, comma-separated ("ws,mqtt"), "" for none.
func (l Listeners) String() string {
	var out []string
	for i, on := range l.fields() {
		if *on {
			out = append(out, listenerNames[i])
		}
	}
	return strings.Join(out, ",")
}

// ParseListeners parses a comma-separated list of listener names (ws, wss,
// mqtt, mqtts; any case, spaces ignored; "" for none). The error names the
// first unknown one.
func ParseListeners(v string) (Listeners, error) {
	var l Listeners
	fields := l.fields()
	for _, name := range strings.Split(v, ",") {
		name = strings.ToLower(strings.TrimSpace(name))
		if name == "" {
			continue
		}
		i := slices.Index(listenerNames, name)
		if i < 0 {
			return Listeners{}, fmt.Errorf("unknown listener %q (want a comma-separated list of %s)", name, strings.Join(listenerNames, ", "))
		}
		*fields[i] = true
	}
	return l, nil
}

// proxyProtocolSetting is PROXY_PROTOCOL, a list of listeners.
func proxyProtocolSetting() setting {
	s := newSetting("PROXY_PROTOCOL", "", "listeners whose connections begin with a PROXY protocol v1 or v2 header giving the client's address, comma-separated among ws, wss, mqtt, mqtts; only behind a proxy that always sends one; empty = none")
	s.set = func(c *Config, v string) error {
		l, err := ParseListeners(v)
		c.ProxyProtocol = l
		return err
	}
	s.get = func(c *Config) string { return c.ProxyProtocol.String() }
	return s
}

// trustedProxiesSetting is TRUSTED_PROXIES, checked with
// edge.ParseTrustedProxies.
func trustedProxiesSetting() setting {
	return parsedSetting("TRUSTED_PROXIES", "proxies whose Forwarded / X-Forwarded-For headers give the client's address on the WebSocket port, comma-separated CIDR networks or addresses (10.0.0.0/8, 192.0.2.7); empty trusts none",
		func(c *Config) *string { return &c.TrustedProxies }, func(v string) error { _, err := edge.ParseTrustedProxies(v); return err })
}
