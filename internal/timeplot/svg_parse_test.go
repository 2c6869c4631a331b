package timeplot

import (
	"bytes"
	"encoding/xml"
	"io"
	"strconv"
	"strings"
	"testing"
)

// element is one element of a written document, as encoding/xml reads it.
type element struct {
	name  string
	attrs map[string]string
	text  string // the character data directly inside it
}

// write runs WriteSVG and parses what it wrote with encoding/xml, failing
// the test when either fails or there is not exactly one svg root.
func write(t *testing.T, title string, panels []Panel, spans []Span) ([]byte, []element) {
	t.Helper()
	var buf bytes.Buffer
	if err := WriteSVG(&buf, title, panels, spans); err != nil {
		t.Fatalf("WriteSVG: %v", err)
	}
	return buf.Bytes(), parse(t, buf.Bytes())
}

func parse(t *testing.T, doc []byte) []element {
	t.Helper()
	dec := xml.NewDecoder(bytes.NewReader(doc))
	var out []element
	var open []int // indexes into out of the elements still open
	roots := 0
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("the output is not XML: %v\n%s", err, doc)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			if len(open) == 0 {
				roots++
			}
			e := element{name: tok.Name.Local, attrs: map[string]string{}}
			for _, a := range tok.Attr {
				e.attrs[a.Name.Local] = a.Value
			}
			out = append(out, e)
			open = append(open, len(out)-1)
		case xml.EndElement:
			open = open[:len(open)-1]
		case xml.CharData:
			if len(open) > 0 {
				out[open[len(open)-1]].text += string(tok)
			}
		}
	}
	if roots != 1 || len(out) == 0 || out[0].name != "svg" {
		t.Fatalf("want one svg root element, got %d roots, first %+v", roots, out[0])
	}
	return out
}

// having is the elements with the given name and, if class is not
// empty, that class.
func having(elems []element, name, class string) []element {
	var out []element
	for _, e := range elems {
		if e.name == name && (class == "" || e.attrs["class"] == class) {
			out = append(out, e)
		}
	}
	return out
}

// points parses a polyline's points attribute; a coordinate that is NaN
// or infinite fails the test.
func points(t *testing.T, e element) []pixel {
	t.Helper()
	var out []pixel
	for _, pair := range strings.Fields(e.attrs["points"]) {
		xs, ys, ok := strings.Cut(pair, ",")
		x, errX := strconv.ParseFloat(xs, 64)
		y, errY := strconv.ParseFloat(ys, 64)
		if !ok || errX != nil || errY != nil || !finite(x) || !finite(y) {
			t.Fatalf("bad point %q in %q", pair, e.attrs["points"])
		}
		out = append(out, pixel{x, y})
	}
	return out
}

// attr parses a number attribute; NaN or infinite fails the test.
func attr(t *testing.T, e element, name string) float64 {
	t.Helper()
	v, err := strconv.ParseFloat(e.attrs[name], 64)
	if err != nil || !finite(v) {
		t.Fatalf("%s %s=%q: not a finite number (%v)", e.name, name, e.attrs[name], err)
	}
	return v
}
