package client

import (
	"testing"
	"time"
)

func TestBackoffDefaults(t *testing.T) {
	var o Options
	o.setDefaults()
	want := []time.Duration{5000000, 7500000, 11250000, 16875000, 25312500, 30000000, 30000000}
	for i, w := range want {
		w *= time.Microsecond
		if got := o.backoff(i+1, 0); got != w {
			t.Errorf("attempt %d: %v, want %v", i+1, got, w)
		}
		// Jitter takes up to 20 % off, never adds.
		if got := o.backoff(i+1, 0.999999); got < w*8/10 || got > w {
			t.Errorf("attempt %d with jitter: %v outside [%v, %v]", i+1, got, w*8/10, w)
		}
	}
	if got := o.backoff(1000, 0); got != 30*time.Second {
		t.Errorf("attempt 1000: %v", got)
	}
}

func TestBackoffConfigured(t *testing.T) {
	o := Options{ReconnectDelay: time.Second, ReconnectMultiplier: 2, MaxReconnectDelay: 5 * time.Second, ReconnectJitter: -1}
	o.setDefaults()
	for i, w := range []time.Duration{1, 2, 4, 5, 5} {
		if got := o.backoff(i+1, 0.5); got != w*time.Second {
			t.Errorf("attempt %d: %v, want %vs", i+1, got, w)
		}
	}
}
