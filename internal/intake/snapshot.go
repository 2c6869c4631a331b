package intake

import (
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubebridge/kubebridge/pkg/informers"
)

// snapshotRun is one snapshot of one type as the intake feeds it: the keys
// listed at its begin, how far it got, how many of its items wait in an
// object's queue behind a change in flight (deferred) and how many are in
// flight (inFlight). It is guarded by the intake's lock.
//
// The counts change only through the methods below, so that one file
// shows the invariant the end marker relies on: every item handed on is
// deferred or in flight until it lands, exactly once, and the end is
// taken only when none is either (settled).
type snapshotRun struct {
	res      *informers.Resource
	src      CacheReader
	scope    informers.Scope
	id       string
	begun    bool
	keys     []string
	next     int
	deferred int
	inFlight int
}

// queued records an item that waits in an object's queue.
func (r *snapshotRun) queued() { r.deferred++ }

// unqueued records an item that left an object's queue without being sent:
// a later change or item took its place.
func (r *snapshotRun) unqueued() { r.deferred-- }

// sent records a queued item handed on to be published.
func (r *snapshotRun) sent() {
	r.deferred--
	r.inFlight++
}

// sentDirect records an item handed on at once: its object had nothing
// pending.
func (r *snapshotRun) sentDirect() { r.inFlight++ }

// landed records that an item in flight is settled.
func (r *snapshotRun) landed() { r.inFlight-- }

// settled reports whether no item of the run waits or is in flight.
func (r *snapshotRun) settled() bool { return r.deferred == 0 && r.inFlight == 0 }

// CacheReader is what a snapshot reads: the keys in an informer cache and
// the object under a key. *informers.Source is one.
type CacheReader interface {
	Keys() []string
	Get(key string) (runtime.Object, bool)
}

// RequestSnapshot queues a snapshot of src, which holds res watched with
// scope (its begin marker says so), under id. It begins when Next gets to
// it, and hands on its begin marker, an item or a live change for every
// object listed, and its end marker once every item is settled.
func (in *Intake) RequestSnapshot(res *informers.Resource, src CacheReader, scope informers.Scope, id string) {
	in.mu.Lock()
	in.runs = append(in.runs, &snapshotRun{res: res, src: src, scope: scope, id: id})
	in.mu.Unlock()
	in.signal()
}

// takeSnapshot advances the oldest snapshot that can advance: its begin
// marker, its next item, or its end marker once every item is handed on.
func (in *Intake) takeSnapshot() (Work, bool) {
	for i, run := range in.runs {
		res := run.res
		if !run.begun {
			run.begun = true
			// Keys are listed when the begin marker is handed on: every
			// object in the cache now gets an item or a delete after it.
			run.keys = run.src.Keys()
			return Work{Change: informers.Change{Verb: informers.SnapshotBegin, Resource: res, Scope: run.scope, SnapshotID: run.id, ObservedAt: in.now()}, Listed: len(run.keys), run: run}, true
		}
		for run.next < len(run.keys) {
			key := run.keys[run.next]
			run.keys[run.next] = ""
			run.next++
			obj, ok := run.src.Get(key)
			if !ok {
				// Deleted since the listing: its delete is a live change.
				continue
			}
			ref := Ref{Resource: res, Key: key}
			item := pending{c: informers.Change{Verb: informers.SnapshotItem, Resource: res, Object: obj, SnapshotID: run.id, ObservedAt: in.now()},
				uid: uidOf(obj), run: run}
			if st := in.objects[ref]; st != nil {
				// A change of the object is pending or in flight: the item
				// takes its place in the object's queue.
				if n := in.merge(st, item); n > 0 {
					in.report.Coalesced(res, n)
				}
				in.settle(ref, st)
				continue
			}
			st := in.newState()
			st.busy, st.itemOf = true, run
			in.objects[ref] = st
			run.sentDirect()
			return Work{Ref: ref, Change: item.c, run: run}, true
		}
		// The end waits until every item is settled: a rejected item comes
		// back to be sent without its content, and must precede the end.
		if !run.settled() {
			continue
		}
		in.runs = append(in.runs[:i], in.runs[i+1:]...)
		run.keys = nil
		return Work{Change: informers.Change{Verb: informers.SnapshotEnd, Resource: res, SnapshotID: run.id, ObservedAt: in.now()}, run: run}, true
	}
	return Work{}, false
}
