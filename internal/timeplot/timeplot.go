package timeplot

import (
	"bufio"
	"io"
	"time"
)

// Point is one reading: a value at a time.
type Point struct {
	At    time.Time
	Value float64
}

// Series is one line of a panel. Points need not be sorted; points with
// a NaN or infinite value, or a zero time, are left out.
type Series struct {
	Name   string
	Points []Point
}

// Panel is one chart of the stack: its series share the y axis, which
// runs from zero (or the lowest value, when one is negative) to a nice
// maximum, and is labelled with Unit.
type Panel struct {
	Title, Unit string
	Series      []Series
}

// Span is a stretch of time shaded across every panel and labelled above
// them. A zero End means until the last point; an End before Start marks
// the instant Start.
type Span struct {
	Label      string
	Start, End time.Time
}

// WriteSVG writes one SVG document: title on top, the spans' labels, the
// panels stacked on a shared time axis, and the spans shaded across all
// of them. Empty panels and series, and a series of one point, are drawn
// as such. It returns the first error writing to w.
func WriteSVG(w io.Writer, title string, panels []Panel, spans []Span) error {
	buf := bufio.NewWriter(w)
	out := &svgWriter{w: buf}
	render(out, newLayout(title, panels, spans))
	if out.err != nil {
		return out.err
	}
	return buf.Flush()
}
