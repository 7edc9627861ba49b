// Command baseline runs the benchmark baseline broker: a goroutine-per-
// connection WebSocket broker on gorilla/websocket that speaks the subset of
// the kraken protocol the load generator uses. It listens on --addr and
// serves the WebSocket endpoint at /ws.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/NoLagApp/kraken/bench/baseline/broker"
)

func main() {
	addr := flag.String("addr", ":8090", "listen address")
	flag.Parse()

	b := broker.New()
	mux := http.NewServeMux()
	mux.Handle("/ws", b)
	mux.HandleFunc("/health", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("ok\n"))
	})
	srv := &http.Server{Addr: *addr, Handler: mux, ReadHeaderTimeout: 10 * time.Second}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	errc := make(chan error, 1)
	go func() { errc <- srv.ListenAndServe() }()
	select {
	case err := <-errc:
		fmt.Fprintln(os.Stderr, "baseline:", err)
		os.Exit(1)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		fmt.Fprintln(os.Stderr, "baseline: shutdown:", err)
	}
	b.Close()
}
