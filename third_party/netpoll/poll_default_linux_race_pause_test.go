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

//go:build linux && race
// +build linux,race

package netpoll

import (
	"errors"
	"syscall"
	"testing"
)

// TestReadPauseDetachedRace: in race builds, a change of the registration
// (SetReadPaused's, or a flush's) that comes after PollDetach returns ENOENT
// and does not put the deleted entry back in the descriptor's table (with
// the old registration's number, the stale events that F1 drops would reach
// the operator again).
func TestReadPauseDetachedRace(t *testing.T) {
	p, op, _ := newPausePoll(t)
	MustNil(t, op.Control(PollDetach))
	for _, event := range []PollEvent{PollPauseRead, PollResumeRead, PollR2RW, PollRW2R} {
		err := op.Control(event)
		Assert(t, errors.Is(err, syscall.ENOENT), event, err)
		_, ok := p.m.Load(op.FD)
		Assert(t, !ok, "event", event, "put back the entry of a detached operator")
	}
}
