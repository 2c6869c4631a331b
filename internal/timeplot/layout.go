package timeplot

import (
	"math"
	"sort"
	"time"
	"unicode/utf8"
)

// The page's geometry, in SVG user units (pixels at 100%).
const (
	plotLeft      = 72.0
	minPlotWidth  = 728.0
	maxPlotWidth  = 4000.0
	spanRoom      = 18.0  // the plot's width per span, for labels to stand near their spans
	legendWidth   = 200.0 // right of the plot
	titleHeight   = 34.0
	headerHeight  = 20.0 // a panel's title, above its plot
	plotMinHeight = 140.0
	panelGap      = 16.0
	legendRow     = 15.0
	axisHeight    = 48.0 // the time axis's labels and title, under the last panel
	charWidth     = 6.2  // about one character's width in the 11px label font
	labelGap      = 12.0 // the least distance between two span labels
	labelOffset   = 7.5  // a span label's baseline right of its span's start: its glyphs, left of the baseline, clear the span's edge
	maxLabelRunes = 32
	legendRunes   = 24
)

// layout is everything render draws, placed on the page.
type layout struct {
	title       string
	t0          time.Time // zero when there is nothing to plot
	x           axis      // seconds from t0
	plotRight   float64   // where every plot ends; the legends are right of it
	pageWidth   float64
	labelBottom float64 // the span labels stand on it; the shading starts there
	panels      []panelLayout
	spans       []spanLayout
	height      float64
}

type panelLayout struct {
	title, unit string
	top, bottom float64 // the plot area; the title is above top
	y           axis
	series      []seriesLayout
}

type seriesLayout struct {
	name   string
	style  int // palette index (see palette)
	pixels []pixel
}

type spanLayout struct {
	label          string // shortened to maxLabelRunes
	full           string
	start, end     float64 // seconds from t0
	x0, x1, labelX float64
}

// newLayout places the title, the span labels, the panels and the spans.
// No panel at all draws as one empty panel, so the time axis and the
// spans still show.
func newLayout(title string, panels []Panel, spans []Span) layout {
	if len(panels) == 0 {
		panels = []Panel{{}}
	}
	t0, end, lastPoint := timeBounds(panels, spans)
	l := layout{title: title, t0: t0, x: timeAxis(end)}
	// Many spans widen the plot, so that their labels need not move far
	// from them.
	l.plotRight = plotLeft + min(max(minPlotWidth, float64(len(spans))*spanRoom), maxPlotWidth)
	l.pageWidth = l.plotRight + legendWidth
	l.labelBottom = titleHeight + labelBandHeight(spans)
	top := l.labelBottom
	styles := seriesStyles(panels)
	for _, p := range panels {
		pl := l.placePanel(p, top+headerHeight, styles)
		l.panels = append(l.panels, pl)
		top = pl.bottom + panelGap
	}
	l.height = l.panels[len(l.panels)-1].bottom + axisHeight
	l.spans = l.placeSpans(spans, lastPoint)
	return l
}

// xOf is the page x of a time in seconds from t0.
func (l *layout) xOf(seconds float64) float64 {
	return plotLeft + l.x.fraction(seconds)*(l.plotRight-plotLeft)
}

func (l *layout) seconds(t time.Time) float64 {
	return t.Sub(l.t0).Seconds()
}

// timeBounds is the earliest time of any drawable point or span, the
// latest one in seconds from it, and the last drawable point's (the
// latest time when there is no point).
func timeBounds(panels []Panel, spans []Span) (t0 time.Time, end, lastPoint float64) {
	var all, points bounds
	for _, p := range panels {
		for _, s := range p.Series {
			for _, pt := range s.Points {
				if drawable(pt) {
					all.add(pt.At)
					points.add(pt.At)
				}
			}
		}
	}
	for _, s := range spans {
		all.add(s.Start)
		all.add(s.End)
	}
	if !points.set {
		points = all
	}
	return all.lo, all.hi.Sub(all.lo).Seconds(), points.hi.Sub(all.lo).Seconds()
}

// bounds is the earliest and the latest of the non-zero times added.
type bounds struct {
	lo, hi time.Time
	set    bool
}

