package sockio

import (
	"bytes"
	"testing"

	"golang.org/x/sys/unix"
)

func socketpair(t *testing.T) (a, b int) {
	t.Helper()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_NONBLOCK, 0)
	if err != nil {
		t.Skip(err)
	}
	t.Cleanup(func() { _ = unix.Close(fds[0]); _ = unix.Close(fds[1]) })
	return fds[0], fds[1]
}

// Writev writes every buffer in order; a full socket is a short count
// with no error; a closed peer is an error.
func TestWritevShortCountWhenFullErrorWhenBroken(t *testing.T) {
	a, b := socketpair(t)
	n, err := Writev(a, [][]byte{[]byte("ab"), []byte("cd")})
	if n != 4 || err != nil {
		t.Fatalf("Writev = %d, %v; want 4, nil", n, err)
	}
	got := make([]byte, 8)
	if m, _ := unix.Read(b, got); !bytes.Equal(got[:m], []byte("abcd")) {
		t.Fatalf("peer read %q", got[:m])
	}
	chunk := make([]byte, 1<<16)
	total := 0
	for {
		n, err := Writev(a, [][]byte{chunk})
		if err != nil {
			t.Fatalf("a full socket gave an error: %v", err)
		}
		total += n
		if n < len(chunk) {
			break
		}
		if total > 64<<20 {
			t.Fatal("the socket never filled")
		}
	}
	_ = unix.Close(b)
	if _, err := Writev(a, [][]byte{[]byte("x")}); err == nil {
		t.Fatal("a write to a closed peer gave no error")
	}
	if err := CloseWrite(a); err != nil && err != unix.ENOTCONN {
		t.Fatalf("CloseWrite: %v", err)
	}
}
