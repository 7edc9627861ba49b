package static

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"go.uber.org/zap"

	"github.com/NoLagApp/kraken/pkg/topic"
)

// Problem is one finding of Check, at a position in the token file.
type Problem struct {
	// Line and Column are 1-based (columns count characters); both are 0
	// when the problem concerns the whole file (it cannot be read).
	Line, Column int
	// Warning marks a finding that does not change what the file grants:
	// an unknown key, a rule without a permission, a repeated token.
	// Anything else is an error: what is written would not take effect as
	// written (a refused token, an ignored field, a rule granting nothing).
	Warning bool
	// Msg says what is wrong and what the broker does with it. It never
	// contains a token: entries are named by position and actorTokenId.
	Msg string
}

// String renders the problem as "line:column: error: msg" (or
// "warning:"), without the path.
func (p Problem) String() string {
	kind := "error"
	if p.Warning {
		kind = "warning"
	}
	if p.Line == 0 {
		return kind + ": " + p.Msg
	}
	return fmt.Sprintf("%d:%d: %s: %s", p.Line, p.Column, kind, p.Msg)
}

// Check validates the token file at path strictly, for `kraken
// check-config`: everything New would refuse, and everything New would
// accept while not doing what the file says (an unknown permission such
// as "readwrite", a grant pattern the broker's topic rules refuse, a field
// of the wrong type, an entry without an actorTokenId), each with its line
// and column. It returns the number of tokens the broker would serve from
// the file (entries with an actorTokenId string) and the problems in file
// order; the file is fit to serve as written when no problem is an error.
//
// Check and every reload of a running Static (ReloadFor) use the same
// validator, so a file Check finds an error in is never loaded by a
// reload: the tokens in force stay.
func Check(path string) (tokens int, problems []Problem) {
	data, err := os.ReadFile(path)
	if err != nil {
		reason := err
		var pe *fs.PathError
		if errors.As(err, &pe) {
			reason = pe.Err
		}
		return 0, []Problem{{Msg: fmt.Sprintf("cannot read %s: %v", path, reason)}}
	}
	problems = validate(data)
	if set, err := parseTokenFile(data, path, zap.NewNop()); err == nil {
		tokens = len(set.byToken)
	}
	return tokens, problems
}

// validate is the validator of the token file's contents, shared by Check
// and ReloadFor: JSON syntax, the top-level shape {"tokens": {...}}, every
// token entry, and every pattern against the broker's topic rules. It
// returns the problems in file order, with lines and columns.
func validate(data []byte) []Problem {
	data = bytes.TrimPrefix(data, utf8BOM)
	if err := json.Unmarshal(data, new(json.RawMessage)); err != nil {
		p := Problem{Msg: err.Error()}
		var se *json.SyntaxError
		if errors.As(err, &se) {
			pos := int(se.Offset)
			if !strings.HasPrefix(se.Error(), "unexpected end") && pos > 0 {
				pos--
			}
			p.Line, p.Column = lineCol(data, pos)
		}
		return []Problem{p}
	}
	c := &checker{data: data}
	c.top(newJSONParser(data).value())
	sort.SliceStable(c.probs, func(i, j int) bool { return c.probs[i].off < c.probs[j].off })
	out := make([]Problem, len(c.probs))
	for i, p := range c.probs {
		out[i] = p.Problem
		out[i].Line, out[i].Column = lineCol(data, p.off)
	}
	return out
}

// at renders the problem as "path:line:column: msg" ("path: msg" without a
// position), without its kind, for a reload's log line and error.
func (p Problem) at(path string) string {
	if p.Line == 0 {
		return path + ": " + p.Msg
	}
	return fmt.Sprintf("%s:%d:%d: %s", path, p.Line, p.Column, p.Msg)
}

// checker collects the problems of one file with their byte offsets.
type checker struct {
	data  []byte
	probs []struct {
		Problem
		off int
	}
}

