package contract

import "testing"

func TestTermsBefore(t *testing.T) {
	var ts Terms
	if got := ts.Before(100); got != 0 {
		t.Errorf("no markers: Before(100) = %d, want 0", got)
	}
	// Out of order and twice: a reader of the last message per subject
	// learns markers in any order.
	for _, seq := range []uint64{20, 10, 20, 35} {
		ts.Add(seq)
	}
	if len(ts.seqs) != 3 {
		t.Errorf("%d markers held, want 3 (a marker added twice counts once)", len(ts.seqs))
	}
	for seq, want := range map[uint64]uint64{5: 0, 10: 0, 11: 10, 20: 10, 21: 20, 35: 20, 36: 35, 1000: 35} {
		if got := ts.Before(seq); got != want {
			t.Errorf("Before(%d) = %d, want %d", seq, got, want)
		}
	}
}

func TestTermsForeign(t *testing.T) {
	var none Terms
	for _, c := range []struct {
		term, seq uint64
		want      bool
	}{{0, 5, false}, {7, 30, false}, {30, 30, true}, {31, 30, true}} {
		if got := none.Foreign(c.term, c.seq); got != c.want {
			t.Errorf("no markers: term %d at seq %d: foreign %v, want %v", c.term, c.seq, got, c.want)
		}
	}
	var ts Terms
	ts.Add(10)
	ts.Add(20)
	for _, c := range []struct {
		term, seq uint64
		want      bool
	}{
		{0, 5, false},   // before terms
		{5, 30, false},  // older than every marker held: its marker was discarded
		{10, 30, false}, // a marker's
		{20, 30, false},
		{15, 30, true}, // within the markers, none of them
		{30, 30, true}, // not before its own event
		{40, 30, true},
	} {
		if got := ts.Foreign(c.term, c.seq); got != c.want {
			t.Errorf("term %d at seq %d: foreign %v, want %v", c.term, c.seq, got, c.want)
		}
	}
}
