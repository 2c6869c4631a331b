package timeplot

import (
	"encoding/xml"
	"fmt"
	"io"
	"strings"
)

// svgWriter writes SVG elements and keeps the first write error; once
// there is one it writes nothing more.
type svgWriter struct {
	w   io.Writer
	err error
}

func (s *svgWriter) printf(format string, args ...any) {
	if s.err != nil {
		return
	}
	_, s.err = fmt.Fprintf(s.w, format, args...)
}

// text writes a text element; attrs are written as they are, content is
// escaped.
func (s *svgWriter) text(x, y float64, attrs, content string) {
	s.printf("<text x=\"%.1f\" y=\"%.1f\" %s>%s</text>\n", x, y, attrs, escape(content))
}

func (s *svgWriter) line(x1, y1, x2, y2 float64, attrs string) {
	s.printf("<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" %s/>\n", x1, y1, x2, y2, attrs)
}

func (s *svgWriter) polyline(px []pixel, attrs string) {
	var points strings.Builder
	for i, p := range px {
		if i > 0 {
			points.WriteByte(' ')
		}
		fmt.Fprintf(&points, "%.1f,%.1f", p.x, p.y)
	}
	s.printf("<polyline points=\"%s\" %s/>\n", points.String(), attrs)
}

// escape makes text safe as element content and as a quoted attribute
// value: it escapes <, >, &, both quotes and the control characters XML
// keeps, and replaces what XML cannot hold.
func escape(text string) string {
	var b strings.Builder
	// A strings.Builder does not fail.
	_ = xml.EscapeText(&b, []byte(text))
	return b.String()
}

// style is the document's stylesheet: the classes render uses.
const style = `<style>
.title{font-size:16px;font-weight:bold;fill:#111}
.panel-title{font-size:12px;font-weight:bold;fill:#222}
.tick,.legend,.unit,.axis-title{font-size:11px;fill:#333}
.nodata{font-size:12px;fill:#999}
.span-label{font-size:10px;fill:#222}
.grid{stroke:#e6e6e6;stroke-width:1}
.frame{fill:none;stroke:#888;stroke-width:1}
.span{fill:#8c6bb1;fill-opacity:0.14}
.span-edge{stroke:#6a4c93;stroke-width:1;stroke-opacity:0.7}
.series{fill:none;stroke-width:1.5;stroke-linejoin:round}
</style>
`

// palette is the series colours, distinct on white and from the spans'
// shading; colours repeat with a dash pattern after the last.
func palette() []string {
	return []string{
		"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#17becf",
		"#8c564b", "#e377c2", "#bcbd22", "#7f7f7f",
	}
}

// seriesAttrs is the stroke of the series with style index i.
func seriesAttrs(i int) string {
	colours := palette()
	dashes := []string{"", "6 3", "2 3", "8 3 2 3"}
	attrs := fmt.Sprintf("stroke=\"%s\"", colours[i%len(colours)])
	if dash := dashes[(i/len(colours))%len(dashes)]; dash != "" {
		attrs += fmt.Sprintf(" stroke-dasharray=\"%s\"", dash)
	}
	return attrs
}
