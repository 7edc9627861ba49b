package wire

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/tinylib/msgp/msgp"
)

var update = flag.Bool("update", false, "rewrite pkg/wire/testdata/*.golden")

// Inputs of the encoder cases, built once so the cases do not allocate.
var (
	fullMessage    = sampleMessage()
	quickstartData = enc(kv{"text", "hello from alice"})
	clientFilters  = enc([]any{"Admin", []any{"Size:Large", "color:red"}})
)

// sampleMessage is a delivery with every optional field set.
func sampleMessage() *Message {
	return &Message{
		Topic:       "demo/+/messages",
		Data:        enc(kv{"text", "hello from alice", "blob", bin("\x00\x01"), "at", msgpTime()}),
		MsgID:       "3f2a9c1e-4b7d-4e0a-8c55-0d1e2f3a4b5c",
		Filter:      "admin|alice",
		From:        "alice",
		FromType:    "actor",
		Timestamp:   1796015615123,
		SourceTopic: "demo/general/messages",
	}
}

// encoderCases are the golden cases: one file testdata/<name>.golden each.
var encoderCases = []struct {
	name string
	give func(b []byte) []byte
}{
	{"auth_ok_v1", func(b []byte) []byte {
		return AppendAuthOK(b, &AuthOK{ActorTokenID: "bob", ProjectID: "demo-project", ActorType: "user", ProtocolVersion: 1})
	}},
	{"auth_ok_restored", func(b []byte) []byte {
		return AppendAuthOK(b, &AuthOK{ActorTokenID: "alice", ProjectID: "", ActorType: "user", ProtocolVersion: 2, Restored: []Restored{
			{Name: "demo/general/messages"},
			{Name: "demo/jobs", LoadBalance: true, LoadBalanceGroup: "workers", Filters: []string{"color:red|size:large", "Admin"}},
			{Name: "demo/empty", Filters: []string{}},
		}})
	}},
	{"auth_failed", func(b []byte) []byte { return AppendAuthFailed(b, ErrAccessDenied) }},
	{"auth_connection_failed", func(b []byte) []byte { return AppendAuthFailed(b, ErrConnectionFailed) }},
	{"hydration", func(b []byte) []byte {
		return AppendHydration(b, "messages", "demo/general/messages", []byte{0x81, 0xa4, 'l', 'a', 's', 't', 0xa2, 'h', 'i'})
	}},
	{"auth_already_authenticated", func(b []byte) []byte { return AppendAuthFailed(b, ErrAlreadyAuthenticated) }},
	{"reauth_ok", AppendReauthOK},
	{"reauth_actor_mismatch", func(b []byte) []byte { return AppendReauthFailed(b, ErrActorMismatch, CodeForbidden) }},
	{"subscribed", func(b []byte) []byte { return AppendSubscribed(b, "demo/general/messages", false) }},
	{"subscribed_load_balanced", func(b []byte) []byte { return AppendSubscribed(b, "demo/jobs", true) }},
	{"unsubscribed", func(b []byte) []byte { return AppendUnsubscribed(b, "demo/general/messages") }},
	{"filters_updated", func(b []byte) []byte {
		return AppendFiltersUpdated(b, "demo/general/messages", clientFilters)
	}},
	{"filters_updated_nil", func(b []byte) []byte { return AppendFiltersUpdated(b, "demo/general/messages", nil) }},
	{"filters_updated_null", func(b []byte) []byte { return AppendFiltersUpdated(b, "demo/general/messages", []byte{0xc0}) }},
	{"published", func(b []byte) []byte { return AppendPublished(b, "demo/general/messages", "1-a3f0") }},
	{"message_minimal", func(b []byte) []byte {
		return AppendMessage(b, &Message{Topic: "demo/general/messages", From: "server-key", FromType: "server", Timestamp: 0})
	}},
	{"message_quickstart", func(b []byte) []byte {
		return AppendMessage(b, &Message{Topic: "demo/general/messages", Data: quickstartData,
			From: "alice", FromType: "actor", Timestamp: 1796015615123})
	}},
	{"message_full", func(b []byte) []byte { return AppendMessage(b, fullMessage) }},
	{"error_not_authenticated", func(b []byte) []byte { return AppendError(b, &Error{Err: ErrNotAuthenticated}) }},
	{"error_unknown_topic_v2", func(b []byte) []byte {
		return AppendError(b, &Error{Code: CodeUnknownTopic, Err: ErrUnknownTopic, Topic: "demo/other/x", HasTopic: true, Hint: HintUnknownTopic, MsgRef: "1-a3f0"})
	}},
	{"error_not_authorized_v1", func(b []byte) []byte {
		return AppendError(b, &Error{Code: CodeUnknownTopic, Err: ErrNotAuthorized, Topic: "demo/other/x", HasTopic: true, Hint: HintUnknownTopic})
	}},
	{"error_lobby_not_authorized", func(b []byte) []byte {
		return AppendError(b, &Error{Err: ErrNotAuthorized, LobbyID: "main"})
	}},
	{"error_rate_limited", func(b []byte) []byte {
		return AppendError(b, &Error{Code: CodeRateLimited, Err: ErrRateLimitExceeded, Topic: "demo/general/messages", HasTopic: true})
	}},
	{"error_message_too_large", func(b []byte) []byte {
		return AppendError(b, &Error{Code: CodeMessageTooLarge, Err: ErrMessageTooLarge, Topic: "demo/general/messages", HasTopic: true, MsgRef: "7", MaxSizeBytes: 921600})
	}},
	{"error_invalid_filter", func(b []byte) []byte {
		return AppendError(b, &Error{Code: CodeInvalidFilter, Err: ErrInvalidFilter, Topic: "demo/general/messages", HasTopic: true, Detail: detailFilterChars, MsgRef: "2"})
	}},
	{"error_too_many_filters", func(b []byte) []byte {
		return AppendError(b, &Error{Err: ErrTooManyFilters, Topic: "demo/general/messages", HasTopic: true})
	}},
	{"error_invalid_filter_chars_empty_topic", func(b []byte) []byte {
		return AppendError(b, &Error{Err: ErrInvalidFilterChars, HasTopic: true})
	}},
	{"error_bad_request", func(b []byte) []byte {
		return AppendError(b, &Error{Err: ErrBadRequest, Detail: "subscribe: topic must be a string"})
	}},
}

