// Package broker is the benchmark baseline: a small goroutine-per-connection
// broker on gorilla/websocket that speaks the subset of the kraken wire
// protocol the load generator uses (auth, subscribe, unsubscribe, publish
// with echo and msgRef, heartbeat).
//
// It is written the straightforward way on purpose: every connection has a
// reader goroutine and a writer goroutine with a buffered channel, and the
// topics are a map guarded by one mutex. It stands for what a typical Go
// WebSocket server costs, so it must not be tuned.
package broker

import (
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
)

// Defaults.
const (
	// DefaultIdleTimeout closes a connection that sent nothing for this long.
	DefaultIdleTimeout = 60 * time.Second
	// DefaultSendQueue is the number of frames queued for one connection
	// before it is closed as a slow consumer.
	DefaultSendQueue = 256
	writeTimeout     = 10 * time.Second
	maxMessageSize   = 1 << 20
)

// Broker routes published messages to the subscribers of the exact topic.
type Broker struct {
	// IdleTimeout closes a connection silent for this long.
	IdleTimeout time.Duration
	// SendQueue is the per-connection queue length in frames.
	SendQueue int

	upgrader websocket.Upgrader
	msgID    atomic.Uint64
	slow     atomic.Uint64

	mu      sync.RWMutex
	topics  map[string]map[*client]struct{}
	clients map[*client]struct{}
	closed  bool
	wg      sync.WaitGroup
}

// New returns a broker with the default settings.
func New() *Broker {
	return &Broker{
		IdleTimeout: DefaultIdleTimeout,
		SendQueue:   DefaultSendQueue,
		upgrader: websocket.Upgrader{
			CheckOrigin: func(*http.Request) bool { return true },
		},
		topics:  make(map[string]map[*client]struct{}),
		clients: make(map[*client]struct{}),
	}
}

// Stats are counters for tests and logs.
type Stats struct {
	Connections   int
	Topics        int
	SlowConsumers uint64
}

// Stats returns the current counters.
func (b *Broker) Stats() Stats {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return Stats{Connections: len(b.clients), Topics: len(b.topics), SlowConsumers: b.slow.Load()}
}

// ServeHTTP upgrades the request to a WebSocket connection and serves it.
func (b *Broker) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	conn, err := b.upgrader.Upgrade(w, r, nil)
	if err != nil {
		return
	}
	conn.SetReadLimit(maxMessageSize)
	c := &client{
		b:    b,
		conn: conn,
		send: make(chan []byte, b.SendQueue),
		done: make(chan struct{}),
		subs: make(map[string]struct{}),
	}
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		_ = conn.Close()
		return
	}
	b.clients[c] = struct{}{}
	b.wg.Add(2)
	b.mu.Unlock()
	go c.writeLoop()
	go c.readLoop()
}

// Close closes every connection and waits for their goroutines.
func (b *Broker) Close() {
	b.mu.Lock()
	b.closed = true
	cs := make([]*client, 0, len(b.clients))
	for c := range b.clients {
		cs = append(cs, c)
	}
	b.mu.Unlock()
	for _, c := range cs {
		c.close()
	}
	b.wg.Wait()
}

func (b *Broker) subscribe(c *client, topic string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	set := b.topics[topic]
	if set == nil {
		set = make(map[*client]struct{})
		b.topics[topic] = set
	}
	set[c] = struct{}{}
}

func (b *Broker) unsubscribe(c *client, topic string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.unsubscribeLocked(c, topic)
}

func (b *Broker) unsubscribeLocked(c *client, topic string) {
	set := b.topics[topic]
	delete(set, c)
	if len(set) == 0 {
		delete(b.topics, topic)
	}
}

func (b *Broker) remove(c *client) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for t := range c.subs {
		b.unsubscribeLocked(c, t)
	}
	delete(b.clients, c)
}

// publish sends frame to every subscriber of topic, skipping the sender
// when echo is false.
func (b *Broker) publish(sender *client, topic string, frame []byte, echo bool) {
	var slow []*client
	b.mu.RLock()
	for c := range b.topics[topic] {
		if c == sender && !echo {
			continue
		}
		if !c.enqueue(frame) {
			slow = append(slow, c)
		}
	}
	b.mu.RUnlock()
	for _, c := range slow {
		b.slow.Add(1)
		c.close()
	}
}

func (b *Broker) nextMsgID() string {
	return strconv.FormatUint(b.msgID.Add(1), 10)
}
