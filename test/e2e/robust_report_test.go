package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/kubebridge/kubebridge/internal/replay"
	"github.com/kubebridge/kubebridge/internal/timeplot"
	"github.com/kubebridge/kubebridge/pkg/contract"
)

// robustReport is what a run did, in figures.
type robustReport struct {
	seed            uint64
	duration        time.Duration
	faults          map[string]int
	writes, failed  int
	versions        int
	messages        int
	violations      map[string]int
	lagP50, lagP99  time.Duration
	lagMax          time.Duration
	memory          []string // per pod: RSS and goroutines at the start, the peak and the end
	restarts        []string
	framesBegun     int
	framesCompleted int
}

func (r robustReport) summary() string {
	var faults []string
	for _, k := range sortedKeys(r.faults) {
		faults = append(faults, fmt.Sprintf("%s %d", k, r.faults[k]))
	}
	var viol []string
	for _, k := range sortedKeys(r.violations) {
		viol = append(viol, fmt.Sprintf("%s %d", k, r.violations[k]))
	}
	if len(viol) == 0 {
		viol = []string{"none"}
	}
	return fmt.Sprintf("seed %d, %v: faults: %s; writes %d ok, %d failed; %d versions recorded; %d messages; snapshots %d begun, %d completed; lag p50 %v, p99 %v, max %v; violations: %s; %s",
		r.seed, r.duration.Round(time.Second), strings.Join(faults, ", "), r.writes, r.failed, r.versions, r.messages, r.framesBegun, r.framesCompleted,
		r.lagP50, r.lagP99, r.lagMax, strings.Join(viol, ", "), strings.Join(r.memory, "; "))
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// report writes the run's report to its directory: summary.md (the
// figures), timeline.txt (every fault and process start and exit),
// violations.md (each violation beside its object's history and
// messages), plot.svg (lag and memory over time, faults marked) and each
// bridge process's log (bridge-N.log).
func (w *world) report(msgs []replay.Message, hist *history, violations []violation) robustReport {
	r := robustReport{seed: w.opts.seed, duration: time.Since(w.began), faults: map[string]int{}, violations: map[string]int{},
		versions: len(hist.versions), messages: len(msgs)}
	for _, f := range w.faults {
		r.faults[f.name]++
	}
	for _, wr := range hist.writes {
		if wr.err == "" {
			r.writes++
		} else {
			r.failed++
		}
	}
	for _, v := range violations {
		r.violations[v.check]++
	}
	lags := lagsOf(msgs, hist)
	r.lagP50, r.lagP99, r.lagMax = lagQuantiles(lags)
	r.memory = memoryFigures(w.samples)
	for _, rep := range w.replicas {
		r.restarts = append(r.restarts, fmt.Sprintf("%s: %d starts; %s", rep.pod, rep.starts, strings.Join(rep.exits, ", ")))
	}
	r.framesBegun, r.framesCompleted = frames(msgs)
	if err := os.MkdirAll(w.opts.reportDir, 0o755); err != nil {
		w.t.Errorf("report: %v", err)
		return r
	}
	files := map[string]string{
		"summary.md":    summaryPage(r),
		"timeline.txt":  strings.Join(w.timeline, "\n") + "\n",
		"violations.md": violationsPage(violations, msgs, hist),
	}
	// Every bridge process's log, for reading a violation against what
	// the bridges did (the test's own log is cut in CI).
	for _, p := range w.procs {
		files[p.b.name+".log"] = p.b.output()
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(w.opts.reportDir, name), []byte(text), 0o644); err != nil {
			w.t.Errorf("report: %v", err)
		}
	}
	if err := w.plot(lags); err != nil {
		w.t.Errorf("report: plot: %v", err)
	}
	return r
}

func summaryPage(r robustReport) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Robustness run, seed %d\n\n%s\n\n## Replicas\n\n", r.seed, r.summary())
	for _, s := range r.restarts {
		fmt.Fprintf(&b, "- %s\n", s)
	}
	b.WriteString("\n## Memory (RSS, goroutines: start, peak, end)\n\n")
	for _, s := range r.memory {
		fmt.Fprintf(&b, "- %s\n", s)
	}
	return b.String()
}

// lagsOf is, for every live event, how long after the history recorded
// its version the stream stored it.
func lagsOf(msgs []replay.Message, hist *history) []lagPoint {
	seen := map[string]time.Time{}
	for _, v := range hist.versions {
		seen[v.uid+"/"+v.rv] = v.at
	}
	var out []lagPoint
	for _, m := range msgs {
		if !isLiveChange(m) || m.Stored.IsZero() {
			continue
		}
		if at, ok := seen[m.Ext(contract.ExtUID)+"/"+m.Ext(contract.ExtResourceVersion)]; ok {
			out = append(out, lagPoint{at: m.Stored, lag: max(m.Stored.Sub(at), 0)})
		}
	}
	return out
}

