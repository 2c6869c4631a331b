package bridge

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubebridge/kubebridge/pkg/informers"
)

// Deterministic unit tests of orderGuard. Each helper builds exactly the
// Change the pipeline's run loop would see; no goroutines are involved.

var (
	guardCM  = &informers.Resource{GVR: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, Kind: "ConfigMap", Namespaced: true}
	guardSec = &informers.Resource{GVR: schema.GroupVersionResource{Version: "v1", Resource: "secrets"}, Kind: "Secret", Namespaced: true}
)

func guardObj(ns, name, rv string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-" + name), ResourceVersion: rv}}
}

// guardIncarnation is the object under name with a uid of its own: the
// name deleted and created again.
func guardIncarnation(res *informers.Resource, verb informers.Verb, name, uid, rv string) *informers.Change {
	o := guardObj("ns", name, rv)
	o.UID = types.UID(uid)
	return &informers.Change{Verb: verb, Resource: res, Object: o}
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
		// The cache ran ahead of the handler: the item shows rv 20 while
		// updates to rv 15 and 20 are still to be delivered.
		{guardChange(guardCM, informers.SnapshotItem, "a", "20"), true},
		{guardMarker(guardCM, informers.SnapshotEnd, "s1", 1), true},
		{guardChange(guardCM, informers.Updated, "a", "15"), false},
		{guardChange(guardCM, informers.Updated, "a", "20"), true},
		{guardChange(guardCM, informers.Updated, "a", "21"), true},
		{guardChange(guardCM, informers.Updated, "a", "19"), false},
	})
}

// Versions are compared per uid: a name deleted and created again is a new
// object, and the old one's late delete is still published.
func TestOrderGuardComparesPerUID(t *testing.T) {
	g := newOrderGuard()
	runSteps(t, g, []step{
		{guardMarker(guardCM, informers.SnapshotBegin, "s1", 0), true},
		// The item already shows the new incarnation (uid-2, rv 30)...
		{guardIncarnation(guardCM, informers.SnapshotItem, "a", "uid-2", "30"), true},
		// ...when the handler delivers the old one's late update and the
		// relist's delete of it: both concern uid-1, and go through.
		{guardIncarnation(guardCM, informers.Updated, "a", "uid-1", "12"), true},
		{guardIncarnation(guardCM, informers.Deleted, "a", "uid-1", "12"), true},
		// Then the new incarnation's add, at the item's version.
		{guardIncarnation(guardCM, informers.Added, "a", "uid-2", "30"), true},
		{guardIncarnation(guardCM, informers.Updated, "a", "uid-2", "29"), false},
		{guardMarker(guardCM, informers.SnapshotEnd, "s1", 1), true},
	})
}

// A delete is never dropped, whatever its version: the object is gone.
func TestOrderGuardNeverDropsADelete(t *testing.T) {
	g := newOrderGuard()
	runSteps(t, g, []step{
		{guardChange(guardCM, informers.Updated, "a", "20"), true},
		{guardChange(guardCM, informers.Deleted, "a", "18"), true},
		// Forgotten: a later object under the uid starts afresh.
		{guardChange(guardCM, informers.Added, "a", "5"), true},
	})
}

// The guard forgets deleted objects at once and, at each snapshot's end,
// every object of the type that nothing touched since the begin: its size
// follows the objects that exist.
func TestOrderGuardIsPruned(t *testing.T) {
	g := newOrderGuard()
	for i := range 100 {
		g.admit(guardChange(guardCM, informers.Added, "gone-"+string(rune('a'+i%26))+string(rune('a'+i/26)), "10"))
	}
	g.admit(guardChange(guardSec, informers.Added, "other-type", "10"))
	g.admit(guardChange(guardCM, informers.Added, "deleted", "11"))
	g.admit(guardChange(guardCM, informers.Deleted, "deleted", "12"))
	if got := g.size(); got != 101 {
		t.Fatalf("size %d after 101 adds and one add+delete, want 101", got)
	}
	runSteps(t, g, []step{
		{guardMarker(guardCM, informers.SnapshotBegin, "s1", 0), true},
		{guardChange(guardCM, informers.SnapshotItem, "kept", "20"), true},
		{guardChange(guardCM, informers.Added, "created-during", "21"), true},
		{guardMarker(guardCM, informers.SnapshotEnd, "s1", 2), true},
	})
	// Left: kept and created-during of configmaps, other-type of secrets.
	if got := g.size(); got != 3 {
		t.Errorf("size %d after the snapshot, want 3", got)
	}
	// A swept object's late update is admitted again (it is not stale).
	runSteps(t, g, []step{{guardChange(guardCM, informers.Updated, "gone-aa", "9"), true}})
}

