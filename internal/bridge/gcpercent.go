package bridge

import "runtime/debug"

// DefaultGCPercent is the garbage collector's target when GOGC is unset:
// the heap may grow 75% over the live heap between collections instead of
// Go's 100%. The bridge's live heap is its informer caches; the start-up
// snapshot's and every event's garbage otherwise take its peak to twice
// that. Measured with hack/bench/versus (docs/performance.md): peak RSS
// 1.32× → 1.18× a bare informer's at 100,000 objects, 1.13× → 1.02× at
// 20,000, CPU per event within the noise. Prometheus made the same choice.
const DefaultGCPercent = 75

// SetGCDefault sets the collector's target to DefaultGCPercent unless the
// environment sets GOGC, and returns the target in effect and whether it
// came from GOGC. Call it once, at the start of the process.
func SetGCDefault(lookupEnv func(string) (string, bool)) (percent int, fromEnv bool) {
	if _, set := lookupEnv("GOGC"); set {
		p := debug.SetGCPercent(-1) // read the value the runtime took from GOGC
		debug.SetGCPercent(p)
		return p, true
	}
	debug.SetGCPercent(DefaultGCPercent)
	return DefaultGCPercent, false
}
