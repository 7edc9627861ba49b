package listener

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestConnSetAgainstAMap runs random puts and removes on a connSet and on
// a Go map side by side: after each, every key answers the same, the
// count matches, and each visits exactly the map's connections. Few keys
// in many operations make long probe runs, wrap-arounds and backward
// shifts; the table grows and shrinks.
func TestConnSetAgainstAMap(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var s connSet
	ref := map[string]*conn{}
	keys := make([]string, 300)
	for i := range keys {
		keys[i] = fmt.Sprintf("actor\x00id-%d", i)
	}
	check := func(step int) {
		t.Helper()
		if s.len() != len(ref) {
			t.Fatalf("step %d: len %d, want %d", step, s.len(), len(ref))
		}
		for _, k := range keys {
			if got, want := s.get(k), ref[k]; got != want {
				t.Fatalf("step %d: get(%q) = %p, want %p", step, k, got, want)
			}
		}
		seen := 0
		s.each(func(st *conn) {
			seen++
			if ref[st.clientKey] != st {
				t.Fatalf("step %d: each visits %q, not held", step, st.clientKey)
			}
		})
		if seen != len(ref) {
			t.Fatalf("step %d: each visits %d, want %d", step, seen, len(ref))
		}
	}
	for step := 0; step < 20000; step++ {
		// Phases of filling and emptying, so the table grows and shrinks.
		fill := step/2000%2 == 0
		k := keys[r.IntN(len(keys))]
		switch op := r.IntN(10); {
		case fill && op < 7 || !fill && op < 2:
			st := &conn{clientKey: k}
			if got, want := s.put(st), ref[k]; got != want {
				t.Fatalf("step %d: put(%q) replaced %p, want %p", step, k, got, want)
			}
			ref[k] = st
		case op == 9 && ref[k] != nil:
			// A connection that no longer holds its key is not removed.
			if s.remove(&conn{clientKey: k}) {
				t.Fatalf("step %d: removed a connection not held", step)
			}
		default:
			st := ref[k]
			if st == nil {
				st = &conn{clientKey: k}
			}
			if got, want := s.remove(st), ref[k] != nil; got != want {
				t.Fatalf("step %d: remove(%q) = %v, want %v", step, k, got, want)
			}
			delete(ref, k)
		}
		if step%97 == 0 || step%2000 == 1999 {
			check(step)
		}
	}
	for k, st := range ref {
		if !s.remove(st) {
			t.Fatalf("remove(%q) at the end", k)
		}
		delete(ref, k)
	}
	check(-1)
	if len(s.slots) != minConnSet {
		t.Errorf("an empty set keeps %d slots, want %d", len(s.slots), minConnSet)
	}
}

// One pointer per connection held, at most 8 bytes ÷ 3/4 full = 10.7
// bytes per connection just after growing, 21.3 just before.
func TestConnSetSlots(t *testing.T) {
	var s connSet
	for i := 0; i < 5000; i++ {
		s.put(&conn{clientKey: fmt.Sprint("a\x00", i)})
	}
	if len(s.slots) != 8192 {
		t.Errorf("5000 connections in %d slots, want 8192", len(s.slots))
	}
}
