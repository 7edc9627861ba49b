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

//go:build linux && !race
// +build linux,!race

package netpoll

import "unsafe"

func (p *defaultPoll) getOperator(fd int, ptr unsafe.Pointer) *FDOperator {
	return *(**FDOperator)(ptr)
}

func (p *defaultPoll) setOperator(ptr unsafe.Pointer, operator *FDOperator) {
	*(**FDOperator)(ptr) = operator
}

// modOperator sets the event data of an EPOLL_CTL_MOD of operator's
// registration; the kernel reports ENOENT if there is none.
func (p *defaultPoll) modOperator(ptr unsafe.Pointer, operator *FDOperator) bool {
	*(**FDOperator)(ptr) = operator
	return true
}

func (p *defaultPoll) delOperator(operator *FDOperator) {
}
