package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/NoLagApp/kraken/pkg/config"
	"github.com/NoLagApp/kraken/pkg/durable"
	"github.com/NoLagApp/kraken/pkg/history"
	"github.com/NoLagApp/kraken/pkg/metrics"
	"github.com/NoLagApp/kraken/pkg/node"
	"github.com/NoLagApp/kraken/pkg/resume"
	"github.com/NoLagApp/kraken/pkg/session"
	"github.com/NoLagApp/kraken/pkg/sessionkv"
)

// historyOpenTimeout bounds the making of the history stream at start.
const historyOpenTimeout = 15 * time.Second

// historyProbeEvery is the period of the history's reachability probe (a
// stream info request); historyProbeTimeout bounds one.
const (
	historyProbeEvery   = 2 * time.Second
	historyProbeTimeout = 2 * time.Second
)

// historyDownAfter is how long the probe must have failed without a
// success in between before the ready check `history` fails: a single
// slow request does not take the node out of its load balancer.
const historyDownAfter = 5 * time.Second

// errStoreDir marks a STORE_DIR that cannot be created or written: a
// configuration error (exit 2).
var errStoreDir = errors.New("STORE_DIR")

// historyBackend is the durable message history of STORE_BACKEND=jetstream
// (pkg/history) with what it runs on: its own NATS connection to
// NATS_URL's servers (never the broker's, so a history backlog does not
// slow the fan-out between nodes), or the embedded server under STORE_DIR
// and its in-process connection.
type historyBackend struct {
	h        *history.History
	groups   *durable.Groups         // the durable load-balanced groups it feeds
	sessions *sessionkv.Store        // the resumable sessions, on the same connection
	embedded *history.EmbeddedServer // nil with BROKER_BACKEND=nats
	lock     *os.File                // STORE_DIR's lock, held while the embedded server runs
	conn     *nats.Conn              // the connection the History uses
	where    string                  // "embedded" or "nats", for the logs

	stop     context.CancelFunc
	probed   sync.WaitGroup
	mu       sync.Mutex
	okAt     time.Time // last probe that reached the stream (Open's success counts)
	failedAt time.Time // first failed probe since okAt; zero while reachable
	lastErr  error
}

