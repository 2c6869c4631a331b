package bridge

import (
	"context"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"github.com/kubebridge/kubebridge/pkg/informers"
)

// liveBurst is how many live changes the intake hands on in a row while
// a snapshot waits. Live changes go first, but a snapshot still advances
// when churn never pauses.
const liveBurst = 8

// objectRef names one object of one type, by its informer cache key.
type objectRef struct {
	res *informers.Resource
	key string
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
}

// objectState is the intake's state for one object, kept only while the
// object has pending changes or one in flight.
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
}

// work is what the intake hands to the pipeline.
type work struct {
	ref      objectRef // zero for snapshot markers
	c        informers.Change
	run      *snapshotRun
	truncate bool
	since    time.Time // see pending
}

// intake sits between the informer handlers and the pipeline. It never
// refuses a change: changes of one object that wait merge into one (see
// merge), so its memory is bounded by the number of objects, like
// client-go's DeltaFIFO, however long NATS is slow or away. It also feeds
// snapshots lazily: a snapshot lists its keys when it begins and reads each
// object from the informer cache when its turn comes.
type intake struct {
	mu      sync.Mutex
	objects map[objectRef]*objectState
	ready   refFIFO
	runs    []*snapshotRun
	// liveStreak counts live changes handed on since the last snapshot step.
	liveStreak int
	now        func() time.Time
	report     intakeReports
	wake       chan struct{}
	lingering  lingering
	// held types keep their changes until release: nothing of a type may
	// be published before the deletes missed while no bridge published
	// it, or a name deleted and created again meanwhile would go from the
	// old uid to the new one without the old one's delete.
	held map[*informers.Resource]bool
	// spare holds forgotten object states for reuse (newState).
	spare []*objectState
}

// intakeReports is what an intake tells the bridge, for its metrics and
// log.
type intakeReports struct {
	// coalesced is told about changes that will not be published as
	// events of their own (merged into a later one).
	coalesced func(r *informers.Resource, n int)
	// unkeyed is told about a change whose object has no cache key (no
	// metadata: nothing an informer delivers), which cannot be tracked
	// per object and is not published.
	unkeyed func(c informers.Change, err error)
}

func newIntake(now func() time.Time, report intakeReports) *intake {
	return &intake{objects: map[objectRef]*objectState{}, now: now, report: report, wake: make(chan struct{}, 1), lingering: newLingering(), held: map[*informers.Resource]bool{}}
}

func (in *intake) signal() {
	select {
	case in.wake <- struct{}{}:
	default:
	}
}

// Add takes a change from an informer handler. It never blocks on the
// pipeline, and drops only a change without a key, which it reports.
func (in *intake) Add(c informers.Change) {
	key, err := cache.MetaNamespaceKeyFunc(c.Object)
	if err != nil {
		in.report.unkeyed(c, err)
		return
	}
	ref := objectRef{res: c.Resource, key: key}
	in.mu.Lock()
	st := in.state(ref)
	p := pending{c: c, uid: uidOf(c.Object), since: c.ObservedAt}
	in.lingering.arrived(in.now())
	if in.cutsLinger(st, p) {
		in.push(st, p)
	} else if n := in.merge(st, p); n > 0 {
		in.report.coalesced(c.Resource, n)
	}
	in.settle(ref, st)
	in.mu.Unlock()
	in.signal()
}

func (in *intake) state(ref objectRef) *objectState {
	st := in.objects[ref]
	if st == nil {
		st = in.newState()
		in.objects[ref] = st
	}
	return st
}

// settle queues ref if it has something to publish and nothing in flight,
// and forgets it if it has neither. A ref in the FIFO keeps its state even
// when emptied, so the FIFO holds each ref at most once.
func (in *intake) settle(ref objectRef, st *objectState) {
	switch {
	case len(st.queue) > 0 && !st.busy && !st.ready && !in.held[ref.res]:
		st.ready = true
		in.ready.push(ref)
	case len(st.queue) == 0 && !st.busy && !st.ready:
		in.forget(ref, st)
	}
}

