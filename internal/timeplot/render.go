package timeplot

import (
	"fmt"
	"math"
)

// render writes the document: the spans' shading first, so that lines
// are drawn over it, and their labels last.
func render(s *svgWriter, l layout) {
	s.printf("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n")
	s.printf("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" font-family=\"sans-serif\">\n",
		l.pageWidth, l.height, l.pageWidth, l.height)
	s.printf("%s", style)
	s.printf("<rect class=\"background\" x=\"0\" y=\"0\" width=\"%.0f\" height=\"%.0f\" fill=\"white\"/>\n", l.pageWidth, l.height)
	s.text(plotLeft, 22, `class="title"`, l.title)
	renderSpans(s, &l)
	for i := range l.panels {
		renderPanel(s, &l, &l.panels[i])
	}
	renderTimeAxis(s, &l)
	renderSpanLabels(s, &l)
	s.printf("</svg>\n")
}

// renderSpans shades each span from the label band down to the last
// panel's bottom, at least a line wide, with its label and times as a
// tooltip.
func renderSpans(s *svgWriter, l *layout) {
	bottom := l.panels[len(l.panels)-1].bottom
	for _, sp := range l.spans {
		s.printf("<rect class=\"span\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\"><title>%s</title></rect>\n",
			sp.x0, l.labelBottom, max(sp.x1-sp.x0, 1.5), bottom-l.labelBottom,
			escape(fmt.Sprintf("%s (%ss to %ss)", sp.full, formatNumber(round1(sp.start)), formatNumber(round1(sp.end)))))
		s.line(sp.x0, l.labelBottom, sp.x0, bottom, `class="span-edge"`)
	}
}

// renderSpanLabels writes each span's label upwards from the band's
// foot, joined to its span's start by a short line when it had to move.
func renderSpanLabels(s *svgWriter, l *layout) {
	for _, sp := range l.spans {
		s.line(sp.labelX-labelOffset/2, l.labelBottom-7, sp.x0, l.labelBottom, `class="span-edge"`)
		s.printf("<text class=\"span-label\" transform=\"translate(%.1f,%.1f) rotate(-90)\">%s</text>\n",
			sp.labelX, l.labelBottom-9, escape(sp.label))
	}
}

func renderPanel(s *svgWriter, l *layout, p *panelLayout) {
	title := p.title
	if p.unit != "" {
		title += " (" + p.unit + ")"
	}
	s.text(plotLeft, p.top-6, `class="panel-title"`, title)
	s.printf("<text class=\"unit\" text-anchor=\"middle\" transform=\"translate(16,%.1f) rotate(-90)\">%s</text>\n",
		(p.top+p.bottom)/2, escape(p.unit))
	for _, v := range p.y.ticks() {
		y := p.bottom - p.y.fraction(v)*(p.bottom-p.top)
		s.line(plotLeft, y, l.plotRight, y, `class="grid"`)
		s.text(plotLeft-6, y+4, `class="tick" text-anchor="end"`, formatNumber(v))
	}
	for _, v := range l.x.ticks() {
		x := l.xOf(v)
		s.line(x, p.top, x, p.bottom, `class="grid"`)
	}
	s.printf("<rect class=\"frame\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\"/>\n",
		plotLeft, p.top, l.plotRight-plotLeft, p.bottom-p.top)
	renderSeries(s, l, p)
	renderLegend(s, l, p)
}

// renderSeries draws one line per series with a point; a single point
// also gets a dot, since a line of one point draws nothing.
func renderSeries(s *svgWriter, l *layout, p *panelLayout) {
	drawn := 0
	for _, sr := range p.series {
		if len(sr.pixels) == 0 {
			continue
		}
		attrs := fmt.Sprintf("class=\"series\" data-series=\"%s\" %s", escape(sr.name), seriesAttrs(sr.style))
		s.polyline(sr.pixels, attrs)
		if len(sr.pixels) == 1 {
			s.printf("<circle cx=\"%.1f\" cy=\"%.1f\" r=\"2.5\" %s/>\n", sr.pixels[0].x, sr.pixels[0].y, seriesAttrs(sr.style))
		}
		drawn++
	}
	if drawn == 0 {
		s.text((plotLeft+l.plotRight)/2, (p.top+p.bottom)/2, `class="nodata" text-anchor="middle"`, "no data")
	}
}

// renderLegend lists the panel's series to the right of its plot, one a
// row, each after a stroke of its line.
func renderLegend(s *svgWriter, l *layout, p *panelLayout) {
	left := l.plotRight + 16
	for i, sr := range p.series {
		y := p.top + 10 + float64(i)*legendRow
		s.line(left, y-4, left+18, y-4, "stroke-width=\"2\" "+seriesAttrs(sr.style))
		name := shorten(sr.name, legendRunes)
		if len(sr.pixels) == 0 {
			name += " (no data)"
		}
		s.text(left+24, y, `class="legend"`, name)
	}
}

// renderTimeAxis labels the shared time axis under the last panel.
func renderTimeAxis(s *svgWriter, l *layout) {
	bottom := l.panels[len(l.panels)-1].bottom
	for _, v := range l.x.ticks() {
		x := l.xOf(v)
		s.line(x, bottom, x, bottom+4, `stroke="#888"`)
		s.text(x, bottom+17, `class="tick" text-anchor="middle"`, timeLabel(v, l.x.step))
	}
	caption := "time"
	if !l.t0.IsZero() {
		caption = "time since " + l.t0.UTC().Format("2006-01-02 15:04:05.000 MST")
	}
	s.text((plotLeft+l.plotRight)/2, bottom+38, `class="axis-title" text-anchor="middle"`, caption)
}

// round1 rounds to a tenth, which is as precise as a tooltip needs.
func round1(v float64) float64 {
	return math.Round(v*10) / 10
}
