package bridge

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubebridge/kubebridge/pkg/informers"
)

// Deterministic unit tests of orderGuard. Each helper builds exactly the
// Change the sequencer would see; no goroutines are involved.

var (
	guardCM  = &informers.Resource{GVR: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, Kind: "ConfigMap", Namespaced: true}
	guardSec = &informers.Resource{GVR: schema.GroupVersionResource{Version: "v1", Resource: "secrets"}, Kind: "Secret", Namespaced: true}
)

func guardObj(ns, name, rv string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, ResourceVersion: rv}}
}

func guardChange(res *informers.Resource, verb informers.Verb, name, rv string) *informers.Change {
	return &informers.Change{Verb: verb, Resource: res, Object: guardObj("ns", name, rv)}
}

func guardMarker(res *informers.Resource, verb informers.Verb, id string, listed int) *informers.Change {
	return &informers.Change{Verb: verb, Resource: res, SnapshotID: id, SnapshotCount: listed}
}

// step is one change offered to the guard and whether it must be admitted.
type step struct {
	c    *informers.Change
	want bool
}

func runSteps(t *testing.T, g *orderGuard, steps []step) {
	t.Helper()
	for i, s := range steps {
		got := g.admit(s.c)
		if got != s.want {
			rv := ""
			if s.c.Object != nil {
				rv = s.c.Object.(*corev1.ConfigMap).ResourceVersion
			}
			t.Fatalf("step %d: admit(%s %s rv=%q) = %v, want %v", i, s.c.Resource, s.c.Verb, rv, got, s.want)
		}
	}
}

func TestOrderGuardDropsOlderUpdateAfterNewerSnapshotItem(t *testing.T) {
	g := newOrderGuard()
	runSteps(t, g, []step{
		{guardMarker(guardCM, informers.SnapshotBegin, "s1", 0), true},
		// The indexer ran ahead of the handler queue: the listing shows rv 20
		// while an update to rv 15 is still queued.
		{guardChange(guardCM, informers.SnapshotItem, "a", "20"), true},
		{guardMarker(guardCM, informers.SnapshotEnd, "s1", 1), true},
		{guardChange(guardCM, informers.Updated, "a", "15"), false},
		// Deletes older than what was handed on are dropped too.
		{guardChange(guardCM, informers.Deleted, "a", "19"), false},
		// A newer change still goes through.
		{guardChange(guardCM, informers.Updated, "a", "21"), true},
		{guardChange(guardCM, informers.Updated, "a", "20"), false},
	})
}

func TestOrderGuardAdmitsEqualResourceVersion(t *testing.T) {
	g := newOrderGuard()
	runSteps(t, g, []step{
		{guardChange(guardCM, informers.Added, "a", "7"), true},
		// The handler's own copy of the state a snapshot item already showed.
		{guardChange(guardCM, informers.Updated, "a", "7"), true},
		{guardMarker(guardCM, informers.SnapshotBegin, "s1", 0), true},
		{guardChange(guardCM, informers.SnapshotItem, "a", "7"), true},
		{guardMarker(guardCM, informers.SnapshotEnd, "s1", 1), true},
	})
}

func TestOrderGuardSnapshotTombstone(t *testing.T) {
	g := newOrderGuard()
	runSteps(t, g, []step{
		{guardChange(guardCM, informers.Added, "a", "5"), true},
		{guardMarker(guardCM, informers.SnapshotBegin, "s1", 0), true},
		// The delete (rv 10) reaches the guard before the item the snapshot
		// listed just before the delete happened (rv 5).
		{guardChange(guardCM, informers.Deleted, "a", "10"), true},
		{guardChange(guardCM, informers.SnapshotItem, "a", "5"), false},
	})
	end := guardMarker(guardCM, informers.SnapshotEnd, "s1", 1)
	if !g.admit(end) {
		t.Fatal("end marker not admitted")
	}
	if _, ok := g.last[guardCM][objectKey{"ns", "a"}]; ok {
		t.Errorf("tombstone for ns/a kept after the snapshot ended: %+v", g.last[guardCM])
	}
	// The snapshot is over: a delete now forgets the object at once instead
	// of leaving a tombstone.
	runSteps(t, g, []step{
		{guardChange(guardCM, informers.Added, "b", "11"), true},
		{guardChange(guardCM, informers.Deleted, "b", "12"), true},
	})
	if v, ok := g.last[guardCM][objectKey{"ns", "b"}]; ok {
		t.Errorf("delete after the snapshot ended left an entry for ns/b: %+v", v)
	}
	// With the tombstone gone, an object of that name is new again: the next
	// snapshot lists it (recreated, but here even with a lower version, which
	// shows the entry was cleared rather than merely superseded).
	runSteps(t, g, []step{
		{guardMarker(guardCM, informers.SnapshotBegin, "s2", 0), true},
		{guardChange(guardCM, informers.SnapshotItem, "a", "5"), true},
	})
	end = guardMarker(guardCM, informers.SnapshotEnd, "s2", 1)
	g.admit(end)
	if end.SnapshotCount != 1 {
		t.Errorf("second snapshot SnapshotCount = %d, want 1", end.SnapshotCount)
	}
}

