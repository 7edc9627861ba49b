package server

import (
	"bytes"
	"sync"
	"unicode/utf8"
)

// requestLine splits an HTTP request line ("GET /ws HTTP/1.1\r\n") into its
// fields as bytes.Fields does, without allocating, and reports whether
// there are exactly three. A line with a non-ASCII byte is split by
// bytes.Fields itself (its Unicode white space).
func requestLine(line []byte) (f [3][]byte, ok bool) {
	for _, c := range line {
		if c >= utf8.RuneSelf {
			parts := bytes.Fields(line)
			if len(parts) != 3 {
				return f, false
			}
			return [3][]byte(parts), true
		}
	}
	n := 0
	for i := 0; i < len(line); {
		if asciiSpace(line[i]) {
			i++
			continue
		}
		j := i
		for j < len(line) && !asciiSpace(line[j]) {
			j++
		}
		if n == len(f) {
			return f, false
		}
		f[n] = line[i:j]
		n++
		i = j
	}
	return f, n == len(f)
}

// asciiSpace reports whether c is white space to bytes.Fields.
func asciiSpace(c byte) bool {
	switch c {
	case '\t', '\n', '\v', '\f', '\r', ' ':
		return true
	}
	return false
}

// upgradeIO is the io.ReadWriter gobwas/ws's Upgrader runs on: the
// buffered request to read, and a buffer for the response. One is taken
// from upgradeIOs for each upgrade and given back after it, so an upgrade
// allocates its response (newResponse) and nothing else here.
type upgradeIO struct {
	req  bytes.Reader
	resp bytes.Buffer
}

var upgradeIOs = sync.Pool{New: func() any { return new(upgradeIO) }}

func (u *upgradeIO) Read(p []byte) (int, error)  { return u.req.Read(p) }
func (u *upgradeIO) Write(p []byte) (int, error) { return u.resp.Write(p) }

// newUpgradeIO returns a pooled upgradeIO reading req.
func newUpgradeIO(req []byte) *upgradeIO {
	u := upgradeIOs.Get().(*upgradeIO)
	u.req.Reset(req)
	return u
}

// response returns a copy of the response written, of its exact size.
func (u *upgradeIO) response() []byte { return bytes.Clone(u.resp.Bytes()) }

// release gives u back to its pool, keeping its response buffer.
func (u *upgradeIO) release() {
	u.req.Reset(nil)
	u.resp.Reset()
	upgradeIOs.Put(u)
}
