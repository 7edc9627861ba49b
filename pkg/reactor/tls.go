package reactor

import (
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/cloudwego/netpoll"

	"github.com/NoLagApp/kraken/pkg/sockio"
)

// TLS on a Loop (Config.TLS) keeps the reactor's shape: no goroutine and
// no timer per idle connection. The record layer is Go's crypto/tls,
// driven two ways:
//
//   - The handshake runs on a goroutine of its own, started when the
//     client's first record (its ClientHello) is complete and ended with
//     the handshake: crypto/tls's handshake only works on a reader that
//     blocks. It reads what the event loop hands it (tlsSocket.feed) and
//     writes its flights with writes that wait for the socket. A client
//     that never sends a complete first record costs no goroutine; one
//     that stalls inside the handshake holds its goroutine until the hub's
//     handshake deadline closes the socket (hub.Config.HandshakeTimeout),
//     and the pending-connection limits bound how many do (docs/SECURITY.md).
//   - Once established, records are decrypted on the event loop: the
//     connection's OnRequest hands the ciphertext netpoll holds to
//     crypto/tls through a reader that answers "would block" (a temporary
//     net.Error, which crypto/tls keeps no state for) when it runs out, so a
//     record split across reads is completed by a later one. The plaintext
//     goes to the transport's Process as a plain connection's bytes would.
//     Writes encrypt on the hub's writer (Stream.Writev) and never wait:
//     what the socket does not take is kept (the records of one
//     write at most: up to 16 KiB of small frames, or one larger frame) and
//     the hub is told those plaintext bytes are not written yet,
//     so its backpressure, retries and write deadline see a TLS connection
//     as they see a plain one.
//
// Why crypto/tls and not a non-blocking fork of it (lesismal/llib's, which
// nbio uses): the standard library's record layer gets every security fix
// and protocol update with Go itself, and post-handshake it already copes
// with a reader that would block. What a fork would save is the handshake
// goroutine, which lives for one round trip, and a few kilobytes of
// crypto/tls's buffers per idle connection (bench/RESULTS.md measures
// them).

// tlsState is where a TLS connection stands.
type tlsState = uint32

const (
	tlsWaiting     tlsState = iota // no complete first record yet: no goroutine
	tlsHandshaking                 // its handshake goroutine runs
	tlsEstablished                 // records decrypted on the event loop
	tlsFailed                      // the handshake failed or the input was not TLS: input discarded
)

// maxHandshakeInput bounds the ciphertext a handshake has received but not
// read yet; a client sending more is closed.
const maxHandshakeInput = 64 << 10

// handshakeWriteWait bounds how long a handshake flight waits for the
// socket to take it.
const handshakeWriteWait = 5 * time.Second

// tlsRecordMax is the largest TLS record a client may send (RFC 8446
// §5.2: 2^14 bytes of plaintext plus 256 of expansion, and its 5-byte
// header).
const tlsRecordMax = 5 + 1<<14 + 256

// errWouldBlock is what the established reader answers when it has no
// more ciphertext to give: a temporary net.Error, after which crypto/tls
// keeps the partial record it read and can be called again.
var errWouldBlock = wouldBlock{}

type wouldBlock struct{}

func (wouldBlock) Error() string   { return "reactor: no more input for now" }
func (wouldBlock) Timeout() bool   { return true }
func (wouldBlock) Temporary() bool { return true }

// tlsSocket is the Socket of a connection on a TLS Loop: netpoll's
// connection under crypto/tls. It is the net.Conn crypto/tls reads and
// writes (Read, Write) and the Socket a transport's Stream holds (Fd, for
// the socket calls; RemoteAddr; Close). A Stream recognises it and passes
// its writes through the record layer (Stream.Writev).
type tlsSocket struct {
	Socket
	cfg   *tls.Config
	stats *tlsStats     // the Loop's
	state atomic.Uint32 // tlsState
	conn  *tls.Conn     // made with the first complete record

	// The read side, under mu: the event loop's OnRequest and the
	// handshake goroutine's end, which reads what came with the handshake.
	mu     sync.Mutex
	in     []byte                        // ciphertext received and not read by crypto/tls yet
	src    netpoll.Reader                // during an established read: netpoll's input
	srcMax int                           // bytes src may still give in this read
	eof    bool                          // the client sent close_notify: its later input is discarded
	wake   atomic.Pointer[chan struct{}] // the handshake goroutine waits here for input or close
	closed atomic.Bool                   // the socket is closed: the handshake's reads end
	after  func()                        // runs once the handshake succeeded, mu held: reads what came with it

	// The close callback against the handshake goroutine, which runs
	// outside netpoll's OnRequest (netpoll holds a connection's close
	// callbacks back only while its own OnRequest runs): under cmu.
	cmu        sync.Mutex
	afterDone  sync.Cond // signalled when after returns
	inAfter    bool      // after runs: the close callback waits for it
	closeLater bool      // after decided to close the socket: done once it returns

	// The write side, under wmu.
	wmu     sync.Mutex
	pending []byte    // ciphertext the socket has not taken yet
	owed    []owedBuf // the hub's buffers pending carries, not reported written yet
}

