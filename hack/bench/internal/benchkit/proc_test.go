package benchkit

import (
	"crypto/sha256"
	"os"
	"syscall"
	"testing"
	"time"
)

func rusageCPUSeconds(t *testing.T) float64 {
	t.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

// ProcessCPUSeconds read for this process must agree with getrusage, which
// counts the same time in finer units.
func TestProcessCPUSecondsAgreesWithRusage(t *testing.T) {
	sum := sha256.Sum256(nil)
	for rusageCPUSeconds(t) < 0.3 {
		sum = sha256.Sum256(sum[:])
	}
	fromProc, err := ProcessCPUSeconds(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	fromRusage := rusageCPUSeconds(t)
	// /proc counts whole ticks of 10 ms, per thread, rounded down.
	if fromProc > fromRusage+0.01 || fromProc < fromRusage-0.1 {
		t.Fatalf("/proc says %.2f s of CPU, getrusage %.2f s", fromProc, fromRusage)
	}
}

func TestProcessCPUSecondsOfNoProcess(t *testing.T) {
	if _, err := ProcessCPUSeconds(0); err == nil {
		t.Fatal("no error for pid 0")
	}
}

// A command name with spaces and parentheses must not shift the fields.
func TestStatCPUSecondsSkipsTheCommandName(t *testing.T) {
	stat := []byte("4242 (a (b) c) S 1 4242 4242 0 -1 4194560 100 0 0 0 250 75 0 0 20 0 7 0 12345 0 0")
	got, err := statCPUSeconds(4242, stat)
	if err != nil {
		t.Fatal(err)
	}
	if got != 3.25 {
		t.Fatalf("got %.2f s, want 3.25 (250 + 75 ticks)", got)
	}
	if _, err := statCPUSeconds(4242, []byte("4242 (x) S 1 2")); err == nil {
		t.Fatal("no error for a short line")
	}
}

func TestProcNumbersReadsStatus(t *testing.T) {
	n, err := ProcNumbers("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	if n["VmRSS"] <= 0 || n["VmHWM"] < n["VmRSS"] {
		t.Fatalf("VmRSS %d KiB, VmHWM %d KiB", n["VmRSS"], n["VmHWM"])
	}
}