func (c *checker) add(off int, warning bool, format string, args ...any) {
	c.probs = append(c.probs, struct {
		Problem
		off int
	}{Problem{Warning: warning, Msg: fmt.Sprintf(format, args...)}, off})
}

func (c *checker) errorf(n *jnode, format string, args ...any) { c.add(n.off, false, format, args...) }
func (c *checker) warnf(off int, format string, args ...any)   { c.add(off, true, format, args...) }

func (c *checker) top(root *jnode) {
	if root.kind != '{' {
		c.errorf(root, "the top-level value is %s, want an object with a \"tokens\" object", root.typeName())
		return
	}
	for _, k := range root.keys {
		if k.name != "tokens" && !strings.HasPrefix(k.name, "_") {
			c.warnf(k.off, "unknown top-level key %q is ignored (keys starting with _ are comments)", k.name)
		}
	}
	tokens := root.get("tokens")
	switch {
	case tokens == nil:
		c.errorf(root, "no \"tokens\" key: the file grants nothing; want {\"tokens\": {\"<token>\": {\"actorTokenId\": ...}}}")
		return
	case tokens.kind == 'z':
		c.errorf(tokens, "\"tokens\" is null: the file grants nothing; want an object of token entries")
		return
	case tokens.kind != '{':
		c.errorf(tokens, "\"tokens\" is %s, want an object", tokens.typeName())
		return
	}
	first := map[string]int{}
	for i, k := range tokens.keys {
		if j, dup := first[k.name]; dup {
			c.warnf(k.off, "token entry %d repeats the token of entry %d; the last one wins", i+1, j+1)
		} else {
			first[k.name] = i
		}
		c.entry(i+1, k.val)
	}
}

// entryKeys are the keys of a token entry, with their checks.
var entryKeys = map[string]func(c *checker, where string, n *jnode){
	"actorTokenId":         nil, // checked first, in entry
	"organizationId":       (*checker).str,
	"projectId":            (*checker).str,
	"actorType":            (*checker).str,
	"scopeSlug":            (*checker).str,
	"appId":                (*checker).str,
	"appName":              (*checker).str,
	"maxConnections":       (*checker).positiveInt,
	"maxMessageSizeBytes":  (*checker).positiveInt,
	"rateLimit":            (*checker).rate,
	"allowedTopics":        (*checker).rules,
	"activeSubscriptions":  (*checker).subscriptions,
	"allowedLobbies":       (*checker).lobbies,
	"persistentSession":    (*checker).boolean,
	"sessionExpirySeconds": (*checker).positiveInt,
}

func (c *checker) boolean(where string, n *jnode) {
	if n.kind != 't' && n.kind != 'f' && n.kind != 'z' {
		c.errorf(n, "%s is %s, want a boolean; it is ignored", where, n.typeName())
	}
}

func (c *checker) entry(i int, n *jnode) {
	where := fmt.Sprintf("token entry %d", i)
	if n.kind != '{' {
		c.errorf(n, "%s is %s, want an object; the token is refused", where, n.typeName())
		return
	}
	actor := n.get("actorTokenId")
	if actor == nil || actor.kind != '"' || actor.str == "" {
		at := n
		if actor != nil {
			at = actor
		}
		c.errorf(at, "%s has no actorTokenId string; the token is refused", where)
	} else {
		where += fmt.Sprintf(" (actorTokenId %q)", actor.str)
	}
	for _, k := range n.keys {
		check, known := entryKeys[k.name]
		switch {
		case !known && !strings.HasPrefix(k.name, "_"):
			c.warnf(k.off, "%s: unknown key %q is ignored", where, k.name)
		case check != nil && k.val.kind == '[':
			check(c, where+": "+k.name, k.val) // allowedTopics[2] ..., as parse.go words it
		case check != nil:
			check(c, where+": "+strconv.Quote(k.name), k.val)
		}
	}
}

