// Package storetest is the conformance suite for store.Store backends. A
// backend's tests call Run with a factory for fresh, empty stores; the
// suite checks the contract of the store package (wire-reference.md §6.4, §6.5):
// append and get, copy semantics, argument errors, duplicate ids, acks of
// unknown ids, acks by several actors, Close when the backend implements
// store.Closer, and concurrent use, which is meaningful under -race.
//
// # Concurrency
//
// Run and its subtests run sequentially on the calling test; the concurrency
// subtest starts goroutines and waits for all of them before it returns, so
// Run leaves no goroutine behind other than those of the stores the factory
// made, which the factory must stop with t.Cleanup.
package storetest