func lagQuantiles(lags []lagPoint) (p50, p99, maxLag time.Duration) {
	if len(lags) == 0 {
		return 0, 0, 0
	}
	ds := make([]time.Duration, len(lags))
	for i, l := range lags {
		ds[i] = l.lag
	}
	slices.Sort(ds)
	at := func(q float64) time.Duration { return ds[int(q*float64(len(ds)-1))].Round(time.Millisecond) }
	return at(0.5), at(0.99), ds[len(ds)-1].Round(time.Millisecond)
}

// memoryFigures gives, per pod, RSS and goroutines at the first
// sample, the peak and the last sample.
func memoryFigures(samples []procSample) []string {
	by := map[string][]procSample{}
	for _, s := range samples {
		by[s.bridge] = append(by[s.bridge], s)
	}
	var out []string
	for _, pod := range sortedKeys(by) {
		ss := by[pod]
		peakRSS, peakG := 0.0, 0.0
		for _, s := range ss {
			peakRSS, peakG = max(peakRSS, s.rssBytes), max(peakG, s.goroutines)
		}
		first, last := ss[0], ss[len(ss)-1]
		out = append(out, fmt.Sprintf("%s: RSS %.0f / %.0f / %.0f MiB, goroutines %.0f / %.0f / %.0f",
			pod, first.rssBytes/(1<<20), peakRSS/(1<<20), last.rssBytes/(1<<20), first.goroutines, peakG, last.goroutines))
	}
	return out
}

// frames counts snapshot frames: begin markers, and those whose end is
// in the stream.
func frames(msgs []replay.Message) (begun, completed int) {
	ended := map[string]bool{}
	for _, m := range msgs {
		if m.Event.Type() == contract.TypeSnapshotEnd {
			ended[m.Ext(contract.ExtSnapshotID)] = true
		}
	}
	for _, m := range msgs {
		if m.Event.Type() == contract.TypeSnapshotBegin {
			begun++
			if ended[m.Ext(contract.ExtSnapshotID)] {
				completed++
			}
		}
	}
	return begun, completed
}

// violationsPage lists each violation with its object's history (the
// versions the apiserver made) beside its messages in the stream.
func violationsPage(violations []violation, msgs []replay.Message, hist *history) string {
	if len(violations) == 0 {
		return "No violations.\n"
	}
	var b strings.Builder
	for i, v := range violations {
		fmt.Fprintf(&b, "## %d. %s: seq %d %s uid %s\n\n%s\n\n", i+1, v.check, v.seq, v.subject, v.uid, v.detail)
		if v.uid == "" {
			continue
		}
		b.WriteString("history:\n")
		for _, hv := range hist.versions {
			if hv.uid == v.uid {
				fmt.Fprintf(&b, "    rv %s %s %s/%s at %s\n", hv.rv, hv.verb, hv.namespace, hv.name, hv.at.Format("15:04:05.000"))
			}
		}
		b.WriteString("stream:\n")
		for _, m := range msgs {
			if m.Ext(contract.ExtUID) == v.uid {
				fmt.Fprintf(&b, "    %s\n", describeBrief([]replay.Message{m}))
			}
		}
		b.WriteString("\n")
	}
	return b.String()
}

// plot draws the lag of live events and each pod's RSS and
// goroutines over time, with the faults as bands.
func (w *world) plot(lags []lagPoint) error {
	lag := timeplot.Series{Name: "lag"}
	for _, l := range lags {
		lag.Points = append(lag.Points, timeplot.Point{At: l.at, Value: l.lag.Seconds()})
	}
	rss, gor := map[string]*timeplot.Series{}, map[string]*timeplot.Series{}
	for _, s := range w.samples {
		if rss[s.bridge] == nil {
			rss[s.bridge], gor[s.bridge] = &timeplot.Series{Name: s.bridge}, &timeplot.Series{Name: s.bridge}
		}
		rss[s.bridge].Points = append(rss[s.bridge].Points, timeplot.Point{At: s.at, Value: s.rssBytes / (1 << 20)})
		gor[s.bridge].Points = append(gor[s.bridge].Points, timeplot.Point{At: s.at, Value: s.goroutines})
	}
	panels := []timeplot.Panel{
		{Title: "lag from the apiserver's write to the stream", Unit: "s", Series: []timeplot.Series{lag}},
		{Title: "resident memory", Unit: "MiB"},
		{Title: "goroutines", Unit: ""},
	}
	for _, pod := range sortedKeys(rss) {
		panels[1].Series = append(panels[1].Series, *rss[pod])
		panels[2].Series = append(panels[2].Series, *gor[pod])
	}
	var spans []timeplot.Span
	for _, f := range w.faults {
		spans = append(spans, timeplot.Span{Label: f.name, Start: f.start, End: f.end})
	}
	out, err := os.Create(filepath.Join(w.opts.reportDir, "plot.svg"))
	if err != nil {
		return err
	}
	if err := timeplot.WriteSVG(out, fmt.Sprintf("kubebridge robustness, seed %d", w.opts.seed), panels, spans); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
