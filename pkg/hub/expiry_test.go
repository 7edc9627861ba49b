package hub

import (
	"math"
	"testing"
	"time"
)

// TestExpirySeconds: a token's expiry in the 32 bits of Session.ExpiresAt
// is never earlier than the expiry itself, and 0 only for none.
func TestExpirySeconds(t *testing.T) {
	for _, tt := range []struct {
		name string
		give time.Time
		want uint32
	}{
		{"none", time.Time{}, 0},
		{"whole second", time.Unix(1924992000, 0), 1924992000},
		{"fraction rounds up", time.Unix(1924992000, 1), 1924992001},
		{"the epoch", time.Unix(0, 0), 1},
		{"before the epoch", time.Unix(-5, 0), 1},
		{"past 2106", time.Date(2200, 1, 1, 0, 0, 0, 0, time.UTC), math.MaxUint32},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := ExpirySeconds(tt.give); got != tt.want {
				t.Fatalf("ExpirySeconds(%v) = %d, want %d", tt.give, got, tt.want)
			}
		})
	}
}
