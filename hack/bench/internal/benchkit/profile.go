package benchkit

import (
	"os"
	"runtime/pprof"
)

// StartCPUProfile starts a CPU profile written to path (none when empty)
// and returns what stops it and closes the file.
func StartCPUProfile(path string) (stop func() error, err error) {
	if path == "" {
		return func() error { return nil }, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		_ = f.Close() // the profile's error is the one to report
		return nil, err
	}
	return func() error {
		pprof.StopCPUProfile()
		return f.Close()
	}, nil
}
