package main

import (
	"crypto/sha256"
	"os"
	"testing"
)

// processCPUSeconds read for this process must agree with getrusage, which
// counts the same time in finer units.
func TestProcessCPUSecondsAgreesWithRusage(t *testing.T) {
	sum := sha256.Sum256(nil)
	for cpuSeconds() < 0.3 {
		sum = sha256.Sum256(sum[:])
	}
	fromProc, err := processCPUSeconds(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	fromRusage := cpuSeconds()
	// /proc counts whole ticks of 10 ms, per thread, rounded down.
	if fromProc > fromRusage+0.01 || fromProc < fromRusage-0.1 {
		t.Fatalf("/proc says %.2f s of CPU, getrusage %.2f s", fromProc, fromRusage)
	}
}

func TestProcessCPUSecondsOfNoProcess(t *testing.T) {
	if _, err := processCPUSeconds(0); err == nil {
		t.Fatal("no error for pid 0")
	}
}
