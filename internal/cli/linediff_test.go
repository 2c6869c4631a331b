package cli

import "testing"

func TestLineDiff(t *testing.T) {
	a := "a\nb\nc\nd\ne\nf\ng\nh\ni\nj\n"
	b := "a\nb\nc\nd\nE\nf\ng\nh\ni\nj\nk\n"
	// Hunks closer than twice the context join.
	want := "…\n  b\n  c\n  d\n- e\n+ E\n  f\n  g\n  h\n  i\n  j\n+ k\n"
	if got := lineDiff(a, b); got != want {
		t.Errorf("lineDiff:\n%s\nwant\n%s", got, want)
	}
	if got := lineDiff(a, a); got != "" {
		t.Errorf("equal texts: %q", got)
	}
	if got := lineDiff("x\n", "y\n"); got != "- x\n+ y\n" {
		t.Errorf("one line: %q", got)
	}
}
