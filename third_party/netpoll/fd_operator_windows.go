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

//go:build windows
// +build windows

package netpoll

// connection is the type of FDOperator.conn, the connection an operator
// dispatches its events to (fd_operator_conn.go); netpoll has no
// connections on windows, where the field stays nil.
type connection struct{}

// operatorPoll is the type of FDOperator.poll (fd_operator_conn.go); there is
// no poller on windows.
type operatorPoll = Poll
