package main

import (
	"fmt"
	"io"
	"math"
	"slices"
	"time"
)

// apiEtcdCPU is the API server's and etcd's CPU together.
func (o outcome) apiEtcdCPU() float64 { return o.apiserver.CPU + o.etcd.CPU }

// consumerCPU is the mean and the largest CPU of the K consumers.
func (o outcome) consumerCPU() (mean, most float64) {
	return meanMax(o.consumers, func(u usage) float64 { return u.CPU })
}

// consumerRSS is the mean of the K consumers' mean resident sets, and the
// largest peak among them.
func (o outcome) consumerRSS() (mean, peak float64) {
	mean, _ = meanMax(o.consumers, func(u usage) float64 { return u.RSSMean })
	_, peak = meanMax(o.consumers, func(u usage) float64 { return u.RSSPeak })
	return mean, peak
}

func meanMax(us []usage, f func(usage) float64) (mean, most float64) {
	if len(us) == 0 {
		return math.NaN(), math.NaN()
	}
	var sum float64
	for _, u := range us {
		sum += f(u)
		most = max(most, f(u))
	}
	return sum / float64(len(us)), most
}

// goalRow is one of issue 36's goals, judged as a ratio: num ÷ den at most
// limit. A row with limit 0 is shown for scale only.
type goalRow struct {
	goal     string
	k        int
	num, den float64
	unit     string
	limit    float64
}

func (g goalRow) ratio() float64 {
	if g.den <= 0 || math.IsNaN(g.num) || math.IsNaN(g.den) {
		return math.NaN()
	}
	return g.num / g.den
}

// verdict is PASS or FAIL; n/a when the denominator is not above zero
// (nothing to compare with); info for a row shown for scale.
func (g goalRow) verdict() string {
	r := g.ratio()
	switch {
	case g.limit == 0:
		return "info"
	case math.IsNaN(r):
		return "n/a"
	case r <= g.limit:
		return "PASS"
	}
	return "FAIL"
}

// find is the outcome of the setups of source stream (or the informers)
// with k consumers: the mean of their usage where there are several (the
// baselines, run first and last).
func find(outs []outcome, stream bool, k int) (outcome, bool) {
	var runs []outcome
	for _, o := range outs {
		if o.stream == stream && o.k == k {
			runs = append(runs, o)
		}
	}
	if len(runs) == 0 {
		return outcome{}, false
	}
	mean := runs[0]
	n := float64(len(runs))
	avg := func(f func(o outcome) float64) float64 {
		var sum float64
		for _, o := range runs {
			sum += f(o)
		}
		return sum / n
	}
	mean.apiserver.CPU = avg(func(o outcome) float64 { return o.apiserver.CPU })
	mean.etcd.CPU = avg(func(o outcome) float64 { return o.etcd.CPU })
	mean.nats.CPU = avg(func(o outcome) float64 { return o.nats.CPU })
	mean.newSync = time.Duration(avg(func(o outcome) float64 { return float64(o.newSync) }))
	return mean, true
}

// consumerCounts are the K of the outcomes above 0, in increasing order.
func consumerCounts(outs []outcome) []int {
	var ks []int
	for _, o := range outs {
		if o.k > 0 && !slices.Contains(ks, o.k) {
			ks = append(ks, o.k)
		}
	}
	slices.Sort(ks)
	return ks
}

