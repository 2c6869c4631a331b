package main

import (
	"fmt"
	"io"
)

// printCluster prints what each bridge published over the cluster mix:
// events, bytes and CPU per change, and each run against the runs of its
// mode without a rules file (the mean of them, so that alternating the
// two brackets a drifting machine).
func printCluster(w io.Writer, b *bench, runs []run) {
	var cp *clusterPlan
	for _, rn := range runs {
		if rn.cluster != nil {
			cp = rn.cluster
			break
		}
	}
	if cp == nil {
		return
	}
	k := cp.kinds
	fmt.Fprintf(w, "\nThe cluster mix: %d changes to %d Pods and %d ConfigMaps: %d Pod status patches, %d Pod and %d ConfigMap heartbeats; %d meaningful: %d images, %d Pod labels, %d ConfigMap data, %d ConfigMap labels (the first run's draw; each run draws its own).\n\n",
		b.churn.mix.cluster, b.pods, b.objects, k[podStatus], k[podHeartbeat], k[cmHeartbeat], cp.meaningful(), k[podImage], k[podLabel], k[cmData], k[cmLabel])
	fmt.Fprintln(w, "| mode | events published | per 1,000 changes | meaningful changes: Pods / ConfigMaps | updated events: Pods / ConfigMaps | events/s | stream KiB/s | payload KiB/s | mean updated event B: Pods / ConfigMaps | CPU ms per 1,000 changes | ÷ without rules: events / stream bytes / CPU |")
	fmt.Fprintln(w, "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
	for _, rn := range runs {
		f, ok := clusterFigures(rn, b.churn.mix)
		if !ok {
			continue
		}
		none := noRules(runs, rn, b.churn.mix)
		ratios := "–"
		if none.events > 0 && none.cpu > 0 {
			ratios = fmt.Sprintf("%.3f / %.3f / %.2f", f.events/none.events, f.bytes/none.bytes, f.cpu/none.cpu)
		}
		pods, cms := rn.stream.ByKind["Pod"], rn.stream.ByKind["ConfigMap"]
		mp, mc := rn.cluster.meaningfulOf(true), rn.cluster.meaningfulOf(false)
		fmt.Fprintf(w, "| %s | %.0f | %.0f | %d / %d | %d / %d | %.0f | %.1f | %.1f | %s / %s | %.1f | %s |\n", rn.m.label, f.events, f.events/float64(b.churn.mix.total())*1000,
			mp, mc, pods.Events, cms.Events, f.events/f.secs, f.bytes/f.secs/1024, f.payload/f.secs/1024, meanBytes(pods), meanBytes(cms), f.cpu, ratios)
	}
}

// figures are one run's totals over the churn.
type figures struct {
	events, bytes, payload, secs, cpu float64
}

// clusterFigures are run rn's: the messages and bytes its stream gained
// over the churn, the updated events' payload, the churn's time, and CPU
// ms per 1,000 changes; false for a run without a stream.
func clusterFigures(rn run, mix churnMix) (figures, bool) {
	if rn.stream == nil || rn.readyStream == nil || rn.load == nil || rn.churn == nil || rn.cluster == nil {
		return figures{}, false
	}
	return figures{
		events:  float64(rn.stream.LastSeq - rn.readyStream.LastSeq),
		bytes:   float64(rn.stream.Bytes - rn.readyStream.Bytes),
		payload: float64(rn.stream.UpdatedBytes - rn.readyStream.UpdatedBytes),
		secs:    rn.load.Duration.Seconds(),
		cpu:     cpuPerThousand(rn, mix),
	}, true
}

// noRules is the mean of the figures of rn's mode run without a rules
// file: the same id but for +config=.
func noRules(runs []run, rn run, mix churnMix) figures {
	var sum figures
	n := 0.0
	for _, o := range runs {
		f, ok := clusterFigures(o, mix)
		if !ok || o.m.id() != withoutConfig(rn.m) {
			continue
		}
		sum.events, sum.bytes, sum.payload, sum.cpu = sum.events+f.events, sum.bytes+f.bytes, sum.payload+f.payload, sum.cpu+f.cpu
		n++
	}
	if n == 0 {
		return figures{}
	}
	return figures{events: sum.events / n, bytes: sum.bytes / n, payload: sum.payload / n, cpu: sum.cpu / n}
}

// withoutConfig is m's id without its +config= suffix.
func withoutConfig(m mode) string {
	m.config = ""
	return m.id()
}

func meanBytes(k kindCount) string {
	if k.Events == 0 {
		return "–"
	}
	return fmt.Sprintf("%d", k.Bytes/int64(k.Events))
}
