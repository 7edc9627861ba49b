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

//go:build darwin || netbsd || freebsd || openbsd || dragonfly || linux
// +build darwin netbsd freebsd openbsd dragonfly linux

package netpoll

import "sync"

func (p *defaultPoll) Alloc() (operator *FDOperator) {
	op := p.opcache.alloc()
	op.poll = p
	return op
}

func (p *defaultPoll) Free(operator *FDOperator) {
	p.opcache.freeable(operator)
}

func (p *defaultPoll) appendHup(operator *FDOperator) {
	p.hups = append(p.hups, operator.hup())
	p.detach(operator)
	operator.done()
}

func (p *defaultPoll) detach(operator *FDOperator) {
	if err := operator.Control(PollDetach); err != nil {
		logger.Printf("NETPOLL: poller detach operator failed: %v", err)
	}
}

func (p *defaultPoll) onhups() {
	if len(p.hups) == 0 {
		return
	}
	// The batch goes to the goroutine, and the poller carries on with the
	// emptied slice of an earlier batch (hupBatches), so that the hang-ups
	// of a Wait are collected without allocating once the slices are grown.
	b := hupBatches.Get().(*hupBatch)
	b.hups, p.hups = p.hups, b.hups[:0]
	go func(b *hupBatch) {
		for i := range b.hups {
			b.hups[i].run(p)
			b.hups[i] = hup{}
		}
		b.hups = b.hups[:0]
		hupBatches.Put(b)
	}(b)
}

// hupBatch holds the hang-ups of one Wait while onhups's goroutine runs them,
// then, emptied, the slice that a poller collects the next ones in.
type hupBatch struct{ hups []hup }

var hupBatches = sync.Pool{New: func() interface{} { return new(hupBatch) }}

// readall read all left data before close connection
func readall(op *FDOperator, br barrier) (total int, err error) {
	ivs := br.ivs
	var n int
	for {
		bs := op.inputs(br.bs)
		if len(bs) == 0 {
			return total, nil
		}

	TryRead:
		n, err = ioread(op.FD, bs, ivs)
		op.inputAck(n)
		total += n
		if err != nil {
			return total, err
		}
		if n == 0 {
			goto TryRead
		}
	}
}
