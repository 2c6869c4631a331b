package timeplot

import (
	"bytes"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"
)

var start = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

func at(seconds float64) time.Time {
	return start.Add(time.Duration(seconds * float64(time.Second)))
}

// ramp is n points from t=0 to t=seconds, the values rising from lo.
func ramp(n int, seconds, lo, step float64) []Point {
	out := make([]Point, n)
	for i := range out {
		out[i] = Point{At: at(seconds * float64(i) / float64(n-1)), Value: lo + float64(i)*step}
	}
	return out
}

func TestWriteSVGOnePolylinePerNonEmptySeriesOneRectPerSpan(t *testing.T) {
	panels := []Panel{
		{Title: "lag", Unit: "s", Series: []Series{
			{Name: "lag", Points: ramp(50, 120, 0, 0.1)},
			{Name: "empty"},
			{Name: "only NaN and Inf", Points: []Point{{at(3), math.NaN()}, {at(4), math.Inf(1)}, {at(5), math.Inf(-1)}}},
		}},
		{Title: "RSS", Unit: "MiB", Series: []Series{
			{Name: "bridge-1", Points: ramp(10, 100, 40, 1)},
			{Name: "bridge-2", Points: []Point{{at(60), 41}}}, // one point
		}},
		{Title: "nothing"},
	}
	spans := []Span{
		{Label: "kill-leader", Start: at(10), End: at(20)},
		{Label: "never healed", Start: at(90)},
		{Label: "instant", Start: at(50), End: at(40)},
	}
	_, elems := write(t, "run", panels, spans)

	lines := having(elems, "polyline", "series")
	var names []string
	for _, l := range lines {
		names = append(names, l.attrs["data-series"])
	}
	if want := []string{"lag", "bridge-1", "bridge-2"}; strings.Join(names, "|") != strings.Join(want, "|") {
		t.Errorf("polylines for %q, want %q", names, want)
	}
	if got := len(having(elems, "rect", "span")); got != len(spans) {
		t.Errorf("%d span rects, want %d", got, len(spans))
	}
	if got := len(having(elems, "circle", "")); got != 1 {
		t.Errorf("%d dots, want 1, for the series of one point", got)
	}
	if got := len(having(elems, "rect", "frame")); got != len(panels) {
		t.Errorf("%d panel frames, want %d", got, len(panels))
	}
}

func TestSeriesXGrowsWithTimeAndYShrinksAsValueGrows(t *testing.T) {
	pts := ramp(12, 110, 1, 3)
	// Given out of order: the line is drawn in time order all the same.
	shuffled := []Point{pts[5], pts[0], pts[11], pts[3], pts[1], pts[7], pts[2], pts[10], pts[4], pts[9], pts[6], pts[8]}
	_, elems := write(t, "", []Panel{{Title: "up", Series: []Series{{Name: "up", Points: shuffled}}}}, nil)

	lines := having(elems, "polyline", "series")
	if len(lines) != 1 {
		t.Fatalf("%d polylines, want 1", len(lines))
	}
	px := points(t, lines[0])
	if len(px) != len(pts) {
		t.Fatalf("%d points drawn, want %d", len(px), len(pts))
	}
	frame := having(elems, "rect", "frame")[0]
	top, bottom := attr(t, frame, "y"), attr(t, frame, "y")+attr(t, frame, "height")
	left, right := attr(t, frame, "x"), attr(t, frame, "x")+attr(t, frame, "width")
	for i := 1; i < len(px); i++ {
		if px[i].x <= px[i-1].x {
			t.Errorf("point %d: x %.1f after %.1f, want it to grow with time", i, px[i].x, px[i-1].x)
		}
		if px[i].y >= px[i-1].y {
			t.Errorf("point %d: y %.1f after %.1f, want a bigger value higher up (smaller y)", i, px[i].y, px[i-1].y)
		}
	}
	for _, p := range px {
		if p.y < top || p.y > bottom || p.x < left || p.x > right {
			t.Errorf("point %+v outside the plot %v..%v x %v..%v", p, left, right, top, bottom)
		}
	}
}