// openHistory opens the history that cfg asks for, or returns nil, nil
// when STORE_BACKEND is not jetstream. With BROKER_BACKEND=nats it
// connects anew to NATS_URL (NATS_CREDS, NATS_TLS_CA) and keeps the stream
// with NATS_REPLICAS replicas; otherwise it first checks that STORE_DIR can
// be created and written (an error matching errStoreDir, naming it), then
// runs the embedded server there. The bounds are STORE_TTL_SECONDS,
// HISTORY_MAX_BYTES and HISTORY_MAX_PER_TOPIC. It starts the probe of the
// ready check; close stops everything.
func openHistory(cfg config.Config, nodeID string, log *zap.Logger) (*historyBackend, error) {
	if cfg.StoreBackend != "jetstream" {
		return nil, nil
	}
	log = log.Named("history")
	b := &historyBackend{}
	if cfg.BrokerBackend == "nats" {
		opts := append(natsOptions(cfg), nats.Name("kraken-history-"+nodeID), nats.MaxReconnects(-1))
		nc, err := nats.Connect(natsServers(cfg), opts...)
		if err != nil {
			return nil, fmt.Errorf("history: connect to NATS_URL: %w", err)
		}
		b.conn, b.where = nc, "nats"
	} else {
		if err := checkStoreDir(cfg.StoreDir); err != nil {
			return nil, err
		}
		lock, err := lockStoreDir(cfg.StoreDir)
		if err != nil {
			return nil, err
		}
		b.lock = lock
		e, err := history.Embedded(cfg.StoreDir, log)
		if err != nil {
			_ = lock.Close()
			return nil, fmt.Errorf("STORE_DIR=%s: %w", cfg.StoreDir, err)
		}
		b.embedded, b.conn, b.where = e, e.Conn, "embedded"
	}
	ctx, cancel := context.WithTimeout(context.Background(), historyOpenTimeout)
	defer cancel()
	replicas := 1
	if cfg.BrokerBackend == "nats" {
		replicas = cfg.NATSReplicas
	}
	h, err := history.Open(ctx, history.Config{Conn: b.conn, Replicas: replicas, MaxAge: cfg.StoreTTL,
		MaxBytes: int64(cfg.HistoryMaxBytes), MaxMsgsPerTopic: int64(cfg.HistoryMaxPerTopic), Logger: log})
	if err != nil {
		b.closeConn()
		return nil, err
	}
	maxAge := cfg.StoreTTL
	if maxAge <= 0 {
		maxAge = history.DefaultMaxAge
	}
	// A session's record outlives its history by nothing: past the
	// history's MaxAge a replay could only say history_limit.
	ss, err := sessionkv.Open(ctx, sessionkv.Config{Conn: b.conn, Replicas: replicas, TTL: maxAge, Logger: log})
	if err != nil {
		h.Close()
		b.closeConn()
		return nil, err
	}
	b.h, b.sessions, b.okAt = h, ss, time.Now()
	b.groups = durable.New(durable.Config{History: h, Logger: log.Named("durable")})
	pctx, stop := context.WithCancel(context.Background())
	b.stop = stop
	b.probed.Add(1)
	go b.probe(pctx) // stopped and waited for by close
	fields := []zap.Field{zap.String("where", b.where), zap.String("stream", history.Stream("")),
		zap.Duration("max_age", cfg.StoreTTL), zap.Int("max_bytes", cfg.HistoryMaxBytes),
		zap.Int("max_per_topic", cfg.HistoryMaxPerTopic)}
	if b.embedded != nil {
		fields = append(fields, zap.String("store_dir", cfg.StoreDir))
	} else {
		fields = append(fields, zap.Int("replicas", replicas))
	}
	log.Info("message history", fields...)
	return b, nil
}

// checkStoreDir makes dir (and its parents) if missing and writes, then
// removes, a file in it; the error matches errStoreDir and names
// STORE_DIR and the path.
func checkStoreDir(dir string) error {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return fmt.Errorf("%w=%s: cannot be created as the embedded JetStream's directory: %v", errStoreDir, dir, unwrapPath(err))
	}
	f, err := os.CreateTemp(dir, ".kraken-write-check-*")
	if err != nil {
		return fmt.Errorf("%w=%s: cannot be written: %v", errStoreDir, dir, unwrapPath(err))
	}
	name := f.Name()
	_ = f.Close()
	_ = os.Remove(name)
	return nil
}

// storeDirLock is the file in STORE_DIR that a running kraken holds a lock
// on (flock, exclusive): two embedded servers on one directory corrupt its
// streams.
const storeDirLock = ".kraken.lock"

// lockStoreDir takes the lock of dir (storeDirLock) without waiting, and
// returns the open file that holds it until closed (the kernel releases
// it when the process ends, a crash included). When another process holds
// it the error matches errStoreDir, names STORE_DIR and says so.
func lockStoreDir(dir string) (*os.File, error) {
	path := filepath.Join(dir, storeDirLock)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("%w=%s: cannot be locked: %v", errStoreDir, dir, unwrapPath(err))
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w=%s: in use by another kraken process (it holds %s); "+
				"give each broker a directory of its own", errStoreDir, dir, path)
		}
		return nil, fmt.Errorf("%w=%s: cannot be locked: %v", errStoreDir, dir, err)
	}
	return f, nil
}