// str checks a string field: null is absent, another type is ignored.
func (c *checker) str(where string, n *jnode) {
	if n.kind != '"' && n.kind != 'z' {
		c.errorf(n, "%s is %s, want a string; it is ignored", where, n.typeName())
	}
}

func (c *checker) positiveInt(where string, n *jnode) {
	if n.kind == 'z' {
		return
	}
	if n.kind == 'n' {
		if i, err := strconv.ParseInt(n.str, 10, 64); err == nil && i > 0 && int64(int(i)) == i {
			return
		}
	}
	c.errorf(n, "%s is %s, want an integer > 0; it is ignored", where, n.describe())
}

func (c *checker) rate(where string, n *jnode) {
	if n.kind == 'z' {
		return
	}
	if n.kind == 'n' {
		if f, err := strconv.ParseFloat(n.str, 64); err == nil && f > 0 && f <= maxRate {
			return
		}
	}
	c.errorf(n, "%s is %s, want a number > 0; it is ignored", where, n.describe())
}

// array checks that n is an array (or null) and returns its elements.
func (c *checker) array(where string, n *jnode) []*jnode {
	switch n.kind {
	case '[':
		return n.elems
	case 'z':
	default:
		c.errorf(n, "%s is %s, want an array; it is ignored", where, n.typeName())
	}
	return nil
}

// ruleKeys are the string keys of an allowedTopics rule besides permission.
var ruleKeys = map[string]bool{"pattern": true, "topic": true, "room_id": true, "room_slug": true,
	"roomName": true, "app_id": true, "app_name": true, "permission": true}

func (c *checker) rules(where string, n *jnode) {
	for i, r := range c.array(where, n) {
		at := fmt.Sprintf("%s[%d]", where, i)
		if r.kind != '{' {
			c.errorf(r, "%s is %s, want an object; the rule is dropped", at, r.typeName())
			continue
		}
		for _, k := range r.keys {
			switch {
			case !ruleKeys[k.name]:
				c.warnf(k.off, "%s: unknown key %q is ignored", at, k.name)
			case k.name != "permission":
				c.str(at+"."+k.name, k.val)
			}
		}
		perm := r.get("permission")
		switch pat := r.get("pattern"); {
		case pat != nil && pat.kind == '"':
			c.pattern(at+".pattern", pat, ruleGrantsNothing)
		case pat == nil || pat.kind == 'z':
			if perm != nil && perm.kind != 'z' {
				c.errorf(r, "%s has a permission but no pattern; the rule grants nothing", at)
			}
		}
		switch p := perm; {
		case p == nil || p.kind == 'z':
			c.warnf(r.off, "%s has no permission; the rule grants nothing", at)
		case p.kind != '"':
			c.errorf(p, "%s.permission is %s, want \"subscribe\", \"publish\" or \"pubSub\"; the rule grants nothing", at, p.typeName())
		case p.str != "subscribe" && p.str != "publish" && p.str != "pubSub":
			c.errorf(p, "%s.permission %q is not \"subscribe\", \"publish\" or \"pubSub\" (exact case); the rule grants nothing", at, p.str)
		}
	}
}

var subscriptionKeys = map[string]bool{"pattern": true, "name": true, "load_balance": true, "loadBalance": true,
	"load_balance_group": true, "loadBalanceGroup": true, "filters": true}

