package consume

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	listersv1 "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/kubebridge/kubebridge/pkg/informers"
)

func schemaGVR(g, v, r string) schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: g, Version: v, Resource: r}
}

// describe names an object as key@rv; an inferred delete as unknown(…).
func describe(obj any) string {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		return "unknown(" + describe(d.Obj) + ")"
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return fmt.Sprintf("%T", obj)
	}
	key := m.GetName()
	if m.GetNamespace() != "" {
		key = m.GetNamespace() + "/" + key
	}
	return key + "@" + m.GetResourceVersion()
}

// held lists the indexer as sorted key@rv.
func held(idx cache.Indexer) []string {
	var out []string
	for _, o := range idx.List() {
		out = append(out, describe(o))
	}
	sort.Strings(out)
	return out
}

// newTestApplier is an Applier of configmaps that records violations.
func newTestApplier(t *testing.T, opts ...ApplierOption) (*Applier, *[]Violation, *recorder) {
	t.Helper()
	var vs []Violation
	rec := &recorder{}
	opts = append([]ApplierOption{WithHooks(Hooks{OnViolation: func(v Violation) { vs = append(vs, v) }})}, opts...)
	a, err := memClient(t).NewApplier([]Filter{{Resource: "configmaps"}}, opts...)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.AddEventHandler("configmaps", rec); err != nil {
		t.Fatal(err)
	}
	return a, &vs, rec
}

func kinds(vs []Violation) []ViolationKind {
	var out []ViolationKind
	for _, v := range vs {
		out = append(out, v.Kind)
	}
	return out
}

