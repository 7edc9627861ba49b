// Copyright 2023 CloudWeGo Authors
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
	"sync/atomic"
	"unsafe"
)

// In race builds the event data holds the descriptor, not the operator (the
// operator is looked up in p.m), and a descriptor is reused as soon as it is
// closed. An event that epoll_wait returned for a registration that was then
// removed, its descriptor closed and reopened and registered again (say, a
// connection closed while the poller was still working through the batch, its
// descriptor taken by a new dial) would find the new operator: a pollDesc
// waiting for its connect would be handed the old socket's EPOLLIN|EPOLLHUP
// and fail the dial with "closed by peer". So the event data also carries the
// number of the registration it was armed for, and an event whose number is
// not that of the descriptor's current registration is dropped, as the
// pointer of the non-race build drops it (the old operator is not reused
// before the batch is done, and do() fails on it).
type eventdata struct {
	fd  int32
	gen uint32 // the registration, see raceEntry
}

// raceEntry is the operator registered for a descriptor and the number of
// that registration; EPOLL_CTL_MOD of the same operator keeps the number.
type raceEntry struct {
	op  *FDOperator
	gen uint32
}

var raceGen uint32

func (p *defaultPoll) getOperator(fd int, ptr unsafe.Pointer) *FDOperator {
	data := *(*eventdata)(ptr)
	tmp, _ := p.m.Load(int(data.fd))
	if tmp == nil {
		return nil
	}
	e := tmp.(raceEntry)
	if e.gen != data.gen {
		return nil // armed for an earlier registration of this descriptor
	}
	return e.op
}

func (p *defaultPoll) setOperator(ptr unsafe.Pointer, operator *FDOperator) {
	e := raceEntry{op: operator}
	if tmp, ok := p.m.Load(operator.FD); ok && tmp.(raceEntry).op == operator {
		e.gen = tmp.(raceEntry).gen
	} else {
		e.gen = atomic.AddUint32(&raceGen, 1)
	}
	*(*eventdata)(ptr) = eventdata{fd: int32(operator.FD), gen: e.gen}
	p.m.Store(operator.FD, e)
}

// modOperator sets the event data of an EPOLL_CTL_MOD of operator's
// registration, with the number of that registration, and reports whether
// operator is registered. It stores nothing: a change that comes after the
// operator was detached, or while it is (a flush's or SetReadPaused's, from
// another goroutine than the detach), must not put back the entry that
// PollDetach deleted. setOperator would: an entry left for a descriptor that is
// then closed, and, when the detach deletes the entry between setOperator's
// Load and Store, one with the old registration's number, so that stale events
// of that registration reach the operator again (or the next operator on the
// descriptor, if the operator cache hands the same one out again).
func (p *defaultPoll) modOperator(ptr unsafe.Pointer, operator *FDOperator) bool {
	tmp, ok := p.m.Load(operator.FD)
	if !ok || tmp.(raceEntry).op != operator {
		return false
	}
	*(*eventdata)(ptr) = eventdata{fd: int32(operator.FD), gen: tmp.(raceEntry).gen}
	return true
}

func (p *defaultPoll) delOperator(operator *FDOperator) {
	p.m.Delete(operator.FD)
}
