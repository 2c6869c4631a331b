package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/kubebridge/kubebridge/hack/bench/internal/benchkit"
)

// usage is what this process has used so far: CPU, and the system calls
// and context switches that show how much of it went to handing work
// over rather than doing it. Each counter is -1 if it cannot be read.
type usage struct {
	CPUSecs float64 `json:"cpuSeconds"`
	// Writes and Reads are read(2) and write(2)-like system calls
	// (/proc/self/io's syscw and syscr).
	Writes int64 `json:"writeSyscalls"`
	Reads  int64 `json:"readSyscalls"`
	// Switches counts the times any of the process's threads gave up
	// its CPU to wait, for work or for the kernel (getrusage's nvcsw):
	// each is a thread put to sleep and, later, woken.
	Switches int64 `json:"contextSwitches"`
	// GCCycles counts the collections finished, and GCCPUSecs is the
	// runtime's estimate of the CPU its collector used, assists included
	// (/cpu/classes/gc/total:cpu-seconds): which share of a child's CPU
	// the garbage it makes costs. The estimate is only brought up to date
	// at the end of a cycle.
	GCCycles  int64   `json:"gcCycles"`
	GCCPUSecs float64 `json:"gcCPUSeconds"`
}

func readUsage() usage {
	u := usage{Writes: -1, Reads: -1, Switches: -1}
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err == nil {
		u.CPUSecs = time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
		u.Switches = ru.Nvcsw
	}
	u.Reads, u.Writes = syscallCounts("/proc/self/io")
	gc := []metrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}, {Name: "/cpu/classes/gc/total:cpu-seconds"}}
	metrics.Read(gc)
	u.GCCycles, u.GCCPUSecs = -1, -1
	if gc[0].Value.Kind() == metrics.KindUint64 {
		u.GCCycles = int64(gc[0].Value.Uint64())
	}
	if gc[1].Value.Kind() == metrics.KindFloat64 {
		u.GCCPUSecs = gc[1].Value.Float64()
	}
	return u
}

// syscallCounts reads syscr and syscw from a /proc/<pid>/io file; -1 for
// a count it cannot read.
func syscallCounts(path string) (reads, writes int64) {
	n, err := benchkit.ProcNumbers(path)
	if err != nil {
		return -1, -1
	}
	reads, writes = -1, -1
	if v, ok := n["syscr"]; ok {
		reads = v
	}
	if v, ok := n["syscw"]; ok {
		writes = v
	}
	return reads, writes
}

// peaks samples the child's memory every 200ms, and the bridge's intake
// and publish buffer gauges every scrapeEvery. Reading /metrics costs the
// bridge CPU (serving and gathering it): at 5 reads a second it was an
// eighth of the bridge's CPU in a churn of 9,000 events, which a
// Prometheus scraping every 15 to 60 seconds does not cost.
type peaks struct {
	scrapeEvery            time.Duration
	mu                     sync.Mutex
	heapAlloc, heapInuse   uint64
	liveHeap               uint64
	pending, bufferedBytes int64
	metricsURL             atomic.Pointer[string]
	// peakProfile, if set, is rewritten with a heap profile whenever the
	// live heap grows by 5 % over the last one written: the profile of the
	// peak, which the profile at the end cannot show.
	peakProfile string
	profiled    uint64
}

func (p *peaks) run(ctx context.Context) {
	t := time.NewTicker(200 * time.Millisecond)
	defer t.Stop()
	client := &http.Client{Timeout: time.Second}
	live := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	var scraped time.Time
	for {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		metrics.Read(live)
		var pending, buffered int64 = -1, -1
		if u := p.metricsURL.Load(); u != nil && time.Since(scraped) >= p.scrapeEvery {
			pending, buffered = scrapeGauges(client, *u)
			scraped = time.Now()
		}
		p.mu.Lock()
		p.heapAlloc = max(p.heapAlloc, ms.HeapAlloc)
		p.heapInuse = max(p.heapInuse, ms.HeapInuse)
		var grown bool
		if live[0].Value.Kind() == metrics.KindUint64 {
			v := live[0].Value.Uint64()
			p.liveHeap = max(p.liveHeap, v)
			if grown = p.peakProfile != "" && v > p.profiled+p.profiled/20; grown {
				p.profiled = v
			}
		}
		p.pending = max(p.pending, pending)
		p.bufferedBytes = max(p.bufferedBytes, buffered)
		p.mu.Unlock()
		if grown {
			// A heap profile shows the heap as of the last GC, as the
			// live heap metric does.
			if err := writeHeapProfile(p.peakProfile); err != nil {
				fmt.Fprintf(os.Stderr, "child: peak heap profile: %v\n", err)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (p *peaks) fill(r *result) {
	p.mu.Lock()
	defer p.mu.Unlock()
	r.MaxHeapAlloc, r.MaxHeapInuse, r.MaxLiveHeap, r.MaxPending, r.MaxBufferBytes = p.heapAlloc, p.heapInuse, p.liveHeap, p.pending, p.bufferedBytes
}

func writeHeapProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	err = pprof.Lookup("heap").WriteTo(f, 0)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// procStatus returns VmRSS and VmHWM (peak RSS) in KiB.
func procStatus() (rss, hwm int64) {
	n, err := benchkit.ProcNumbers("/proc/self/status")
	if err != nil {
		return -1, -1
	}
	return n["VmRSS"], n["VmHWM"]
}
