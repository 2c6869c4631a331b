package main

import (
	"os"
	"runtime"
	"testing"
	"time"
)

// readUsage must see this process's own writes and context switches.
func TestReadUsageCountsWritesAndSwitches(t *testing.T) {
	f, err := os.CreateTemp(t.TempDir(), "writes")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	before := readUsage()
	for range 100 {
		if _, err := f.Write([]byte("x")); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Millisecond) // gives up the CPU: a voluntary switch
	}
	after := readUsage()
	if n := after.Writes - before.Writes; before.Writes < 0 || n < 100 {
		t.Errorf("write syscalls went from %d to %d over 100 writes", before.Writes, after.Writes)
	}
	if n := after.Switches - before.Switches; before.Switches < 0 || n < 50 {
		t.Errorf("context switches went from %d to %d over 100 sleeps", before.Switches, after.Switches)
	}
	if r, w := syscallCounts("/proc/0/io"); r != -1 || w != -1 {
		t.Errorf("counts of no process: %d, %d", r, w)
	}
}

func TestReadUsageCountsCollections(t *testing.T) {
	before := readUsage()
	garbage := make([][]byte, 0, 64)
	for range 3 {
		for range 64 {
			garbage = append(garbage, make([]byte, 64<<10))
		}
		garbage = garbage[:0]
		runtime.GC()
	}
	after := readUsage()
	if n := after.GCCycles - before.GCCycles; before.GCCycles < 0 || n < 3 {
		t.Errorf("collections went from %d to %d over 3 runtime.GC calls", before.GCCycles, after.GCCycles)
	}
	if before.GCCPUSecs < 0 || after.GCCPUSecs <= before.GCCPUSecs {
		t.Errorf("the collector's CPU went from %g to %g s over 3 collections", before.GCCPUSecs, after.GCCPUSecs)
	}
	runtime.KeepAlive(garbage)
}

// procStatus reads this process's resident set and its peak, in KiB.
func TestProcStatusReadsRSSAndPeak(t *testing.T) {
	rss, hwm := procStatus()
	if rss <= 0 || hwm < rss {
		t.Fatalf("VmRSS %d KiB, VmHWM %d KiB", rss, hwm)
	}
}