func TestSpanShadesEveryPanelFromItsStartToItsEnd(t *testing.T) {
	panels := []Panel{
		{Title: "a", Series: []Series{{Name: "a", Points: ramp(5, 120, 0, 1)}}}, // a point every 30 s
		{Title: "b", Series: []Series{{Name: "b", Points: ramp(5, 120, 0, 1)}}},
	}
	spans := []Span{{Label: "from 30s to 90s", Start: at(30), End: at(90)}, {Label: "open", Start: at(60)}}
	_, elems := write(t, "", panels, spans)

	frames := having(elems, "rect", "frame")
	rects := having(elems, "rect", "span")
	px := points(t, having(elems, "polyline", "series")[0])
	if len(rects) != 2 || len(frames) != 2 || len(px) != 5 {
		t.Fatalf("%d span rects, %d frames, %d points; want 2, 2, 5", len(rects), len(frames), len(px))
	}
	firstTop := attr(t, frames[0], "y")
	lastBottom := attr(t, frames[1], "y") + attr(t, frames[1], "height")
	for i, r := range rects {
		if y, h := attr(t, r, "y"), attr(t, r, "height"); y > firstTop || y+h < lastBottom {
			t.Errorf("span %d covers y %.1f..%.1f, want all of %.1f..%.1f", i, y, y+h, firstTop, lastBottom)
		}
	}
	near := func(a, b float64) bool { return math.Abs(a-b) < 0.11 }
	// The closed span runs from the point at 30 s to the one at 90 s, the
	// open one from the point at 60 s to the last point's.
	if x, w := attr(t, rects[0], "x"), attr(t, rects[0], "width"); !near(x, px[1].x) || !near(x+w, px[3].x) {
		t.Errorf("span 30s..90s at x %.1f..%.1f, want %.1f..%.1f", x, x+w, px[1].x, px[3].x)
	}
	if x, w := attr(t, rects[1], "x"), attr(t, rects[1], "width"); !near(x, px[2].x) || !near(x+w, px[4].x) {
		t.Errorf("open span from 60s at x %.1f..%.1f, want %.1f..%.1f", x, x+w, px[2].x, px[4].x)
	}
}

func TestTextIsEscaped(t *testing.T) {
	const nasty = `a<b & "c"> 'd'`
	panels := []Panel{{Title: nasty, Unit: "<&>", Series: []Series{{Name: nasty, Points: ramp(3, 10, 0, 1)}}}}
	doc, elems := write(t, nasty, panels, []Span{{Label: nasty, Start: at(2), End: at(4)}})
	if bytes.Contains(doc, []byte("<&>")) || bytes.Contains(doc, []byte("<b &")) {
		t.Fatalf("the document holds the text unescaped:\n%s", doc)
	}
	found := map[string]bool{}
	for _, e := range elems {
		if strings.Contains(e.text, nasty) {
			found[e.attrs["class"]] = true
		}
	}
	for _, class := range []string{"title", "panel-title", "legend", "span-label"} {
		if !found[class] {
			t.Errorf("no %s text reads %q after parsing", class, nasty)
		}
	}
	if got := having(elems, "polyline", "series")[0].attrs["data-series"]; got != nasty {
		t.Errorf("data-series reads %q, want %q", got, nasty)
	}
}

func TestSameInputSameBytes(t *testing.T) {
	var panels []Panel
	for p := 0; p < 3; p++ {
		var series []Series
		for s := 0; s < 12; s++ { // more series than the palette has colours
			series = append(series, Series{Name: strings.Repeat("s", s+1), Points: ramp(40, 300, float64(p), float64(s))})
		}
		panels = append(panels, Panel{Title: "p", Series: series})
	}
	spans := []Span{{Label: "a", Start: at(10), End: at(30)}, {Label: "b", Start: at(11)}, {Label: "c", Start: at(12), End: at(13)}}
	first, _ := write(t, "same", panels, spans)
	for i := 0; i < 5; i++ {
		again, _ := write(t, "same", panels, spans)
		if !bytes.Equal(first, again) {
			t.Fatalf("run %d wrote different bytes for the same input", i+2)
		}
	}
}