func TestApplierHandlersAndLister(t *testing.T) {
	f := newFab(t, &memStore{})
	a1 := cm("ns", "a", "u1", "10")
	f.added(a1)
	f.added(cm("ns", "b", "u2", "11"))
	a, vs, rec := newTestApplier(t)
	applyAll(t, a, f)
	if len(rec.calls) != 0 {
		t.Fatalf("handlers called during the initial list: %v", rec.calls)
	}
	a.EndInitialList()
	a2 := cm("ns", "a", "u1", "12")
	f.updated(a2, a1)
	f.change("deleted", cm("ns", "b", "u2", "13"), nil, func(c *informers.Change) { c.FinalStateUnknown = true })
	f.added(cm("other", "c", "u3", "14"))
	f.deleted(a2)
	for i := len(f.msgs) - 4; i < len(f.msgs); i++ {
		if err := a.ApplyMsg(f.seqs[i], f.msgs[i]); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{
		"add ns/a@10 initial=true", "add ns/b@11 initial=true",
		"update ns/a@10 -> ns/a@12", "delete unknown(ns/b@13)", "add other/c@14 initial=false", "delete ns/a@12",
	}
	// The initial list comes in the indexer's order.
	got := slices.Clone(rec.calls)
	sort.Strings(got[:2])
	if !slices.Equal(got, want) {
		t.Errorf("handler calls\n got %q\nwant %q", got, want)
	}
	if len(*vs) != 0 {
		t.Errorf("violations: %v", *vs)
	}
	l := listersv1.NewConfigMapLister(a.Indexer("configmaps"))
	if c, err := l.ConfigMaps("other").Get("c"); err != nil || c.ResourceVersion != "14" || c.Data["rv"] != "14" {
		t.Errorf("lister: %v, %v", c, err)
	}
	if all, _ := l.List(labels.Everything()); len(all) != 1 {
		t.Errorf("lister lists %d, want 1", len(all))
	}

	// A handler added now first gets what is held.
	late := &recorder{}
	if err := a.AddEventHandler("configmaps", late); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(late.calls, []string{"add other/c@14 initial=true"}) {
		t.Errorf("late handler got %q", late.calls)
	}
	if err := a.AddEventHandler("secrets", late); err == nil {
		t.Error("a handler for a type no filter names was accepted")
	}
}

// Mark and sweep: an end marker removes what was not seen since its
// begin, except what it lists as unpublished.
func TestApplierMarkAndSweep(t *testing.T) {
	f := newFab(t, &memStore{})
	f.added(cm("ns", "gone", "u1", "10"))
	f.added(cm("ns", "kept", "u2", "11"))
	f.added(cm("ns", "live", "u3", "12"))
	f.added(cm("ns", "unpub", "u4", "13"))
	f.begin("s1")
	f.item("s1", cm("ns", "kept", "u2", "11"))
	f.updated(cm("ns", "live", "u3", "14"), cm("ns", "live", "u3", "12"))
	a, vs, rec := newTestApplier(t)
	applyAll(t, a, f)
	a.EndInitialList()
	rec.calls = nil
	f.end("s1", 1, "ns/unpub")
	if err := a.ApplyMsg(f.seqs[len(f.seqs)-1], f.msgs[len(f.msgs)-1]); err != nil {
		t.Fatal(err)
	}
	if got, want := held(a.Indexer("configmaps")), []string{"ns/kept@11", "ns/live@14", "ns/unpub@13"}; !slices.Equal(got, want) {
		t.Errorf("held %v, want %v", got, want)
	}
	if !slices.Equal(rec.calls, []string{"delete unknown(ns/gone@10)"}) {
		t.Errorf("handler calls %q", rec.calls)
	}
	st := a.Stats()
	if st.Swept != 1 || st.Snapshots != 1 || len(*vs) != 0 {
		t.Errorf("swept %d, snapshots %d, violations %v", st.Swept, st.Snapshots, *vs)
	}
	// The delete of the swept object comes later: a no-op, not a
	// violation.
	f.deleted(cm("ns", "gone", "u1", "15"))
	if err := a.ApplyMsg(f.seqs[len(f.seqs)-1], f.msgs[len(f.msgs)-1]); err != nil {
		t.Fatal(err)
	}
	if st := a.Stats(); st.StaleDeletes != 1 || len(*vs) != 0 {
		t.Errorf("stale deletes %d, violations %v", st.StaleDeletes, *vs)
	}
}

func TestApplierRegressions(t *testing.T) {
	f := newFab(t, &memStore{})
	f.added(cm("ns", "a", "u1", "10"))
	f.updated(cm("ns", "a", "u1", "20"), cm("ns", "a", "u1", "10"))
	f.updated(cm("ns", "a", "u1", "15"), cm("ns", "a", "u1", "10")) // back to an older version
	f.deleted(cm("ns", "b", "u2", "30"))
	f.begin("s1")
	f.item("s1", cm("ns", "b", "u2", "30")) // deleted uid comes back
	// Deleted and created again: a new uid is a new object.
	f.deleted(cm("ns", "a", "u1", "20"))
	f.added(cm("ns", "a", "u3", "16"))
	a, vs, _ := newTestApplier(t)
	applyAll(t, a, f)
	if got := kinds(*vs); !slices.Equal(got, []ViolationKind{Regression, Regression}) {
		t.Fatalf("violations %v", *vs)
	}
	if !strings.Contains((*vs)[0].Detail, "resourceVersion 15 after 20") || !strings.Contains((*vs)[1].Detail, "after its deleted event") {
		t.Errorf("details: %q; %q", (*vs)[0].Detail, (*vs)[1].Detail)
	}
	if got := held(a.Indexer("configmaps")); !slices.Equal(got, []string{"ns/a@16"}) {
		t.Errorf("held %v: a regression was applied", got)
	}
	if st := a.Stats(); st.Violations[Regression] != 2 || st.Breaches() != 2 {
		t.Errorf("stats %+v", st)
	}

	// StopOnViolation makes the first one fatal.
	a, _, _ = newTestApplier(t, StopOnViolation())
	var err error
	for i, m := range f.msgs {
		if err = a.ApplyMsg(f.seqs[i], m); err != nil {
			break
		}
	}
	var v *Violation
	if !errors.As(err, &v) || v.Kind != Regression || v.Seq != f.seqs[2] {
		t.Errorf("StopOnViolation: %v", err)
	}
}

func TestApplierMarkers(t *testing.T) {
	f := newFab(t, &memStore{})
	f.end("s0", 3) // read after its begin: skipped, no breach
	f.added(cm("ns", "a", "u1", "10"))
	f.begin("s1")
	f.end("s1", 0)
	f.end("s1", 0) // again
	f.begin("s1")  // again
	f.end("s2", 0) // its begin was never read
	f.begin("s3")
	f.begin("s4")  // s3 never ended (its bridge stopped): s4 replaces it
	f.end("s3", 0) // so this one is without its begin
	a, vs, _ := newTestApplier(t)
	applyAll(t, a, f)
	want := []ViolationKind{EndSkipped, DuplicateID, DuplicateID, EndWithoutBegin, EndWithoutBegin}
	if got := kinds(*vs); !slices.Equal(got, want) {
		t.Errorf("violations %v, want %v", *vs, want)
	}
	st := a.Stats()
	if st.Breaches() != 4 || st.Violations[EndSkipped] != 1 || st.Snapshots != 1 {
		t.Errorf("stats %+v", st)
	}
	// The s1 end swept a (not seen since its begin); nothing since.
	if st.Swept != 1 || len(a.Indexer("configmaps").ListKeys()) != 0 {
		t.Errorf("swept %d, held %v", st.Swept, held(a.Indexer("configmaps")))
	}
}

func TestApplierDuplicateID(t *testing.T) {
	f := newFab(t, &memStore{})
	f.added(cm("ns", "a", "u1", "10"))
	a, vs, rec := newTestApplier(t)
	a.EndInitialList()
	applyAll(t, a, f)
	// The same message stored twice (past JetStream's window).
	if err := a.ApplyMsg(2, f.msgs[0]); err != nil {
		t.Fatal(err)
	}
	if got := kinds(*vs); !slices.Equal(got, []ViolationKind{DuplicateID}) {
		t.Errorf("violations %v", *vs)
	}
	if len(rec.calls) != 1 {
		t.Errorf("the duplicate reached the handlers: %q", rec.calls)
	}
	// An item at the same version is no duplicate.
	f.begin("s1")
	f.item("s1", cm("ns", "a", "u1", "10"))
	for i := 1; i < len(f.msgs); i++ {
		if err := a.ApplyMsg(f.seqs[i]+1, f.msgs[i]); err != nil {
			t.Fatal(err)
		}
	}
	if len(*vs) != 1 {
		t.Errorf("violations %v", *vs)
	}
}

// A name that holds a new uid: the old object's delete was not read.
func TestApplierNameReused(t *testing.T) {
	f := newFab(t, &memStore{})
	f.added(cm("ns", "a", "u1", "10"))
	a, vs, rec := newTestApplier(t)
	applyAll(t, a, f)
	a.EndInitialList()
	rec.calls = nil
	f.begin("s1")
	f.item("s1", cm("ns", "a", "u2", "30"))
	f.deleted(cm("ns", "a", "u1", "25")) // the late delete of the old uid
	f.end("s1", 1)
	for i := 1; i < len(f.msgs); i++ {
		if err := a.ApplyMsg(f.seqs[i], f.msgs[i]); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{"delete unknown(ns/a@10)", "add ns/a@30 initial=false"}
	if !slices.Equal(rec.calls, want) {
		t.Errorf("handler calls %q, want %q", rec.calls, want)
	}
	if got := held(a.Indexer("configmaps")); !slices.Equal(got, []string{"ns/a@30"}) || len(*vs) != 0 {
		t.Errorf("held %v, violations %v", got, *vs)
	}
}

// A reader that is behind sees only the last delete at a name deleted,
// created again and deleted again (the roll-up removed the first delete):
// the object it holds there, older than the delete it reads, is gone too.
// A delete older than the object held removes nothing.
func TestApplierDeleteOfANewerUIDRemovesTheOlder(t *testing.T) {
	f := newFab(t, &memStore{})
	f.added(cm("ns", "a", "u1", "10"))
	f.added(cm("ns", "b", "u3", "40"))
	a, vs, rec := newTestApplier(t)
	applyAll(t, a, f)
	a.EndInitialList()
	rec.calls = nil
	f.deleted(cm("ns", "a", "u2", "30")) // u1's delete and u2's add were rolled up
	f.deleted(cm("ns", "b", "u0", "5"))  // older than what is held
	for i := 2; i < len(f.msgs); i++ {
		if err := a.ApplyMsg(f.seqs[i], f.msgs[i]); err != nil {
			t.Fatal(err)
		}
	}
	if got := held(a.Indexer("configmaps")); !slices.Equal(got, []string{"ns/b@40"}) || len(*vs) != 0 {
		t.Errorf("held %v, violations %v; want ns/b@40 only", got, *vs)
	}
	if want := []string{"delete unknown(ns/a@10)"}; !slices.Equal(rec.calls, want) {
		t.Errorf("handler calls %q, want %q", rec.calls, want)
	}
}

func TestApplierUndecodableAndVersions(t *testing.T) {
	a, vs, _ := newTestApplier(t)
	bad := &nats.Msg{Subject: testSubjects.Prefix + ".c1.core.v1.configmaps.ns.a", Header: nats.Header{"ce-specversion": {"1.0"}, "ce-id": {"x"}, "ce-source": {"s"}, "ce-type": {"io.kubebridge.object.added"}}, Data: []byte("{")}
	if err := a.ApplyMsg(7, bad); err != nil {
		t.Fatal(err)
	}
	if len(*vs) != 1 || (*vs)[0].Kind != Undecodable || !errors.Is((*vs)[0].Err, ErrUndecodable) {
		t.Errorf("violations %v", *vs)
	}

	// One filter, two versions of its type.
	f := newFab(t, &memStore{})
	f.added(cm("ns", "a", "u1", "10"))
	v2 := *cmResource
	v2.GVR.Version = "v2"
	f.changeOf(&v2, "added", cm("ns", "b", "u2", "11"), nil)
	a, _, _ = newTestApplier(t)
	err := a.ApplyMsg(f.seqs[0], f.msgs[0])
	if err == nil {
		err = a.ApplyMsg(f.seqs[1], f.msgs[1])
	}
	if !errors.Is(err, ErrAmbiguousVersion) {
		t.Errorf("two versions under one filter: %v", err)
	}
}

// TestSweepGuardHoldsNoLock makes the sweep guard wait for a reader of
// the Applier: the guard reads the stream (up to guardTimeout per object),
// and while it does, Stats and the listers must answer.
func TestSweepGuardHoldsNoLock(t *testing.T) {
	f := newFab(t, &memStore{})
	f.added(cm("ns", "a", "u1", "10"))
	f.begin("s1")
	f.end("s1", 0)
	a, _, _ := newTestApplier(t)
	answered := make(chan Stats)
	asked := 0
	a.keepOnSweep = func(key string, _ any, _ *Event) bool {
		asked++
		go func() { answered <- a.Stats() }()
		select {
		case <-answered:
		case <-time.After(30 * time.Second):
			t.Errorf("Stats did not answer while the sweep guard read the stream for %s: the guard holds the Applier's lock", key)
		}
		return true
	}
	applyAll(t, a, f)
	if asked != 1 {
		t.Fatalf("the guard was asked %d times, want once (for ns/a)", asked)
	}
	if got := held(a.Indexer("configmaps")); !slices.Equal(got, []string{"ns/a@10"}) {
		t.Errorf("held %v after the guard kept ns/a", got)
	}
}

// TestApplierObjectWithoutKey applies an event whose object the indexer
// cannot key: it is reported as undecodable and changes nothing, where
// the indexer's error used to be dropped after the uid was recorded.
func TestApplierObjectWithoutKey(t *testing.T) {
	f := newFab(t, &memStore{})
	f.added(cm("ns", "a", "u1", "10"))
	a, vs, rec := newTestApplier(t)
	a.EndInitialList()
	ev, err := a.dec.decode(f.seqs[0], f.msgs[0])
	if err != nil {
		t.Fatal(err)
	}
	ev.Object = &metav1.Status{}
	if err := a.Apply(ev); err != nil {
		t.Fatal(err)
	}
	if got := kinds(*vs); !slices.Equal(got, []ViolationKind{Undecodable}) {
		t.Errorf("violations %v, want [undecodable]", got)
	}
	if got := held(a.Indexer("configmaps")); len(got) != 0 || len(rec.calls) != 0 || a.Stats().Applied != 0 {
		t.Errorf("held %v, handler calls %v, %d applied: an object without a key changed the state", got, rec.calls, a.Stats().Applied)
	}
}
