package intake

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"github.com/kubebridge/kubebridge/pkg/informers"
)

// The intake's tests are deterministic where they can be: the test plays
// the pipeline (take) and the publisher (Done, Requeue), and checks the
// intake's invariants after every step it takes.

var configMaps = &informers.Resource{GVR: corev1.SchemeGroupVersion.WithResource("configmaps"), Kind: "ConfigMap", Namespaced: true}

func intakeCM(name, uid, rv string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID(uid), ResourceVersion: rv}}
}

func live(verb informers.Verb, obj, old runtime.Object) informers.Change {
	return informers.Change{Verb: verb, Resource: configMaps, Object: obj, OldObject: old, FinalStateUnknown: verb == informers.Deleted && old != nil}
}

type coalescedCount map[*informers.Resource]int

// noReports is an intake's reports for tests that look at neither.
var noReports = Reports{Coalesced: func(*informers.Resource, int) {}, Unkeyed: func(informers.Change, error) {}}

func newTestIntake() (*Intake, coalescedCount) {
	counts := coalescedCount{}
	return New(func() time.Time { return time.Unix(0, 0) }, Reports{Coalesced: func(r *informers.Resource, n int) { counts[r] += n }, Unkeyed: noReports.Unkeyed}), counts
}

// drain takes everything the intake hands on, settling each at once.
func drain(t testing.TB, in *Intake) []Work {
	t.Helper()
	var out []Work
	for {
		w, ok := tryTake(t, in)
		if !ok {
			return out
		}
		out = append(out, w)
		if w.Ref != (Ref{}) {
			in.Done(w)
			checkInvariants(t, in)
		}
	}
}

func drain1(t *testing.T, in *Intake) Work {
	t.Helper()
	w, ok := tryTake(t, in)
	if !ok {
		t.Fatal("nothing to take")
	}
	return w
}

// tryTake takes the next work if there is any, as Next does without
// waiting.
func tryTake(t testing.TB, in *Intake) (Work, bool) {
	t.Helper()
	checkInvariants(t, in)
	in.mu.Lock()
	w, ok := in.take(true)
	in.mu.Unlock()
	checkInvariants(t, in)
	return w, ok
}

// checkInvariants checks what Intake's state table promises, as the
// fields stand now: a tracked object is in one of the table's states, a
// ref is in the ready FIFO exactly when its object is waiting, and every
// snapshot's counts match the items waiting in queues and in flight.
func checkInvariants(t testing.TB, in *Intake) {
	t.Helper()
	in.mu.Lock()
	defer in.mu.Unlock()
	inFIFO := map[Ref]int{}
	for _, ref := range in.ready.refs[in.ready.head:] {
		inFIFO[ref]++
		if in.objects[ref] == nil {
			t.Errorf("%s is in the ready FIFO but not tracked", ref.Key)
		}
	}
	deferred, inFlight := map[*snapshotRun]int{}, map[*snapshotRun]int{}
	parked := 0
	for ref, st := range in.objects {
		waits, held := len(st.queue) > 0, in.held[ref.Resource]
		if st.isParked != st.parked() {
			t.Errorf("%s: marked withheld %v, but withheld is %v", ref.Key, st.isParked, st.parked())
		}
		if st.isParked {
			parked++
			if st.ready {
				t.Errorf("%s: withheld, yet in the ready FIFO", ref.Key)
			}
		}
		for i, p := range st.queue {
			if p.withheld && i != len(st.queue)-1 {
				t.Errorf("%s: a withheld update at %d of %d waiting: only the last may be", ref.Key, i, len(st.queue))
			}
		}
		if n := inFIFO[ref]; st.ready != (n == 1) || n > 1 {
			t.Errorf("%s: ready %v, in the ready FIFO %d times", ref.Key, st.ready, n)
		}
		if st.ready && (st.busy || !waits || held) {
			t.Errorf("%s: ready with busy %v, %d waiting, type held %v; want waiting alone", ref.Key, st.busy, len(st.queue), held)
		}
		if !st.busy && !st.ready && !st.isParked && (!waits || !held) {
			t.Errorf("%s: tracked with nothing in flight, %d waiting, not ready, type held %v: in no state", ref.Key, len(st.queue), held)
		}
		if st.itemOf != nil && !st.busy {
			t.Errorf("%s: a snapshot item in flight, but not busy", ref.Key)
		}
		for _, p := range st.queue {
			if p.run != nil {
				deferred[p.run]++
			}
		}
		if st.itemOf != nil {
			inFlight[st.itemOf]++
		}
	}
	if parked != in.parked {
		t.Errorf("%d objects withheld, but the intake counts %d", parked, in.parked)
	}
	for _, r := range in.runs {
		if r.deferred != deferred[r] || r.inFlight != inFlight[r] {
			t.Errorf("snapshot %s counts %d deferred, %d in flight; the queues hold %d, %d are in flight", r.id, r.deferred, r.inFlight, deferred[r], inFlight[r])
		}
		delete(deferred, r)
		delete(inFlight, r)
	}
	if len(deferred)+len(inFlight) > 0 {
		t.Errorf("items of %d ended snapshots still waiting or in flight", len(deferred)+len(inFlight))
	}
}

func describeWork(ws []Work) string {
	s := ""
	for _, w := range ws {
		rv, old := "", ""
		if w.Change.Object != nil {
			rv = resourceVersionOf(w.Change.Object)
		}
		if w.Change.OldObject != nil {
			old = resourceVersionOf(w.Change.OldObject) + "→"
		}
		s += fmt.Sprintf("[%s %s %s%s c=%d] ", w.Change.Verb, keyOf(w.Change.Object), old, rv, w.Change.Coalesced)
	}
	return s
}

// keyOf is obj's cache key, as the informer's store makes it.
func keyOf(obj runtime.Object) string {
	key, _ := cache.MetaNamespaceKeyFunc(obj)
	return key
}

// resourceVersionOf is obj's resourceVersion; every object here has meta.
func resourceVersionOf(obj runtime.Object) string {
	return obj.(metav1.Object).GetResourceVersion()
}