func (c *checker) subscriptions(where string, n *jnode) {
	for i, s := range c.array(where, n) {
		at := fmt.Sprintf("%s[%d]", where, i)
		switch s.kind {
		case '"':
			if s.str == "" {
				c.errorf(s, "%s is an empty pattern; it is dropped", at)
			} else {
				c.pattern(at, s, "it is never restored")
			}
			continue
		case '{':
		default:
			c.errorf(s, "%s is %s, want a string or an object; it is dropped", at, s.typeName())
			continue
		}
		hasPattern := false
		for _, k := range s.keys {
			switch k.name {
			case "pattern", "name":
				c.str(at+"."+k.name, k.val)
				hasPattern = hasPattern || (k.val.kind == '"' && k.val.str != "")
			case "load_balance", "loadBalance":
				if k.val.kind != 't' && k.val.kind != 'f' && k.val.kind != 'z' {
					c.errorf(k.val, "%s.%s is %s, want a boolean; it is ignored", at, k.name, k.val.typeName())
				}
			case "load_balance_group", "loadBalanceGroup":
				c.str(at+"."+k.name, k.val)
			case "filters":
				c.stringArray(at+".filters", k.val)
			default:
				if !subscriptionKeys[k.name] {
					c.warnf(k.off, "%s: unknown key %q is ignored", at, k.name)
				}
			}
		}
		switch p, n := s.get("pattern"), s.get("name"); {
		case !hasPattern:
			c.errorf(s, "%s has no pattern; it is dropped", at)
		case p != nil && p.kind == '"' && p.str != "": // pattern wins over name, as in parse_fields.go
			c.pattern(at+".pattern", p, "it is never restored")
		default:
			c.pattern(at+".name", n, "it is never restored")
		}
	}
}

func (c *checker) lobbies(where string, n *jnode) {
	for i, l := range c.array(where, n) {
		at := fmt.Sprintf("%s[%d]", where, i)
		if l.kind != '{' {
			c.errorf(l, "%s is %s, want an object; it is dropped", at, l.typeName())
			continue
		}
		for _, k := range l.keys {
			switch k.name {
			case "lobby_slug", "lobby_id":
				c.str(at+"."+k.name, k.val)
			case "rooms":
				c.stringArray(at+".rooms", k.val)
			default:
				c.warnf(k.off, "%s: unknown key %q is ignored", at, k.name)
			}
		}
		slug, id := l.get("lobby_slug"), l.get("lobby_id")
		if slug == nil || slug.kind != '"' || slug.str == "" || id == nil || id.kind != '"' || id.str == "" {
			c.errorf(l, "%s needs both lobby_slug and lobby_id strings; it is dropped", at)
		}
	}
}

// pattern checks a pattern string (a grant rule's, an active
// subscription's) against the broker's topic rules, those every subscribe
// is checked with (topic.ValidateSubscribe): not empty, at most
// topic.MaxTopicBytes bytes and topic.MaxTopicLevels levels, '+' and '#'
// only as whole levels and '#' only as the last one. effect says what the
// broker does with a pattern that breaks them.
func (c *checker) pattern(where string, n *jnode, effect string) {
	err := topic.ValidateSubscribe(n.str)
	if err == nil {
		return
	}
	shown := n.str
	if utf8.RuneCountInString(shown) > 40 {
		shown = string([]rune(shown)[:40]) + "…"
	}
	var why string
	switch {
	case errors.Is(err, topic.ErrEmpty):
		why = "is empty"
	case errors.Is(err, topic.ErrTooLong):
		why = fmt.Sprintf("%q is %d bytes, more than the %d a topic may have", shown, len(n.str), topic.MaxTopicBytes)
		effect = bounded(effect)
	case errors.Is(err, topic.ErrTooManyLevels):
		why = fmt.Sprintf("%q has %d levels, more than the %d a topic may have", shown, strings.Count(n.str, "/")+1, topic.MaxTopicLevels)
		effect = bounded(effect)
	case errors.Is(err, topic.ErrBadWildcard):
		why = fmt.Sprintf("%q misplaces a wildcard ('+' and '#' must be whole levels, '#' only the last)", shown)
	case errors.Is(err, topic.ErrNullByte):
		why = fmt.Sprintf("%q contains a null character", shown)
	default:
		why = fmt.Sprintf("%q is not a valid topic pattern (%v)", shown, err)
	}
	c.errorf(n, "%s %s; %s", where, why, effect)
}

