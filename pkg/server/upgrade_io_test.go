package server

import (
	"bytes"
	"testing"
)

// requestLine splits as bytes.Fields does, exactly three fields or not.
func TestRequestLineSplitsAsFields(t *testing.T) {
	for _, line := range []string{
		"GET /ws HTTP/1.1\r\n",
		"GET  /ws\tHTTP/1.1 \r\n",
		" GET /ws HTTP/1.1\n",
		"GET /ws\r\n",
		"GET /ws HTTP/1.1 extra\r\n",
		"GET\v/ws\fHTTP/1.1\r\n",
		"",
		"\r\n",
		"GET /caf\u00e9 HTTP/1.1\r\n",
		"GET\u00a0/ws HTTP/1.1\r\n", // NO-BREAK SPACE separates to bytes.Fields
		"GET /ws\u0085HTTP/1.1\r\n",
		"GET /\xff HTTP/1.1\r\n",
	} {
		want := bytes.Fields([]byte(line))
		got, ok := requestLine([]byte(line))
		if ok != (len(want) == 3) {
			t.Errorf("%q: ok = %v, fields %q", line, ok, want)
			continue
		}
		if ok && (!bytes.Equal(got[0], want[0]) || !bytes.Equal(got[1], want[1]) || !bytes.Equal(got[2], want[2])) {
			t.Errorf("%q: %q, want %q", line, got, want)
		}
	}
	line := []byte("GET /ws HTTP/1.1\r\n")
	if n := testing.AllocsPerRun(100, func() { _, _ = requestLine(line) }); n != 0 {
		t.Errorf("requestLine allocates %v times, want 0", n)
	}
}
