package timeplot

import (
	"math"
	"strings"
	"testing"
)

func TestValueAxisNiceTicks(t *testing.T) {
	cases := []struct {
		lo, hi float64
		want   string
	}{
		{0, 7, "0 2 4 6 8"},
		{0, 8, "0 2 4 6 8"},
		{0, 100, "0 25 50 75 100"},
		{0, 130, "0 50 100 150"},
		{3, 0.7, "0 0.2 0.4 0.6 0.8"}, // from zero, whatever the lowest value
		{0, 0.03, "0 0.01 0.02 0.03"},
		{0, 1234, "0 500 1000 1500"},
		{0, 0, "0 0.25 0.5 0.75 1"},
		{-3, 5, "-4 -2 0 2 4 6"},
	}
	for _, c := range cases {
		a := valueAxis(c.lo, c.hi)
		var got []string
		for _, v := range a.ticks() {
			got = append(got, formatNumber(v))
		}
		if strings.Join(got, " ") != c.want {
			t.Errorf("valueAxis(%v, %v) ticks %q, want %q", c.lo, c.hi, strings.Join(got, " "), c.want)
		}
	}
}

// Whatever the maximum, the axis reaches it with 4 or 5 labelled ticks
// whose step is 1, 2, 2.5 or 5 times a power of ten.
func TestValueAxisAlwaysFourOrFiveTicks(t *testing.T) {
	for hi := 0.001; hi < 1e7; hi *= 1.07 {
		a := valueAxis(0, hi)
		n := len(a.ticks())
		mantissa := a.step / math.Pow(10, math.Floor(math.Log10(a.step)))
		nice := false
		for _, m := range []float64{1, 2, 2.5, 5} {
			nice = nice || math.Abs(mantissa-m) < 1e-9
		}
		if n < 4 || n > 5 || a.hi < hi || a.lo != 0 || !nice {
			t.Errorf("valueAxis(0, %g) = %+v: %d ticks", hi, a, n)
		}
	}
}

func TestTimeAxisNiceTicks(t *testing.T) {
	cases := []struct {
		end  float64 // seconds
		want string
	}{
		{0, "0s 1s"},
		{0.7, "0s 0.1s 0.2s 0.3s 0.4s 0.5s 0.6s 0.7s"},
		{7, "0s 1s 2s 3s 4s 5s 6s 7s"},
		{130, "0s 20s 40s 60s 80s 100s 120s 140s"},
		{240, "0s 30s 60s 90s 120s 150s 180s 210s 240s"},
		{300, "0m 1m 2m 3m 4m 5m"},
		{3600, "0m 10m 20m 30m 40m 50m 60m"},
		{5400, "0m 15m 30m 45m 60m 75m 90m"},
		{8 * 3600, "0h 1h 2h 3h 4h 5h 6h 7h 8h"},
		{10 * 86400, "0h 48h 96h 144h 192h 240h"},
	}
	for _, c := range cases {
		a := timeAxis(c.end)
		var got []string
		for _, v := range a.ticks() {
			got = append(got, timeLabel(v, a.step))
		}
		if strings.Join(got, " ") != c.want {
			t.Errorf("timeAxis(%v) ticks %q, want %q", c.end, strings.Join(got, " "), c.want)
		}
		if n := len(a.ticks()) - 1; n > timeIntervals {
			t.Errorf("timeAxis(%v): %d intervals, want at most %d", c.end, n, timeIntervals)
		}
	}
}

func TestFormatNumber(t *testing.T) {
	for v, want := range map[float64]string{0.1 * 3: "0.3", 2.5: "2.5", 1e6: "1000000", math.Copysign(0, -1): "0", -4: "-4"} {
		if got := formatNumber(v); got != want {
			t.Errorf("formatNumber(%v) = %q, want %q", v, got, want)
		}
	}
}
