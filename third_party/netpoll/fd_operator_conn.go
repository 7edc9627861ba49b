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

//go:build !windows
// +build !windows

package netpoll

// operatorPoll is the type of FDOperator.poll: the poller itself, one word.
// Every Poll is a *defaultPoll (openPoll).
type operatorPoll = *defaultPoll

// The pollers dispatch a connection's events through these: to the
// connection when conn is set (a connection's operator), else to the func
// fields (listeners, dialers, tests).

// hasInputs reports whether the operator reads into a buffer (a connection).
func (op *FDOperator) hasInputs() bool { return op.conn != nil || op.Inputs != nil }

// hasOutputs reports whether the operator writes from a buffer (a connection).
func (op *FDOperator) hasOutputs() bool { return op.conn != nil || op.Outputs != nil }

func (op *FDOperator) inputs(vs [][]byte) [][]byte {
	if c := op.conn; c != nil {
		return c.inputs(vs)
	}
	return op.Inputs(vs)
}

func (op *FDOperator) inputAck(n int) error {
	if c := op.conn; c != nil {
		return c.inputAck(n)
	}
	return op.InputAck(n)
}

func (op *FDOperator) outputs(vs [][]byte) ([][]byte, bool) {
	if c := op.conn; c != nil {
		return c.outputs(vs)
	}
	return op.Outputs(vs)
}

func (op *FDOperator) outputAck(n int) error {
	if c := op.conn; c != nil {
		return c.outputAck(n)
	}
	return op.OutputAck(n)
}

// hup is a hang-up the poller runs after its batch of events (onhups): the
// connection's onHup, or the operator's OnHup, taken when the hang-up was
// seen (the operator may be freed and reset before it runs).
type hup struct {
	fn   func(p Poll) error
	conn *connection
}

func (op *FDOperator) hup() hup { return hup{fn: op.OnHup, conn: op.conn} }

func (h hup) run(p Poll) {
	switch {
	case h.conn != nil:
		h.conn.onHup(p)
	case h.fn != nil:
		h.fn(p)
	}
}