// owedBuf identifies a buffer of the hub's queue by its first byte and
// length: the hub passes the same slices again until it is told they are
// written.
type owedBuf struct {
	p *byte
	n int
}

// tlsStats counts a Loop's TLS handshakes.
type tlsStats struct{ done, failed atomic.Uint64 }

func newTLSSocket(sock Socket, cfg *tls.Config, stats *tlsStats) *tlsSocket {
	t := &tlsSocket{Socket: sock, cfg: cfg, stats: stats}
	t.afterDone.L = &t.cmu
	return t
}

// RemoteAddrPort is the socket's peer's address (addrPorter), without
// allocating; RemoteAddr is the embedded Socket's.
func (t *tlsSocket) RemoteAddrPort() netip.AddrPort { return addrPortOf(t.Socket) }

// established reports whether the handshake is done.
func (t *tlsSocket) established() bool { return t.state.Load() == tlsEstablished }

// onClose runs from the connection's netpoll close callback (set in
// Loop.onPrepare), before the Loop's OnClose and before the descriptor is
// released, and returns once nothing of the handshake goroutine touches it
// any more: a handshake waiting for input ends (io.EOF); a handshake write
// in progress finishes and none starts (writeWaiting checks closed under
// wmu); and the read the goroutine makes after a successful handshake
// (after) ends first, so its Process runs before OnClose's work
// (hub.Closed, the transport's Closer), as on a plain connection.
// That read never closes the socket itself while it runs (closeLater).
func (t *tlsSocket) onClose() {
	t.cmu.Lock()
	t.closed.Store(true)
	t.signal()
	for t.inAfter {
		t.afterDone.Wait()
	}
	t.cmu.Unlock()
	t.wmu.Lock() // a handshake write in progress ends; later ones see closed
	t.wmu.Unlock()
}

// closeSoon closes the socket, at once, or when after returns if it runs
// (the close callback waits for after: closing from inside it would wait
// for itself). With mu held.
func (t *tlsSocket) closeSoon() {
	t.cmu.Lock()
	if t.inAfter {
		t.closeLater = true
		t.cmu.Unlock()
		return
	}
	t.cmu.Unlock()
	_ = t.Close()
}

// signal wakes the handshake goroutine, if it waits.
func (t *tlsSocket) signal() {
	if wake := t.wake.Load(); wake != nil {
		select {
		case *wake <- struct{}{}:
		default:
		}
	}
}

// plainHTTPAnswer is what a plain HTTP request on a TLS listener gets
// before its connection closes: Go's net/http answer, which clients
// (kraken's own among them) recognise as "use wss://".
const plainHTTPAnswer = "HTTP/1.0 400 Bad Request\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n" +
	"Client sent an HTTP request to an HTTPS server.\n"

// feed takes what r holds before the handshake is done, with mu held: it
// keeps it for the handshake and starts the handshake goroutine once the
// first record is complete. It reports false when the connection is to be
// closed: the input is not TLS (a plain HTTP request is told so first,
// plainHTTPAnswer), or more than maxHandshakeInput waits.
func (t *tlsSocket) feed(r netpoll.Reader) bool {
	n := r.Len()
	if len(t.in)+n > maxHandshakeInput {
		return false
	}
	b, _ := r.Next(n)
	t.in = append(t.in, b...)
	switch t.state.Load() {
	case tlsWaiting:
		if len(t.in) > 0 && t.in[0] != 0x16 { // RFC 8446 §5.1: handshake(22)
			if t.in[0] >= 'A' && t.in[0] <= 'Z' { // an HTTP method
				_, _ = sockio.Write(t.Fd(), []byte(plainHTTPAnswer))
			}
			return false
		}
		if len(t.in) < 5 || len(t.in) < 5+(int(t.in[3])<<8|int(t.in[4])) { // header, then the record's length
			return true // the ClientHello's record is not complete yet
		}
		t.state.Store(tlsHandshaking)
		wake := make(chan struct{}, 1)
		t.wake.Store(&wake)
		t.conn = tls.Server(t, t.cfg)
		go t.handshake() // ends with the handshake: it succeeds, fails, or the socket closes
	case tlsHandshaking:
		t.signal()
	}
	return true
}

