package timeplot

import (
	"math"
	"strconv"
)

// axis is a linear scale from lo to hi with a labelled tick every step;
// lo and hi are multiples of step.
type axis struct {
	lo, hi, step float64
}

// ticks are the tick values from lo to hi, each computed from its index
// so that no rounding error adds up along the axis.
func (a axis) ticks() []float64 {
	n := int(math.Round((a.hi - a.lo) / a.step))
	out := make([]float64, 0, n+1)
	for i := 0; i <= n; i++ {
		out = append(out, a.lo+float64(i)*a.step)
	}
	return out
}

// fraction is where v lies between lo (0) and hi (1).
func (a axis) fraction(v float64) float64 {
	return (v - a.lo) / (a.hi - a.lo)
}

// valueIntervals is how many steps a value axis aims for: with steps of
// 1, 2, 2.5 or 5 times a power of ten this gives 3 or 4 intervals, so 4
// or 5 labelled ticks.
const valueIntervals = 4

// niceStep is the smallest of 1, 2, 2.5 and 5 times a power of ten that
// is at least raw; 1 when raw is not a positive finite number.
func niceStep(raw float64) float64 {
	if !(raw > 0) || math.IsInf(raw, 0) {
		return 1
	}
	magnitude := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 2.5, 5} {
		// The tolerance keeps a raw of exactly 2 (say) from becoming 2.5
		// through Log10's rounding.
		if step := m * magnitude; step >= raw*(1-1e-9) {
			return step
		}
	}
	return 10 * magnitude
}

// valueAxis is the y axis for values from lo to hi: from zero, or from
// below the lowest value when that is negative, to a nice maximum.
func valueAxis(lo, hi float64) axis {
	lo, hi = math.Min(lo, 0), math.Max(hi, 0)
	if hi == lo {
		hi = lo + 1
	}
	step := niceStep((hi - lo) / valueIntervals)
	return axis{lo: math.Floor(lo/step) * step, hi: math.Ceil(hi/step-1e-9) * step, step: step}
}

// timeIntervals is the most intervals the time axis has.
const timeIntervals = 8

// day is the longest step timeSteps has, in seconds.
const day = 24 * 3600

// timeSteps are the tick steps, in seconds, the time axis picks from
// between a second and a day: steps a clock reads easily.
func timeSteps() []float64 {
	return []float64{
		1, 2, 5, 10, 15, 20, 30,
		60, 120, 300, 600, 900, 1200, 1800,
		3600, 7200, 3 * 3600, 6 * 3600, 12 * 3600, day,
	}
}

// timeAxis is the x axis for seconds from 0 to end: the first step of
// timeSteps that makes at most timeIntervals intervals (a nice number
// of seconds under a second, of days past a day).
func timeAxis(end float64) axis {
	raw := end / timeIntervals
	var step float64
	switch {
	case raw > day:
		step = niceStep(raw/day) * day
	case raw > 1:
		for _, s := range timeSteps() {
			if s >= raw {
				step = s
				break
			}
		}
	default:
		step = niceStep(raw)
	}
	hi := math.Ceil(end/step-1e-9) * step
	if hi == 0 {
		hi = step
	}
	return axis{lo: 0, hi: hi, step: step}
}

// timeLabel labels a tick of a time axis with the given step: seconds
// for steps under a minute, hours for whole-hour steps, minutes between.
func timeLabel(seconds, step float64) string {
	switch {
	case step < 60:
		return formatNumber(seconds) + "s"
	case math.Mod(step, 3600) == 0:
		return formatNumber(seconds/3600) + "h"
	default:
		return formatNumber(seconds/60) + "m"
	}
}

// formatNumber writes v as short as it reads: rounded to 10 significant
// digits first, so that 0.1*3 reads 0.3.
func formatNumber(v float64) string {
	// FormatFloat's output always parses.
	rounded, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'g', 10, 64), 64)
	if rounded == 0 {
		rounded = 0 // no "-0"
	}
	return strconv.FormatFloat(rounded, 'f', -1, 64)
}