// goalRows are the goals the outcomes can judge, in the order:
// the first at the largest K (the K = 20), the others at every K.
func goalRows(outs []outcome) []goalRow {
	baseA, okA := find(outs, false, 0)
	baseB, okB := find(outs, true, 0)
	ks := consumerCounts(outs)
	var first, sync, rss, natsCPU []goalRow
	if len(ks) > 0 && okA && okB {
		top := ks[len(ks)-1]
		if b, ok := find(outs, true, top); ok {
			first = append(first, goalRow{goal: "1. apiserver+etcd CPU: bridge + K stream consumers ÷ bridge alone (K = 0)", k: top, num: b.apiEtcdCPU(), den: baseB.apiEtcdCPU(), unit: "s", limit: 1.3})
		}
		if a, ok := find(outs, false, top); ok {
			first = append(first, goalRow{goal: "1, for scale: apiserver+etcd CPU: K informers ÷ no consumer (K = 0)", k: top, num: a.apiEtcdCPU(), den: baseA.apiEtcdCPU(), unit: "s"})
		}
	}
	for _, k := range ks {
		a, okAK := find(outs, false, k)
		b, okBK := find(outs, true, k)
		if !okAK || !okBK {
			continue
		}
		rssB, _ := b.consumerRSS()
		rssA, _ := a.consumerRSS()
		sync = append(sync, goalRow{goal: "2. new consumer's time to synced cache: stream ÷ informer list", k: k, num: b.newSync.Seconds(), den: a.newSync.Seconds(), unit: "s", limit: 1})
		rss = append(rss, goalRow{goal: "3. consumer RSS (mean over the window): stream ÷ informer", k: k, num: rssB, den: rssA, unit: "MiB", limit: 1.1})
		if okA && okB {
			natsCPU = append(natsCPU, goalRow{goal: "4. nats-server CPU per stream consumer ÷ apiserver+etcd CPU per informer", k: k,
				num: (b.nats.CPU - baseB.nats.CPU) / float64(k), den: (a.apiEtcdCPU() - baseA.apiEtcdCPU()) / float64(k), unit: "s", limit: 1})
		}
	}
	return slices.Concat(first, sync, rss, natsCPU)
}

// printReport prints the table of each K, the baselines' first, then the
// goals.
func printReport(w io.Writer, head string, outs []outcome) {
	fmt.Fprintf(w, "%s\n", head)
	for _, k := range append([]int{0}, consumerCounts(outs)...) {
		fmt.Fprintf(w, "\n#### K = %d\n\n", k)
		if k == 0 {
			fmt.Fprintf(w, "The baselines run first and last; the goals take the mean of the two.\n\n")
		}
		fmt.Fprintln(w, "| setup | window s | apiserver+etcd CPU s (apiserver + etcd) | nats-server CPU s | bridge CPU s | CPU s per consumer: mean (max) | RSS MiB per consumer: mean (peak) | new consumer synced in s | apiserver RSS MiB: mean (peak) | etcd RSS MiB | nats-server RSS MiB | bridge RSS MiB | before the window, the K's start: apiserver+etcd / nats-server CPU s |")
		fmt.Fprintln(w, "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
		for _, o := range outs {
			if o.k == k {
				fmt.Fprintln(w, tableRow(o))
			}
		}
	}
	fmt.Fprintf(w, "\n#### Goals (issue 36)\n\n| goal | K | measured | ratio | limit | result |\n|---|--:|--:|--:|--:|---|\n")
	for _, g := range goalRows(outs) {
		limit := "—"
		if g.limit > 0 {
			limit = fmt.Sprintf("≤ %.2g", g.limit)
		}
		fmt.Fprintf(w, "| %s | %d | %.3g %s ÷ %.3g %s | %.3f | %s | %s |\n", g.goal, g.k, g.num, g.unit, g.den, g.unit, g.ratio(), limit, g.verdict())
	}
}

func tableRow(o outcome) string {
	none := "—"
	bridgeCPU, bridgeRSS := none, none
	if o.stream {
		bridgeCPU, bridgeRSS = fmt.Sprintf("%.1f", o.bridge.CPU), rss(o.bridge)
	}
	consCPU, consRSS := none, none
	if len(o.consumers) > 0 {
		mean, most := o.consumerCPU()
		consCPU = fmt.Sprintf("%.1f (%.1f)", mean, most)
		mean, peak := o.consumerRSS()
		consRSS = fmt.Sprintf("%.0f (%.0f)", mean, peak)
	}
	return fmt.Sprintf("| %v | %.1f | %.1f (%.1f + %.1f) | %.1f | %s | %s | %s | %.2f | %s | %s | %s | %s | %.1f / %.1f |",
		o.setup, o.window.Seconds(), o.apiEtcdCPU(), o.apiserver.CPU, o.etcd.CPU, o.nats.CPU, bridgeCPU, consCPU, consRSS,
		o.newSync.Seconds(), rss(o.apiserver), rss(o.etcd), rss(o.nats), bridgeRSS, o.startAPIEtcd, o.startNATS)
}

func rss(u usage) string { return fmt.Sprintf("%.0f (%.0f)", u.RSSMean, u.RSSPeak) }
