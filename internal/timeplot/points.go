package timeplot

import (
	"math"
	"slices"
	"sort"
)

// pixel is a point on the page.
type pixel struct{ x, y float64 }

// toPixels places a series' drawable points in a panel, in time order, a
// few per pixel column at most (see keepInColumn).
func (l *layout) toPixels(points []Point, p *panelLayout) []pixel {
	kept := make([]Point, 0, len(points))
	for _, pt := range points {
		if drawable(pt) {
			kept = append(kept, pt)
		}
	}
	sort.SliceStable(kept, func(i, j int) bool { return kept[i].At.Before(kept[j].At) })
	px := make([]pixel, len(kept))
	for i, pt := range kept {
		px[i] = pixel{
			x: l.xOf(l.seconds(pt.At)),
			y: p.bottom - p.y.fraction(pt.Value)*(p.bottom-p.top),
		}
	}
	return decimate(px)
}

// decimate thins pixels sorted by x column by column (see keepInColumn),
// so that an hour of samples is a few thousand points, not a file too big
// to open, and still draws as the whole would.
func decimate(px []pixel) []pixel {
	out := make([]pixel, 0, len(px))
	for start := 0; start < len(px); {
		column := math.Floor(px[start].x)
		end := start + 1
		for end < len(px) && math.Floor(px[end].x) == column {
			end++
		}
		out = keepInColumn(out, px[start:end])
		start = end
	}
	return out
}

// keepInColumn appends, of the pixels of one column, the first, the
// highest, the lowest and the last, in their order: the line enters and
// leaves the column where it did, and no spike is lost.
func keepInColumn(out, column []pixel) []pixel {
	top, bottom := 0, 0
	for i, p := range column {
		if p.y < column[top].y {
			top = i
		}
		if p.y > column[bottom].y {
			bottom = i
		}
	}
	keep := []int{0, top, bottom, len(column) - 1}
	slices.Sort(keep)
	for _, i := range slices.Compact(keep) {
		out = append(out, column[i])
	}
	return out
}
