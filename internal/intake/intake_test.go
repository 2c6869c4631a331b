package intake

import (
	"context"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubebridge/kubebridge/internal/fixtures"
	"github.com/kubebridge/kubebridge/pkg/informers"
)

// Deterministic tests of the intake: no goroutines, the test plays the
// pipeline (take) and the publisher (Done, Requeue).

func TestIntakeMergeRules(t *testing.T) {
	a1, a2, a3 := intakeCM("a", "u1", "1"), intakeCM("a", "u1", "2"), intakeCM("a", "u1", "3")
	tests := []struct {
		name      string
		changes   []informers.Change
		want      string
		coalesced int
	}{
		{"single change stands alone", []informers.Change{live(informers.Updated, a2, a1)}, "[updated ns/a 1→2 c=0] ", 0},
		{"updates keep first old, last new", []informers.Change{live(informers.Updated, a2, a1), live(informers.Updated, a3, a2)}, "[updated ns/a 1→3 c=2] ", 1},
		{"added then updated is added", []informers.Change{live(informers.Added, a1, nil), live(informers.Updated, a2, a1), live(informers.Updated, a3, a2)}, "[added ns/a 3 c=3] ", 2},
		// Not cancelled out: a snapshot item read from the cache may have
		// shown the object before its added change (TestIntakeItemAheadOfItsAdded).
		{"added then deleted is deleted", []informers.Change{live(informers.Added, a1, nil), live(informers.Updated, a2, a1), live(informers.Deleted, a2, nil)}, "[deleted ns/a 2 c=3] ", 2},
		{"updated then deleted is deleted", []informers.Change{live(informers.Updated, a2, a1), live(informers.Deleted, a3, nil)}, "[deleted ns/a 3 c=2] ", 1},
		{"deleted then added under a new uid stay two", []informers.Change{
			live(informers.Updated, a2, a1), live(informers.Deleted, a2, nil),
			live(informers.Added, intakeCM("a", "u2", "9"), nil), live(informers.Updated, intakeCM("a", "u2", "10"), intakeCM("a", "u2", "9"))},
			"[deleted ns/a 2 c=2] [added ns/a 10 c=2] ", 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in, counts := newTestIntake()
			for _, c := range tt.changes {
				in.Add(c)
			}
			if got := describeWork(drain(t, in)); got != tt.want {
				t.Errorf("handed on %s, want %s", got, tt.want)
			}
			if counts[configMaps] != tt.coalesced {
				t.Errorf("coalesced %d, want %d", counts[configMaps], tt.coalesced)
			}
			if len(in.objects) != 0 {
				t.Errorf("%d objects still tracked after everything settled", len(in.objects))
			}
		})
	}
}

// While a change of an object is in flight, later changes wait and merge:
// the object never has two changes in flight, however many arrive.
func TestIntakeOneInFlightPerObject(t *testing.T) {
	in, counts := newTestIntake()
	in.Add(live(informers.Added, intakeCM("a", "u1", "1"), nil))
	first := drain1(t, in)
	for rv := 2; rv <= 100; rv++ {
		in.Add(live(informers.Updated, intakeCM("a", "u1", fmt.Sprint(rv)), intakeCM("a", "u1", fmt.Sprint(rv-1))))
		if w, ok := tryTake(t, in); ok {
			t.Fatalf("handed on %s while the object's first change is in flight", describeWork([]Work{w}))
		}
	}
	if st := in.objects[first.Ref]; len(st.queue) != 1 {
		t.Fatalf("%d entries wait for the object, want 1", len(st.queue))
	}
	in.Done(first)
	if got := describeWork(drain(t, in)); got != "[updated ns/a 1→100 c=99] " {
		t.Errorf("after the first settled: %s", got)
	}
	if counts[configMaps] != 98 {
		t.Errorf("coalesced %d, want 98", counts[configMaps])
	}
}

// However long publishing is stalled, the intake holds at most one entry
// per object (two across a uid change): memory follows the objects.
func TestIntakeBoundedByObjects(t *testing.T) {
	in, counts := newTestIntake()
	const objects = 50
	observed := 0
	for round := range 200 {
		for i := range objects {
			name := fmt.Sprint("o", i)
			in.Add(live(informers.Updated, intakeCM(name, "u"+name, fmt.Sprint(round+2)), intakeCM(name, "u"+name, fmt.Sprint(round+1))))
			observed++
		}
	}
	entries := 0
	for _, st := range in.objects {
		entries += len(st.queue)
	}
	if len(in.objects) != objects || entries != objects {
		t.Fatalf("%d objects, %d entries after %d changes; want %d each", len(in.objects), entries, observed, objects)
	}
	if published := len(drain(t, in)); published+counts[configMaps] != observed {
		t.Errorf("published %d + coalesced %d != observed %d", published, counts[configMaps], observed)
	}
}

// The pipeline's wait ends with ctx, and in shutdown mode once nothing
// waits or flies.
func TestIntakeNextStops(t *testing.T) {
	in, _ := newTestIntake()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, ok := in.Next(ctx, 0); ok {
		t.Error("next returned work after ctx ended")
	}
	in.Add(live(informers.Added, intakeCM("a", "u", "1"), nil))
	w, ok := in.Drain(context.Background())
	if !ok {
		t.Fatal("no work in shutdown mode although a change waits")
	}
	go in.Done(w)
	if _, ok := in.Drain(context.Background()); ok {
		t.Error("shutdown mode handed on work when nothing waited")
	}
}