func TestEncodersGolden(t *testing.T) {
	for _, tt := range encoderCases {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.give(nil)
			checkEnvelope(t, got)
			var pretty bytes.Buffer
			if err := json.Indent(&pretty, []byte(jsonOf(t, got)), "", "  "); err != nil {
				t.Fatal(err)
			}
			rendered := "hex:\n" + hex.EncodeToString(got) + "\njson:\n" + pretty.String() + "\n"
			path := filepath.Join("testdata", tt.name+".golden")
			if *update {
				if err := os.WriteFile(path, []byte(rendered), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test ./pkg/wire -update)", err)
			}
			if rendered != string(want) {
				t.Fatalf("%s differs from the encoding:\ngot\n%s\nwant\n%s", path, rendered, want)
			}
			// Appending keeps what b already holds.
			prefix := []byte{0xc0, 0xc0}
			if again := tt.give(append([]byte(nil), prefix...)); !bytes.Equal(again, cat(prefix, got)) {
				t.Fatalf("append to a non-empty slice = % x, want % x", again, cat(prefix, got))
			}
		})
	}
}

// checkEnvelope asserts that b is exactly one map whose keys are str and
// whose strings outside `data` are all str, never bin (wire-reference.md §1.6).
func checkEnvelope(t *testing.T, b []byte) {
	t.Helper()
	if n, err := Validate(b, MaxDepth); err != nil || n != len(b) {
		t.Fatalf("encoding is not exactly one value: n=%d of %d, %v", n, len(b), err)
	}
	sz, rest, err := msgp.ReadMapHeaderBytes(b)
	if err != nil {
		t.Fatalf("encoding is not a map: %v", err)
	}
	for range sz {
		key, after, err := msgp.ReadStringZC(rest)
		if err != nil {
			t.Fatalf("key is not a str: %v", err)
		}
		next, err := msgp.Skip(after)
		if err != nil {
			t.Fatal(err)
		}
		if string(key) != "data" {
			checkNoBin(t, string(key), after[:len(after)-len(next)])
		}
		rest = next
	}
}

// checkNoBin fails if the value v contains a bin anywhere.
func checkNoBin(t *testing.T, key string, v []byte) {
	t.Helper()
	for len(v) > 0 {
		switch msgp.NextType(v) {
		case msgp.BinType:
			t.Fatalf("%s holds a bin", key)
		case msgp.MapType:
			_, v, _ = msgp.ReadMapHeaderBytes(v)
		case msgp.ArrayType:
			_, v, _ = msgp.ReadArrayHeaderBytes(v)
		default:
			var err error
			if v, err = msgp.Skip(v); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func TestEncodersDoNotAllocate(t *testing.T) {
	buf := make([]byte, 0, 4096)
	for _, tt := range encoderCases {
		if allocs := testing.AllocsPerRun(100, func() { buf = tt.give(buf[:0]) }); allocs != 0 {
			t.Errorf("%s allocates %.0f times per run into a large enough buffer, want 0", tt.name, allocs)
		}
	}
}

func TestAppendMessageDoesNotAllocate(t *testing.T) {
	m := sampleMessage()
	buf := make([]byte, 0, 512)
	allocs := testing.AllocsPerRun(1000, func() { buf = AppendMessage(buf[:0], m) })
	if allocs != 0 {
		t.Fatalf("AppendMessage allocates %.0f times per run, want 0", allocs)
	}
}

func TestAppendMessageCopiesDataVerbatim(t *testing.T) {
	tests := []struct {
		name string
		give []byte
	}{
		{name: "bin stays bin", give: enc(bin("\xff\xfe"))},
		{name: "float32 stays float32", give: enc(float32(1.5))},
		{name: "ext", give: []byte(msgpTime())},
		{name: "map order and duplicates", give: enc(kv{"b", 1, "a", 2, "b", 3})},
		{name: "int keys", give: enc(kv{1, "x"})},
		{name: "non-shortest int", give: []byte{0xd3, 0, 0, 0, 0, 0, 0, 0, 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := AppendMessage(nil, &Message{Topic: "t", Data: tt.give})
			if !bytes.Contains(out, cat(enc("data"), tt.give)) {
				t.Fatalf("data not copied verbatim: % x", out)
			}
			if n, err := Validate(out, MaxDepth); err != nil || n != len(out) {
				t.Fatalf("encoding invalid: %d, %v", n, err)
			}
		})
	}
}

func TestGoldenFilesAreUsed(t *testing.T) {
	names := make(map[string]bool, len(encoderCases))
	for _, tt := range encoderCases {
		names[tt.name+".golden"] = true
	}
	files, err := filepath.Glob(filepath.Join("testdata", "*.golden"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if !names[filepath.Base(f)] {
			t.Errorf("%s has no encoder case; delete it", f)
		}
	}
	if len(files) != len(names) && !*update {
		t.Errorf("%d golden files for %d cases; run go test ./pkg/wire -update", len(files), len(names))
	}
}
