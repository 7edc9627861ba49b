package topic

import (
	"errors"
	"strings"
	"testing"
)

func TestValidateSubscribe(t *testing.T) {
	tests := []struct {
		name string
		give string
		want error
	}{
		{"plain", "demo/general/messages", nil},
		{"single level", "a", nil},
		{"empty", "", ErrEmpty},
		{"empty levels", "a//b", nil},
		{"leading slash", "/a/b", nil},
		{"trailing slash", "a/b/", nil},
		{"only slash", "/", nil},
		{"hash alone", "#", nil},
		{"plus alone", "+", nil},
		{"plus first", "+/b/c", nil},
		{"plus middle", "a/+/c", nil},
		{"plus last", "a/b/+", nil},
		{"plus everywhere", "+/+/+", nil},
		{"plus then hash", "+/#", nil},
		{"hash last", "demo/general/#", nil},
		{"hash after empty level", "a//#", nil},
		{"dollar", "$SYS/broker/+", nil},
		{"dollar inside", "a/b$c/#", nil},
		{"hash not last", "a/#/c", ErrBadWildcard},
		{"hash first", "#/a", ErrBadWildcard},
		{"hash twice", "#/#", ErrBadWildcard},
		{"hash inside level", "a/b#", ErrBadWildcard},
		{"plus inside level", "a/b+/c", ErrBadWildcard},
		{"plus plus", "a/++", ErrBadWildcard},
		{"plus hash level", "a/+#", ErrBadWildcard},
		{"null byte", "a/\x00/b", ErrNullByte},
		{"invalid UTF-8", "a/\xff\xfe/b", ErrNotUTF8},
		{"max bytes", strings.Repeat("x", MaxTopicBytes), nil},
		{"too long", strings.Repeat("x", MaxTopicBytes+1), ErrTooLong},
		{"max levels", strings.Repeat("a/", MaxTopicLevels-1) + "a", nil},
		{"too many levels", strings.Repeat("/", MaxTopicLevels), ErrTooManyLevels},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ValidateSubscribe(tt.give); !errors.Is(got, tt.want) {
				t.Fatalf("ValidateSubscribe(%q) = %v, want %v", tt.give, got, tt.want)
			}
		})
	}
}

func TestValidatePublish(t *testing.T) {
	tests := []struct {
		name string
		give string
		want error
	}{
		{"plain", "demo/general/messages", nil},
		{"empty", "", ErrEmpty},
		{"empty levels", "a//b", nil},
		{"leading and trailing slash", "/a/", nil},
		{"dollar", "$SYS/x", nil},
		{"plus level", "a/+/c", ErrWildcardInPublish},
		{"hash level", "a/#", ErrWildcardInPublish},
		{"hash alone", "#", ErrWildcardInPublish},
		{"plus inside level", "prices/+1", ErrWildcardInPublish},
		{"hash inside level", "chat/c#", ErrWildcardInPublish},
		{"null byte", "a\x00", ErrNullByte},
		{"invalid UTF-8", "demo/general/\xff", ErrNotUTF8},
		{"too long", strings.Repeat("x", MaxTopicBytes+1), ErrTooLong},
		{"too many levels", strings.Repeat("a/", MaxTopicLevels), ErrTooManyLevels},
		{"bounds before wildcard", strings.Repeat("+/", MaxTopicLevels), ErrTooManyLevels},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ValidatePublish(tt.give); !errors.Is(got, tt.want) {
				t.Fatalf("ValidatePublish(%q) = %v, want %v", tt.give, got, tt.want)
			}
		})
	}
}

func TestHasWildcard(t *testing.T) {
	tests := []struct {
		give string
		want bool
	}{
		{"", false},
		{"a/b/c", false},
		{"a+/b#", false},
		{"$SYS/x", false},
		{"+", true},
		{"#", true},
		{"a/+/c", true},
		{"a/b/#", true},
		{"a/#/c", true},
		{"/+", true},
		{"+/", true},
	}
	for _, tt := range tests {
		t.Run(tt.give, func(t *testing.T) {
			if got := HasWildcard(tt.give); got != tt.want {
				t.Fatalf("HasWildcard(%q) = %v, want %v", tt.give, got, tt.want)
			}
		})
	}
}
