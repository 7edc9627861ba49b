package main

import "testing"

func TestPrintableEscapesTerminalControls(t *testing.T) {
	tests := []struct{ give, want string }{
		{"demo/general/messages", "demo/general/messages"},
		{"demo/général/😀", "demo/général/😀"},
		{"demo/\x1b[31mRED\x1b[0m", `demo/\x1b[31mRED\x1b[0m`},
		{"a\x1b]0;pwned\x07b", `a\x1b]0;pwned\ab`},
		{"line\nbreak", `line\nbreak`},
		{"bad\xffutf8", `bad\xffutf8`},
		{"c1\u009bcontrol", `c1\u009bcontrol`},
	}
	for _, tt := range tests {
		if got := printable(tt.give); got != tt.want {
			t.Errorf("printable(%q) = %q, want %q", tt.give, got, tt.want)
		}
	}
}
