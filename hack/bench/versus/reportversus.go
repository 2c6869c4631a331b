package main

import (
	"fmt"
	"io"
	"strconv"
)

// floorRuns are the typed informer runs with rn's gzip and GOMAXPROCS
// settings: the floor a mode is compared with is their mean. Listing the
// floor's mode before and after the others (-modes
// typed+nogzip,bridge-typed,typed+nogzip) brackets them, so that a machine
// whose speed drifts during the run moves the floor with them.
func floorRuns(runs []run, rn run) []run {
	return typedRuns(runs, rn.ready.Gzip, rn.m.procs)
}

// clientGoRuns are the typed informer runs as client-go sets one up: gzip
// on, Go's GOMAXPROCS.
func clientGoRuns(runs []run) []run { return typedRuns(runs, true, "") }

func typedRuns(runs []run, gzip bool, procs string) []run {
	var out []run
	for _, r := range runs {
		if r.m.kind.floor == cpuFloor && r.ready.Gzip == gzip && r.m.procs == procs && r.churn != nil {
			out = append(out, r)
		}
	}
	return out
}

// meanOf is the mean of f over rs, or 0 for none.
func meanOf(rs []run, f func(run) float64) float64 {
	if len(rs) == 0 {
		return 0
	}
	var sum float64
	for _, r := range rs {
		sum += f(r)
	}
	return sum / float64(len(rs))
}

// printVersus prints each mode against its floor, the bare typed informer
// run in the same invocation: CPU per 1,000 events of the churn, RSS after
// start (after a collection, once ready), peak RSS over the whole life, the
// bridge's start-up snapshot and its events' mean lag over the churn.
func printVersus(w io.Writer, b *bench, runs []run) {
	fmt.Fprintf(w, "\nAgainst the floor (the typed informer with the same gzip and GOMAXPROCS settings; the mean of its runs where it ran more than once), %d objects, churn of %s:\n\n", b.objects, b.churn.mix)
	fmt.Fprintln(w, "| mode | CPU ms per 1,000 events | ÷ floor | ÷ client-go's defaults | RSS after start MiB | ÷ floor | peak RSS MiB | ÷ floor | start-up snapshot s | mean event lag over the churn ms | mean publish attempt to its acknowledgement ms |")
	fmt.Fprintln(w, "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
	ratio := func(v, floor float64) string {
		if floor <= 0 {
			return "–"
		}
		return fmt.Sprintf("%.2f", v/floor)
	}
	perK := func(r run) float64 { return cpuPerThousand(r, b.churn.mix) }
	rssOf := func(r run) float64 { return float64(r.ready.VmRSSKiB) }
	peakOf := func(r run) float64 { return float64(r.churn.VmHWMKiB) }
	// The comparison: a bare informer as client-go sets it up
	// (gzip on), whatever a mode's gzip.
	dCPU := meanOf(clientGoRuns(runs), perK)
	for _, rn := range runs {
		if rn.churn == nil {
			continue
		}
		cpu, rss, peak := perK(rn), rssOf(rn), peakOf(rn)
		fs := floorRuns(runs, rn)
		fCPU, fRSS, fPeak := meanOf(fs, perK), meanOf(fs, rssOf), meanOf(fs, peakOf)
		snapshot := "–"
		if rn.ready.SnapshotSecs > 0 {
			snapshot = strconv.FormatFloat(rn.ready.SnapshotSecs, 'f', 2, 64)
		}
		lag := "–"
		if n := rn.churn.LagCount - rn.ready.LagCount; n > 0 {
			lag = strconv.FormatFloat((rn.churn.LagSumSecs-rn.ready.LagSumSecs)/n*1000, 'f', 1, 64)
		}
		ack := "–"
		if n := rn.churn.PublishCount - rn.ready.PublishCount; n > 0 {
			ack = strconv.FormatFloat((rn.churn.PublishSumSecs-rn.ready.PublishSumSecs)/n*1000, 'f', 1, 64)
		}
		fmt.Fprintf(w, "| %s | %.1f | %s | %s | %.1f | %s | %.1f | %s | %s | %s | %s |\n",
			rn.m.label, cpu, ratio(cpu, fCPU), ratio(cpu, dCPU), rss/1024, ratio(rss, fRSS), peak/1024, ratio(peak, fPeak), snapshot, lag, ack)
	}
}
