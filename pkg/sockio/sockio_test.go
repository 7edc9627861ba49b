package sockio

import (
	"bytes"
	"errors"
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

// buffers returns count buffers of 1 to 37 bytes, each with its own
// bytes, every fifth one empty, and their concatenation.
func buffers(count int) ([][]byte, []byte) {
	bufs := make([][]byte, count)
	var all []byte
	for i := range bufs {
		if i%5 == 4 {
			bufs[i] = []byte{}
			continue
		}
		b := make([]byte, i%37+1)
		for j := range b {
			b[j] = byte(i*7 + j)
		}
		bufs[i] = b
		all = append(all, b...)
	}
	return bufs, all
}

// drain reads what fd holds now.
func drain(t *testing.T, fd int) []byte {
	t.Helper()
	var got []byte
	buf := make([]byte, 1<<16)
	for {
		m, err := unix.Read(fd, buf)
		if err == unix.EAGAIN {
			return got
		}
		if err != nil {
			t.Fatalf("peer read: %v", err)
		}
		if m == 0 {
			return got
		}
		got = append(got, buf[:m]...)
	}
}

// Buffers are written whole and in order across the 64-iovec chunks,
// empty ones included.
func TestWritevInOrderAcrossChunks(t *testing.T) {
	a, b := socketpair(t)
	for _, count := range []int{1, 2, 8, 9, 63, 64, 65, 80, 81, 128, 129, 2000} {
		bufs, all := buffers(count)
		n, err := Writev(a, bufs)
		if n != len(all) || err != nil {
			t.Fatalf("%d buffers: Writev = %d, %v; want %d, nil", count, n, err, len(all))
		}
		if got := drain(t, b); !bytes.Equal(got, all) {
			t.Fatalf("%d buffers: the peer read %d bytes, not the %d written in order", count, len(got), len(all))
		}
	}
}

// Nothing to write is 0, nil without a system call (the descriptor is
// not even looked at).
func TestWritevNothing(t *testing.T) {
	for _, bufs := range [][][]byte{nil, {}, {nil}, {nil, {}, make([]byte, 0, 8)}, make([][]byte, 100)} {
		if n, err := Writev(-1, bufs); n != 0 || err != nil {
			t.Fatalf("Writev(-1, %d empty buffers) = %d, %v; want 0, nil", len(bufs), n, err)
		}
	}
	a, b := socketpair(t)
	if n, err := Writev(a, [][]byte{{}, []byte("x"), nil}); n != 1 || err != nil {
		t.Fatalf("Writev = %d, %v; want 1, nil", n, err)
	}
	if got := drain(t, b); string(got) != "x" {
		t.Fatalf("the peer read %q", got)
	}
}

// Writev allocates nothing, whatever the number of buffers.
func TestWritevNoAllocs(t *testing.T) {
	a, b := socketpair(t)
	sink := make([]byte, 1<<16)
	for _, count := range []int{1, 8, 9, 100, 2000} {
		bufs := make([][]byte, count)
		want := 0
		for i := range bufs {
			bufs[i] = bytes.Repeat([]byte{byte(i)}, 8)
			want += 8
		}
		var n, got int
		var err error
		allocs := testing.AllocsPerRun(100, func() {
			n, err = Writev(a, bufs)
			got = 0
			for got < n {
				m, rerr := unix.Read(b, sink)
				if rerr != nil {
					break
				}
				got += m
			}
		})
		if n != want || err != nil || got != n {
			t.Fatalf("%d buffers: Writev = %d, %v (peer read %d); want %d, nil", count, n, err, got, want)
		}
		if allocs != 0 {
			t.Errorf("%d buffers: %v allocations per Writev, want 0", count, allocs)
		}
	}
}

// A full socket is a short count (0 included) with a nil error, and what
// the count says was written is exactly what the peer reads.
func TestWritevFullSocketShortCount(t *testing.T) {
	a, b := socketpair(t)
	bufs, all := buffers(2000)
	for len(all) < 1<<20 { // more than a socket holds
		more, moreAll := buffers(2000)
		bufs, all = append(bufs, more...), append(all, moreAll...)
	}
	var want []byte
	for calls := 0; ; calls++ {
		if calls > 100 {
			t.Fatal("the socket never filled")
		}
		n, err := Writev(a, bufs)
		if err != nil {
			t.Fatalf("a full socket gave an error: %v", err)
		}
		if n == len(all) {
			t.Fatalf("%d bytes fit in one socket", n)
		}
		want = append(want, all[:n]...)
		if n == 0 {
			break
		}
	}
	if n, err := Writev(a, bufs[:1]); n != 0 || err != nil {
		t.Fatalf("one buffer to a full socket: Writev = %d, %v; want 0, nil", n, err)
	}
	if got := drain(t, b); !bytes.Equal(got, want) {
		t.Fatalf("the peer read %d bytes, not the %d Writev counted", len(got), len(want))
	}
}

// An error after a fully written chunk comes with that chunk's bytes.
func TestWritevErrorAfterBytesWritten(t *testing.T) {
	a, b := socketpair(t)
	bad, err := unix.Mmap(-1, 0, unix.Getpagesize(), unix.PROT_NONE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		t.Skip(err)
	}
	t.Cleanup(func() { _ = unix.Munmap(bad) })
	bufs, all := buffers(80) // 64 non-empty buffers in the first chunk
	first := 0
	for i, k := 0, 0; k < 64; i++ {
		if len(bufs[i]) > 0 {
			first += len(bufs[i])
			k++
		}
	}
	bufs = append(bufs, bad) // the second chunk faults
	n, err := Writev(a, bufs)
	if n != first || !errors.Is(err, unix.EFAULT) {
		t.Fatalf("Writev = %d, %v; want %d, EFAULT", n, err, first)
	}
	if got := drain(t, b); !bytes.Equal(got, all[:first]) {
		t.Fatalf("the peer read %d bytes, want the first chunk's %d", len(got), first)
	}
}

// A closed peer is EPIPE (SIGPIPE is ignored by the Go runtime for
// descriptors other than 1 and 2) with nothing written; a bad descriptor
// is EBADF.
func TestWritevErrors(t *testing.T) {
	a, b := socketpair(t)
	_ = unix.Close(b)
	for _, count := range []int{1, 100} {
		bufs, _ := buffers(count)
		if n, err := Writev(a, bufs); n != 0 || !errors.Is(err, unix.EPIPE) {
			t.Fatalf("%d buffers to a closed peer: Writev = %d, %v; want 0, EPIPE", count, n, err)
		}
	}
	if n, err := Writev(-1, [][]byte{[]byte("x")}); n != 0 || !errors.Is(err, unix.EBADF) {
		t.Fatalf("descriptor -1: Writev = %d, %v; want 0, EBADF", n, err)
	}
}

// BenchmarkWritev100 writes 100 buffers of 128 bytes (one flush of a
// queue of small frames) per iteration and reads them back on the peer,
// so the socket never fills.
func BenchmarkWritev100(b *testing.B) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_NONBLOCK, 0)
	if err != nil {
		b.Skip(err)
	}
	defer unix.Close(fds[0])
	defer unix.Close(fds[1])
	bufs := make([][]byte, 100)
	for i := range bufs {
		bufs[i] = bytes.Repeat([]byte{byte(i)}, 128)
	}
	want := 100 * 128
	sink := make([]byte, want)
	b.SetBytes(int64(want))
	b.ReportAllocs()
	for b.Loop() {
		n, err := Writev(fds[0], bufs)
		if n != want || err != nil {
			b.Fatalf("Writev = %d, %v; want %d, nil", n, err, want)
		}
		for got := 0; got < want; {
			m, err := unix.Read(fds[1], sink)
			if err != nil {
				b.Fatalf("peer read: %v", err)
			}
			got += m
		}
	}
}