// bounded is what a rule whose pattern breaks the length or depth bound
// grants: "+" levels and a last "#" can still match a few topics within
// the bounds, so "grants nothing" would overstate it.
func bounded(effect string) string {
	if effect == ruleGrantsNothing {
		return "no client can subscribe to it as written, and it grants at most the topics within the bounds that it matches"
	}
	return effect
}

// ruleGrantsNothing is what a rule with a pattern that cannot match any
// topic a client may use grants.
const ruleGrantsNothing = "the rule grants nothing"

// stringArray checks an array of strings.
func (c *checker) stringArray(where string, n *jnode) {
	for i, e := range c.array(where, n) {
		if e.kind != '"' {
			c.errorf(e, "%s[%d] is %s, want a string; it is dropped", where, i, e.typeName())
		}
	}
}

// jnode is one value of a JSON document with its byte offset.
type jnode struct {
	off   int
	kind  byte   // '{', '[', '"', 'n' (number), 't', 'f', 'z' (null)
	str   string // a string's value, a number's literal
	keys  []jkey
	elems []*jnode
}

type jkey struct {
	name string
	off  int // of the key
	val  *jnode
}

// get returns the value of the last member called name (encoding/json
// keeps the last of duplicate keys), or nil.
func (n *jnode) get(name string) *jnode {
	var v *jnode
	for _, k := range n.keys {
		if k.name == name {
			v = k.val
		}
	}
	return v
}

func (n *jnode) typeName() string {
	switch n.kind {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 'n':
		return "a number"
	case 't', 'f':
		return "a boolean"
	}
	return "null"
}

// describe renders a value for a message: numbers as themselves.
func (n *jnode) describe() string {
	if n.kind == 'n' {
		return n.str
	}
	return n.typeName()
}

// jsonParser builds jnodes from a document already known to be valid JSON.
type jsonParser struct {
	data []byte
	i    int
}

func newJSONParser(data []byte) *jsonParser { return &jsonParser{data: data} }

func (p *jsonParser) space() {
	for p.i < len(p.data) {
		switch p.data[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *jsonParser) value() *jnode {
	p.space()
	n := &jnode{off: p.i}
	if p.i >= len(p.data) {
		n.kind = 'z'
		return n
	}
	switch b := p.data[p.i]; b {
	case '{':
		n.kind = '{'
		p.i++
		for {
			p.space()
			if p.i >= len(p.data) || p.data[p.i] == '}' {
				p.i++
				return n
			}
			if p.data[p.i] == ',' {
				p.i++
				continue
			}
			off := p.i
			name := p.string()
			p.space()
			p.i++ // ':'
			n.keys = append(n.keys, jkey{name: name, off: off, val: p.value()})
		}
	case '[':
		n.kind = '['
		p.i++
		for {
			p.space()
			if p.i >= len(p.data) || p.data[p.i] == ']' {
				p.i++
				return n
			}
			if p.data[p.i] == ',' {
				p.i++
				continue
			}
			n.elems = append(n.elems, p.value())
		}
	case '"':
		n.kind = '"'
		n.str = p.string()
	case 't', 'f', 'n':
		n.kind = b
		if b == 'n' {
			n.kind = 'z' // null
		}
		for p.i < len(p.data) && p.data[p.i] >= 'a' && p.data[p.i] <= 'z' {
			p.i++
		}
	default:
		n.kind = 'n'
		start := p.i
		for p.i < len(p.data) && strings.IndexByte("+-.0123456789eE", p.data[p.i]) >= 0 {
			p.i++
		}
		n.str = string(p.data[start:p.i])
	}
	return n
}

// string reads the string at p.i and returns its decoded value.
func (p *jsonParser) string() string {
	start := p.i
	p.i++ // opening quote
	for p.i < len(p.data) {
		switch p.data[p.i] {
		case '\\':
			p.i += 2
			continue
		case '"':
			p.i++
			var s string
			_ = json.Unmarshal(p.data[start:p.i], &s)
			return s
		}
		p.i++
	}
	return ""
}
