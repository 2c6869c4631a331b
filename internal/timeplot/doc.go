// Package timeplot draws values over time as one SVG document: panels
// stacked on a shared time axis (seconds, or minutes and hours for long
// runs, from the earliest point or span), each with its own y axis from
// zero, one line per series in a fixed palette with a legend, and spans
// (the robustness test's injected faults) shaded across every panel and
// labelled above them. The same input always gives the same bytes.
//
// It owns the layout and scales (layout.go, scale.go), turning points
// into pixels (points.go) and the SVG itself (svg.go, render.go).
//
// It uses the standard library only: a plotting library such as
// gonum/plot would bring in fonts, image back ends and much more than a
// few lines and rectangles need.
//
// Tests only. It imports nothing of this module.
package timeplot