// TestOrderGuardSnapshotTombstoneFinalStateUnknown covers a delete inferred
// from a relist while a snapshot is running: the tombstone then carries the
// last state the cache held, which is the very state the snapshot listed.
// The item is the same rv as the delete and must still not bring the object
// back.
func TestOrderGuardSnapshotTombstoneFinalStateUnknown(t *testing.T) {
	g := newOrderGuard()
	del := guardChange(guardCM, informers.Deleted, "a", "5")
	del.FinalStateUnknown = true
	runSteps(t, g, []step{
		{guardMarker(guardCM, informers.SnapshotBegin, "s1", 0), true},
		{del, true},
		{guardChange(guardCM, informers.SnapshotItem, "a", "5"), false},
	})
}

// TestOrderGuardDeleteOutsideSnapshotForgets shows that a delete outside any
// snapshot drops what the guard remembers about the object, so a recreated
// object of the same name is admitted whatever its resourceVersion. That is
// safe: outside a snapshot every change comes from the informer handler
// through the FIFO queue in watch order, so nothing older than the delete
// can still arrive for the deleted incarnation; and it keeps the guard's
// memory bounded by the number of live objects.
func TestOrderGuardDeleteOutsideSnapshotForgets(t *testing.T) {
	g := newOrderGuard()
	runSteps(t, g, []step{
		{guardChange(guardCM, informers.Added, "a", "30"), true},
		{guardChange(guardCM, informers.Deleted, "a", "31"), true},
	})
	if n := len(g.last[guardCM]); n != 0 {
		t.Fatalf("guard still remembers %d object(s) after the delete: %+v", n, g.last[guardCM])
	}
	runSteps(t, g, []step{
		{guardChange(guardCM, informers.Added, "a", "12"), true},
	})
}

func TestOrderGuardAdmitsUnparseableResourceVersions(t *testing.T) {
	// resourceversion.CompareResourceVersion accepts only decimal integers
	// without leading zeros; anything else cannot be ordered, so the guard
	// hands it on rather than risk dropping a real change.
	for _, bad := range []string{"not-a-number", "", "0", "007", "-1", "1.5"} {
		t.Run("rv="+bad, func(t *testing.T) {
			runSteps(t, newOrderGuard(), []step{
				{guardChange(guardCM, informers.Added, "a", "100"), true},
				{guardChange(guardCM, informers.Updated, "a", bad), true},
			})
			runSteps(t, newOrderGuard(), []step{
				{guardChange(guardCM, informers.Added, "a", bad), true},
				{guardChange(guardCM, informers.Updated, "a", "1"), true},
			})
			runSteps(t, newOrderGuard(), []step{
				{guardMarker(guardCM, informers.SnapshotBegin, "s1", 0), true},
				{guardChange(guardCM, informers.Deleted, "a", "100"), true},
				{guardChange(guardCM, informers.SnapshotItem, "a", bad), true},
			})
		})
	}
	// A change without an object's metadata is handed on, not judged.
	if !newOrderGuard().admit(&informers.Change{Verb: informers.Updated, Resource: guardCM}) {
		t.Error("change without object dropped")
	}
}

func TestOrderGuardResourcesAreIndependent(t *testing.T) {
	g := newOrderGuard()
	runSteps(t, g, []step{
		{guardChange(guardCM, informers.Added, "a", "100"), true},
		// Same namespace and name, other resource: not older than anything.
		{guardChange(guardSec, informers.Added, "a", "10"), true},
		{guardChange(guardSec, informers.Updated, "a", "9"), false},
		{guardChange(guardCM, informers.Updated, "a", "99"), false},
		// A snapshot of one resource does not make deletes of another
		// leave tombstones, nor count the other's items.
		{guardMarker(guardCM, informers.SnapshotBegin, "s1", 0), true},
		{guardChange(guardSec, informers.SnapshotItem, "b", "11"), true},
		{guardChange(guardSec, informers.Deleted, "a", "12"), true},
	})
	if _, ok := g.last[guardSec][objectKey{"ns", "a"}]; ok {
		t.Errorf("delete of secrets ns/a during a configmaps snapshot left an entry: %+v", g.last[guardSec])
	}
	end := guardMarker(guardCM, informers.SnapshotEnd, "s1", 0)
	g.admit(end)
	if end.SnapshotCount != 0 {
		t.Errorf("configmaps SnapshotCount = %d, want 0", end.SnapshotCount)
	}
	// Objects in different namespaces are different objects.
	other := &informers.Change{Verb: informers.Updated, Resource: guardCM, Object: guardObj("other", "a", "1")}
	if !g.admit(other) {
		t.Error("configmap other/a at rv 1 dropped because of ns/a at rv 100")
	}
	// An end marker of a snapshot the guard never saw begin keeps the
	// snapshotter's count.
	stray := guardMarker(guardSec, informers.SnapshotEnd, "sx", 4)
	g.admit(stray)
	if stray.SnapshotCount != 4 {
		t.Errorf("stray end marker SnapshotCount = %d, want 4 (untouched)", stray.SnapshotCount)
	}
}
