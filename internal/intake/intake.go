package intake

import (
	"sync"
	"time"

	"k8s.io/client-go/tools/cache"

	"github.com/kubebridge/kubebridge/pkg/informers"
)

// Intake sits between the informer handlers and the pipeline. It never
// refuses a change: changes of one object that wait merge into one (see
// merge), so its memory is bounded by the number of objects, like
// client-go's DeltaFIFO, however long NATS is slow or away. It also feeds
// snapshots lazily: a snapshot lists its keys when it begins and reads each
// object from the informer cache when its turn comes.
//
// Each object is in one of these states, made of its objectState's fields
// and its type's hold (a ref in the ready FIFO is ready):
//
//	state                    tracked  queue  ready  busy  type held
//	absent                   no       -      -      -     -
//	withheld                 yes      1 (w)  no     no    -
//	held                     yes      ≥ 1    no     no    yes
//	waiting                  yes      ≥ 1    yes    no    no
//	in flight                yes      0      no     yes   -
//	in flight, more waiting  yes      ≥ 1    no     yes   -
//
// and moves between them only through these methods (an object that would
// be waiting while its type is held is held instead; in flight* is in
// flight, or in flight with more waiting):
//
//	from                     to                       method
//	absent                   waiting                  Add; Release (a missed delete)
//	absent                   withheld                 Withhold
//	absent                   in flight                Next (a snapshot item, handed on at once)
//	withheld                 waiting (or held)        Add (merged: published with the withheld
//	                                                  change's old object); Next (a snapshot
//	                                                  item supersedes it)
//	withheld                 withheld                 Withhold (merged)
//	waiting, held, in flight, more waiting
//	                         the same                 Add; Next (a snapshot item): merged into what waits, or queued behind it
//	held                     waiting                  Release
//	held                     absent                   AbandonHeld (at shutdown)
//	waiting                  in flight*               Next, Drain
//	in flight                in flight, more waiting  Add; Next (a snapshot item waits behind)
//	in flight                absent                   Done
//	in flight, more waiting  waiting                  Done
//	in flight, more waiting  withheld                 Done (all that waits is withheld)
//	in flight*               waiting                  Requeue (the change first, truncated)
//
// (w) is one withheld update (Withhold): a change the type's rules do not
// publish on its own, kept so that the object's next published change
// carries the version last published as its old object. Hold marks a
// type before its informer delivers anything; no object moves.
// So an object never has two changes in flight, a waiting object's ref is
// in the FIFO exactly once, and an object with nothing waiting or in flight
// is forgotten (its state is kept for reuse). Every snapshot item waiting
// in a queue or in flight is counted by its snapshotRun, whose end marker
// waits until none is.
type Intake struct {
	mu      sync.Mutex
	objects map[Ref]*objectState
	ready   refFIFO
	runs    []*snapshotRun
	// liveStreak counts live changes handed on since the last snapshot step.
	liveStreak int
	now        func() time.Time
	report     Reports
	wake       chan struct{}
	lingering  lingering
	// held types keep their changes until release: nothing of a type may
	// be published before the deletes missed while no bridge published
	// it, or a name deleted and created again meanwhile would go from the
	// old uid to the new one without the old one's delete.
	held map[*informers.Resource]bool
	// spare holds forgotten object states for reuse (newState).
	spare []*objectState
	// parked counts the objects that are withheld: tracked, but with
	// nothing to publish.
	parked int
	// draining is set once Drain is called: from then on every Done may
	// be the last, which Drain waits for.
	draining bool
}

// Reports is what an intake tells its owner, for its metrics and log.
type Reports struct {
	// Coalesced is told about changes that will not be published as
	// events of their own (merged into a later one).
	Coalesced func(r *informers.Resource, n int)
	// Unkeyed is told about a change whose object has no cache key (no
	// metadata: nothing an informer delivers), which cannot be tracked
	// per object and is not published.
	Unkeyed func(c informers.Change, err error)
}

