package intake

import (
	"fmt"
	"testing"

	"github.com/kubebridge/kubebridge/internal/fixtures"
	"github.com/kubebridge/kubebridge/pkg/informers"
)

// Deterministic tests of how the intake feeds snapshots: the test plays
// the pipeline (take) and the publisher (Done, Requeue).

// A snapshot far bigger than what is in flight does not hold live changes
// back: they are handed on first, at least liveBurst of them between two
// snapshot steps, and none is lost.
func TestIntakeLiveChangesInterleaveWithSnapshot(t *testing.T) {
	in, _ := newTestIntake()
	cache := fixtures.MapCache{}
	for i := range 5000 {
		cache[fmt.Sprintf("ns/s%04d", i)] = intakeCM(fmt.Sprintf("s%04d", i), fmt.Sprint("su", i), "1")
	}
	in.RequestSnapshot(configMaps, cache, informers.Scope{}, "s1")
	var handed []Work
	take := func() Work {
		w := drain1(t, in)
		handed = append(handed, w)
		if w.Ref != (Ref{}) {
			in.Done(w)
		}
		return w
	}
	if w := take(); w.Change.Verb != informers.SnapshotBegin {
		t.Fatalf("first %s", w.Change.Verb)
	} else if w.Listed != len(cache) {
		t.Fatalf("the begin marker says %d objects listed, want %d", w.Listed, len(cache))
	}
	items := 0
	for round := range 200 {
		// A burst of live changes arrives between two takes.
		for j := range 3 {
			in.Add(live(informers.Added, intakeCM(fmt.Sprintf("live-%d-%d", round, j), fmt.Sprint("lu", round, j), "2"), nil))
		}
		for range 3 {
			if w := take(); w.Change.Verb != informers.Added {
				t.Fatalf("round %d: took %s while live changes waited", round, w.Change.Verb)
			}
		}
		if w := take(); w.Change.Verb == informers.SnapshotItem {
			items++
		}
	}
	// The snapshot advances too: one item per round, with no live change
	// waiting then.
	if items != 200 {
		t.Errorf("%d snapshot items in 200 rounds, want 200", items)
	}
	rest := drain(t, in)
	if last := rest[len(rest)-1]; last.Change.Verb != informers.SnapshotEnd {
		t.Errorf("last %s, want the end marker", last.Change.Verb)
	}
	total := 0
	for _, w := range append(handed, rest...) {
		if w.Change.Verb == informers.SnapshotItem {
			total++
		}
	}
	if total != 5000 {
		t.Errorf("%d items, want 5000", total)
	}
}

// Under a steady stream of live changes the snapshot still advances: one
// step after every liveBurst live changes.
func TestIntakeSnapshotNotStarved(t *testing.T) {
	in, _ := newTestIntake()
	cache := fixtures.MapCache{"ns/x": intakeCM("x", "ux", "1"), "ns/y": intakeCM("y", "uy", "1")}
	in.RequestSnapshot(configMaps, cache, informers.Scope{}, "s1")
	steps := 0
	for i := 0; steps < 4 && i < 10*liveBurst; i++ {
		in.Add(live(informers.Added, intakeCM(fmt.Sprint("l", i), fmt.Sprint("lu", i), "2"), nil))
		in.Add(live(informers.Added, intakeCM(fmt.Sprint("m", i), fmt.Sprint("mu", i), "2"), nil))
		w := drain1(t, in)
		if w.Ref != (Ref{}) {
			in.Done(w)
		}
		if w.Change.Verb.IsMarker() || w.Change.Verb == informers.SnapshotItem {
			steps++
		}
	}
	if steps != 4 {
		t.Errorf("snapshot took %d of its 4 steps while live changes never stopped", steps)
	}
}

// A snapshot item for an object with a change in flight waits behind it,
// supersedes what waits, and the end marker comes only after it.
func TestIntakeDeferredItem(t *testing.T) {
	in, counts := newTestIntake()
	a1, a2, a3 := intakeCM("a", "u1", "1"), intakeCM("a", "u1", "2"), intakeCM("a", "u1", "3")
	in.Add(live(informers.Updated, a2, a1))
	inFlight := drain1(t, in)
	in.Add(live(informers.Updated, a3, a2)) // waits behind the one in flight
	in.RequestSnapshot(configMaps, fixtures.MapCache{"ns/a": a3}, informers.Scope{}, "s1")
	if w := drain1(t, in); w.Change.Verb != informers.SnapshotBegin {
		t.Fatalf("took %s, want begin", w.Change.Verb)
	}
	if w, ok := tryTake(t, in); ok {
		t.Fatalf("took %s while the item waits for the object's change in flight", describeWork([]Work{w}))
	}
	in.Done(inFlight)
	rest := drain(t, in)
	if got := describeWork(rest); got != "[snapshot.item ns/a 3 c=1] [snapshot.end   c=0] " {
		t.Errorf("after the change in flight settled: %s", got)
	}
	if counts[configMaps] != 1 {
		t.Errorf("coalesced %d, want 1 (the waiting update, superseded by the item)", counts[configMaps])
	}
}

// The end marker waits until every item is settled, and a rejected item
// comes back, truncated, before it.
func TestIntakeRequeueBeforeEnd(t *testing.T) {
	in, _ := newTestIntake()
	in.RequestSnapshot(configMaps, fixtures.MapCache{"ns/big": intakeCM("big", "ub", "5")}, informers.Scope{}, "s1")
	drain1(t, in) // begin
	item := drain1(t, in)
	if item.Change.Verb != informers.SnapshotItem {
		t.Fatalf("took %s", item.Change.Verb)
	}
	if w, ok := tryTake(t, in); ok {
		t.Fatalf("took %s while the item is in flight", w.Change.Verb)
	}
	in.Requeue(item)
	again := drain1(t, in)
	if again.Change.Verb != informers.SnapshotItem || !again.Truncate || again.run != item.run {
		t.Fatalf("requeued item came back as %+v", again)
	}
	in.Done(again)
	if w := drain1(t, in); w.Change.Verb != informers.SnapshotEnd {
		t.Errorf("took %s, want the end marker", w.Change.Verb)
	}
}

// TestIntakeItemAheadOfItsAdded: a snapshot reads the informer cache, which
// runs ahead of the handler's notifications, so an object can be published
// as an item before its added change arrives. If it is then deleted while
// that added change waits, its delete must still be published: the object
// was shown. (Cancelling added + deleted as "never published" lost this
// delete, and a later snapshot end swept an object whose delete the stream
// never had: TestSnapshotsUnderHotUpdates' known flake.)
func TestIntakeItemAheadOfItsAdded(t *testing.T) {
	in, _ := newTestIntake()
	a := intakeCM("a", "u1", "1")
	in.RequestSnapshot(configMaps, fixtures.MapCache{"ns/a": a}, informers.Scope{}, "s1")
	if w := drain1(t, in); w.Change.Verb != informers.SnapshotBegin {
		t.Fatalf("first %s, want the begin marker", w.Change.Verb)
	}
	item := drain1(t, in)
	if item.Change.Verb != informers.SnapshotItem {
		t.Fatalf("second %s, want the item", item.Change.Verb)
	}
	// The added change arrives while the item is in flight, and the delete
	// before the added change is handed on.
	in.Add(live(informers.Added, a, nil))
	in.Done(item)
	in.Add(live(informers.Deleted, a, nil))
	got := describeWork(drain(t, in))
	if want := "[deleted ns/a 1 c=2] [snapshot.end   c=0] "; got != want {
		t.Errorf("after the item: %s, want %s", got, want)
	}
}