// next returns the next work to hand on, waiting until there is some or ctx
// ends. With snapshots false (shutting down) it hands on live changes only,
// and reports false once nothing waits and nothing is in flight.
//
// When it had to wait, and changes come often enough that lingering
// gathers several (see changesComeOften), it lingers after the wake-up (see
// lingerFor).
func (in *intake) next(ctx context.Context, snapshots bool, linger time.Duration) (work, bool) {
	for {
		in.mu.Lock()
		w, ok := in.take(snapshots)
		drained := !ok && !snapshots && len(in.objects) == 0
		in.mu.Unlock()
		if ok {
			return w, true
		}
		if drained {
			return work{}, false
		}
		select {
		case <-in.wake:
		case <-ctx.Done():
			return work{}, false
		}
		if linger > 0 && in.changesComeOften(linger) && !in.lingerFor(ctx, linger) {
			return work{}, false
		}
	}
}

func (in *intake) take(snapshots bool) (work, bool) {
	snapshots = snapshots && len(in.runs) > 0
	if !snapshots || in.liveStreak < liveBurst {
		if w, ok := in.takeLive(); ok {
			in.liveStreak++
			return w, true
		}
	}
	if snapshots {
		if w, ok := in.takeSnapshot(); ok {
			in.liveStreak = 0
			return w, true
		}
		if w, ok := in.takeLive(); ok {
			return w, true
		}
	}
	return work{}, false
}

func (in *intake) takeLive() (work, bool) {
	for {
		ref, ok := in.ready.pop()
		if !ok {
			return work{}, false
		}
		st := in.objects[ref]
		st.ready = false
		if len(st.queue) == 0 {
			// Emptied while queued (an add and its delete cancelled).
			in.settle(ref, st)
			continue
		}
		p := st.queue[0]
		// Shifted rather than resliced, so the queue keeps its room.
		n := copy(st.queue, st.queue[1:])
		st.queue[n] = pending{}
		st.queue = st.queue[:n]
		st.busy = true
		if p.run != nil {
			p.run.sent()
			st.itemOf = p.run
		}
		return work{ref: ref, c: p.c, run: p.run, truncate: p.truncate, since: p.since}, true
	}
}

// done is told that the change of ref handed on last is settled: published,
// given up, or skipped. The object's next change, if any, becomes ready.
func (in *intake) done(ref objectRef) {
	in.mu.Lock()
	if st := in.objects[ref]; st != nil {
		st.land()
		in.settle(ref, st)
	}
	in.mu.Unlock()
	in.signal()
}

// requeue puts a change that JetStream rejected back in front of whatever
// the object has waiting, to be published without its content. Later
// changes merge into it as usual.
func (in *intake) requeue(ref objectRef, c informers.Change, since time.Time) {
	in.mu.Lock()
	st := in.state(ref)
	run := st.itemOf
	st.land()
	waiting := st.queue
	st.queue = nil
	in.push(st, pending{c: c, uid: uidOf(c.Object), truncate: true, run: run, since: since})
	for _, w := range waiting {
		if w.run != nil {
			w.run.unqueued()
		}
		// Counted when they first arrived.
		_ = in.merge(st, w)
	}
	in.settle(ref, st)
	in.mu.Unlock()
	in.signal()
}

// land records that the change in flight is settled.
func (st *objectState) land() {
	st.busy = false
	if st.itemOf != nil {
		st.itemOf.landed()
		st.itemOf = nil
	}
}

// pendingObjects is the number of objects with a change waiting or in
// flight.
func (in *intake) pendingObjects() int {
	in.mu.Lock()
	defer in.mu.Unlock()
	return len(in.objects)
}

func uidOf(obj interface{}) types.UID {
	m, err := meta.Accessor(obj)
	if err != nil {
		return ""
	}
	return m.GetUID()
}
