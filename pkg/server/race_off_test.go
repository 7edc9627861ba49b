//go:build !race

package server

// raceEnabled reports a build with the race detector, whose runtime
// allocates more and whose sync.Pool drops a share of what is put back.
const raceEnabled = false