// The lag of an event starts at the oldest change it stands for: merged
// changes keep the first one's time, a snapshot item that replaces a
// waiting change takes it over, and an item that replaced none has none.
func TestIntakeLagStartsAtTheOldestChange(t *testing.T) {
	in, _ := newTestIntake()
	at := func(c informers.Change, sec int64) informers.Change { c.ObservedAt = time.Unix(sec, 0); return c }
	a1, a2, a3 := intakeCM("a", "u1", "1"), intakeCM("a", "u1", "2"), intakeCM("a", "u1", "3")
	b1 := intakeCM("b", "u2", "1")
	in.Add(at(live(informers.Updated, a2, a1), 10))
	in.Add(at(live(informers.Updated, a3, a2), 20)) // merged into the first
	in.Add(at(live(informers.Added, b1, nil), 30))
	got := map[string]int64{}
	for _, w := range drain(t, in) {
		got[w.Ref.Key] = w.Since.Unix()
	}
	if got["ns/a"] != 10 || got["ns/b"] != 30 {
		t.Errorf("lag starts %v, want ns/a at 10 (the first of two merged changes), ns/b at 30", got)
	}

	a4 := intakeCM("a", "u1", "4")
	inFlight := func() Work { in.Add(at(live(informers.Updated, a4, a3), 40)); return drain1(t, in) }()
	in.Add(at(live(informers.Updated, intakeCM("a", "u1", "5"), a4), 50)) // waits behind the one in flight
	in.RequestSnapshot(configMaps, fixtures.MapCache{"ns/a": intakeCM("a", "u1", "5"), "ns/b": b1}, informers.Scope{}, "s1")
	drain1(t, in) // begin
	if w, ok := tryTake(t, in); ok && w.Ref.Key == "ns/a" {
		t.Fatalf("took %s while a's change is in flight", describeWork([]Work{w}))
	} else if ok {
		if !w.Since.IsZero() {
			t.Errorf("b's item, which replaced no change, has a lag from %v", w.Since)
		}
		in.Done(w)
	}
	in.Done(inFlight)
	for _, w := range drain(t, in) {
		switch {
		case w.Change.Verb == informers.SnapshotItem && w.Ref.Key == "ns/a" && w.Since.Unix() != 50:
			t.Errorf("the item that replaced the waiting change: lag from %v, want 50", w.Since)
		case w.Change.Verb == informers.SnapshotItem && w.Ref.Key == "ns/b" && !w.Since.IsZero():
			t.Errorf("an item that replaced no change has a lag from %v", w.Since)
		}
	}
}

// TestIntakeReportsAChangeWithoutKey gives the intake a change whose
// object has no metadata: it cannot be tracked per object, so it is
// reported (the bridge logs and counts it), not dropped without a word.
func TestIntakeReportsAChangeWithoutKey(t *testing.T) {
	var reported []error
	in := New(time.Now, Reports{Coalesced: func(*informers.Resource, int) {}, Unkeyed: func(_ informers.Change, err error) { reported = append(reported, err) }})
	in.Add(informers.Change{Verb: informers.Added, Resource: configMaps, Object: &metav1.Status{}})
	if len(reported) != 1 {
		t.Fatalf("%d reports of a change without a key, want 1", len(reported))
	}
	if w := drain(t, in); len(w) != 0 {
		t.Errorf("the intake handed on %d changes without a key", len(w))
	}
}

// Done wakes Next only when the settled work lets it go on: a lone
// change's Done leaves it asleep; it wakes it when the object's next
// change waits, when a snapshot item lands (the end marker waits for it),
// and at every Done once Drain waits for the last.
func TestIntakeDoneWakesOnlyWhenWorkCanGoOn(t *testing.T) {
	in, _ := newTestIntake()
	woken := func() bool {
		select {
		case <-in.wake:
			return true
		default:
			return false
		}
	}
	a1, a2 := intakeCM("a", "u1", "1"), intakeCM("a", "u1", "2")

	in.Add(live(informers.Added, a1, nil))
	w := drain1(t, in)
	woken() // the Add's
	in.Done(w)
	if woken() {
		t.Error("a lone change's Done woke Next")
	}

	in.Add(live(informers.Updated, a2, a1))
	w = drain1(t, in)
	in.Add(live(informers.Updated, intakeCM("a", "u1", "3"), a2)) // waits behind the one in flight
	woken()
	in.Done(w)
	if !woken() {
		t.Error("Done did not wake Next for the object's next change")
	}
	drain(t, in)

	in.RequestSnapshot(configMaps, fixtures.MapCache{"ns/b": intakeCM("b", "u2", "1")}, informers.Scope{}, "s1")
	if w := drain1(t, in); w.Change.Verb != informers.SnapshotBegin {
		t.Fatalf("took %s, want begin", w.Change.Verb)
	}
	item := drain1(t, in)
	if _, ok := tryTake(t, in); ok {
		t.Fatal("the end marker came before its item settled")
	}
	woken()
	in.Done(item)
	if !woken() {
		t.Error("a snapshot item's Done did not wake Next for the end marker")
	}
	if w := drain1(t, in); w.Change.Verb != informers.SnapshotEnd {
		t.Fatalf("took %s, want end", w.Change.Verb)
	}

	in.Add(live(informers.Updated, intakeCM("a", "u1", "4"), a2))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w, ok := in.Drain(ctx)
	if !ok {
		t.Fatal("Drain handed on nothing")
	}
	woken()
	in.Done(w)
	if !woken() {
		t.Error("Done did not wake a Drain waiting for the last to settle")
	}
}