func (b *bounds) add(t time.Time) {
	switch {
	case t.IsZero():
	case !b.set:
		b.lo, b.hi, b.set = t, t, true
	case t.Before(b.lo):
		b.lo = t
	case t.After(b.hi):
		b.hi = t
	}
}

// drawable is whether a point is drawn: one with a time and a finite
// value.
func drawable(pt Point) bool {
	return !pt.At.IsZero() && finite(pt.Value)
}

func finite(v float64) bool {
	return !math.IsNaN(v) && !math.IsInf(v, 0)
}

// labelBandHeight is the height of the band above the panels that holds
// the spans' labels, written upwards: as tall as the longest label.
func labelBandHeight(spans []Span) float64 {
	if len(spans) == 0 {
		return 0
	}
	longest := 0
	for _, s := range spans {
		longest = max(longest, utf8.RuneCountInString(shorten(s.Label, maxLabelRunes)))
	}
	return float64(longest)*charWidth + 18
}

// placePanel puts a panel's plot at top: tall enough for its legend, its
// y axis from its values, its series as pixels.
func (l *layout) placePanel(p Panel, top float64, styles map[string]int) panelLayout {
	height := max(plotMinHeight, float64(len(p.Series))*legendRow+10)
	pl := panelLayout{title: p.Title, unit: p.Unit, top: top, bottom: top + height}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, s := range p.Series {
		for _, pt := range s.Points {
			if drawable(pt) {
				lo, hi = math.Min(lo, pt.Value), math.Max(hi, pt.Value)
			}
		}
	}
	if lo > hi { // no value at all
		lo, hi = 0, 0
	}
	pl.y = valueAxis(lo, hi)
	for _, s := range p.Series {
		pl.series = append(pl.series, seriesLayout{
			name:   s.Name,
			style:  styles[s.Name],
			pixels: l.toPixels(s.Points, &pl),
		})
	}
	return pl
}

// seriesStyles gives each series name a palette index in the order the
// names first appear, so that a name (one bridge, say) has the same
// colour in every panel.
func seriesStyles(panels []Panel) map[string]int {
	styles := map[string]int{}
	for _, p := range panels {
		for _, s := range p.Series {
			if _, ok := styles[s.Name]; !ok {
				styles[s.Name] = len(styles)
			}
		}
	}
	return styles
}

// placeSpans places each span's shading and its label. A zero End ends
// at the last point; an End before Start is the instant Start.
func (l *layout) placeSpans(spans []Span, lastPoint float64) []spanLayout {
	out := make([]spanLayout, 0, len(spans))
	for _, s := range spans {
		sl := spanLayout{label: shorten(s.Label, maxLabelRunes), full: s.Label, end: lastPoint}
		if !s.Start.IsZero() {
			sl.start = l.seconds(s.Start)
		}
		if !s.End.IsZero() {
			sl.end = l.seconds(s.End)
		}
		sl.end = max(sl.end, sl.start)
		sl.x0, sl.x1 = l.xOf(sl.start), l.xOf(sl.end)
		out = append(out, sl)
	}
	placeLabels(out, l.pageWidth-6)
	return out
}

// placeLabels sets each span's labelX: at its start when it can, else
// moved right (then left, near limit) just enough that no two labels are
// closer than labelGap, or than the room allows for as many.
func placeLabels(spans []spanLayout, limit float64) {
	if len(spans) == 0 {
		return
	}
	order := make([]int, len(spans))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return spans[order[a]].x0 < spans[order[b]].x0 })
	gap := math.Min(labelGap, (limit-plotLeft)/float64(len(spans)))
	prev := math.Inf(-1)
	for _, i := range order {
		spans[i].labelX = math.Max(spans[i].x0+labelOffset, prev+gap)
		prev = spans[i].labelX
	}
	next := limit + gap
	for k := len(order) - 1; k >= 0; k-- {
		i := order[k]
		spans[i].labelX = math.Min(spans[i].labelX, next-gap)
		next = spans[i].labelX
	}
}

// shorten cuts s to n runes, the last an ellipsis, when it is longer.
func shorten(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n-1]) + "…"
}
