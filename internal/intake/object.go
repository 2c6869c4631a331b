package intake

import (
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubebridge/kubebridge/pkg/informers"
)

// Ref names one object of one type, by its informer cache key.
type Ref struct {
	Resource *informers.Resource
	Key      string
}

// pending is one change waiting for its turn: a live change, possibly with
// later ones merged into it, or a snapshot item deferred because the object
// had a publish in flight.
type pending struct {
	c   informers.Change
	uid types.UID
	// since is when the oldest live change it stands for was observed:
	// the start of its lag (kubebridge_event_lag_seconds). Zero for a
	// snapshot item that stands for no live change.
	since time.Time
	// run is the snapshot a deferred item belongs to.
	run *snapshotRun
	// truncate publishes the object without its content: JetStream
	// rejected the full form.
	truncate bool
	// withheld is an update not to be published on its own (Withhold): it
	// waits for the object's next change to merge into it. Only the last
	// entry of a queue can be withheld: every later change merges into it.
	withheld bool
}

// objectState is the intake's state for one object, kept only while the
// object has pending changes or one in flight. Its fields make the states
// of Intake's table; only Intake's methods change them.
type objectState struct {
	// queue holds what waits, oldest first: normally one entry, two when an
	// old uid's delete precedes the new uid's first change or a change came
	// during a linger (see cutsLinger), three when both.
	queue []pending
	// ready is set while the object's ref is in the ready FIFO.
	ready bool
	// busy is set from the moment a change is handed to the pipeline until
	// its publish is settled: an object never has two changes in flight, so
	// the publisher keeps per-subject order without waiting.
	busy bool
	// itemOf is the snapshot whose item is in flight, if it is one.
	itemOf *snapshotRun
	// parked mirrors parked(), so that Intake.parked counts the objects in
	// that state without a scan. Only settle sets it.
	isParked bool
}

// parked reports whether all the object has is a withheld update: it is
// tracked, but nothing of it waits to be published or is in flight.
func (st *objectState) parked() bool {
	return len(st.queue) == 1 && st.queue[0].withheld && !st.busy
}

// state returns ref's state, creating it (absent → tracked) if need be.
func (in *Intake) state(ref Ref) *objectState {
	st := in.objects[ref]
	if st == nil {
		st = in.newState()
		in.objects[ref] = st
	}
	return st
}

// settle moves ref to the state its fields call for: withheld if all it
// has is a withheld update; waiting (in the FIFO) if it has something to
// publish, nothing in flight and its type is not held; absent (forgotten)
// if it has neither. A ref in the FIFO keeps its
// state even when emptied, so the FIFO holds each ref at most once.
func (in *Intake) settle(ref Ref, st *objectState) {
	if parked := st.parked(); parked != st.isParked {
		st.isParked = parked
		if parked {
			in.parked++
		} else {
			in.parked--
		}
	}
	switch {
	case st.isParked:
		// Withheld: tracked until its next change, never in the FIFO.
	case len(st.queue) > 0 && !st.busy && !st.ready && !in.held[ref.Resource]:
		st.ready = true
		in.ready.push(ref)
	case len(st.queue) == 0 && !st.busy && !st.ready:
		in.forget(ref, st)
	}
}

// land records that the change in flight is settled.
func (st *objectState) land() {
	st.busy = false
	if st.itemOf != nil {
		st.itemOf.landed()
		st.itemOf = nil
	}
}

// maxSpareStates bounds the object states kept for reuse.
const maxSpareStates = 1024

// newState returns an empty object state, reusing one forgotten earlier:
// most objects come and go from the intake with every change.
func (in *Intake) newState() *objectState {
	n := len(in.spare)
	if n == 0 {
		return &objectState{}
	}
	st := in.spare[n-1]
	in.spare[n-1] = nil
	in.spare = in.spare[:n-1]
	return st
}

// forget drops ref's state, keeping it for reuse (its queue's room
// included). Nothing may use st afterwards.
func (in *Intake) forget(ref Ref, st *objectState) {
	delete(in.objects, ref)
	if len(in.spare) < maxSpareStates {
		clear(st.queue[:cap(st.queue)])
		*st = objectState{queue: st.queue[:0]}
		in.spare = append(in.spare, st)
	}
}

func uidOf(obj interface{}) types.UID {
	m, err := meta.Accessor(obj)
	if err != nil {
		return ""
	}
	return m.GetUID()
}