// handshake runs the server handshake on its own goroutine, then hands the
// connection to the event loop, reading what came with the handshake
// (after) first.
func (t *tlsSocket) handshake() {
	err := t.conn.HandshakeContext(context.Background())
	t.cmu.Lock()
	closed := t.closed.Load() // the close callback ran, or waits for after from now on
	t.inAfter = err == nil && !closed
	t.cmu.Unlock()
	t.mu.Lock()
	if err != nil || closed {
		t.stats.failed.Add(1)
		t.state.Store(tlsFailed)
		t.in = nil
		t.wake.Store(nil)
		t.mu.Unlock()
		_ = t.Close()
		return
	}
	t.stats.done.Add(1)
	t.state.Store(tlsEstablished)
	t.wake.Store(nil)
	if t.after != nil {
		t.after()
	}
	t.mu.Unlock()
	t.cmu.Lock()
	t.inAfter = false
	closeLater := t.closeLater
	t.afterDone.Broadcast()
	t.cmu.Unlock()
	if closeLater {
		_ = t.Close()
	}
}

// Read implements net.Conn for crypto/tls. Only the handshake goroutine
// reads while the state is tlsHandshaking, and only the event loop (with
// mu held) once it is not. In the handshake it blocks
// until the event loop hands it input or the socket closes (io.EOF).
// Established, it gives what this read's source holds (src, up to srcMax
// bytes, then in) and errWouldBlock when that is spent; mu is held by the
// caller.
func (t *tlsSocket) Read(p []byte) (int, error) {
	if t.state.Load() != tlsHandshaking {
		return t.readEstablished(p)
	}
	for {
		t.mu.Lock()
		if n := t.takeIn(p); n > 0 {
			t.mu.Unlock()
			return n, nil
		}
		wake := t.wake.Load()
		t.mu.Unlock()
		if t.closed.Load() || wake == nil {
			return 0, io.EOF
		}
		<-*wake
	}
}

// takeIn moves what in holds, as much as fits, to p, with mu held, and
// returns how much.
func (t *tlsSocket) takeIn(p []byte) int {
	n := copy(p, t.in)
	t.in = t.in[n:]
	if len(t.in) == 0 {
		t.in = nil
	}
	return n
}

func (t *tlsSocket) readEstablished(p []byte) (int, error) {
	if n := t.takeIn(p); n > 0 {
		return n, nil
	}
	if t.src == nil || t.srcMax <= 0 {
		return 0, errWouldBlock
	}
	n := min(len(p), t.srcMax, t.src.Len())
	if n == 0 {
		return 0, errWouldBlock
	}
	b, err := t.src.Next(n)
	if err != nil {
		return 0, errWouldBlock
	}
	t.srcMax -= n
	return copy(p, b), nil
}

// Write implements net.Conn for crypto/tls: records. In the handshake it
// waits for the socket to take the flight (handshakeWriteWait). Once
// established it never waits: what the socket does not take, and every
// record after it, is kept in pending for the next Stream.Writev.
func (t *tlsSocket) Write(b []byte) (int, error) {
	t.wmu.Lock()
	defer t.wmu.Unlock()
	if t.state.Load() == tlsHandshaking {
		return t.writeWaiting(b)
	}
	if len(t.pending) == 0 {
		n, err := sockio.Write(t.Fd(), b)
		if err != nil {
			return n, err
		}
		b = b[n:]
	}
	t.pending = append(t.pending, b...)
	return len(b), nil
}

func (t *tlsSocket) writeWaiting(b []byte) (int, error) {
	written := 0
	for written < len(b) {
		if t.closed.Load() { // the descriptor may be released: never write to it
			return written, net.ErrClosed
		}
		n, err := sockio.Write(t.Fd(), b[written:])
		written += n
		if err != nil {
			return written, err
		}
		if written < len(b) {
			t.wmu.Unlock() // the close callback may go on while this waits
			err := sockio.WaitWritable(t.Fd(), handshakeWriteWait)
			t.wmu.Lock()
			if err != nil {
				return written, err
			}
		}
	}
	return written, nil
}

// flushPending writes what the socket did not take before, with wmu held,
// and reports whether all of it is out.
func (t *tlsSocket) flushPending() (bool, error) {
	if len(t.pending) == 0 {
		return true, nil
	}
	n, err := sockio.Write(t.Fd(), t.pending)
	if err != nil {
		return false, err
	}
	if n < len(t.pending) {
		t.pending = t.pending[:copy(t.pending, t.pending[n:])]
		return false, nil
	}
	t.pending = t.pending[:0]
	if cap(t.pending) > tlsRecordMax {
		t.pending = nil // a burst's backlog is not kept while idle
	}
	return true, nil
}

