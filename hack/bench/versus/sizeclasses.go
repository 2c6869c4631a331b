package main

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"text/tabwriter"
)

// writeSizeClasses writes, for each of the runtime's small size classes
// that was used, how many objects of it are live and how many were ever
// allocated. A class with many live objects among many more allocated is
// where kept objects sit among garbage, in spans a collection cannot free
// (docs/memory.md, custom resources).
func writeSizeClasses(path string, ms *runtime.MemStats) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := tabwriter.NewWriter(f, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "class bytes\tlive objects\tlive MiB\tallocated objects\tallocated MiB\t")
	for _, c := range ms.BySize {
		if c.Mallocs == 0 {
			continue
		}
		live := c.Mallocs - c.Frees
		fmt.Fprintf(w, "%d\t%d\t%.1f\t%d\t%.1f\t\n", c.Size, live, mib(live*uint64(c.Size)), c.Mallocs, mib(c.Mallocs*uint64(c.Size)))
	}
	err = w.Flush()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// sizeClassesPath is where a child whose heap profile goes to heapProfile
// writes its size classes at phase.
func sizeClassesPath(heapProfile, phase string) string {
	return strings.TrimSuffix(heapProfile, ".pprof") + "-" + phase + "-size-classes.txt"
}