func TestEmptyInputsStillDrawAPlot(t *testing.T) {
	cases := map[string]struct {
		panels []Panel
		spans  []Span
	}{
		"nothing":          {},
		"spans only":       {spans: []Span{{Label: "x", Start: at(0), End: at(10)}, {Label: "y", Start: at(5)}}},
		"panel, no series": {panels: []Panel{{Title: "t"}}},
		"one point":        {panels: []Panel{{Series: []Series{{Name: "p", Points: []Point{{at(1), 5}}}}}}},
		"all zero":         {panels: []Panel{{Series: []Series{{Name: "z", Points: ramp(4, 3, 0, 0)}}}}},
		"negative values":  {panels: []Panel{{Series: []Series{{Name: "n", Points: ramp(4, 3, -7, 2)}}}}},
		"zero times":       {panels: []Panel{{Series: []Series{{Name: "z", Points: []Point{{Value: 1}, {at(5), 2}, {at(9), 3}}}}}}, spans: []Span{{Label: "zero"}}},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			_, elems := write(t, name, c.panels, c.spans)
			if len(having(elems, "rect", "frame")) == 0 {
				t.Errorf("no panel drawn")
			}
			if got := len(having(elems, "rect", "span")); got != len(c.spans) {
				t.Errorf("%d span rects, want %d", got, len(c.spans))
			}
			// Every coordinate is a finite number, and a line's are on its
			// panel.
			frame := having(elems, "rect", "frame")[0]
			for _, l := range having(elems, "polyline", "series") {
				for _, p := range points(t, l) {
					if p.x < attr(t, frame, "x") || p.x > attr(t, frame, "x")+attr(t, frame, "width") {
						t.Errorf("x %.1f off the plot", p.x)
					}
				}
			}
			for _, r := range having(elems, "rect", "span") {
				attr(t, r, "x")
				attr(t, r, "width")
			}
		})
	}
}

func TestManyPointsAreThinnedKeepingSpikes(t *testing.T) {
	pts := ramp(100_000, 3600, 10, 0)
	pts[61_234].Value = 400 // one spike
	pts[70_001].Value = 0   // one dip
	_, elems := write(t, "", []Panel{{Series: []Series{{Name: "flat", Points: pts}}}}, nil)
	px := points(t, having(elems, "polyline", "series")[0])
	frame := having(elems, "rect", "frame")[0]
	if columns := int(attr(t, frame, "width") + 1); len(px) > 4*columns {
		t.Errorf("%d points drawn, want at most 4 per pixel column (%d)", len(px), 4*columns)
	}
	top, bottom := attr(t, frame, "y"), attr(t, frame, "y")+attr(t, frame, "height")
	minY, maxY := math.Inf(1), math.Inf(-1)
	for _, p := range px {
		minY, maxY = math.Min(minY, p.y), math.Max(maxY, p.y)
	}
	// The axis runs from 0 to 400: the spike is at the top, the dip at
	// the bottom.
	if math.Abs(minY-top) > 0.11 || math.Abs(maxY-bottom) > 0.11 {
		t.Errorf("drawn y from %.1f to %.1f, want the spike at %.1f and the dip at %.1f", minY, maxY, top, bottom)
	}
}

// An hour with 90 faults, some a few seconds apart: every label keeps
// clear of the next and stands near its span's start.
func TestSpanLabelsStandApartNearTheirSpans(t *testing.T) {
	var spans []Span
	for i := 0; i < 90; i++ {
		s := at(float64(i*37 + (i%3)*12)) // 13 s, under labelGap, after the one before every third
		spans = append(spans, Span{Label: "fault", Start: s, End: s.Add(time.Duration(5+i%20) * time.Second)})
	}
	_, elems := write(t, "", []Panel{{Series: []Series{{Name: "a", Points: ramp(3600, 3600, 0, 1)}}}}, spans)
	rects, labels := having(elems, "rect", "span"), having(elems, "text", "span-label")
	if len(rects) != len(spans) || len(labels) != len(spans) {
		t.Fatalf("%d rects, %d labels, want %d of each", len(rects), len(labels), len(spans))
	}
	prev := math.Inf(-1)
	for i, l := range labels {
		var x, y float64
		if _, err := fmt.Sscanf(l.attrs["transform"], "translate(%g,%g)", &x, &y); err != nil {
			t.Fatalf("label %d transform %q: %v", i, l.attrs["transform"], err)
		}
		// Written so that a NaN fails too.
		if !(x-prev >= labelGap-0.11) {
			t.Errorf("label %d at x %.1f, %.1f after the one before, want %v apart", i, x, x-prev, labelGap)
		}
		// Its glyphs are left of its baseline: at labelOffset they clear
		// the span's edge.
		if d := x - attr(t, rects[i], "x"); !(d >= labelOffset-0.11 && d <= 3*labelGap) {
			t.Errorf("label %d at x %.1f, %.1f right of its span's start, want %v to %v", i, x, d, labelOffset, 3*labelGap)
		}
		prev = x
	}
}
