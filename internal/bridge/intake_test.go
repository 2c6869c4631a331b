package bridge

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubebridge/kubebridge/pkg/informers"
)

// Deterministic tests of the intake: no goroutines, the test plays the
// pipeline (take) and the publisher (done).

func intakeCM(name, uid, rv string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID(uid), ResourceVersion: rv}}
}

func live(verb informers.Verb, obj, old runtime.Object) informers.Change {
	return informers.Change{Verb: verb, Resource: configMaps, Object: obj, OldObject: old, FinalStateUnknown: verb == informers.Deleted && old != nil}
}

type coalescedCount map[*informers.Resource]int

// noReports is an intake's reports for tests that look at neither.
var noReports = intakeReports{coalesced: func(*informers.Resource, int) {}, unkeyed: func(informers.Change, error) {}}

func newTestIntake() (*intake, coalescedCount) {
	counts := coalescedCount{}
	return newIntake(func() time.Time { return time.Unix(0, 0) }, intakeReports{coalesced: func(r *informers.Resource, n int) { counts[r] += n }, unkeyed: noReports.unkeyed}), counts
}

// drain takes everything the intake hands on, settling each at once.
func drain(in *intake) []work {
	var out []work
	for {
		in.mu.Lock()
		w, ok := in.take(true)
		in.mu.Unlock()
		if !ok {
			return out
		}
		out = append(out, w)
		if w.ref != (objectRef{}) {
			in.done(w.ref)
		}
	}
}

func describeWork(ws []work) string {
	s := ""
	for _, w := range ws {
		rv, old := "", ""
		if w.c.Object != nil {
			rv = resourceVersionOf(w.c.Object)
		}
		if w.c.OldObject != nil {
			old = resourceVersionOf(w.c.OldObject) + "→"
		}
		s += fmt.Sprintf("[%s %s %s%s c=%d] ", w.c.Verb, objectName(w.c.Object), old, rv, w.c.Coalesced)
	}
	return s
}

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
			if got := describeWork(drain(in)); got != tt.want {
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
		if w, ok := tryTake(in); ok {
			t.Fatalf("handed on %s while the object's first change is in flight", describeWork([]work{w}))
		}
	}
	if st := in.objects[first.ref]; len(st.queue) != 1 {
		t.Fatalf("%d entries wait for the object, want 1", len(st.queue))
	}
	in.done(first.ref)
	if got := describeWork(drain(in)); got != "[updated ns/a 1→100 c=99] " {
		t.Errorf("after the first settled: %s", got)
	}
	if counts[configMaps] != 98 {
		t.Errorf("coalesced %d, want 98", counts[configMaps])
	}
}

func drain1(t *testing.T, in *intake) work {
	t.Helper()
	w, ok := tryTake(in)
	if !ok {
		t.Fatal("nothing to take")
	}
	return w
}

func tryTake(in *intake) (work, bool) {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.take(true)
}

