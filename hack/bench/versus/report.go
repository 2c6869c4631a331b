package main

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
)

func kib(k int64) float64  { return float64(k) / 1024 }
func mib(b uint64) float64 { return float64(b) / (1 << 20) }

func printReport(w io.Writer, b *bench, runs []run, serverVersion string, maxPayload int) {
	var base *result
	for i := range runs {
		if runs[i].m.kind.floor == heapFloor {
			base = &runs[i].ready
		}
	}
	objects := b.objects
	fmt.Fprintf(w, "\n%d ConfigMaps (or Widgets, a CRD's, for the -crd modes), %d bytes of data each (4 keys), and %d Pods, in %d namespace(s); every mode in a fresh child process.\n\n", objects, b.size, b.pods, b.layout.namespaces)
	fmt.Fprintln(w, "| mode | RSS MiB | peak RSS MiB | RSS after FreeOSMemory MiB | Go heap in-use MiB | Go heap alloc MiB | heap in-use B/object | (heap − baseline) B/object | ready s | start-up snapshot s |")
	fmt.Fprintln(w, "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
	for _, rn := range runs {
		r := rn.ready
		delta := "–"
		if base != nil && rn.m.kind.floor != heapFloor {
			delta = strconv.FormatInt((int64(r.HeapInuse)-int64(base.HeapInuse))/int64(objects), 10)
		}
		snapshot := "–"
		if r.SnapshotSecs > 0 {
			snapshot = strconv.FormatFloat(r.SnapshotSecs, 'f', 2, 64)
		}
		fmt.Fprintf(w, "| %s | %.1f | %.1f | %.1f | %.1f | %.1f | %d | %s | %.1f | %s |\n",
			rn.m.label, kib(r.VmRSSKiB), kib(r.VmHWMKiB), kib(r.FreedRSS), mib(r.HeapInuse), mib(r.HeapAlloc),
			r.HeapInuse/uint64(objects), delta, r.ReadySecs, snapshot)
	}
	printSnapshotFloor(w, runs)
	if b.churn.mix.total() > 0 {
		printChurnReport(w, b, runs)
		printVersus(w, b, runs)
		printCustomResources(w, b, runs)
		printCluster(w, b, runs)
	}
	fmt.Fprintln(w)
	var goVersion, gogc, memLimit string
	gmp := 0
	if len(runs) > 0 {
		r := runs[0].ready
		goVersion, gmp, gogc, memLimit = r.GoVersion, r.GOMAXPROCS, r.GOGC, r.GOMEMLIMIT
	}
	if gogc == "" {
		gogc = "unset (100)"
	}
	if memLimit == "" {
		memLimit = "unset"
	}
	fmt.Fprintf(w, "Machine: %s %s/%s, GOMAXPROCS=%d unless a mode says otherwise (NumCPU %d), GOGC=%s, GOMEMLIMIT=%s, %s, %s RAM, kernel %s\n",
		goVersion, runtime.GOOS, runtime.GOARCH, gmp, runtime.NumCPU(), gogc, memLimit, cpuModel(), memTotal(), kernel())
	fmt.Fprintf(w, "kube-apiserver %s, client-go %s, NATS max_payload %d\n", serverVersion, moduleVersion("k8s.io/client-go"), maxPayload)
}

// printChurnReport prints the peaks over the whole life of each child,
// against the first informer mode's (the CPU floor's when it ran), its CPU
// over the churn, and what the stream received.
func printChurnReport(w io.Writer, b *bench, runs []run) {
	ref := churnReference(runs)
	c := b.churn
	fmt.Fprintf(w, "\nChurn: %s requested at %.0f/s", c.mix, c.rate)
	if c.outage > 0 {
		fmt.Fprintf(w, ", NATS stopped for %v starting %v into the churn", c.outage, c.outageAfter)
	}
	fmt.Fprintf(w, ". Peaks are over each child's whole life: cache sync or start-up snapshot, then the churn.\n\n")
	printChurnPeaks(w, runs, ref)
	printChurnCPU(w, c.mix, runs, ref)
	printStreams(w, runs)
}

// churnReference is the run the churn's tables compare with: the first of
// the CPU floor, else the first of an informer; nil for none.
func churnReference(runs []run) *run {
	for i := range runs {
		if runs[i].m.kind.floor == cpuFloor {
			return &runs[i]
		}
	}
	for i := range runs {
		if runs[i].m.kind.runs.informer() {
			return &runs[i]
		}
	}
	return nil
}

// referenceLabel names ref in the tables' headers.
func referenceLabel(ref *run) string {
	if ref == nil {
		return "–"
	}
	return ref.m.label
}

// printChurnPeaks prints each run's memory at the end of the churn, and
// its peak against ref's.
func printChurnPeaks(w io.Writer, runs []run, ref *run) {
	fmt.Fprintf(w, "| mode | peak RSS after start-up MiB | peak RSS at end MiB | peak ÷ %s | RSS at end MiB | heap in-use at end MiB | max live heap MiB | max sampled heap alloc MiB | max pending objects | max publish buffer MiB | churn s | NATS down s |\n", referenceLabel(ref))
	fmt.Fprintln(w, "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
	for _, rn := range runs {
		if rn.churn == nil {
			continue
		}
		r := rn.churn
		ratio := "–"
		if ref != nil && ref.churn != nil {
			ratio = fmt.Sprintf("%.2f", float64(r.VmHWMKiB)/float64(ref.churn.VmHWMKiB))
		}
		pending, buffer := "–", "–"
		if rn.m.isBridge() {
			pending, buffer = strconv.FormatInt(r.MaxPending, 10), fmt.Sprintf("%.1f", mib(uint64(r.MaxBufferBytes)))
		}
		var churnSecs, outage float64
		if rn.load != nil {
			churnSecs, outage = rn.load.Duration.Seconds(), rn.load.Outage.Seconds()
		}
		fmt.Fprintf(w, "| %s | %.1f | %.1f | %s | %.1f | %.1f | %.1f | %.1f | %s | %s | %.1f | %.1f |\n",
			rn.m.label, kib(rn.ready.VmHWMKiB), kib(r.VmHWMKiB), ratio, kib(r.VmRSSKiB), mib(r.HeapInuse), mib(r.MaxLiveHeap), mib(r.MaxHeapAlloc), pending, buffer, churnSecs, outage)
	}
}

// printChurnCPU prints each run's CPU over the churn, compared with the
// typed informer run the same way (gzip on or off) when there is one,
// else with ref.
func printChurnCPU(w io.Writer, mix churnMix, runs []run, ref *run) {
	fmt.Fprintf(w, "\n| mode | CPU s during the churn | CPU ms per 1,000 events | ÷ %s (same gzip and GOMAXPROCS settings) | kube-apiserver CPU ms per 1,000 events (the churn's writes and this mode's watch) | write / read syscalls per event | voluntary context switches per event | GC cycles | GC CPU ms per 1,000 events (the runtime's estimate) |\n", referenceLabel(ref))
	fmt.Fprintln(w, "|---|--:|--:|--:|--:|--:|--:|--:|--:|")
	perK := func(rn run) float64 { return cpuPerThousand(rn, mix) }
	cpuRef := func(rn run) float64 {
		if fs := floorRuns(runs, rn); len(fs) > 0 {
			return meanOf(fs, perK)
		}
		if ref != nil && ref.churn != nil {
			return perK(*ref)
		}
		return 0
	}
	for _, rn := range runs {
		if rn.churn == nil {
			continue
		}
		ratio := "–"
		if r := cpuRef(rn); r > 0 {
			ratio = fmt.Sprintf("%.2f", perK(rn)/r)
		}
		apiserver := "–"
		if rn.apiserverCPU > 0 {
			apiserver = fmt.Sprintf("%.1f", rn.apiserverCPU*1000/float64(mix.total())*1000)
		}
		u := rn.churnUsage()
		cycles, gcCPU := "–", "–"
		if u.GCCycles >= 0 {
			cycles = strconv.FormatInt(u.GCCycles, 10)
		}
		if u.GCCPUSecs >= 0 {
			gcCPU = fmt.Sprintf("%.1f", u.GCCPUSecs*1000/float64(mix.total())*1000)
		}
		fmt.Fprintf(w, "| %s | %.2f | %.1f | %s | %s | %s / %s | %s | %s | %s |\n", rn.m.label, u.CPUSecs, perK(rn), ratio, apiserver,
			perEvent(u.Writes, mix), perEvent(u.Reads, mix), perEvent(u.Switches, mix), cycles, gcCPU)
	}
}

// printStreams prints what each bridge's stream received.
func printStreams(w io.Writer, runs []run) {
	fmt.Fprintln(w, "\n| mode | stream messages | snapshot begin/items/end | added events (held + rolled up) | updated events | updates they stand for | deleted events | coalesced events | truncated | mean updated event KiB |")
	fmt.Fprintln(w, "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
	for _, rn := range runs {
		sc := rn.stream
		if sc == nil {
			continue
		}
		mean := 0.0
		if sc.Updated > 0 {
			mean = float64(sc.UpdatedBytes) / float64(sc.Updated) / 1024
		}
		fmt.Fprintf(w, "| %s | %d | %d/%d/%d | %d + %d | %d | %d | %d | %d | %d | %.0f |\n",
			rn.m.label, sc.Msgs, sc.Begins, sc.Items, sc.Ends, sc.Added, sc.RolledUp, sc.Updated, sc.Changes, sc.Deleted, sc.Coalesced, sc.Truncated, mean)
	}
}

// cpuPerThousand is the CPU a mode spent on the churn, in milliseconds per
// 1,000 events: from the end of its ready measurement to the start of its
// churn measurement, so the collections a measurement forces are left out.
func cpuPerThousand(rn run, mix churnMix) float64 {
	return rn.churnUsage().CPUSecs * 1000 / float64(mix.total()) * 1000
}

// perEvent is a count over the churn per event, or "–" if it was unread.
func perEvent(n int64, mix churnMix) string {
	if n < 0 {
		return "–"
	}
	return fmt.Sprintf("%.2f", float64(n)/float64(mix.total()))
}

func cpuModel() string {
	b, _ := os.ReadFile("/proc/cpuinfo")
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown CPU"
}

func memTotal() string {
	b, _ := os.ReadFile("/proc/meminfo")
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "MemTotal:"); ok {
			f := strings.Fields(rest)
			if len(f) > 0 {
				if k, err := strconv.ParseInt(f[0], 10, 64); err == nil {
					return fmt.Sprintf("%.1f GiB", float64(k)/(1<<20))
				}
			}
		}
	}
	return "unknown"
}

func kernel() string {
	b, _ := os.ReadFile("/proc/sys/kernel/osrelease")
	return strings.TrimSpace(string(b))
}

func moduleVersion(path string) string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == path {
				return d.Version
			}
		}
	}
	return "unknown"
}
