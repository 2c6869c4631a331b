package timeplot

import (
	"bytes"
	"flag"
	"math"
	"math/rand/v2"
	"os"
	"testing"
	"time"
)

var exampleOut = flag.String("example", "", "write the example plot of TestExamplePlot to `FILE` (an .svg), to look at")

// robustnessRun is five minutes of what the robustness test records, made
// up from a fixed seed: the event lag (one point per message), two
// bridges' RSS and goroutines (a sample every 2 s, none while a bridge is
// down), and six faults, two of them close together and one never
// healed.
func robustnessRun() ([]Panel, []Span) {
	rng := rand.New(rand.NewPCG(37, 1))
	t0 := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	sec := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	spans := []Span{
		{Label: "kill-leader bridge-1", Start: sec(40), End: sec(52)},
		{Label: "partition-nats nats-2", Start: sec(95), End: sec(125)},
		{Label: "latency 200ms <bridge-2→nats>", Start: sec(97), End: sec(110)},
		{Label: "stepdown", Start: sec(150), End: sec(150)},
		{Label: "both-down", Start: sec(190), End: sec(215)},
		{Label: "restart-apiserver", Start: sec(262)},
	}
	inFault := func(s float64) float64 { // how much a fault slows the stream at s
		switch {
		case s >= 40 && s < 55, s >= 97 && s < 112:
			return 1.5
		case s >= 190 && s < 222:
			return s - 188 // the backlog grows while both are down
		}
		return 0
	}
	var lag []Point
	for s := 0.0; s < 300; s += 0.05 {
		v := 0.02 + 0.03*rng.Float64() + inFault(s)*(0.5+0.5*rng.Float64())
		lag = append(lag, Point{At: sec(s), Value: v})
	}
	var rss1, rss2, gr1, gr2 []Point
	for s := 0.0; s < 300; s += 2 {
		if !(s >= 40 && s < 52) && !(s >= 190 && s < 215) {
			restarted := s >= 52
			base := 38.0
			if restarted {
				base = 31
			}
			rss1 = append(rss1, Point{sec(s), base + 6*math.Sin(s/40) + rng.Float64()})
			gr1 = append(gr1, Point{sec(s), float64(140 + rng.IntN(15))})
		}
		if !(s >= 190 && s < 215) {
			rss2 = append(rss2, Point{sec(s), 44 + s/60 + rng.Float64()})
			gr2 = append(gr2, Point{sec(s), float64(150 + rng.IntN(30))})
		}
	}
	panels := []Panel{
		{Title: "Event lag", Unit: "s", Series: []Series{{Name: "lag", Points: lag}}},
		{Title: "RSS", Unit: "MiB", Series: []Series{{Name: "bridge-1", Points: rss1}, {Name: "bridge-2", Points: rss2}}},
		{Title: "Goroutines", Unit: "count", Series: []Series{{Name: "bridge-1", Points: gr1}, {Name: "bridge-2", Points: gr2}}},
	}
	return panels, spans
}

// TestExamplePlot draws robustnessRun; with -example FILE it also writes
// the plot there, for a person to look at.
func TestExamplePlot(t *testing.T) {
	panels, spans := robustnessRun()
	doc, elems := write(t, "TestRobustness seed 37: lag, RSS and goroutines", panels, spans)
	if got := len(having(elems, "polyline", "series")); got != 5 {
		t.Errorf("%d series drawn, want 5", got)
	}
	if got := len(having(elems, "rect", "span")); got != len(spans) {
		t.Errorf("%d spans shaded, want %d", got, len(spans))
	}
	// Labels of spans closer than a label's height stand apart.
	labels := having(elems, "text", "span-label")
	seen := map[string]bool{}
	for _, l := range labels {
		if seen[l.attrs["transform"]] {
			t.Errorf("two span labels at %s", l.attrs["transform"])
		}
		seen[l.attrs["transform"]] = true
	}
	if *exampleOut != "" {
		if err := os.WriteFile(*exampleOut, doc, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %s (%d bytes)", *exampleOut, len(doc))
	}
	if !bytes.HasPrefix(doc, []byte("<?xml")) {
		t.Errorf("no XML declaration")
	}
}