func TestOrderGuardAdmitsUnparseableResourceVersions(t *testing.T) {
	g := newOrderGuard()
	runSteps(t, g, []step{
		{guardChange(guardCM, informers.Added, "a", "opaque-2"), true},
		{guardChange(guardCM, informers.Updated, "a", "opaque-1"), true},
		{guardChange(guardCM, informers.Updated, "a", "7"), true},
		{guardChange(guardCM, informers.Updated, "a", "opaque-0"), true},
	})
}

func TestOrderGuardResourcesAreIndependent(t *testing.T) {
	g := newOrderGuard()
	runSteps(t, g, []step{
		{guardChange(guardCM, informers.Updated, "a", "20"), true},
		// The same uid under another resource (an alias) is its own stream.
		{guardChange(guardSec, informers.Updated, "a", "10"), true},
		{guardChange(guardCM, informers.Updated, "a", "10"), false},
	})
}

// Making room for a snapshot's objects keeps what the guard remembers: an
// update older than an item handed on before the room was made is still
// dropped, and the epoch's sweep still sees the entries.
func TestOrderGuardExpectKeepsWhatItRemembers(t *testing.T) {
	g := newOrderGuard()
	runSteps(t, g, []step{
		{guardChange(guardCM, informers.SnapshotItem, "a", "20"), true},
		{guardChange(guardCM, informers.Added, "b", "5"), true},
	})
	g.expect(guardCM, 1000)
	runSteps(t, g, []step{
		{guardMarker(guardCM, informers.SnapshotBegin, "s1", 0), true},
		{guardChange(guardCM, informers.Updated, "a", "19"), false},
		{guardChange(guardCM, informers.SnapshotItem, "a", "21"), true},
		{guardMarker(guardCM, informers.SnapshotEnd, "s1", 1), true},
	})
	// b was not touched since the begin: swept; a is remembered.
	if got := g.size(); got != 1 {
		t.Errorf("size %d after the snapshot, want 1", got)
	}
	runSteps(t, g, []step{{guardChange(guardCM, informers.Updated, "a", "20"), false}})
}

// Room is made once per type: a type with match rules lists every cached
// object at each snapshot while the guard holds only those in scope, and
// must not get a new map every period.
func TestOrderGuardMakesRoomOnce(t *testing.T) {
	g := newOrderGuard()
	g.expect(guardCM, 1000)
	g.admit(guardChange(guardCM, informers.SnapshotItem, "in-scope", "5"))
	first := reflect.ValueOf(g.of(guardCM).last).UnsafePointer()
	g.expect(guardCM, 1000)
	if again := reflect.ValueOf(g.of(guardCM).last).UnsafePointer(); again != first {
		t.Error("a second snapshot of the type made a new map")
	}
	runSteps(t, g, []step{{guardChange(guardCM, informers.Updated, "in-scope", "4"), false}})
}

// The guard compares resourceVersions as the apiserver's comparison does
// (resourceversion.CompareResourceVersion) and admits what it would refuse
// to compare.
func TestResourceVersionNumber(t *testing.T) {
	for rv, want := range map[string]uint64{
		"1": 1, "123456789": 123456789, "18446744073709551615": 1<<64 - 1,
		"": 0, "0": 0, "07": 0, "-3": 0, "+3": 0, "1e3": 0, "opaque": 0,
		"18446744073709551616": 0, // beyond 64 bits
	} {
		if got := resourceVersionNumber(rv); got != want {
			t.Errorf("resourceVersionNumber(%q) = %d, want %d", rv, got, want)
		}
	}
	g := newOrderGuard()
	runSteps(t, g, []step{
		{guardChange(guardCM, informers.Updated, "a", "10"), true},
		// Leading zeros: not comparable, so admitted.
		{guardChange(guardCM, informers.Updated, "a", "07"), true},
		{guardChange(guardCM, informers.Updated, "a", "9"), true},
		{guardChange(guardCM, informers.Updated, "a", "8"), false},
	})
}
