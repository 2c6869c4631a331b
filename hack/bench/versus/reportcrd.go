package main

import (
	"fmt"
	"io"
	"slices"
)

// crdPair is the k-th run of a custom-resource mode and the k-th run of
// its built-in mode (modeKind.builtIn, without suffixes): alternated in
// one invocation, each pair saw the machine alike.
type crdPair struct {
	crd, builtIn run
}

// crdPairs pairs the runs of every custom-resource mode id (with its
// suffixes, so that two builds given with +exe= are paired apart) with
// the runs of its built-in mode, in order.
func crdPairs(runs []run) (ids []string, pairs map[string][]crdPair) {
	pairs = map[string][]crdPair{}
	seen := map[string]int{}
	for _, r := range runs {
		if r.m.kind.builtIn == "" || r.churn == nil {
			continue
		}
		id := r.m.id()
		var builtIns []run
		for _, o := range runs {
			if o.m.id() == r.m.kind.builtIn && o.churn != nil {
				builtIns = append(builtIns, o)
			}
		}
		k := seen[id]
		seen[id]++
		if k >= len(builtIns) {
			continue
		}
		if !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
		pairs[id] = append(pairs[id], crdPair{crd: r, builtIn: builtIns[k]})
	}
	return ids, pairs
}

// printCustomResources prints issue 36's comparison: each custom-resource
// run against the same run on ConfigMaps, CPU per 1,000 events and RSS
// after start, per pair and the median of the pairs.
func printCustomResources(w io.Writer, b *bench, runs []run) {
	ids, pairs := crdPairs(runs)
	if len(ids) == 0 {
		return
	}
	fmt.Fprintf(w, "\nCustom resources against ConfigMaps: the k-th run of each mode on Widgets against the k-th run of the same mode on ConfigMaps, %d objects, churn of %s:\n\n", b.objects, b.churn.mix)
	fmt.Fprintln(w, "| mode | pair | CPU ms per 1,000 events: CRD / built-in | ÷ | RSS after start MiB: CRD / built-in | ÷ |")
	fmt.Fprintln(w, "|---|--:|--:|--:|--:|--:|")
	perK := func(r run) float64 { return cpuPerThousand(r, b.churn.mix) }
	for _, id := range ids {
		var cpus, rsss []float64
		for i, p := range pairs[id] {
			c, cb := perK(p.crd), perK(p.builtIn)
			r, rb := kib(p.crd.ready.VmRSSKiB), kib(p.builtIn.ready.VmRSSKiB)
			cpus, rsss = append(cpus, c/cb), append(rsss, r/rb)
			fmt.Fprintf(w, "| %s | %d | %.0f / %.0f | %.2f | %.1f / %.1f | %.2f |\n", id, i+1, c, cb, c/cb, r, rb, r/rb)
		}
		fmt.Fprintf(w, "| %s | median of %d | | %.2f (%.2f–%.2f) | | %.2f (%.2f–%.2f) |\n", id, len(cpus),
			median(cpus), slices.Min(cpus), slices.Max(cpus), median(rsss), slices.Min(rsss), slices.Max(rsss))
	}
}

// median is the median of xs (the mean of the middle two for an even
// count); xs is not changed.
func median(xs []float64) float64 {
	s := slices.Sorted(slices.Values(xs))
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}