// New returns an empty intake that reads the time from now.
func New(now func() time.Time, report Reports) *Intake {
	return &Intake{objects: map[Ref]*objectState{}, now: now, report: report, wake: make(chan struct{}, 1), lingering: newLingering(), held: map[*informers.Resource]bool{}}
}

func (in *Intake) signal() {
	select {
	case in.wake <- struct{}{}:
	default:
	}
}

// Add takes a change from an informer handler. It never blocks on the
// pipeline, and drops only a change without a key, which it reports.
func (in *Intake) Add(c informers.Change) { in.add(c, false) }

// Withhold takes an update that is not to be published on its own: the
// type's rules held it back (its `when` was false, or it changed only
// fields the type ignores). It merges into whatever of the object waits;
// if nothing does, it waits, withheld, for the object's next change, which
// merges into it and is published with its old object (the version last
// published, contract §4), or for a snapshot item, which supersedes it.
// Like Add, it never blocks and keeps at most one entry per object.
func (in *Intake) Withhold(c informers.Change) { in.add(c, true) }

func (in *Intake) add(c informers.Change, withheld bool) {
	key, err := cache.MetaNamespaceKeyFunc(c.Object)
	if err != nil {
		in.report.Unkeyed(c, err)
		return
	}
	ref := Ref{Resource: c.Resource, Key: key}
	in.mu.Lock()
	st := in.state(ref)
	p := pending{c: c, uid: uidOf(c.Object), since: c.ObservedAt, withheld: withheld}
	in.lingering.arrived(in.now())
	if !withheld && in.cutsLinger(st, p) {
		in.push(st, p)
	} else if n := in.merge(st, p); n > 0 {
		in.report.Coalesced(c.Resource, n)
	}
	in.settle(ref, st)
	in.mu.Unlock()
	in.signal()
}

// Done is told that w, handed on by Next or Drain, is settled: published,
// given up, or skipped. The object's next change, if any, becomes ready.
// A marker's Done does nothing but wake a Drain.
//
// It wakes Next only when the settled work lets it go on: the object's
// next change became ready, a snapshot item landed (its end marker waits
// for that), or Drain waits for the last to settle. At a trickle of
// changes every other wake-up found nothing to do, and on this machine a
// thread woken on an idle CPU is dear (docs/performance.md, "Where the
// CPU goes").
func (in *Intake) Done(w Work) {
	in.mu.Lock()
	wake := in.draining
	if st := in.objects[w.Ref]; st != nil {
		wake = wake || st.itemOf != nil
		st.land()
		in.settle(w.Ref, st)
		// A forgotten state is cleared, so not ready.
		wake = wake || st.ready
	}
	in.mu.Unlock()
	if wake {
		in.signal()
	}
}

// Requeue puts w, a change of an object that JetStream rejected, back in
// front of whatever the object has waiting, to be published without its
// content. Later changes merge into it as usual.
func (in *Intake) Requeue(w Work) {
	in.mu.Lock()
	st := in.state(w.Ref)
	run := st.itemOf
	st.land()
	waiting := st.queue
	st.queue = nil
	in.push(st, pending{c: w.Change, uid: uidOf(w.Change.Object), truncate: true, run: run, since: w.Since})
	for _, p := range waiting {
		if p.run != nil {
			p.run.unqueued()
		}
		// Counted when they first arrived.
		_ = in.merge(st, p)
	}
	in.settle(w.Ref, st)
	in.mu.Unlock()
	in.signal()
}

// PendingObjects is the number of objects with a change waiting or in
// flight (withheld updates are neither).
func (in *Intake) PendingObjects() int {
	in.mu.Lock()
	defer in.mu.Unlock()
	return len(in.objects) - in.parked
}

// WithheldObjects is the number of objects whose last change is withheld.
func (in *Intake) WithheldObjects() int {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.parked
}
