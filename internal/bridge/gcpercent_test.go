package bridge

import (
	"runtime/debug"
	"testing"
)

// Without GOGC the bridge collects at DefaultGCPercent; with GOGC the
// runtime's value stands.
func TestSetGCDefault(t *testing.T) {
	before := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(before) })

	unset := func(string) (string, bool) { return "", false }
	if p, fromEnv := SetGCDefault(unset); p != DefaultGCPercent || fromEnv {
		t.Errorf("GOGC unset: %d, fromEnv %v; want %d from the default", p, fromEnv, DefaultGCPercent)
	}
	if got := debug.SetGCPercent(150); got != DefaultGCPercent {
		t.Errorf("the runtime collects at %d, want %d", got, DefaultGCPercent)
	}
	// The runtime read GOGC=150 (as set just above) at start: it stands.
	set := func(string) (string, bool) { return "150", true }
	if p, fromEnv := SetGCDefault(set); p != 150 || !fromEnv {
		t.Errorf("GOGC set: %d, fromEnv %v; want 150 from the environment", p, fromEnv)
	}
	if got := debug.SetGCPercent(150); got != 150 {
		t.Errorf("GOGC set: the runtime collects at %d, want 150 left alone", got)
	}
}
