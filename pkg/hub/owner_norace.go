//go:build !race

package hub

// Without the race detector the ownership checks cost nothing (see
// owner_race.go).

func (w *worker) owner()         {}
func (w *worker) mustOwn(string) {}
