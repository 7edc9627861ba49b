package history

import (
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"go.uber.org/zap"
)

// embeddedReady bounds the wait for an embedded server to start.
const embeddedReady = 10 * time.Second

// EmbeddedServer is a NATS server with JetStream run in this process for
// one node's history, without a network listener, and the connection to
// it (Conn, for Config.Conn).
type EmbeddedServer struct {
	Server *server.Server
	Conn   *nats.Conn
}

// Embedded starts a NATS server in process with JetStream on, its file
// store under dir (created if missing; JetStream writes dir/jetstream),
// listening on no port (DontListen), and connects to it in process
// (nats.InProcessServer). What it stores survives a restart on the same
// dir. Its warnings and errors are logged to log (nil: none). It fails
// when the server cannot be made (dir not writable, dir locked by another
// server) or is not ready within 10 s.
func Embedded(dir string, log *zap.Logger) (*EmbeddedServer, error) {
	if dir == "" {
		return nil, errors.New("history: embedded server without a store directory")
	}
	if log == nil {
		log = zap.NewNop()
	}
	srv, err := server.NewServer(&server.Options{
		ServerName: "kraken-history",
		JetStream:  true,
		StoreDir:   dir,
		DontListen: true,
		NoSigs:     true,
	})
	if err != nil {
		return nil, fmt.Errorf("history: embedded NATS server: %w", err)
	}
	srv.SetLoggerV2(serverLogger{log.Named("nats")}, false, false, false)
	srv.Start()
	if !srv.ReadyForConnections(embeddedReady) || !srv.JetStreamEnabled() {
		srv.Shutdown()
		srv.WaitForShutdown()
		return nil, fmt.Errorf("history: embedded NATS server with JetStream on %s not ready", dir)
	}
	nc, err := nats.Connect("", nats.InProcessServer(srv), nats.Name("kraken-history"), nats.MaxReconnects(-1))
	if err != nil {
		srv.Shutdown()
		srv.WaitForShutdown()
		return nil, fmt.Errorf("history: connect to the embedded NATS server: %w", err)
	}
	return &EmbeddedServer{Server: srv, Conn: nc}, nil
}

// Close closes the connection, then shuts the server down and waits until
// it has (its store flushed and released).
func (e *EmbeddedServer) Close() {
	e.Conn.Close()
	e.Server.Shutdown()
	e.Server.WaitForShutdown()
}

// serverLogger passes the embedded server's warnings and errors to zap;
// notices go to debug.
type serverLogger struct{ log *zap.Logger }

func (l serverLogger) Noticef(format string, v ...any) { l.log.Debug(fmt.Sprintf(format, v...)) }
func (l serverLogger) Warnf(format string, v ...any)   { l.log.Warn(fmt.Sprintf(format, v...)) }
func (l serverLogger) Fatalf(format string, v ...any)  { l.log.Error(fmt.Sprintf(format, v...)) }
func (l serverLogger) Errorf(format string, v ...any)  { l.log.Error(fmt.Sprintf(format, v...)) }
func (l serverLogger) Debugf(format string, v ...any)  { l.log.Debug(fmt.Sprintf(format, v...)) }
func (l serverLogger) Tracef(format string, v ...any)  { l.log.Debug(fmt.Sprintf(format, v...)) }