// writev encrypts bufs in order and writes their records without waiting
// (hub.Transport's Writev of a TLS connection). It returns the plaintext
// bytes of the leading buffers whose records are all out; the first buffer
// whose records the socket did not wholly take, with those after it in the
// same chunk, is owed: its records wait in pending and the next call,
// which the hub makes with the same buffers once the socket drains,
// writes them and reports those buffers then. A buffer the hub dropped in
// between (a slow consumer's queue is cut behind its head) is not
// reported: its records still go out whole, so the stream stays
// well-framed. Before the handshake is done nothing can be sent: what the
// hub writes then (its answer to a handshake that timed out) is dropped
// and reported written.
func (t *tlsSocket) writev(bufs [][]byte) (int, error) {
	if !t.established() {
		total := 0
		for _, b := range bufs {
			total += len(b)
		}
		return total, nil
	}
	t.wmu.Lock()
	done, err := t.flushPending()
	if err != nil || !done {
		t.wmu.Unlock()
		return 0, err
	}
	written, i := 0, 0
	for i < len(t.owed) && i < len(bufs) && len(bufs[i]) == t.owed[i].n && unsafe.SliceData(bufs[i]) == t.owed[i].p {
		written += t.owed[i].n
		i++
	}
	if i < len(t.owed) && i == len(bufs) {
		// The hub offered fewer buffers than are owed (a retry probes with
		// one): the rest stay owed, already sent, for its next call.
		t.owed = slices.Delete(t.owed, 0, i)
		t.wmu.Unlock()
		return written, nil
	}
	clear(t.owed)
	t.owed = t.owed[:0]
	t.wmu.Unlock()
	for i < len(bufs) {
		j, size := i, 0
		for j < len(bufs) && (j == i || size+len(bufs[j]) <= coalesceMax) {
			size += len(bufs[j])
			j++
		}
		if err := t.encrypt(bufs[i:j]); err != nil {
			return written, err
		}
		t.wmu.Lock()
		if len(t.pending) > 0 {
			for _, b := range bufs[i:j] {
				t.owed = append(t.owed, owedBuf{unsafe.SliceData(b), len(b)})
			}
			t.wmu.Unlock()
			return written, nil
		}
		t.wmu.Unlock()
		written += size
		i = j
	}
	return written, nil
}

// coalesceMax is how many plaintext bytes of consecutive small buffers
// one write gathers into one record: the largest record's plaintext.
const coalesceMax = 1 << 14

var coalescePool = sync.Pool{New: func() any { b := make([]byte, 0, coalesceMax); return &b }}

// encrypt writes bufs through crypto/tls: a lone buffer as it is, several
// gathered into one record.
func (t *tlsSocket) encrypt(bufs [][]byte) error {
	if len(bufs) == 1 {
		_, err := t.conn.Write(bufs[0])
		return err
	}
	p := coalescePool.Get().(*[]byte)
	b := (*p)[:0]
	for _, x := range bufs {
		b = append(b, x...)
	}
	_, err := t.conn.Write(b)
	*p = b[:0]
	coalescePool.Put(p)
	return err
}

// closeWrite sends the TLS close_notify alert when nothing else waits to
// go out, then shuts the write side down.
func (t *tlsSocket) closeWrite() error {
	if t.established() {
		t.wmu.Lock()
		idle := len(t.pending) == 0
		t.wmu.Unlock()
		if idle {
			_ = t.conn.CloseWrite() // best effort: a full socket drops the alert into pending
		}
	}
	return sockio.CloseWrite(t.Fd())
}

// unsent is what the socket has not sent: the kernel's and pending's.
func (t *tlsSocket) unsent() int {
	t.wmu.Lock()
	n := len(t.pending)
	t.wmu.Unlock()
	return n + sockio.Unsent(t.Fd())
}

// SetReadPaused passes hub.InputPauser's pause to netpoll's connection.
func (t *tlsSocket) SetReadPaused(paused bool) error {
	return sockio.SetReadPaused(t.Socket, paused)
}

// LocalAddr implements net.Conn.
func (t *tlsSocket) LocalAddr() net.Addr {
	if a, ok := t.Socket.(interface{ LocalAddr() net.Addr }); ok {
		return a.LocalAddr()
	}
	return nil
}

// SetDeadline implements net.Conn: deadlines are the hub's, not the
// socket's (crypto/tls sets one around its close_notify).
func (t *tlsSocket) SetDeadline(time.Time) error { return nil }

// SetReadDeadline implements net.Conn; see SetDeadline.
func (t *tlsSocket) SetReadDeadline(time.Time) error { return nil }

// SetWriteDeadline implements net.Conn; see SetDeadline.
func (t *tlsSocket) SetWriteDeadline(time.Time) error { return nil }