// probe asks for the stream's last sequence every historyProbeEvery, each
// request bounded by historyProbeTimeout, and records the outcome for
// ready, until ctx ends.
func (b *historyBackend) probe(ctx context.Context) {
	defer b.probed.Done()
	t := time.NewTicker(historyProbeEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		rctx, cancel := context.WithTimeout(ctx, historyProbeTimeout)
		_, err := b.h.LastSeq(rctx)
		cancel()
		if ctx.Err() != nil {
			return
		}
		b.mu.Lock()
		if err == nil {
			b.okAt, b.failedAt, b.lastErr = time.Now(), time.Time{}, nil
		} else {
			if b.failedAt.IsZero() {
				b.failedAt = time.Now()
			}
			b.lastErr = err
		}
		b.mu.Unlock()
	}
}

// ready is the ready check `history`: it fails once the probe has not
// reached the history's stream for historyDownAfter (its last success
// that long ago, every probe since failed), naming the last error. It
// reads what the probe recorded and never waits on the network.
func (b *historyBackend) ready() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.failedAt.IsZero() || time.Since(b.okAt) < historyDownAfter {
		return nil
	}
	return fmt.Errorf("the message history's stream %s (%s) unreachable since %s: %v; publishes keep flowing live, "+
		"and are not kept in the history once its queue is full",
		history.Stream(""), b.where, b.failedAt.UTC().Format(time.RFC3339), b.lastErr)
}

// addReadyCheck makes n not ready while the history's stream cannot be
// reached (ready). A nil b adds nothing.
func (b *historyBackend) addReadyCheck(n *node.Node) {
	if b != nil {
		n.AddReadyCheck("history", b.ready)
	}
}

// Collect reports the history's counters and stored size
// (kraken_history_*) and the durable groups' (kraken_durable_*;
// docs/operations.md), from History.Stats and Groups.Stats, which do not
// wait on the network.
func (b *historyBackend) Collect(_ context.Context, d *metrics.Descs, ch chan<- prometheus.Metric) {
	s := b.h.Stats()
	metrics.Counter(ch, d.HistoryAppended, s.Appended)
	metrics.Counter(ch, d.HistoryDropped, s.Dropped)
	metrics.Counter(ch, d.HistoryErrors, s.Errors)
	metrics.Gauge(ch, d.HistoryStored, float64(s.StoredMsgs))
	metrics.Gauge(ch, d.HistoryStoredBytes, float64(s.StoredBytes))
	g := b.groups.Stats()
	metrics.Gauge(ch, d.DurableGroups, float64(g.Feeds))
	metrics.Counter(ch, d.DurableDeliveries, g.Acked, "acked")
	metrics.Counter(ch, d.DurableDeliveries, g.Taken, "taken")
	metrics.Counter(ch, d.DurableDeliveries, g.Returned, "returned")
	metrics.Counter(ch, d.DurableDeliveries, g.Filtered, "filtered")
	metrics.Gauge(ch, d.DurablePending, float64(g.Pending))
}

// close stops the probe, closes the History (waiting up to
// history.CloseWait for its pending entries), then its connection and
// the embedded server, if any. A nil b does nothing.
func (b *historyBackend) close() {
	if b == nil {
		return
	}
	b.stop()
	b.probed.Wait()
	b.groups.Close() // what members had not acked goes back to the other nodes' at once
	b.sessions.Close()
	b.h.Close()
	b.closeConn()
}

func (b *historyBackend) closeConn() {
	if b.embedded != nil {
		b.embedded.Close()
		_ = b.lock.Close() // releases the lock, after the server's last write
		return
	}
	b.conn.Close()
}

// sessionStore is what node.Config.Sessions takes: nil (an untyped nil
// interface: sessions kept in memory only) when b is nil.
func (b *historyBackend) sessionStore() resume.Store {
	if b == nil {
		return nil
	}
	return b.sessions
}

// durableGroups is what session.Config.Durable takes: nil (an untyped
// nil interface: no group is durable) when b is nil.
func (b *historyBackend) durableGroups() session.DurableGroups {
	if b == nil {
		return nil
	}
	return b.groups
}

// sessionHistory is what session.Config.History takes: nil (an untyped
// nil interface, so the publish path skips the history) when b is nil.
func (b *historyBackend) sessionHistory() session.History {
	if b == nil {
		return nil
	}
	return b.h
}