// A snapshot far bigger than what is in flight does not hold live changes
// back: they are handed on first, at least liveBurst of them between two
// snapshot steps, and none is lost.
func TestIntakeLiveChangesInterleaveWithSnapshot(t *testing.T) {
	in, _ := newTestIntake()
	cache := mapCache{}
	for i := range 5000 {
		cache[fmt.Sprintf("ns/s%04d", i)] = intakeCM(fmt.Sprintf("s%04d", i), fmt.Sprint("su", i), "1")
	}
	in.requestSnapshot(configMaps, cache, informers.Scope{}, "s1")
	var handed []work
	take := func() work {
		w := drain1(t, in)
		handed = append(handed, w)
		if w.ref != (objectRef{}) {
			in.done(w.ref)
		}
		return w
	}
	if w := take(); w.c.Verb != informers.SnapshotBegin {
		t.Fatalf("first %s", w.c.Verb)
	}
	items := 0
	for round := range 200 {
		// A burst of live changes arrives between two takes.
		for j := range 3 {
			in.Add(live(informers.Added, intakeCM(fmt.Sprintf("live-%d-%d", round, j), fmt.Sprint("lu", round, j), "2"), nil))
		}
		for range 3 {
			if w := take(); w.c.Verb != informers.Added {
				t.Fatalf("round %d: took %s while live changes waited", round, w.c.Verb)
			}
		}
		if w := take(); w.c.Verb == informers.SnapshotItem {
			items++
		}
	}
	// The snapshot advances too: one item per round, with no live change
	// waiting then.
	if items != 200 {
		t.Errorf("%d snapshot items in 200 rounds, want 200", items)
	}
	rest := drain(in)
	if last := rest[len(rest)-1]; last.c.Verb != informers.SnapshotEnd {
		t.Errorf("last %s, want the end marker", last.c.Verb)
	}
	total := 0
	for _, w := range append(handed, rest...) {
		if w.c.Verb == informers.SnapshotItem {
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
	cache := mapCache{"ns/x": intakeCM("x", "ux", "1"), "ns/y": intakeCM("y", "uy", "1")}
	in.requestSnapshot(configMaps, cache, informers.Scope{}, "s1")
	steps := 0
	for i := 0; steps < 4 && i < 10*liveBurst; i++ {
		in.Add(live(informers.Added, intakeCM(fmt.Sprint("l", i), fmt.Sprint("lu", i), "2"), nil))
		in.Add(live(informers.Added, intakeCM(fmt.Sprint("m", i), fmt.Sprint("mu", i), "2"), nil))
		w := drain1(t, in)
		if w.ref != (objectRef{}) {
			in.done(w.ref)
		}
		if w.c.Verb.IsMarker() || w.c.Verb == informers.SnapshotItem {
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
	in.requestSnapshot(configMaps, mapCache{"ns/a": a3}, informers.Scope{}, "s1")
	if w := drain1(t, in); w.c.Verb != informers.SnapshotBegin {
		t.Fatalf("took %s, want begin", w.c.Verb)
	}
	if w, ok := tryTake(in); ok {
		t.Fatalf("took %s while the item waits for the object's change in flight", describeWork([]work{w}))
	}
	in.done(inFlight.ref)
	rest := drain(in)
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
	in.requestSnapshot(configMaps, mapCache{"ns/big": intakeCM("big", "ub", "5")}, informers.Scope{}, "s1")
	drain1(t, in) // begin
	item := drain1(t, in)
	if item.c.Verb != informers.SnapshotItem {
		t.Fatalf("took %s", item.c.Verb)
	}
	if w, ok := tryTake(in); ok {
		t.Fatalf("took %s while the item is in flight", w.c.Verb)
	}
	in.requeue(item.ref, item.c, time.Time{})
	again := drain1(t, in)
	if again.c.Verb != informers.SnapshotItem || !again.truncate || again.run != item.run {
		t.Fatalf("requeued item came back as %+v", again)
	}
	in.done(again.ref)
	if w := drain1(t, in); w.c.Verb != informers.SnapshotEnd {
		t.Errorf("took %s, want the end marker", w.c.Verb)
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
	if published := len(drain(in)); published+counts[configMaps] != observed {
		t.Errorf("published %d + coalesced %d != observed %d", published, counts[configMaps], observed)
	}
}

// The pipeline's wait ends with ctx, and in shutdown mode once nothing
// waits or flies.
func TestIntakeNextStops(t *testing.T) {
	in, _ := newTestIntake()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, ok := in.next(ctx, true, 0); ok {
		t.Error("next returned work after ctx ended")
	}
	in.Add(live(informers.Added, intakeCM("a", "u", "1"), nil))
	w, ok := in.next(context.Background(), false, 0)
	if !ok {
		t.Fatal("no work in shutdown mode although a change waits")
	}
	go in.done(w.ref)
	if _, ok := in.next(context.Background(), false, 0); ok {
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
	for _, w := range drain(in) {
		got[w.ref.key] = w.since.Unix()
	}
	if got["ns/a"] != 10 || got["ns/b"] != 30 {
		t.Errorf("lag starts %v, want ns/a at 10 (the first of two merged changes), ns/b at 30", got)
	}

	a4 := intakeCM("a", "u1", "4")
	inFlight := func() work { in.Add(at(live(informers.Updated, a4, a3), 40)); return drain1(t, in) }()
	in.Add(at(live(informers.Updated, intakeCM("a", "u1", "5"), a4), 50)) // waits behind the one in flight
	in.requestSnapshot(configMaps, mapCache{"ns/a": intakeCM("a", "u1", "5"), "ns/b": b1}, informers.Scope{}, "s1")
	drain1(t, in) // begin
	if w, ok := tryTake(in); ok && w.ref.key == "ns/a" {
		t.Fatalf("took %s while a's change is in flight", describeWork([]work{w}))
	} else if ok {
		if !w.since.IsZero() {
			t.Errorf("b's item, which replaced no change, has a lag from %v", w.since)
		}
		in.done(w.ref)
	}
	in.done(inFlight.ref)
	for _, w := range drain(in) {
		switch {
		case w.c.Verb == informers.SnapshotItem && w.ref.key == "ns/a" && w.since.Unix() != 50:
			t.Errorf("the item that replaced the waiting change: lag from %v, want 50", w.since)
		case w.c.Verb == informers.SnapshotItem && w.ref.key == "ns/b" && !w.since.IsZero():
			t.Errorf("an item that replaced no change has a lag from %v", w.since)
		}
	}
}

// TestIntakeReportsAChangeWithoutKey gives the intake a change whose
// object has no metadata: it cannot be tracked per object, so it is
// reported (the bridge logs and counts it), not dropped without a word.
func TestIntakeReportsAChangeWithoutKey(t *testing.T) {
	var reported []error
	in := newIntake(time.Now, intakeReports{coalesced: func(*informers.Resource, int) {}, unkeyed: func(_ informers.Change, err error) { reported = append(reported, err) }})
	in.Add(informers.Change{Verb: informers.Added, Resource: configMaps, Object: &metav1.Status{}})
	if len(reported) != 1 {
		t.Fatalf("%d reports of a change without a key, want 1", len(reported))
	}
	if w := drain(in); len(w) != 0 {
		t.Errorf("the intake handed on %d changes without a key", len(w))
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
	in.requestSnapshot(configMaps, mapCache{"ns/a": a}, informers.Scope{}, "s1")
	if w := drain1(t, in); w.c.Verb != informers.SnapshotBegin {
		t.Fatalf("first %s, want the begin marker", w.c.Verb)
	}
	item := drain1(t, in)
	if item.c.Verb != informers.SnapshotItem {
		t.Fatalf("second %s, want the item", item.c.Verb)
	}
	// The added change arrives while the item is in flight, and the delete
	// before the added change is handed on.
	in.Add(live(informers.Added, a, nil))
	in.done(item.ref)
	in.Add(live(informers.Deleted, a, nil))
	got := describeWork(drain(in))
	if want := "[deleted ns/a 1 c=2] [snapshot.end   c=0] "; got != want {
		t.Errorf("after the item: %s, want %s", got, want)
	}
}
