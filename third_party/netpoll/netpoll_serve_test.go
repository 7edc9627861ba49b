// Copyright 2026 kraken authors (added to netpoll v0.7.2 by kraken.patch)
//
// Licensed under the Apache License, Version 2.0 (the "License");
// you may not use this file except in compliance with the License.
// You may obtain a copy of the License at
//
//    http://www.apache.org/licenses/LICENSE-2.0
//
// Unless required by applicable law or agreed to in writing, software
// distributed under the License is distributed on an "AS IS" BASIS,
// WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
// See the License for the specific language governing permissions and
// limitations under the License.

//go:build darwin || netbsd || freebsd || openbsd || dragonfly || linux
// +build darwin netbsd freebsd openbsd dragonfly linux

package netpoll

import (
	"context"
	"testing"
	"time"
)

// TestServeAfterShutdown: with `go loop.Serve(ln)`, Shutdown may come before
// Serve has started. Serve must then not serve the listener for good: it
// closes it and returns, and the address is free again.
func TestServeAfterShutdown(t *testing.T) {
	loop, err := NewEventLoop(func(ctx context.Context, connection Connection) error { return nil })
	MustNil(t, err)
	MustNil(t, loop.Shutdown(context.Background()))

	ln, err := CreateListener("tcp", "127.0.0.1:0")
	MustNil(t, err)
	address := ln.Addr().String()
	served := make(chan error, 1)
	go func() { served <- loop.Serve(ln) }()
	select {
	case <-served:
	case <-time.After(5 * time.Second):
		ln.Close()
		t.Fatal("Serve after Shutdown is still serving")
	}
	again, err := CreateListener("tcp", address)
	MustNil(t, err)
	MustNil(t, again.Close())
}
